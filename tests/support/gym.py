"""Helpers for the step-wise integration tests: a policy that plays a task's gold plan."""

from __future__ import annotations

import json
from collections import deque

from tau_mcp.conversation.plan import describe, gold_actions
from tau_mcp.harness.agents import AgentContext, OracleAgent

CLOSING = "Everything is done on my side. Thank you for contacting us, goodbye."


def gold_policy(task, forms=("function", "json")):
    """Yield actions that do the task's gold agent actions (alternating function-style and
    JSON calls), ask the scripted user to do its runs, then close: with the oracle's own
    closing message (which ends the call) when the task wants facts communicated, else with a
    goodbye the scripted user ends. Send it each observation; it yields the next action."""
    queue = deque(gold_actions(task))
    criteria = task.evaluation_criteria
    facts = list(criteria.communicate_info or []) if criteria is not None else []
    oracle = OracleAgent(AgentContext(task=task, domain="", policy="", tools=[]))
    calls = 0
    observation = yield None
    while True:
        if observation.startswith("user:") or "\nuser:" in observation:
            while queue and queue[0].requestor == "user":  # the user did its run, then spoke
                queue.popleft()
        if queue and queue[0].requestor == "assistant":
            action = queue.popleft()
            if forms[calls % len(forms)] == "json":
                step = json.dumps({"name": action.name, "arguments": action.arguments})
            else:
                step = describe(action)
            calls += 1
        elif queue:
            wanted = [describe(a) for a in queue if a.requestor == "user"]
            step = "Please do this on your side and tell me when done: " + "; ".join(wanted)
        else:
            step = oracle._closing() if facts else CLOSING
        observation = yield step
