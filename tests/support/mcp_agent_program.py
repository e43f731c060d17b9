"""A small outside agent of ours for the serve tests: it plays a task's gold plan through a
simulation's MCP endpoint, the way the `oracle` agent plays it inside the harness.

It greets, performs the agent's gold actions, asks the customer to do theirs, passes on the
information the task wants communicated, says it is done, and stops once the customer ends the
conversation. `skip_actions` leaves the actions out (a negative control).

As a program (`python tests/support/mcp_agent_program.py`) it is what `tau-harness run --agent cmd`
starts: it reads the endpoint from $TAU_MCP_URL / $TAU_MCP_TOKEN and the task from $TAU_DOMAIN /
$TAU_TASK_ID (data from $TAU2_DATA_DIR), and plays with the official `mcp` SDK client.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import sys
from collections import deque
from collections.abc import Awaitable, Callable
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tau_mcp.conversation.plan import describe, gold_actions  # noqa: E402
from tau_mcp.harness.orchestrator import GREETING  # noqa: E402

# (tool name, arguments) -> (result text, isError)
Call = Callable[[str, dict], Awaitable[tuple[str, bool]]]
ENDED = "ended the conversation"


async def play(call: Call, task, skip_actions: bool = False) -> list[tuple[str, str, bool]]:
    """Play `task`'s gold plan; returns every (tool, result, isError) in order."""
    log: list[tuple[str, str, bool]] = []

    async def do(name: str, arguments: dict) -> tuple[str, bool]:
        text, error = await call(name, arguments)
        log.append((name, text, error))
        return text, error

    async def say(message: str) -> bool:
        """Send a message; True when the customer has ended the conversation."""
        text, error = await do("send_message_to_user", {"message": message})
        if error:
            raise RuntimeError(f"send_message_to_user failed: {text}")
        return ENDED in text

    queue = deque(gold_actions(task))
    criteria = task.evaluation_criteria
    infos = list(criteria.communicate_info or []) if criteria is not None else []

    def skip_users_part() -> None:  # the customer does its run of actions before it speaks
        while queue and queue[0].requestor == "user":
            queue.popleft()

    over = await say(GREETING)
    skip_users_part()
    for _ in itertools.count():
        if over:
            break
        if queue and queue[0].requestor == "assistant":
            action = queue.popleft()
            if not skip_actions:
                await do(action.name, dict(action.arguments))
            continue
        if queue:
            steps = [
                describe(a) for a in itertools.takewhile(lambda a: a.requestor == "user", queue)
            ]
            over = await say(
                "Please do the following on your side, then tell me when done: " + "; ".join(steps)
            )
            skip_users_part()
            continue
        closing = "Everything is taken care of."
        if infos:
            closing = "Here is what you need to know:\n" + "\n".join(infos)
        over = await say(closing)
        if not over:
            raise RuntimeError("the customer did not end the conversation after the closing")
    return log


async def _main() -> int:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    from tau_mcp.servers.domains.registry import load_domains

    prompt = Path(os.environ["TAU_AGENT_PROMPT_FILE"]).read_text(encoding="utf-8")
    if "policy" not in prompt.lower():
        print("the agent system prompt file holds no policy", file=sys.stderr)
        return 3
    domain = load_domains([os.environ["TAU_DOMAIN"]], os.environ.get("TAU2_DATA_DIR"))[
        os.environ["TAU_DOMAIN"]
    ]
    task = domain.task(os.environ["TAU_TASK_ID"])
    headers = {"Authorization": f"Bearer {os.environ['TAU_MCP_TOKEN']}"}
    async with httpx2.AsyncClient(headers=headers, timeout=120) as http:
        transport = streamable_http_client(os.environ["TAU_MCP_URL"], http_client=http)
        async with Client(transport) as client:

            async def call(name: str, arguments: dict) -> tuple[str, bool]:
                result = await client.call_tool(name, arguments)
                text = "".join(getattr(b, "text", "") for b in result.content)
                return text, bool(result.is_error)

            await play(call, task, skip_actions=os.environ.get("TAU_TEST_SKIP_ACTIONS") == "1")
    print(f"played {task.id}")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(_main()))
