"""Eval Protocol's own client (`ep.make` + `ep.rollout`) with a scripted policy, against a
tau-server `/{domain}/mcp` URL. Runs under an interpreter that has `eval-protocol` installed.

usage: python ep_rollout.py http://127.0.0.1:PORT/mock/mcp
Prints `RESULT {"session_id", "responses": [[tool, observation_text, reward], ...]}`.
"""

import asyncio
import json
import sys

import eval_protocol as ep
from eval_protocol.types import MCPToolCall

ROWS = [
    {
        "id": "row1",
        "system_prompt": "You are a support agent.",
        "user_prompt_template": "{observation}",
        "environment_context": {"domain": "mock", "task_id": "create_task_1"},
    }
]
SCRIPT = [
    ("get_users", {}),
    ("create_task", {"user_id": "user_1", "title": "Important Meeting"}),
    ("create_task", {"user_id": "zz", "title": "x"}),
]


class ScriptedPolicy:
    model_id = "scripted"

    def __init__(self) -> None:
        self.position = 0
        self.responses: list = []

    async def __call__(self, tool_schema, rollout_index, history):
        if self.position < len(SCRIPT):
            name, arguments = SCRIPT[self.position]
            self.position += 1
            return [MCPToolCall(tool_name=name, arguments=arguments)], None, "tool_calls"
        return [MCPToolCall(tool_name="_no_tool_call", arguments={})], None, "stop"

    def add_tool_response(self, rollout_index, tool_call, response, history, reward, done, info):
        self.responses.append((tool_call.tool_name, response, reward))
        history.append(
            {
                "role": "tool",
                "content": response if isinstance(response, str) else json.dumps(response),
            }
        )


async def main(url: str) -> None:
    envs = ep.make(url, dataset=ROWS, model_id="scripted")
    policy = ScriptedPolicy()
    await ep.rollout(envs, policy, steps=10)
    print(
        "RESULT "
        + json.dumps(
            {"session_id": envs.sessions[0].session_id, "responses": policy.responses}, default=str
        )
    )


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
