"""Fake models that hold a real conversation on every domain, for the record/replay tests.

Each answer is decided from the request alone (so any number of concurrent simulations get the
same answers in any order): the agent calls a tool or two (a knowledge-base search with a
query, else the first tool that needs no argument), then writes to the user; the user states a
request, answers once and hangs up; the judge meets every outcome but the ones naming a word it
dislikes. Results files compare with `comparable`: what must be equal between a run and its
replay (ids, times and durations left out, and the header's `cassette`; simulations in task
and trial order, since a file lists them as they finish).
"""

from __future__ import annotations

import json
from typing import Any

from tau_mcp.conversation.cassette import VOLATILE_TEXT
from tests.support.fake_llm_server import FakeLLMServer, text

AGENT, USER, JUDGE, OTHER_AGENT, OTHER_JUDGE = (
    "agent-model",
    "user-model",
    "judge-model",
    "other-agent",
    "other-judge",
)
TOOL_CALLS = 2
VOLATILE = frozenset({"id", "timestamp", "start_time", "end_time", "duration", "episode_id"})


def _tool_call(body: dict[str, Any]) -> dict[str, Any] | None:
    seen = sum(1 for m in body["messages"] if m["role"] == "tool")
    if seen >= TOOL_CALLS:
        return None
    for tool in body.get("tools") or []:
        function = tool["function"]
        required = (function.get("parameters") or {}).get("required") or []
        if required == ["query"]:
            return {"tool_calls": [(function["name"], {"query": "credit card annual fee"})]}
    for tool in body.get("tools") or []:
        function = tool["function"]
        if not (function.get("parameters") or {}).get("required"):
            return {"tool_calls": [(function["name"], {})]}
    for tool in body.get("tools") or []:  # a call that may fail: its error is a result too
        function = tool["function"]
        required = (function.get("parameters") or {}).get("required") or []
        return {"tool_calls": [(function["name"], dict.fromkeys(required, "0"))]}
    return None


def agent(body: dict[str, Any]) -> dict[str, Any]:
    return _tool_call(body) or text("I have looked into it. Is there anything else?")


def other_agent(body: dict[str, Any]) -> dict[str, Any]:
    """Another agent: never calls a tool, and says so."""
    return text("I cannot look that up, sorry.")


def user(body: dict[str, Any]) -> dict[str, Any]:
    # The user model sees the agent's texts as `user` messages (the greeting is the first).
    heard = sum(1 for m in body["messages"] if m["role"] == "user")
    if heard == 2 and not any(m["role"] == "tool" for m in body["messages"]):
        for tool in body.get("tools") or []:  # a user with tools (telecom) uses one
            if not (tool["function"].get("parameters") or {}).get("required"):
                return {"tool_calls": [(tool["function"]["name"], {})]}
    if heard >= 3:
        return text("Thank you, that is all. ###STOP###")
    if heard == 2:
        return text("I see. Could you check once more, please?")
    return text("Hi, I need help with my account.")


def judge_for(statements: list[str], dislike: str = "") -> Any:
    """A judge that knows every statement a run can ask about; it meets each statement
    present in the request unless it contains `dislike`."""

    def answer(body: dict[str, Any]) -> dict[str, Any]:
        content = body["messages"][-1]["content"]
        asked = sorted((content.find(repr(s)), s) for s in statements if repr(s) in content)
        results = [
            {
                "expectedOutcome": s,
                "metExpectation": not (dislike and dislike in s.lower()),
                "reasoning": "fake judge",
            }
            for _, s in asked
        ]
        return text(json.dumps({"results": results}))

    return answer


RERANKER = "gpt-5.2"  # the reranker's default model


def rate(body: dict[str, Any]) -> dict[str, Any]:
    """The reranker: documents that mention a fee are relevant."""
    content = body["messages"][0]["content"].lower()
    return text(json.dumps({"relevance_score": 8 if "fee" in content else 3}))


def script_models(fake: FakeLLMServer, statements: list[str] = ()) -> None:
    fake.respond(AGENT, agent)
    fake.respond(OTHER_AGENT, other_agent)
    fake.respond(USER, user)
    fake.respond(JUDGE, judge_for(list(statements)))
    fake.respond(OTHER_JUDGE, judge_for(list(statements), dislike="refund"))
    fake.respond(RERANKER, rate)


def model_args(fake: FakeLLMServer) -> dict[str, Any]:
    return {"api_base": fake.api_base, "api_key": "fake-key", "temperature": 0.0}


def comparable(document: Any) -> Any:
    """A results document less what differs between a run and its replay by nature; its
    simulations in (task, trial) order (a file lists them as they finished)."""
    if isinstance(document, dict) and isinstance(document.get("simulations"), list):
        sims = sorted(document["simulations"], key=lambda s: (str(s["task_id"]), s.get("trial")))
        document = {**document, "simulations": sims}
    if isinstance(document, dict):
        return {
            key: comparable(value)
            for key, value in document.items()
            if key not in VOLATILE and key != "cassette"
        }
    if isinstance(document, list):
        return [comparable(item) for item in document]
    if isinstance(document, str):  # a search tool's timing note is a duration
        return VOLATILE_TEXT.sub("[Timing]", document)
    return document
