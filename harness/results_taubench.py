"""The original τ-bench's results file, read into our layout and written from it.

The original's run.py writes a JSON list of `EnvRunResult`s: `{task_id, reward, info, traj,
trial}`, where `task_id` is the task's position in its split, `info` holds the task, the last
step's source, the user's cost and the original's `reward_info` (or `error` and `traceback` for
a task whose solve crashed), and `traj` is the agent's own message list: its system prompt,
the user's messages, its replies as the model gave them and the tools' results (`tool`
messages; act/react agents: their text replies, and tool results as `user` messages after
`API output: `).

Read, each result becomes a simulation of task `<split>_<task_id>` whose messages are what
happened: the user's messages, the agent's replies to the user and its tool calls (for
act/react, the action each reply names), the tools' results; it ends as the original ended it
(the user's `###STOP###` or the transfer tool, else the step limit or the crash), so `evaluate`
replays its tool calls and grades it as the original did. The original's own result is kept
with it (`info.taubench`), and writing the original's layout gives it back unchanged; a
simulation tau-mcp ran is written in that layout from its own record (the trajectory its
τ-bench agent kept, the task as the original models it, the original's reward_info).
"""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

from tau_mcp.conversation.messages import STOP

KEY = "taubench"  # where a simulation keeps the original's result
LAYOUT = "tau-bench"
RESPOND = "respond"
RESPOND_FIELD = "content"
ACTION_MARKER = "Action:"
OBSERVATION_PREFIX = "API output: "
TERMINATE_TOOLS = ("transfer_to_human_agents",)
RESULT_KEYS = ("task_id", "reward", "info", "traj", "trial")
# The tools' JSON an act/react system prompt carries (json.dumps of the tool listing).
TOOLS_JSON = re.compile(r'\[\{"type": "function", "function": \{"name": ')
NAMESPACE = uuid.UUID("5b0f2f5e-6f0a-4d55-9a43-3f1c2b7c9e10")


class OriginalLayoutError(ValueError):
    """A file that is not the original τ-bench's results, or a record it cannot hold."""


def is_original(data: Any) -> bool:
    """Is this parsed JSON the original τ-bench's results (a list of its results)?"""
    return (
        isinstance(data, list)
        and bool(data)
        and all(isinstance(r, dict) and set(RESULT_KEYS) <= set(r) for r in data)
    )


# --- reading ---------------------------------------------------------------------------------
def from_original(results: list[dict[str, Any]], split: str = "test") -> dict[str, Any]:
    """The original's results as a document in our layout (its domain is not recorded there:
    `evaluate --domain` names it)."""
    simulations = [_simulation(index, record, split) for index, record in enumerate(results)]
    trials = len({r.get("trial") for r in results})
    system = next((_system(r["traj"]) for r in results if r.get("traj")), None)
    return {
        "timestamp": None,
        "info": {
            "benchmark": "tau-bench",
            "converted_from": LAYOUT,
            "num_trials": trials,
            "agent_info": {"implementation": _strategy(results)},
            "user_info": {"implementation": None},
            "environment_info": {"domain_name": None, "policy": system},
        },
        "tasks": [],
        "simulations": simulations,
    }


def _system(traj: list[dict[str, Any]]) -> str | None:
    return traj[0].get("content") if traj and traj[0].get("role") == "system" else None


def _reacts(traj: list[dict[str, Any]]) -> bool:
    """An act/react agent's trajectory: its system prompt carries the tools' JSON."""
    return bool(TOOLS_JSON.search(_system(traj) or ""))


def _strategy(results: list[dict[str, Any]]) -> str | None:
    for record in results:
        traj = record.get("traj") or []
        if traj:
            return "act/react" if _reacts(traj) else "tool-calling"
    return None


def _simulation(index: int, record: dict[str, Any], split: str) -> dict[str, Any]:
    if not isinstance(record.get("task_id"), int) or not isinstance(record.get("traj"), list):
        raise OriginalLayoutError(f"result {index} has no task index or trajectory")
    info = record.get("info") or {}
    traj = record["traj"]
    messages, last_tool = _messages(traj)
    if info.get("reward_info") is not None:
        ending = "agent_stop" if last_tool in TERMINATE_TOOLS else "user_stop"
    elif "error" in info:
        ending = "agent_error"
    else:
        ending = "max_steps"
    trial = int(record.get("trial") or 0)
    return {
        "id": str(uuid.uuid5(NAMESPACE, f"{index}/{record['task_id']}/{trial}")),
        "task_id": f"{split}_{record['task_id']}",
        "trial": trial,
        "termination_reason": ending,
        "reward_info": {"reward": float(record.get("reward") or 0.0)},
        "agent_cost": None,
        "user_cost": info.get("user_cost"),
        "messages": messages,
        "mode": "half_duplex",
        "info": {KEY: record, **({"error": info["error"]} if "error" in info else {})},
    }


def _messages(traj: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], str | None]:
    """The conversation a trajectory records, and the last tool the agent called."""
    reacts = _reacts(traj)
    out: list[dict[str, Any]] = []
    last_tool: str | None = None
    pending: str | None = None  # the id of the act/react tool call awaiting its result
    for raw in traj[1:] if _system(traj) is not None else traj:
        role = raw.get("role")
        if role == "assistant":
            message, pending = _agent_message(raw, reacts, len(out))
            if message.get("tool_calls"):
                last_tool = message["tool_calls"][0]["name"]
            out.append(message)
        elif role == "tool":
            out.append(_tool_result(str(raw.get("tool_call_id") or ""), raw.get("content")))
        elif role == "user" and pending is not None:
            content = str(raw.get("content") or "")
            out.append(_tool_result(pending, content.removeprefix(OBSERVATION_PREFIX)))
            pending = None
        elif role == "user":
            out.append({"role": "user", "content": raw.get("content")})
    return out, last_tool


def _tool_result(call_id: str, content: Any) -> dict[str, Any]:
    return {"role": "tool", "id": call_id, "content": content, "requestor": "assistant"}


def _agent_message(
    raw: dict[str, Any], reacts: bool, position: int
) -> tuple[dict[str, Any], str | None]:
    """An agent's reply as our message, and (act/react) the id of the call it makes."""
    if not reacts:
        calls = raw.get("tool_calls") or []
        if calls and calls[0].get("function") is not None:
            function = calls[0]["function"]
            arguments = _json_object(function.get("arguments"))
            if function.get("name") == RESPOND:
                return _reply(arguments.get(RESPOND_FIELD)), None
            call = {
                "id": calls[0].get("id") or f"call_{position}",
                "name": function.get("name"),
                "arguments": arguments,
                "requestor": "assistant",
            }
            return {"role": "assistant", "content": raw.get("content"), "tool_calls": [call]}, None
        return _reply(raw.get("content")), None
    text = str(raw.get("content") or "")
    action_text = text.split(ACTION_MARKER)[-1].strip()
    try:
        action = json.loads(action_text)
    except json.JSONDecodeError:
        action = {"name": RESPOND, "arguments": {RESPOND_FIELD: action_text}}
    if not isinstance(action, dict) or not isinstance(action.get("arguments"), dict):
        return _reply(text), None
    if action.get("name") == RESPOND:
        return {**_reply(action["arguments"].get(RESPOND_FIELD)), "raw_data": {"text": text}}, None
    call_id = f"call_{position}"
    call = {
        "id": call_id,
        "name": action.get("name"),
        "arguments": action["arguments"],
        "requestor": "assistant",
    }
    message = {"role": "assistant", "tool_calls": [call], "raw_data": {"text": text}}
    return message, call_id


def _reply(content: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": content}


def _json_object(raw: Any) -> dict[str, Any]:
    try:
        value = json.loads(raw) if isinstance(raw, str) else raw
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


# --- writing ---------------------------------------------------------------------------------
def to_original(document: dict[str, Any], tasks: dict[str, Any] | None = None) -> list[dict]:
    """A document as the original's results: the result each simulation keeps (read from the
    original's layout), else one made from the simulation. `tasks` maps task ids to the task
    as the original models it (the task's `original` field), for the results' `info.task`."""
    policy = ((document.get("info") or {}).get("environment_info") or {}).get("policy")
    return [_result(sim, policy, tasks or {}) for sim in document["simulations"]]


def _result(sim: dict[str, Any], policy: str | None, tasks: dict[str, Any]) -> dict[str, Any]:
    kept = (sim.get("info") or {}).get(KEY)
    reward_info = sim.get("reward_info") or {}
    if isinstance(kept, dict) and set(RESULT_KEYS) <= set(kept):
        return {**kept, "reward": float(reward_info.get("reward", kept["reward"]) or 0.0)}
    task_id = str(sim.get("task_id"))
    index = task_id.rsplit("_", 1)[-1]
    if not index.isdigit():
        raise OriginalLayoutError(
            f"simulation {sim.get('id')} is of task '{task_id}', not a τ-bench task"
        )
    info: dict[str, Any] = {}
    if task_id in tasks:
        info["task"] = tasks[task_id]
    messages = sim.get("messages") or []
    if messages:
        last = messages[-1]
        info["source"] = "user" if last.get("role") == "user" else _source(messages)
    info["user_cost"] = sim.get("user_cost")
    if reward_info.get("original_reward_info") is not None:
        info["reward_info"] = reward_info["original_reward_info"]
    error = (sim.get("info") or {}).get("error")
    if error:
        info = {"error": error, "traceback": ""}
    traj = (sim.get("info") or {}).get("traj") or _traj(messages, policy)
    return {
        "task_id": int(index),
        "reward": float(reward_info.get("reward") or 0.0),
        "info": info,
        "traj": traj,
        "trial": int(sim.get("trial") or 0),
    }


def _source(messages: list[dict[str, Any]]) -> str:
    for message in reversed(messages):
        for call in message.get("tool_calls") or []:
            return str(call.get("name"))
    return "user"


def _traj(messages: list[dict[str, Any]], policy: str | None) -> list[dict[str, Any]]:
    """The tool-calling agent's message list for a conversation run by another agent."""
    traj: list[dict[str, Any]] = [{"role": "system", "content": policy or ""}]
    names: dict[str, str] = {}
    for message in messages:
        role = message.get("role")
        if role == "tool":
            call_id = str(message.get("id") or "")
            traj.append(
                {
                    "role": "tool",
                    "tool_call_id": call_id,
                    "name": names.get(call_id, ""),
                    "content": message.get("content"),
                }
            )
        elif role == "assistant" and message.get("tool_calls"):
            call = message["tool_calls"][0]
            names[str(call.get("id"))] = str(call.get("name"))
            wire = {
                "function": {
                    "arguments": json.dumps(call.get("arguments") or {}),
                    "name": call.get("name"),
                },
                "id": call.get("id"),
                "type": "function",
            }
            entry = {"role": "assistant", "tool_calls": [wire]}
            if message.get("content") is not None:
                entry = {"content": message["content"], **entry}
            traj.append(entry)
        elif role == "assistant":
            traj.append({"content": message.get("content"), "role": "assistant"})
        elif role == "user":
            traj.append({"role": "user", "content": message.get("content")})
    return traj


def ends_with_stop(messages: list[dict[str, Any]]) -> bool:
    last = messages[-1] if messages else {}
    return last.get("role") == "user" and STOP in str(last.get("content") or "")
