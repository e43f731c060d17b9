"""What a results file holds: one `SimulationRecord` per simulation and a run header.

The layout is the reference's (tau2-bench 1.0.1's `SimulationRun` and `Results`), so tools that
read its results read ours. Our extensions are named here and nowhere else:

- a record's `info` (`RecordInfo`): the episode, step and error counts, the attempts an
  infrastructure failure took and its error, and what `serve`/`--agent cmd` add;
- the header's `info` (`RunInfo`) adds to the reference's the run's `timeout`, the judge, the
  communication rule, the prompt set, the review mode, the preset, the task set and the tasks
  the agent left out.

Every record is built here (a finished conversation, an infrastructure failure, a served
simulation still running), and every simulation read from a file is checked here
(`shape_problem`) before any reader sees it. Records read from files may come from the
reference or from a hand-made list, so only `task_id` is required and every field a reader
uses is checked for its type; other fields, and unknown ones, are kept as they are.

A record travels as this model inside a process and as its layout dict (`layout()`) on disk
and between processes; nested parts (messages, reward info) stay the plain JSON values they
are in the file, so building and writing a record copies nothing.
"""

from __future__ import annotations

import functools
import uuid
from typing import Annotated, Any, Required

from pydantic import (
    BaseModel,
    ConfigDict,
    PlainValidator,
    TypeAdapter,
    ValidationError,
    ValidatorFunctionWrapHandler,
    WrapValidator,
    with_config,
)
from pydantic_core import PydanticCustomError
from typing_extensions import TypedDict

from tau_mcp.conversation.messages import now
from tau_mcp.harness import redaction

#: The ending of a simulation that failed for infrastructure reasons after every retry: never
#: scored, run again when the run is resumed.
INFRA = "infrastructure_error"

#: The only communication mode tau-mcp runs (the reference's text mode).
HALF_DUPLEX = "half_duplex"

_OPEN = ConfigDict(extra="allow", strict=True)
# A run builds records without validating them: the models' validators are built when a file
# is first read, not when the harness starts.
_LAZY = ConfigDict(defer_build=True)


def _as_written(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
    """Check a nested part's shape, keep the value itself (its key order, no copy)."""
    handler(value)
    return value


AsWritten = WrapValidator(_as_written)


# --- the nested parts a reader relies on ----------------------------------------------------


@with_config(_OPEN)
class Usage(TypedDict, total=False):
    prompt_tokens: int | None
    completion_tokens: int | None


@with_config(_OPEN)
class ToolCall(TypedDict, total=False):
    name: str | None
    arguments: dict[str, Any] | None


@with_config(_OPEN)
class MessageLayout(TypedDict, total=False):
    """A message as `conversation.messages.dump_message` writes it (role, content, tool calls,
    cost, usage, turn index, timestamp ...); parse it with `conversation.messages.parse_message`."""

    role: Required[str]
    content: str | None
    tool_calls: list[ToolCall] | None
    usage: Usage | None


@with_config(_OPEN)
class RewardInfo(TypedDict, total=False):
    """The grader's verdict (`grading.Grader.grade`), in the reference's layout."""

    reward: float | None
    db_check: dict[str, Any] | None
    reward_breakdown: dict[str, Any] | None
    info: dict[str, Any] | None


@with_config(ConfigDict(extra="allow"))
class RecordInfo(TypedDict, total=False):
    """Our extension: a record's `info` (the reference leaves it free-form)."""

    episode_id: str  # the server episode the simulation ran on
    steps: int  # orchestrator steps taken
    tool_errors: int  # tool calls that returned an error
    history_length: int  # messages the task's initial state supplied
    tool_cost: dict[str, float]  # tools' own model calls (retrieval), by the side that called
    attempts: int  # tries the simulation took (infrastructure failures are retried)
    worker_retries: int  # tries lost to a dead worker process or Ray actor
    error: str  # an infrastructure failure's cause
    not_saved: str  # serve: why the record could not be written
    status: str  # serve's live view: open, running, grading, ended
    agent_command: dict[str, Any]  # `run --agent cmd`: exit code, moves, the output's tail
    source: str  # where a converted record came from ("eval-protocol")


def _an_object(value: Any) -> Any:
    """A free-form part (the reference leaves it open): any object, kept as it is."""
    if value is not None and not isinstance(value, dict):
        raise PydanticCustomError("dict_type", "Input should be a valid dictionary")
    return value


FreeForm = PlainValidator(_an_object)


# --- a simulation ---------------------------------------------------------------------------


class SimulationRecord(BaseModel):
    """One simulation in the reference's results layout, in the order our records are written.

    Built by the class methods below (`finished`, `infrastructure_failure`, `in_progress`) or
    read from a file (`read`, checked; `trusted`, from our own worker processes). `layout()` is
    the JSON object a results file holds: the fields a record was built or read with, then any
    unknown ones, in that order."""

    model_config = _OPEN | _LAZY

    id: str | int | None = None
    task_id: str | int
    timestamp: str | None = None
    start_time: str | None = None
    end_time: str | None = None  # None only while a served simulation runs
    duration: float | None = None
    termination_reason: str | None = None  # an orchestrator ending, or INFRA
    agent_cost: float | None = None
    user_cost: float | None = None
    reward_info: Annotated[RewardInfo | None, AsWritten] = None  # None: not graded
    messages: Annotated[list[MessageLayout] | None, AsWritten] = None
    trial: int | None = None
    seed: int | None = None
    mode: str | None = None
    info: Annotated[RecordInfo | None, FreeForm] = None  # our extension, see RecordInfo
    # Reference fields written only when they apply:
    policy: str | None = None  # the agent's policy, when it depends on the task
    review: Annotated[dict[str, Any] | None, FreeForm] = None  # --auto-review, mode full
    user_only_review: Annotated[dict[str, Any] | None, FreeForm] = None  # mode user
    auth_classification: Annotated[dict[str, Any] | None, FreeForm] = None

    # --- building ---------------------------------------------------------------------------
    @classmethod
    def _built(
        cls,
        task_id: str,
        trial: int,
        seed: int,
        *,
        start_time: str,
        end_time: str | None,
        duration: float | None,
        termination_reason: str | None,
        messages: list[dict[str, Any]],
        info: RecordInfo,
        reward_info: dict[str, Any] | None = None,
        agent_cost: float | None = None,
        user_cost: float | None = None,
        id: str | None = None,
    ) -> SimulationRecord:
        """Every record the harness builds has the layout's core fields, in this order (its
        time stamp is its end, or its start while it runs). Our own values: constructed, not
        validated, so nothing is copied or converted."""
        return cls.model_construct(
            id=id or str(uuid.uuid4()),
            task_id=task_id,
            timestamp=end_time or start_time,
            start_time=start_time,
            end_time=end_time,
            duration=duration,
            termination_reason=termination_reason,
            agent_cost=agent_cost,
            user_cost=user_cost,
            reward_info=reward_info,
            messages=messages,
            trial=trial,
            seed=seed,
            mode=HALF_DUPLEX,
            info=info,
        )

    @classmethod
    def finished(
        cls,
        *,
        task_id: str,
        trial: int,
        seed: int,
        messages: list[dict[str, Any]],
        termination_reason: str,
        start_time: str,
        end_time: str,
        duration: float,
        reward_info: dict[str, Any] | None,
        info: RecordInfo,
        tool_costs: dict[str, float] | None = None,
    ) -> SimulationRecord:
        """A graded conversation. The sides' costs are their messages' plus, for the tools'
        own model calls (retrieval embeddings, rerankers), the side that called the tool;
        `info.tool_cost` shows that part."""
        agent_costs = [
            m["cost"] for m in messages if m["role"] == "assistant" and m.get("cost") is not None
        ]
        user_costs = [
            m["cost"] for m in messages if m["role"] == "user" and m.get("cost") is not None
        ]
        if tool_costs:
            agent_costs += [c for who, c in tool_costs.items() if who != "user"]
            user_costs += [c for who, c in tool_costs.items() if who == "user"]
            info = {**info, "tool_cost": dict(tool_costs)}
        return cls._built(
            task_id,
            trial,
            seed,
            start_time=start_time,
            end_time=end_time,
            duration=duration,
            termination_reason=termination_reason,
            messages=messages,
            info=info,
            reward_info=reward_info,
            agent_cost=sum(agent_costs) if agent_costs else None,
            user_cost=sum(user_costs) if user_costs else None,
        )

    @classmethod
    def infrastructure_failure(
        cls, task_id: str, trial: int, seed: int, error: str, attempts: int
    ) -> SimulationRecord:
        """A simulation that failed for infrastructure reasons after every retry; it is never
        scored, and a resumed run tries it again. A key the error echoes (some providers do)
        is redacted here, so no copy of the record holds it."""
        stamp = now()
        info: RecordInfo = {"error": redaction.redact_text(error), "attempts": attempts}
        return cls._built(
            task_id,
            trial,
            seed,
            start_time=stamp,
            end_time=stamp,
            duration=0.0,
            termination_reason=INFRA,
            messages=[],
            info=info,
        )

    @classmethod
    def in_progress(
        cls,
        *,
        id: str,
        task_id: str,
        trial: int,
        seed: int,
        started: str,
        messages: list[dict[str, Any]],
        status: str,
    ) -> SimulationRecord:
        """A served simulation still running: its messages so far, no ending or grade yet."""
        return cls._built(
            task_id,
            trial,
            seed,
            id=id,
            start_time=started,
            end_time=None,
            duration=None,
            termination_reason=None,
            messages=messages,
            info={"status": status},
        )

    # --- reading and writing ----------------------------------------------------------------
    @classmethod
    def read(cls, raw: dict[str, Any]) -> SimulationRecord:
        """A simulation from a file, checked (raises pydantic's ValidationError; see
        `shape_problem` for the sentence a reader shows)."""
        return cls.model_validate(raw)

    @classmethod
    def trusted(cls, raw: dict[str, Any]) -> SimulationRecord:
        """A record that one of our own processes laid out (a worker's, a Ray actor's, or one
        `load_results` has checked already): taken as it is."""
        return cls.model_construct(**raw)

    def layout(self) -> dict[str, Any]:
        """The record as a results file holds it: the fields it was built or read with, in
        the model's order, then unknown ones. Nested values are shared, not copied (a
        record has no nested model, so this is `_layout` without its recursion: it runs once
        per simulation)."""
        chosen = self.model_fields_set
        out = {name: value for name, value in self.__dict__.items() if name in chosen}
        if self.__pydantic_extra__:
            out.update(self.__pydantic_extra__)
        return out

    # --- what readers ask -------------------------------------------------------------------
    @property
    def reward(self) -> float | None:
        return (self.reward_info or {}).get("reward")

    @property
    def infrastructure_error(self) -> bool:
        return self.termination_reason == INFRA


def _layout(model: BaseModel) -> dict[str, Any]:
    """A model as the JSON object it was built or read from: its set fields in declaration
    order (nested models laid out the same way), then unknown fields. Values are neither
    validated nor converted, so what was built is what is written."""
    chosen = model.model_fields_set
    out = {
        name: _layout(value) if isinstance(value, BaseModel) else value
        for name, value in model.__dict__.items()
        if name in chosen
    }
    if model.__pydantic_extra__:
        out.update(model.__pydantic_extra__)
    return out


@functools.cache
def _simulations() -> TypeAdapter[list[SimulationRecord]]:
    return TypeAdapter(list[SimulationRecord])


def shape_problem(simulations: list[Any]) -> str | None:
    """What is wrong with the first malformed simulation, in words; None when all are usable."""
    try:
        _simulations().validate_python(simulations)
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


# --- the run header -------------------------------------------------------------------------


class _Section(BaseModel):
    model_config = ConfigDict(extra="allow") | _LAZY


class AgentInfo(_Section):
    implementation: str
    llm: str | None = None
    llm_args: dict[str, Any] | None = None


class UserInfo(_Section):
    implementation: str
    llm: str | None = None
    llm_args: dict[str, Any] | None = None
    global_simulation_guidelines: str | None = None


class EnvironmentInfo(_Section):
    domain_name: str
    policy: str | None = None  # or a sentence saying each simulation records its own
    tool_defs: Any = None


class RunInfo(_Section):
    """A results header's `info` as our runs write it: the reference's `Info` (git commit,
    trials, limits, the sides, the environment, seed, retrieval config) and our extensions,
    marked below. Optional extensions are written only when set. Built from a run's own
    settings (`SimulationRunner.info`), so constructed rather than validated: what the run
    was given is what the header records."""

    git_commit: str
    num_trials: int
    max_steps: int
    max_errors: int
    timeout: float | None = None  # ours: the wall-clock limit of a simulation
    user_info: UserInfo
    agent_info: AgentInfo
    environment_info: EnvironmentInfo
    seed: int | None = None
    judge_llm: str | None = None  # ours: the NL-assertion judge
    judge_llm_args: dict[str, Any] | None = None  # ours
    enforce_communication_protocol: bool = False  # ours
    prompt_set: dict[str, Any] | None = None  # ours: the prompts the models were shown
    retrieval_config: str | None = None
    retrieval_config_kwargs: dict[str, Any] | None = None
    review: dict[str, Any] | None = None  # ours: --auto-review's mode and model
    preset: dict[str, Any] | None = None  # ours: the run --preset that filled options
    task_set_name: str | None = None  # ours: --task-set-name (evaluate rebuilds with it)
    filtered_tasks: dict[str, Any] | None = None  # ours: tasks the agent cannot run

    def layout(self) -> dict[str, Any]:
        """The header's `info` as written: the fields the run set, in this order."""
        return _layout(self)


class RunHeader(BaseModel):
    """Everything in a results document but its simulations: when the run began, its `info`
    (a `RunInfo` in our runs; any object in a file from elsewhere) and its tasks."""

    model_config = _OPEN | _LAZY

    timestamp: Any = None
    info: Annotated[dict[str, Any] | None, FreeForm] = None
    tasks: list[Any] | None = None

    @classmethod
    def begin(cls, info: RunInfo | dict[str, Any], tasks: list[dict[str, Any]]) -> dict[str, Any]:
        """A new run's header, as its results file holds it (keys redacted)."""
        raw = info.layout() if isinstance(info, RunInfo) else info
        return {
            "timestamp": now(),
            "info": redaction.redact(redaction.redact_header(raw)),
            "tasks": tasks,
        }

    @classmethod
    def problem(cls, document: dict[str, Any]) -> str | None:
        """What is wrong with a document's header, in words; None when it is usable."""
        try:
            cls.model_validate({k: v for k, v in document.items() if k != "simulations"})
        except ValidationError as exc:
            field = str(exc.errors(include_url=False)[0]["loc"][0])
            return f"has a malformed header ('{field}')"
        return None


__all__ = [
    "HALF_DUPLEX",
    "INFRA",
    "AgentInfo",
    "EnvironmentInfo",
    "MessageLayout",
    "RecordInfo",
    "RewardInfo",
    "RunHeader",
    "RunInfo",
    "SimulationRecord",
    "UserInfo",
    "shape_problem",
]
