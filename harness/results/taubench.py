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
    """A document as the original's results: the result a simulation keeps (read from the
    original's layout; its reward and reward_info as last graded), else one made from the
    simulation. `tasks` maps task ids to the task as the original models it (`original_task`),
    which a simulation tau-mcp ran needs for its `info.task`."""
    policy = ((document.get("info") or {}).get("environment_info") or {}).get("policy")
    return [_result(sim, policy, tasks or {}) for sim in document["simulations"]]


def needs_tasks(document: dict[str, Any]) -> bool:
    """Whether writing a document in the original's layout needs its domain's tasks."""
    return any(not _kept(sim) for sim in document["simulations"])


def _kept(sim: dict[str, Any]) -> dict[str, Any] | None:
    kept = (sim.get("info") or {}).get(KEY)
    return kept if isinstance(kept, dict) and set(RESULT_KEYS) <= set(kept) else None


def _result(sim: dict[str, Any], policy: str | None, tasks: dict[str, Any]) -> dict[str, Any]:
    reward_info = sim.get("reward_info") or {}
    kept = _kept(sim)
    if kept is not None:
        result = {**kept, "reward": float(reward_info.get("reward", kept["reward"]) or 0.0)}
        regraded = reward_info.get("original_reward_info")
        if regraded is not None and "reward_info" in (kept.get("info") or {}):
            result["info"] = {**kept["info"], "reward_info": regraded}
        return result
    task_id = str(sim.get("task_id"))
    index = task_id.rsplit("_", 1)[-1]
    if task_id not in tasks or not index.isdigit():
        raise OriginalLayoutError(
            f"simulation {sim.get('id')} is of task '{task_id}', not a τ-bench task"
        )
    messages = sim.get("messages") or []
    error = (sim.get("info") or {}).get("error")
    if error:
        info: dict[str, Any] = {"error": error, "traceback": ""}
    else:
        info = {
            "task": tasks[task_id],
            "source": _source(messages),
            "user_cost": sim.get("user_cost"),
            "reward_info": reward_info.get("original_reward_info"),
        }
    traj = (sim.get("info") or {}).get("traj") or _traj(messages, policy)
    return {
        "task_id": int(index),
        "reward": float(reward_info.get("reward") or 0.0),
        "info": info,
        "traj": [_as_dumped(m) for m in traj],
        "trial": int(sim.get("trial") or 0),
    }


def _source(messages: list[dict[str, Any]]) -> str:
    """The last step's source, as the original's info records it: `user` after a reply to the
    user, else the tool the agent last called."""
    for message in reversed(messages):
        if message.get("role") != "assistant":
            continue
        calls = message.get("tool_calls") or []
        return str(calls[0].get("name")) if calls else "user"
    return "user"


def _as_dumped(message: dict[str, Any]) -> dict[str, Any]:
    """An agent's reply as the original's trajectory holds it (litellm's message dump, the
    pinned release's fields: unset ones null)."""
    if message.get("role") != "assistant":
        return message
    return {
        "content": message.get("content"),
        "role": "assistant",
        "tool_calls": message.get("tool_calls"),
        "function_call": message.get("function_call"),
        "provider_specific_fields": message.get("provider_specific_fields"),
    }


def _traj(messages: list[dict[str, Any]], policy: str | None) -> list[dict[str, Any]]:
    """A tool-calling agent's message list for a conversation run by an agent that kept none."""
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
            traj.append(
                {"role": "assistant", "content": message.get("content"), "tool_calls": [wire]}
            )
        elif role == "assistant":
            traj.append({"role": "assistant", "content": message.get("content")})
        elif role == "user":
            traj.append({"role": "user", "content": message.get("content")})
    return traj


def original_text(results: list[dict[str, Any]]) -> str:
    """The original's results file as its run.py writes it (`json.dump(..., indent=2)`)."""
    return json.dumps(results, indent=2)


def original_layout_text(document: dict[str, Any]) -> str:
    """A document in the original's layout; a simulation tau-mcp ran takes its task from the
    domain the document records (loaded, which needs the τ-bench data folder)."""
    tasks: dict[str, Any] = {}
    if needs_tasks(document):
        tasks = _original_tasks(document)
    return original_text(to_original(document, tasks))


def _original_tasks(document: dict[str, Any]) -> dict[str, Any]:
    from tau_mcp.harness.wiring import load_domain
    from tau_mcp.servers.domains.tau_bench.tasks import original_task

    info = document.get("info") or {}
    name = (info.get("environment_info") or {}).get("domain_name")
    if info.get("benchmark") != "tau-bench" or not isinstance(name, str):
        raise OriginalLayoutError(
            "only results of a τ-bench domain can be written in the original τ-bench's layout"
        )
    domain = load_domain(name, None, ready="lazy")
    return {task_id: original_task(task) for task_id, task in domain.tasks.items()}
