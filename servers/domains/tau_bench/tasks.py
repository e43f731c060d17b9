"""The original τ-bench's tasks, one JSON list per split, as tasks of our engine.

A task `{user_id, actions: [{name, kwargs}], instruction, outputs}` at position `i` of split `s`
(`tasks_<s>.json`) becomes task `<s>_<i>` (the original numbers tasks within a split):
its instruction is the user scenario's instructions, its gold actions are the evaluation
criteria's actions, its outputs are what the agent must communicate, and its reward is the
product of the data hash check and the outputs check (basis DB, and COMMUNICATE when the task
has outputs). The task as the
original's `Task` model shows it (no `annotator`, which that model drops) is kept in the field
`original` (see `original_task`), for results in the original's layout.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from tau_mcp.servers.engine import data as datafiles
from tau_mcp.servers.engine.domain import TaskCatalog
from tau_mcp.servers.engine.errors import DataError
from tau_mcp.servers.engine.tasks import Action, EvaluationCriteria, Task

REWARD_BASIS = ["DB", "COMMUNICATE"]  # COMMUNICATE for a task with outputs only


class OriginalAction(BaseModel):
    name: str
    kwargs: dict[str, Any]


class OriginalTask(BaseModel):
    """A task as the original's `Task` model reads it (other keys, `annotator` among them,
    are dropped)."""

    model_config = ConfigDict(extra="ignore")

    user_id: str
    actions: list[OriginalAction]
    instruction: str
    outputs: list[str]


def task_id(split: str, index: int) -> str:
    return f"{split}_{index}"


def to_task(split: str, index: int, original: OriginalTask) -> Task:
    actions = [
        Action(action_id=f"{task_id(split, index)}_{n}", name=a.name, arguments=a.kwargs)
        for n, a in enumerate(original.actions)
    ]
    return Task(
        id=task_id(split, index),
        user_scenario={"persona": None, "instructions": original.instruction},
        evaluation_criteria=EvaluationCriteria(
            actions=actions,  # a task with none still compares the data hash
            communicate_info=list(original.outputs),
            reward_basis=list(REWARD_BASIS if original.outputs else REWARD_BASIS[:1]),
        ),
        original=original.model_dump(),
    )


def original_task(task: Task) -> dict[str, Any]:
    """The task as the original's `Task.model_dump()`: user_id, actions, instruction, outputs."""
    original = (task.model_extra or {}).get("original")
    if not isinstance(original, dict):
        raise ValueError(f"task '{task.id}' is not a τ-bench task")
    return original


def catalog_loader(splits: tuple[str, ...]) -> Callable[[Path], TaskCatalog]:
    """Reads `tasks_<split>.json` of each split from a domain folder (`DomainSpec.load_tasks`)."""

    def load(folder: Path) -> TaskCatalog:
        tasks: dict[str, Task] = {}
        by_split: dict[str, list[str]] = {}
        for split in splits:
            path = folder / f"tasks_{split}.json"
            raw = datafiles.load_structured(path)
            if not isinstance(raw, list):
                raise DataError(f"data file {path} should hold a list of tasks")
            ids = []
            for index, item in enumerate(raw):
                try:
                    original = OriginalTask.model_validate(item)
                except ValidationError as exc:
                    raise DataError(
                        f"task #{index} in {path} is malformed: {exc.errors()[0]['msg']}"
                    ) from None
                task = to_task(split, index, original)
                tasks[task.id] = task
                ids.append(task.id)
            by_split[split] = ids
        return tasks, by_split

    return load
