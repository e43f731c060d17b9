"""The shape a simulation in a results file must have for `view`, `evaluate` and resuming.

Results files come from us, from the reference, or from hand-made lists of simulations. Rather
than have every reader guard every field, a file is checked once as it is read, and a
simulation that lacks `task_id` or holds a field of the wrong type is refused in one sentence
naming the simulation and the field. Only what our readers use is checked; every other field
may be absent, and unknown fields are kept as they are.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)


class _Usage(_Open):
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


class _ToolCall(_Open):
    name: str | None = None
    arguments: dict[str, Any] | None = None


class _Message(_Open):
    role: str
    content: str | None = None
    tool_calls: list[_ToolCall] | None = None
    usage: _Usage | None = None


class _RewardInfo(_Open):
    reward: float | None = None
    db_check: dict[str, Any] | None = None
    reward_breakdown: dict[str, Any] | None = None
    info: dict[str, Any] | None = None


class _Simulation(_Open):
    id: str | int | None = None
    task_id: str | int
    trial: int | None = None
    termination_reason: str | None = None
    reward_info: _RewardInfo | None = None
    messages: list[_Message] | None = None
    duration: float | None = None
    agent_cost: float | None = None
    user_cost: float | None = None
    info: dict[str, Any] | None = None


_SIMULATIONS = TypeAdapter(list[_Simulation])


def shape_problem(simulations: list[Any]) -> str | None:
    """What is wrong with the first malformed simulation, in words; None when all are usable."""
    try:
        _SIMULATIONS.validate_python(simulations)
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        location = list(error["loc"])
        index = location.pop(0) if location and isinstance(location[0], int) else None
        where = f"simulation {index}" if index is not None else "a simulation"
        if index is not None and isinstance(simulations[index], dict):
            sim_id = simulations[index].get("id")
            if sim_id is not None:
                where += f" (id {sim_id})"
        field = ".".join(str(part) for part in location) or "itself"
        reason = "is missing" if error["type"] == "missing" else f"is invalid ({error['msg']})"
        if not location:
            reason = "is not a JSON object"
        return f"{where}: {field} {reason}" if location else f"{where} {reason}"
    return None
