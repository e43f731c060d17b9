"""The reference's LLM review of a simulation (`tau2 review`, `tau2 run --auto-review`): its
requests and the way it reads the replies.

Every text the review model sees comes from the data folder's
`tau2/reference_texts/review.json` (prompts, templates, the trajectory layout, the default
model); this module only applies the rules that file documents. Mode `full` sends two requests
per simulation, the review of both sides and then the authentication classifier; mode `user`
sends one, the review of the user simulator over what the user saw. Replies are parsed the
reference's way, quirks included (docs/review.md lists them): a reply that cannot be read
becomes the reference's parse-failure object, never an exception.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from tau_mcp.conversation import llm
from tau_mcp.conversation.reference_prompts import fill, render_scenario
from tau_mcp.conversation.reference_texts import FOLDER, ReferenceTexts
from tau_mcp.servers.engine.data import load_structured
from tau_mcp.servers.engine.errors import DataError
from tau_mcp.servers.engine.tasks import Task

REVIEW_FILE = "review.json"
MODES = ("full", "user")


# --- the texts ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class ReviewTexts:
    """review.json of one data folder."""

    path: Path
    data: dict[str, Any]

    def section(self, name: str) -> dict[str, Any]:
        value = self.data.get(name)
        if not isinstance(value, dict):
            raise DataError(f"{self.path} has no '{name}' section")
        return value

    @property
    def default_model(self) -> str:
        return str(self.section("defaults")["review_model"])

    @property
    def templates(self) -> dict[str, str]:
        return self.section("trajectory_format")["templates"]


def review_texts(data_dir: str | Path | None) -> ReviewTexts | None:
    """The data folder's review texts, or None when it has none."""
    if data_dir is None:
        return None
    path = Path(data_dir) / FOLDER / REVIEW_FILE
    if not path.is_file():
        return None
    return _load(path.resolve())


@lru_cache(maxsize=4)
def _load(path: Path) -> ReviewTexts:
    data = load_structured(path)
    if not isinstance(data, dict):
        raise DataError(f"{path} is not a JSON object")
    return ReviewTexts(path, data)


# --- the trajectory as the review model reads it ------------------------------------------------
def _field(message: Any, name: str) -> Any:
    return message.get(name) if isinstance(message, dict) else getattr(message, name, None)


def _call_fields(call: Any) -> tuple[str, Any]:
    return _field(call, "name"), _field(call, "arguments")


def render_message(texts: ReviewTexts, message: Any) -> str:
    """One message in the review layout: a header line (with the turn, when known), the text
    when there is any, one block per tool call; a tool result says whom it answers."""
    t = texts.templates
    turn = _field(message, "turn_idx")
    prefix = fill(t["turn_prefix"], {"turn_idx": turn}) if turn is not None else ""
    role = _field(message, "role")
    content = _field(message, "content")
    if role == "tool":
        template = t["tool_error"] if _field(message, "error") else t["tool"]
        lines = template.split("\n")
        if not content:  # the fence around the content goes with it
            at = next(i for i, line in enumerate(lines) if "{content}" in line)
            lines = lines[: at - 1] + lines[at + 2 :]
        values = {"requestor": _field(message, "requestor"), "content": content}
        return prefix + fill("\n".join(lines), values)
    header, _, _ = t[role if role in ("assistant", "user") else "system"].partition("\n")
    parts = [prefix + header]
    if content:
        parts.append(content)
    if role in ("assistant", "user"):
        _, _, call_block = t["assistant_tool_calls_only"].partition("\n")
        for call in _field(message, "tool_calls") or []:
            name, arguments = _call_fields(call)
            parts.append(
                fill(call_block, {"name": name, "arguments_json": json.dumps(arguments, indent=2)})
            )
    return "\n".join(parts)


def render_trajectory(texts: ReviewTexts, messages: list[Any]) -> str:
    joiner = texts.section("trajectory_format")["message_joiner"]
    return joiner.join(render_message(texts, m) for m in messages)


def user_visible(messages: list[Any]) -> list[Any]:
    """What the user simulator saw: its own messages and tool results, and the agent's texts
    (an agent message with tool calls is kept, without them, only when its content is not
    None)."""
    kept: list[Any] = []
    for message in messages:
        role = _field(message, "role")
        if role == "user" or (role == "tool" and _field(message, "requestor") == "user"):
            kept.append(message)
        elif role == "assistant":
            if _field(message, "tool_calls") is None:
                kept.append(message)
            elif _field(message, "content") is not None:
                plain = dict(message) if isinstance(message, dict) else message.model_dump()
                plain["tool_calls"] = None
                kept.append(plain)
    return kept


def render_actions(texts: ReviewTexts, task: Task) -> str:
    """The task's gold actions as the example trajectory: every field, nulls included. A task
    without gold actions (its reward rests on other checks) shows an empty trajectory, as one
    with an empty list does; the reference's review raises there, so an auto-reviewed run of
    such a task failed (docs/review.md)."""
    criteria = task.evaluation_criteria
    gold = (criteria.actions if criteria is not None else None) or []
    order = texts.section("inputs")["example_action_trajectory"]["action_key_order"]
    actions = [{key: getattr(action, key, None) for key in order} for action in gold]
    return f"```json\n{json.dumps(actions, indent=2)}\n```"


def render_assertions(task: Task) -> str:
    """The NL assertions as the reference writes a Python list of strings; '' when none."""
    statements = task.evaluation_criteria.nl_assertions if task.evaluation_criteria else None
    return str(list(statements)) if statements else ""


# --- requests ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class ReviewInputs:
    """What one simulation's review is made of."""

    task: Task
    messages: list[Any]  # the trajectory, as stored in a results file
    guidelines: str | None  # the user simulator's global guidelines
    policy: str | None  # the agent's policy (mode full)


def _guidelines(inputs: ReviewInputs) -> str:
    if not inputs.guidelines:
        raise ValueError("the results file records no user simulator guidelines")
    return inputs.guidelines


def full_review_request(
    texts: ReviewTexts, prompts: ReferenceTexts, inputs: ReviewInputs
) -> list[dict[str, str]]:
    if not inputs.policy:
        raise ValueError("the results file records no agent policy")
    rules = texts.section("full_review")
    user = fill(
        rules["user_prompt_template"],
        {
            "policy": inputs.policy,
            "simulation_guidelines": _guidelines(inputs),
            "user_instructions": render_scenario(prompts, inputs.task.user_scenario),
            "example_action_trajectory": render_actions(texts, inputs.task),
            "natural_language_assertions": render_assertions(inputs.task),
            "conversation": render_trajectory(texts, inputs.messages),
        },
    )
    return [
        {"role": "system", "content": rules["system_prompt"]},
        {"role": "user", "content": user},
    ]


def user_review_request(
    texts: ReviewTexts, prompts: ReferenceTexts, inputs: ReviewInputs
) -> list[dict[str, str]]:
    rules = texts.section("user_review")
    system = fill(rules["system_prompt_template"], {"user_guidelines": _guidelines(inputs)})
    user = fill(
        rules["user_prompt_template"],
        {
            "user_instructions": render_scenario(prompts, inputs.task.user_scenario),
            "conversation": render_trajectory(texts, user_visible(inputs.messages)),
        },
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def auth_request(texts: ReviewTexts, messages: list[Any]) -> list[dict[str, str]]:
    rules = texts.section("auth_classifier")
    user = fill(rules["user_prompt_template"], {"conversation": render_trajectory(texts, messages)})
    return [
        {"role": "system", "content": rules["system_prompt"]},
        {"role": "user", "content": user},
    ]


# --- what is saved -----------------------------------------------------------------------------
# The class names appear in the validation messages the reference embeds in its parse-failure
# reasoning, so they are the reference's names.
class ReviewError(BaseModel):
    source: Literal["user", "agent", "unknown"]
    error_type: str | None = None
    error_tags: list[str] = []
    severity: Literal["minor", "critical", "critical_helped", "critical_hindered"] | None = None
    turn_idx: int | None = None
    tick_start: int | None = None
    tick_end: int | None = None
    reasoning: str
    correct_behavior: str | None = None


class Review(BaseModel):
    summary: str = ""
    agent_error: bool = False
    user_error: bool = False
    critical_user_error: bool = False
    has_errors: bool
    errors: list[ReviewError] = []
    cost: float | None = None


class UserOnlyReviewError(BaseModel):
    turn_idx: int | None = None
    tick_start: int | None = None
    tick_end: int | None = None
    error_type: str = "content_error"
    error_tags: list[str] = []
    severity: Literal["minor", "critical"] | None = None
    reasoning: str
    user_message: str | None = None
    correct_behavior: str | None = None


class UserOnlyReview(BaseModel):
    summary: str = ""
    user_error: bool = False
    critical_user_error: bool = False
    has_errors: bool
    errors: list[UserOnlyReviewError] = []
    cost: float | None = None


class AuthenticationClassification(BaseModel):
    status: Literal["succeeded", "failed", "not_needed"]
    reasoning: str = ""
    cost: float | None = None


# --- reading replies ---------------------------------------------------------------------------
def extract_json(texts: ReviewTexts, reply: str) -> str:
    """The JSON part of a reply: the first fenced block's inside, else the span from the first
    '{' to the last '}', else the whole reply."""
    fence = re.search(texts.section("parsing")["extract_json"]["fence_regex"], reply)
    if fence:
        return fence.group(1).strip()
    start, end = reply.find("{"), reply.rfind("}")
    if start != -1 and end != -1 and end > start:
        return reply[start : end + 1]
    return reply


def _tags(item: dict[str, Any]) -> Any:
    tags = item.get("error_tags", [])
    return [tags] if isinstance(tags, str) else tags


def _source(item: dict[str, Any]) -> str:
    raw = item.get("source", "unknown").lower()
    return raw if raw in ("user", "agent") else "unknown"


def _severity(source: str, raw: Any, vocabulary: dict[str, Any]) -> Any:
    allowed = {"user": vocabulary["user_severities"], "agent": vocabulary["agent_severities"]}
    return raw if raw in allowed.get(source, ()) else None


def _failure(exc: Exception, content: Any) -> str:
    return f"Failed to parse LLM response: {exc}. Response: {content}"


def parse_full_review(texts: ReviewTexts, content: Any, cost: float | None) -> dict[str, Any]:
    vocabulary = texts.section("vocabulary")
    try:
        data = json.loads(extract_json(texts, content))
        summary = data.get("summary", "")
        errors = []
        for item in data.get("errors", []):
            source = _source(item)
            errors.append(
                ReviewError(
                    source=source,
                    error_type=item.get("error_type"),
                    error_tags=_tags(item),
                    severity=_severity(source, item.get("severity"), vocabulary),
                    turn_idx=item.get("turn_idx"),
                    tick_start=item.get("tick_start"),
                    tick_end=item.get("tick_end"),
                    reasoning=item.get("reasoning", ""),
                    correct_behavior=item.get("correct_behavior"),
                )
            )
        review = Review(
            summary=summary,
            agent_error=any(e.source == "agent" for e in errors),
            user_error=any(e.source == "user" for e in errors),
            critical_user_error=any(
                e.source == "user" and e.severity in ("critical_helped", "critical_hindered")
                for e in errors
            ),
            has_errors=bool(errors),
            errors=errors,
            cost=cost,
        )
    except Exception as exc:  # noqa: BLE001 - the reference keeps any failure as the review
        review = Review(
            has_errors=False,
            errors=[ReviewError(source="unknown", reasoning=_failure(exc, content))],
            cost=cost,
        )
    return review.model_dump(mode="json")


def parse_user_review(texts: ReviewTexts, content: Any, cost: float | None) -> dict[str, Any]:
    # The prompt asks for minor / critical_helped / critical_hindered and those are kept, but
    # the saved model admits only minor / critical: a critical_* reply fails as a whole, as in
    # the reference (docs/review.md).
    kept = texts.section("vocabulary")["user_severities"]
    try:
        data = json.loads(extract_json(texts, content))
        summary = data.get("summary", "")
        errors = []
        for item in data.get("errors", []):
            severity = item.get("severity")
            errors.append(
                UserOnlyReviewError(
                    turn_idx=item.get("turn_idx"),
                    tick_start=item.get("tick_start"),
                    tick_end=item.get("tick_end"),
                    error_type=item.get("error_type", "content_error"),
                    error_tags=_tags(item),
                    severity=severity if severity in kept else None,
                    reasoning=item.get("reasoning", ""),
                    user_message=item.get("user_message"),
                    correct_behavior=item.get("correct_behavior"),
                )
            )
        review = UserOnlyReview(
            summary=summary,
            user_error=bool(errors),
            critical_user_error=any(
                e.severity in ("critical_helped", "critical_hindered") for e in errors
            ),
            has_errors=bool(errors),
            errors=errors,
            cost=cost,
        )
    except Exception as exc:  # noqa: BLE001
        review = UserOnlyReview(
            has_errors=False,
            errors=[UserOnlyReviewError(turn_idx=-1, reasoning=_failure(exc, content))],
            cost=cost,
        )
    return review.model_dump(mode="json")


def parse_auth(texts: ReviewTexts, content: Any, cost: float | None) -> dict[str, Any]:
    """The first brace-free {...} of the reply (so a nested object yields its inner one); an
    unreadable reply or an unknown status is 'not_needed'."""
    statuses = texts.section("vocabulary")["auth_statuses"]
    status, reasoning = "not_needed", "Could not parse response"
    found = re.search(texts.section("parsing")["auth"]["regex"], content, re.DOTALL)
    if found:
        try:
            data = json.loads(found.group())
        except json.JSONDecodeError:
            pass
        else:
            status = data.get("status", "not_needed")
            reasoning = data.get("reasoning", "")
            if status not in statuses:
                status = "not_needed"
    return AuthenticationClassification(status=status, reasoning=reasoning, cost=cost).model_dump(
        mode="json"
    )


def failed_review(mode: str) -> dict[str, Any]:
    """What is saved when a simulation's review raised (a failed model call, a task without
    criteria...): an empty review and, in mode full, no authentication classification."""
    if mode == "full":
        return {
            "review": Review(has_errors=False).model_dump(mode="json"),
            "auth_classification": None,
        }
    return {"user_only_review": UserOnlyReview(has_errors=False).model_dump(mode="json")}


# --- one simulation ----------------------------------------------------------------------------
async def review_simulation(
    model: str, mode: str, texts: ReviewTexts, prompts: ReferenceTexts, inputs: ReviewInputs
) -> dict[str, Any]:
    """The review fields to set on the simulation: `review` and `auth_classification` (mode
    full) or `user_only_review` (mode user). A failed model call raises."""
    if mode == "user":
        reply = await llm.generate(model, user_review_request(texts, prompts, inputs))
        return {"user_only_review": parse_user_review(texts, reply.content, reply.cost)}
    reply = await llm.generate(model, full_review_request(texts, prompts, inputs))
    review = parse_full_review(texts, reply.content, reply.cost)
    auth = await llm.generate(model, auth_request(texts, inputs.messages))
    return {"review": review, "auth_classification": parse_auth(texts, auth.content, auth.cost)}


def review_cost(sim: dict[str, Any]) -> float | None:
    """What the reviews saved with a simulation cost, or None when it has none."""
    costs = [
        (sim.get(name) or {}).get("cost")
        for name in ("review", "auth_classification", "user_only_review")
        if isinstance(sim.get(name), dict)
    ]
    if not costs:
        return None
    return sum(float(c) for c in costs if c is not None)
