"""A fake-model run of one domain with failures of several kinds, and its breakdown.

    python scripts/failure_breakdown.py --domain retail [--num-tasks 12] [--trials 2]
        [--save-to results/fake_retail.json] [--max-steps 30] [--retrieval-config bm25_grep]

The `llm` agent and the `llm` user of `tau-harness run` talk to a scripted OpenAI-compatible
server (tests/support/fake_llm_server.py) through litellm, on the real server over MCP, graded and
diagnosed as any run. The script plays each simulation from the task's gold plan, bent by a
behaviour picked per (task, trial): follow the plan; skip the last agent write and claim it
done; make the last agent write with one argument changed; ask the user before the last write
(the user agrees and hangs up); or loop on a read call until the step limit. Simulations run one
at a time so the server knows which task is playing. At the end the Markdown report of the run
is printed (`tau-harness report FILE --format md`): pass^1..4, average reward, cost, the error
breakdown and the noise figure. The failures come from the script's behaviours; which category
each gets is the diagnosis's own decision.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.fake_llm_server import FakeLLMServer  # noqa: E402

BEHAVIOURS = ("gold", "gold", "skip_last", "wrong_argument", "ask_then_hang_up", "loop")
ASK = "Shall I proceed?"
HANDOFF = "Please do this on your phone: "
DONE = "Everything is done on my side. Is there anything else?"


def behaviour(task_id: str, trial: int) -> str:
    digest = int(hashlib.sha1(f"{task_id}:{trial}".encode()).hexdigest(), 16)
    return BEHAVIOURS[digest % len(BEHAVIOURS)]


def _bent(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return value + 1
    if isinstance(value, str):
        return value + "_x"
    return value


def stuck_call(domain, actions) -> tuple[str, dict[str, Any]] | None:
    """A read call to repeat forever: the plan's first agent read, else an agent read tool
    that needs no argument."""
    specs = domain.spec.agent_tools.specs
    for action in actions:
        spec = specs.get(action.name)
        if action.requestor != "user" and spec is not None and spec.kind.value == "read":
            return action.name, action.arguments
    for name, spec in specs.items():
        if spec.kind.value == "read" and not spec.input_schema.get("required"):
            return name, {}
    return None


def agent_steps(domain, task, how: str) -> list[tuple[str, Any]]:
    """The agent's turns, in order: ("call", (name, arguments)), ("say", text)."""
    actions = list((task.evaluation_criteria.actions if task.evaluation_criteria else None) or [])
    mine = [i for i, a in enumerate(actions) if a.requestor != "user"]
    last = mine[-1] if mine else None
    steps: list[tuple[str, Any]] = []
    stuck = stuck_call(domain, actions) if how == "loop" else None
    if stuck is not None:
        return [("call", stuck)] * 1000
    for index, action in enumerate(actions):
        if action.requestor == "user":
            steps.append(("say", HANDOFF + json.dumps([action.name, action.arguments])))
            continue
        if index == last and how == "skip_last":
            continue
        arguments = dict(action.arguments)
        if index == last and how == "wrong_argument" and arguments:
            key = next(iter(arguments))
            arguments[key] = _bent(arguments[key])
        if index == last and how == "ask_then_hang_up":
            steps.append(("say", f"Next I will run {action.name} for you. {ASK}"))
        steps.append(("call", (action.name, arguments)))
    steps.append(("say", DONE))
    return steps


class Script:
    """Which simulation is playing, and the replies of both sides for it."""

    def __init__(self) -> None:
        self.steps: list[tuple[str, Any]] = []

    def agent(self, body: dict[str, Any]) -> dict[str, Any]:
        turns = sum(1 for m in body["messages"] if m["role"] == "assistant")  # greeting first
        index = turns - 1
        if index >= len(self.steps):
            return {"content": DONE}
        kind, what = self.steps[index]
        if kind == "call":
            return {"tool_calls": [what]}
        return {"content": what}

    def user(self, body: dict[str, Any]) -> dict[str, Any]:
        messages = body["messages"]
        if not any(m["role"] == "assistant" for m in messages):
            return {"content": "Hi, I need help with the request in my ticket."}
        last = messages[-1]
        if last["role"] == "tool":
            return {"content": "Done. What is next?"}
        said = last.get("content") or ""
        if ASK in said:
            return {"content": "Yes, go ahead. ###STOP###"}
        if said.startswith(HANDOFF):
            name, arguments = json.loads(said[len(HANDOFF) :])
            return {"tool_calls": [(name, arguments)]}
        if DONE in said:
            return {"content": "Thank you. ###STOP###"}
        return {"content": "Okay."}


class OneAtATime:
    """An executor for the runner: each simulation is told to the script before it runs."""

    def __init__(self, simulations, script: Script) -> None:
        self.simulations, self.script = simulations, script

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        yield

    async def simulate(self, task, trial: int, seed: int) -> dict[str, Any]:
        how = behaviour(task.id, trial)
        self.script.steps = agent_steps(self.simulations.domain, task, how)
        return await self.simulations.simulate(task, trial, seed)


async def run(args) -> Path:
    from tau_mcp.harness.backends.http import in_process_backend
    from tau_mcp.harness.config import RunConfig
    from tau_mcp.harness.runner import Runner
    from tau_mcp.harness.simulate import SimulationRunner
    from tau_mcp.servers.domains.registry import load_domains

    domain = load_domains([args.domain], args.data_dir)[args.domain]
    domain.load()
    script = Script()
    with FakeLLMServer() as server:
        server.respond("fake-agent", script.agent)
        server.respond("fake-user", script.user)
        config = RunConfig(
            domain=args.domain,
            agent="llm",
            agent_llm="openai/fake-agent",
            agent_llm_args=server.llm_args(),
            user="llm",
            user_llm="openai/fake-user",
            user_llm_args=server.llm_args(),
            num_tasks=args.num_tasks,
            num_trials=args.trials,
            max_concurrency=1,
            max_steps=args.max_steps,
            max_retries=0,
            judge_llm="none",
            save_to=args.save_to,
            retrieval_config=args.retrieval_config,
        )
        backend = await in_process_backend({domain.name: domain})
        try:
            simulations = SimulationRunner(backend, domain, config)
            await Runner(simulations, OneAtATime(simulations, script)).run()
        finally:
            await backend.close()
    return args.save_to


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--domain", required=True)
    parser.add_argument("--num-tasks", type=int, default=12)
    parser.add_argument("--trials", type=int, default=2)
    parser.add_argument("--max-steps", type=int, default=30)
    parser.add_argument("--save-to", type=Path, default=None)
    parser.add_argument("--data-dir", default=None)
    parser.add_argument(
        "--retrieval-config",
        default=None,
        help="banking_knowledge: the retrieval config (its default, alltools, needs an API key; "
        "an offline one such as bm25_grep runs here)",
    )
    args = parser.parse_args()
    args.save_to = args.save_to or Path("results") / f"fake_{args.domain}.json"
    if args.save_to.exists():
        args.save_to.unlink()
    path = asyncio.run(run(args))
    from tau_mcp.harness.report.build import write_report

    write_report([path], "md", None)


if __name__ == "__main__":
    main()
