"""Why a simulation failed, from what the grader already has: no model, no cost.

`diagnose` reads the trajectory, the task's criteria, the grader's reward_info and, when the DB
check failed, the rows where the final state differs from the gold state (`tau_mcp.grading.db_diff`).
It returns the evidence per failed component, the ending, tool errors per side, the first turn
that left the gold plan, and one category from `CATEGORIES` with the side it falls on. A
passing simulation gets no diagnosis. docs/diagnosis.md says how each category is decided and
where the diagnosis is stored (`reward_info.info.diagnosis`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from tau_mcp.conversation.messages import OUT_OF_SCOPE, TRANSFER, ChatMessage, Message, ToolMessage
from tau_mcp.grading.checks import passed
from tau_mcp.grading.simulator_flags import simulator_flags
from tau_mcp.servers.engine.tasks import Action, Task

VERSION = 2  # 2: user_simulator_flags

#: The fixed vocabulary, in the order the rules are tried (the first that applies wins).
CATEGORIES = (
    "infrastructure",
    "limit_reached",
    "protocol_error",
    "wrong_arguments",
    "wrong_tool",
    "unexpected_write",
    "premature_user_end",
    "missing_action",
    "db_mismatch",
    "env_assertion_unmet",
    "missing_information",
    "judge_only",
    "other",
)
SIDES = ("agent", "user", "infrastructure")
INFRA = "infrastructure_error"
LIMIT_ENDINGS = {"max_steps", "too_many_errors", "timeout"}
PROTOCOL_ENDINGS = {"agent_error": "agent", "user_error": "user"}
STATE_COMPONENTS = {"DB", "ACTION", "ENV_ASSERTION"}
#: Tool errors kept as examples per side.
ERROR_EXAMPLES = 3
_AFFIRMATION = re.compile(
    r"\b(yes|yeah|yep|confirm(ed)?|correct|go ahead|proceed|please do|sounds good)\b", re.I
)
_STOP_TOKENS = re.compile(r"###[A-Z-]+###")


# --- the trajectory as calls ------------------------------------------------------------------
@dataclass
class Call:
    turn_idx: int | None
    name: str
    arguments: dict[str, Any]
    side: str  # "agent" or "user"
    kind: str | None  # the tool's kind (read, write, ...) when known
    error: bool
    result: str | None
    given: bool = False  # part of the task's own message history, not of this simulation

    def brief(self) -> dict[str, Any]:
        return {
            "turn_idx": self.turn_idx,
            "name": self.name,
            "arguments": self.arguments,
            "side": self.side,
            "error": self.error,
        }


def _side(requestor: str | None) -> str:
    return "user" if requestor == "user" else "agent"


def calls_of(messages: list[Message], tool_kinds: dict[str, str], history: int = 0) -> list[Call]:
    """Every tool call of the trajectory with its turn and its result (matched by call id);
    calls among the first `history` messages (the task's own history) are marked `given`."""
    results: dict[str, ToolMessage] = {}
    for message in messages:
        if isinstance(message, ToolMessage) and message.id not in results:
            results[message.id] = message
    calls = []
    for index, message in enumerate(messages):
        if not isinstance(message, ChatMessage) or not message.tool_calls:
            continue
        turn = message.turn_idx if message.turn_idx is not None else index
        for call in message.tool_calls:
            result = results.get(call.id) if call.id else None
            calls.append(
                Call(
                    turn,
                    call.name,
                    dict(call.arguments or {}),
                    _side(call.requestor),
                    tool_kinds.get(call.name),
                    bool(result.error) if result is not None else False,
                    result.content if result is not None else None,
                    index < history,
                )
            )
    return calls


# --- gold actions against the calls -----------------------------------------------------------
def argument_diff(action: Action, arguments: dict[str, Any]) -> list[dict[str, Any]]:
    """The compared arguments where a call differs from a gold action."""
    keys = action.compare_args
    if keys is None:
        keys = list(action.arguments) + [k for k in arguments if k not in action.arguments]
    return [
        {"argument": key, "got": arguments.get(key), "expected": action.arguments.get(key)}
        for key in keys
        if arguments.get(key) != action.arguments.get(key)
    ]


def _shared_values(action: Action, call: Call) -> int:
    values = [v for v in action.arguments.values() if isinstance(v, str | int | float)]
    return sum(1 for v in call.arguments.values() if v in values)


@dataclass
class ActionEvidence:
    action: Action
    kind: str | None
    closest: Call | None
    same_tool: bool

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "action": {
                "action_id": self.action.action_id,
                "requestor": self.action.requestor,
                "name": self.action.name,
                "arguments": self.action.arguments,
                "compare_args": self.action.compare_args,
            },
            "tool_kind": self.kind,
            "closest_call": self.closest.brief() if self.closest else None,
            "same_tool": self.same_tool,
            "argument_diff": None,
        }
        if self.closest is not None and self.same_tool:
            out["argument_diff"] = argument_diff(self.action, self.closest.arguments)
        return out


def _match(gold: list[Action], calls: list[Call]) -> tuple[list[bool], set[int]]:
    """Which gold actions some call satisfies (the grader's rule: any call, by name and
    compared arguments), and the calls that satisfy them: for each action its first matching
    call not already taken by another action. A later call repeating a satisfied action is
    not among them."""
    matched, used = [], set()
    for action in gold:
        hits = [i for i, c in enumerate(calls) if action.matches(c.name, c.arguments)]
        matched.append(bool(hits))
        free = [i for i in hits if i not in used]
        if free or hits:
            used.add((free or hits)[0])
    return matched, used


def _closest(action: Action, calls: list[Call], unexpected: list[Call], kind: str | None):
    """The call that came nearest to a missing gold action: a call of the same tool with the
    fewest differing arguments (the latest on a tie); else a successful call of another tool of
    the same kind, on the same side, outside the gold plan, that shares the most argument values
    with the action, or is the only such call. `calls` are those that met no gold action: a
    call that did was right, and is no evidence against another action of its tool."""
    same = [c for c in calls if c.name == action.name]
    if same:
        best = min(reversed(same), key=lambda c: len(argument_diff(action, c.arguments)))
        return best, True
    side = _side(action.requestor)
    others = [
        c
        for c in unexpected
        if c.side == side and c.kind == kind and not c.error and c.name != action.name
    ]
    sharing = [c for c in others if _shared_values(action, c)]
    if sharing:
        return max(sharing, key=lambda c: _shared_values(action, c)), False
    if len(others) == 1:  # the one write of that kind made instead
        return others[0], False
    return None, False


# --- the ending ------------------------------------------------------------------------------
def _last(messages: list[Message], role: str) -> ChatMessage | None:
    for message in reversed(messages):
        if isinstance(message, ChatMessage) and message.role == role:
            return message
    return None


def ending_of(termination: str, messages: list[Message]) -> dict[str, Any]:
    kind, by = termination, "limit"
    if termination == "user_stop":
        last = _last(messages, "user")
        text = (last.content or "") if last is not None else ""
        kind = "transfer" if TRANSFER in text else "out_of_scope" if OUT_OF_SCOPE in text else kind
        by = "user"
    elif termination == "agent_stop":
        by = "agent"
    elif termination in PROTOCOL_ENDINGS:
        by = PROTOCOL_ENDINGS[termination]
    elif termination == INFRA:
        kind, by = "infrastructure", "infrastructure"
    return {"termination_reason": termination, "kind": kind, "by": by}


def _asked_then_left(messages: list[Message]) -> bool:
    """The user's stop came right after the agent asked something, and the user either
    agreed or said nothing besides the stop token: the agent never got the turn to act."""
    stop_at = next(
        (
            i
            for i in range(len(messages) - 1, -1, -1)
            if isinstance(messages[i], ChatMessage) and messages[i].role == "user"
        ),
        None,
    )
    if stop_at is None:
        return False
    agent_text = next(
        (
            m
            for m in reversed(messages[:stop_at])
            if isinstance(m, ChatMessage) and m.role == "assistant" and m.has_text()
        ),
        None,
    )
    if agent_text is None or "?" not in (agent_text.content or ""):
        return False
    said = _STOP_TOKENS.sub("", messages[stop_at].content or "").strip()
    return not said or bool(_AFFIRMATION.search(said))


# --- the rest of the evidence ----------------------------------------------------------------
def tool_errors(calls: list[Call]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for side in ("agent", "user"):
        failed = [c for c in calls if c.side == side and c.error]
        out[side] = {
            "count": len(failed),
            "examples": [
                {"turn_idx": c.turn_idx, "name": c.name, "error": (c.result or "")[:300]}
                for c in failed[:ERROR_EXAMPLES]
            ],
        }
    return out


def left_gold_plan(gold: list[Action], calls: list[Call], messages: list[Message]):
    """The first turn where the trajectory left the gold plan: the first call that is a write
    or names a gold tool and satisfies no gold action still open; or, when every such call was
    on the plan, the last turn, if gold actions were left undone."""
    if not gold:
        return None
    open_actions = list(gold)
    gold_names = {a.name for a in gold}
    for call in calls:
        if call.kind != "write" and call.name not in gold_names:
            continue
        if call.given:  # the task's history: done before the simulation began
            hit = next((a for a in open_actions if a.matches(call.name, call.arguments)), None)
            if hit is not None:
                open_actions.remove(hit)
            continue
        hit = next((a for a in open_actions if a.matches(call.name, call.arguments)), None)
        if hit is not None:
            open_actions.remove(hit)
            continue
        if any(a.matches(call.name, call.arguments) for a in gold):
            reason = f"{call.name} was called again (the gold plan has it once)"
        elif call.name in gold_names:
            reason = f"{call.name} was called with arguments the gold plan does not have"
        else:
            reason = f"{call.name} is not in the gold plan"
        return {"turn_idx": call.turn_idx, "name": call.name, "reason": reason}
    if open_actions:
        last = messages[-1] if messages else None
        turn = getattr(last, "turn_idx", None) if last is not None else None
        names = ", ".join(a.name for a in open_actions)
        return {"turn_idx": turn, "name": None, "reason": f"the conversation ended before {names}"}
    return None


def _failed_components(reward_info: dict[str, Any]) -> list[str]:
    breakdown = reward_info.get("reward_breakdown") or {}
    return [name for name, value in breakdown.items() if not passed(value)]


# --- the diagnosis ---------------------------------------------------------------------------
def diagnose(
    task: Task | None,
    messages: list[Message],
    termination: str,
    reward_info: dict[str, Any] | None,
    tool_kinds: dict[str, str],
    db_diff: tuple[list[dict[str, Any]], int] | None = None,
) -> dict[str, Any] | None:
    """The diagnosis of a simulation, or None when it passed. `db_diff` is the (rows, rows
    left out) of `tau_mcp.grading.db_diff.diff_states`, given only when the DB check failed."""
    if termination != INFRA and reward_info is not None and passed(reward_info.get("reward")):
        return None
    info = reward_info or {}
    criteria = task.evaluation_criteria if task is not None else None
    gold = list((criteria.actions if criteria else None) or [])
    state = task.initial_state if task is not None else None
    history = len((state.message_history if state else None) or [])
    every = calls_of(messages, tool_kinds, history)
    matched, used = _match(gold, every)  # the grader's rule: the history's calls count too
    calls = [c for c in every if not c.given]
    unexpected = [
        c for i, c in enumerate(every) if c.kind == "write" and i not in used and not c.given
    ]
    # Candidates for the closest call to a missing action: calls that met no gold action (one
    # that met another action of the same tool was right; the story there is the missing one).
    off_plan = [c for c in calls if not any(a.matches(c.name, c.arguments) for a in gold)]
    missing = []
    for action, hit in zip(gold, matched, strict=True):
        if hit:
            continue
        kind = tool_kinds.get(action.name)
        closest, same_tool = _closest(action, off_plan, unexpected, kind)
        missing.append(ActionEvidence(action, kind, closest, same_tool))
    ending = ending_of(termination, messages)
    pending = [m for m in missing if m.kind == "write" and m.closest is None]
    user_left_pending = ending["kind"] in ("user_stop", "out_of_scope") and bool(pending)
    failed = _failed_components(info)
    out: dict[str, Any] = {
        "version": VERSION,
        "category": "other",
        "side": "agent",
        "summary": "",
        "failed_components": failed,
        "ending": ending,
        "user_ended_with_write_pending": user_left_pending,
        "db_diff": db_diff[0] if db_diff is not None else None,
        "db_diff_more": db_diff[1] if db_diff is not None else 0,
        "missing_actions": [m.as_dict() for m in missing],
        "unexpected_writes": [c.brief() for c in unexpected],
        "unmet_env_assertions": [
            c.get("env_assertion") for c in info.get("env_assertions") or [] if not c.get("met")
        ],
        "missing_information": [
            c.get("info") for c in info.get("communicate_checks") or [] if not c.get("met")
        ],
        "failed_nl_assertions": [
            {"assertion": c.get("nl_assertion"), "justification": c.get("justification")}
            for c in info.get("nl_assertions") or []
            if not c.get("met")
        ],
        "tool_errors": tool_errors(calls),
        "left_gold_plan": left_gold_plan(gold, every, messages),
    }
    category, side, summary = _categorize(out, missing, unexpected, messages, failed)
    out.update(category=category, side=side, summary=summary)
    out["user_simulator_flags"] = simulator_flags(
        task,
        messages,
        history,
        stopped_after_question=ending["kind"] in ("user_stop", "out_of_scope")
        and _asked_then_left(messages),
        pending_writes=[m.action.name for m in pending],
        user_extra_writes=[c.brief() for c in unexpected if c.side == "user" and not c.error],
    )
    return out


def _call_text(call: Call) -> str:
    turn = f" (turn {call.turn_idx})" if call.turn_idx is not None else ""
    return f"{call.name}{turn}"


def _categorize(out, missing, unexpected, messages, failed) -> tuple[str, str, str]:
    """The first rule of CATEGORIES that applies, the side it falls on, and one sentence."""
    ending = out["ending"]
    termination = ending["termination_reason"]
    if termination == INFRA:
        return (
            "infrastructure",
            "infrastructure",
            "The simulation failed for infrastructure reasons.",
        )
    if termination in LIMIT_ENDINGS:
        errors = out["tool_errors"]
        side = "agent"
        if termination == "too_many_errors" and errors["user"]["count"] > errors["agent"]["count"]:
            side = "user"
        what = {"max_steps": "step limit", "timeout": "time limit"}.get(
            termination, "limit on tool errors"
        )
        return "limit_reached", side, f"The conversation hit the {what} ({termination})."
    if termination in PROTOCOL_ENDINGS:
        side = PROTOCOL_ENDINGS[termination]
        return "protocol_error", side, f"The {side} broke the message protocol ({termination})."
    state_failed = bool(set(failed) & STATE_COMPONENTS)
    if state_failed:
        for m in missing:
            if m.closest is not None and m.same_tool:
                diff = argument_diff(m.action, m.closest.arguments)
                args = ", ".join(
                    f"{d['argument']}={d['got']!r} (gold {d['expected']!r})" for d in diff
                )
                return (
                    "wrong_arguments",
                    m.closest.side,
                    f"{_call_text(m.closest)} was called with {args}.",
                )
        for m in missing:
            if m.closest is not None:
                return (
                    "wrong_tool",
                    m.closest.side,
                    f"{_call_text(m.closest)} was called where the gold plan has {m.action.name}.",
                )
        done = [c for c in unexpected if not c.error]
        if done and ("DB" in failed or "ENV_ASSERTION" in failed):
            names = ", ".join(_call_text(c) for c in done[:3])
            return (
                "unexpected_write",
                done[0].side,
                f"Write call(s) outside the gold plan changed the state: {names}.",
            )
        if out["user_ended_with_write_pending"] and _asked_then_left(messages):
            pending = [m.action.name for m in missing if m.kind == "write" and m.closest is None]
            return (
                "premature_user_end",
                "user",
                "The user ended the call right after the agent asked, while "
                f"{', '.join(pending)} was still pending.",
            )
        if missing:
            # The agent leads the conversation: a user-side action left undone (say, a phone
            # setting in telecom) counts against it too.
            names = ", ".join(m.action.name for m in missing)
            return "missing_action", "agent", f"Gold action(s) never performed: {names}."
        if "DB" in failed:
            return (
                "db_mismatch",
                "agent",
                "The final state differs from the gold state though every gold action was done.",
            )
        if "ENV_ASSERTION" in failed:
            return "env_assertion_unmet", "agent", "An environment assertion is not met."
    if "COMMUNICATE" in failed:
        return (
            "missing_information",
            "agent",
            "The agent never told the user: " + "; ".join(map(str, out["missing_information"])),
        )
    if failed == ["NL_ASSERTION"]:
        return "judge_only", "agent", "Only the NL-assertion judge failed the simulation."
    return "other", "agent", "No rule of the diagnosis explains this failure."


def infrastructure_diagnosis(sim: dict[str, Any]) -> dict[str, Any]:
    """What readers show for an infrastructure-error record (it has no reward_info to hold a
    diagnosis): the category and the recorded error."""
    error = str((sim.get("info") or {}).get("error") or "unknown error")
    return {
        "version": VERSION,
        "category": "infrastructure",
        "side": "infrastructure",
        "summary": f"Infrastructure error: {error[:300]}",
        "failed_components": [],
        "ending": ending_of(INFRA, []),
        "user_ended_with_write_pending": False,
    }


def diagnosis_of(sim: dict[str, Any]) -> dict[str, Any] | None:
    """A simulation record's diagnosis: the stored one, the infrastructure one, or None (it
    passed, or it was graded before diagnoses existed). A failure in a robustness run that
    came after injected faults says so (`after_faults`), whenever it was graded."""
    if sim.get("termination_reason") == INFRA:
        return infrastructure_diagnosis(sim)
    info = (sim.get("reward_info") or {}).get("info")
    stored = info.get("diagnosis") if isinstance(info, dict) else None
    if not isinstance(stored, dict):
        return None
    faults = after_faults(sim)
    return {**stored, "after_faults": faults} if faults is not None else stored


def after_faults(sim: dict[str, Any]) -> dict[str, Any] | None:
    """The injected faults a simulation's calls met (its record's `info.faults`, docs/faults.md)
    as evidence for its diagnosis: how many, of which kinds, where the first was, and one
    sentence; None when it met none."""
    info = sim.get("info")
    raw = info.get("faults") if isinstance(info, dict) else None
    faults = [f for f in raw if isinstance(f, dict)] if isinstance(raw, list) else []
    if not faults:
        return None
    kinds: dict[str, int] = {}
    for fault in faults:
        kind = str(fault.get("kind"))
        kinds[kind] = kinds.get(kind, 0) + 1
    shown = ", ".join(
        f"{f.get('kind')} on {f.get('tool')}"
        + (f" (turn {f['turn_idx']})" if f.get("turn_idx") is not None else "")
        for f in faults[:4]
    )
    more = f" and {len(faults) - 4} more" if len(faults) > 4 else ""
    return {
        "count": len(faults),
        "kinds": kinds,
        "first_turn_idx": faults[0].get("turn_idx"),
        "summary": f"The failure came after {len(faults)} injected fault(s): {shown}{more}.",
    }
