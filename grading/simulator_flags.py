"""Failures the simulated user may have caused, read from the trajectory: no model, no cost.

A failed simulation's diagnosis lists each of these it finds (`user_simulator_flags`); the report
shows pass^k with the flagged failures left out, as a diagnostic beside the score. Each flag is a
pattern the reference's users are known to fall into (docs/diagnosis.md):

- `stop_after_confirmation_request`: the user hung up right after the agent asked it something
  (a question), agreeing or saying nothing else, while a gold write was still pending: the
  agent never had the turn to act (tau2-bench #297, #182);
- `empty_user_turn`: the user model answered a turn with nothing (no text, no tool call); the
  `llm` user asks again once with a reminder, as tau2-bench PR #471 proposes, and marks the
  message it then sent (`raw_data.empty_retries`); an empty user message in a trajectory from
  elsewhere is flagged too;
- `scenario_leaked`: a user message repeats at least `LEAK_WORDS` consecutive words of the
  scenario's instructions to the simulator (its reason for calling, what it does not know, how
  to behave): text written for the simulator, read out to the agent;
- `against_instructions`: the user did what its instructions rule out: it said it was
  transferred (`###TRANSFER###`) when the agent had made no transfer, or it made a successful
  write call on its own tools that no gold action of the user's asks for.
"""

from __future__ import annotations

import re
from typing import Any

from tau_mcp.conversation.messages import TRANSFER, ChatMessage, Message
from tau_mcp.servers.engine.tasks import Task

FLAGS = (
    "stop_after_confirmation_request",
    "empty_user_turn",
    "scenario_leaked",
    "against_instructions",
)
#: Consecutive words a user message must share with the simulator's instructions to count as
#: leaked (long enough that a user restating its request in its own words never reaches it).
LEAK_WORDS = 12
#: The scenario's instructions meant for the simulator, never to be read out (known_info holds
#: facts the user is to give, so it is not among them).
SIMULATOR_ONLY_PARTS = ("reason_for_call", "unknown_info", "task_instructions")
_WORD = re.compile(r"[a-z0-9']+")


def _plain(value: Any) -> Any:
    return value.model_dump() if hasattr(value, "model_dump") else value


def _instruction_texts(task: Task | None) -> list[str]:
    scenario = _plain(task.user_scenario) if task is not None else None
    if isinstance(scenario, str):
        return [scenario]
    if not isinstance(scenario, dict):
        return []
    instructions = _plain(scenario.get("instructions"))
    if isinstance(instructions, str):
        return [instructions]
    if not isinstance(instructions, dict):
        return []
    return [str(instructions[k]) for k in SIMULATOR_ONLY_PARTS if instructions.get(k)]


def _shingles(text: str, size: int) -> set[tuple[str, ...]]:
    words = _WORD.findall(text.lower())
    return {tuple(words[i : i + size]) for i in range(len(words) - size + 1)}


def _turn(message: Message, index: int) -> int:
    return message.turn_idx if message.turn_idx is not None else index


def _user_messages(messages: list[Message], history: int) -> list[tuple[int, ChatMessage]]:
    return [
        (i, m)
        for i, m in enumerate(messages)
        if i >= history and isinstance(m, ChatMessage) and m.role == "user"
    ]


def empty_turn_retries(messages: list[Any]) -> int:
    """How many empty user turns were asked again in a trajectory (messages or their dicts)."""
    total = 0
    for message in messages:
        raw = (
            message.get("raw_data")
            if isinstance(message, dict)
            else getattr(message, "raw_data", None)
        )
        if isinstance(raw, dict) and isinstance(raw.get("empty_retries"), int):
            total += raw["empty_retries"]
    return total


def simulator_flags(
    task: Task | None,
    messages: list[Message],
    history: int,
    stopped_after_question: bool,
    pending_writes: list[str],
    user_extra_writes: list[dict[str, Any]],
) -> list[dict[str, Any]]:
    """The flags a failed simulation's trajectory raises, each with its turn and evidence.
    `stopped_after_question`: the user's stop came right after an agent's question, agreeing or
    silent; `pending_writes`: gold writes never attempted; `user_extra_writes`: successful
    user-side writes outside the gold plan (the diagnosis's calls)."""
    flags: list[dict[str, Any]] = []
    users = _user_messages(messages, history)
    if stopped_after_question and pending_writes and users:
        index, last = users[-1]
        flags.append(
            {
                "flag": "stop_after_confirmation_request",
                "turn_idx": _turn(last, index),
                "evidence": f"the user left ({(last.content or '').strip()[:120]!r}) while "
                f"{', '.join(pending_writes)} was pending",
            }
        )
    retried = empty_turn_retries(messages[history:])
    empty = [(i, m) for i, m in users if not m.has_text() and not m.tool_calls]
    if retried or empty:
        turn = _turn(empty[0][1], empty[0][0]) if empty else None
        if turn is None:
            turn = next(
                (
                    _turn(m, i)
                    for i, m in users
                    if isinstance(m.raw_data, dict) and m.raw_data.get("empty_retries")
                ),
                None,
            )
        flags.append(
            {
                "flag": "empty_user_turn",
                "turn_idx": turn,
                "evidence": f"{retried} empty user turn(s) asked again"
                + (f", {len(empty)} left empty" if empty else ""),
                "count": retried + len(empty),
            }
        )
    leak = _leak(task, users)
    if leak is not None:
        flags.append(leak)
    flags += _against_instructions(messages, users, user_extra_writes)
    return flags


def _leak(task: Task | None, users: list[tuple[int, ChatMessage]]) -> dict[str, Any] | None:
    written = set().union(*(_shingles(t, LEAK_WORDS) for t in _instruction_texts(task)))
    if not written:
        return None
    for index, message in users:
        shared = _shingles(message.content or "", LEAK_WORDS) & written
        if shared:
            words = " ".join(min(shared))
            return {
                "flag": "scenario_leaked",
                "turn_idx": _turn(message, index),
                "evidence": f"the user repeated its instructions word for word: '{words} ...'",
            }
    return None


def _against_instructions(
    messages: list[Message],
    users: list[tuple[int, ChatMessage]],
    user_extra_writes: list[dict[str, Any]],
) -> list[dict[str, Any]]:
    found = []
    for index, message in users:
        if TRANSFER in (message.content or ""):
            transferred = any(
                isinstance(m, ChatMessage)
                and m.role == "assistant"
                and any("transfer" in c.name for c in m.tool_calls or [])
                for m in messages[:index]
            )
            if not transferred:
                found.append(
                    {
                        "flag": "against_instructions",
                        "turn_idx": _turn(message, index),
                        "evidence": "the user said it was transferred (###TRANSFER###), but "
                        "the agent made no transfer",
                    }
                )
            break
    for call in user_extra_writes:
        found.append(
            {
                "flag": "against_instructions",
                "turn_idx": call.get("turn_idx"),
                "evidence": f"the user called {call.get('name')} on its own, which no gold "
                "action of the user asks for",
            }
        )
    return found


def flagged(diagnosis: dict[str, Any] | None) -> bool:
    """Whether a diagnosis says the simulated user may have caused the failure."""
    return bool(diagnosis and diagnosis.get("user_simulator_flags"))


__all__ = ["FLAGS", "LEAK_WORDS", "empty_turn_retries", "flagged", "simulator_flags"]
