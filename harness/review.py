"""Reviewing simulations with an LLM: `tau-harness review FILE` over a results file, and
`run --auto-review` on each simulation as it finishes (the requests and their parsing are in
`tau_mcp.grading.review`).

The reviewed file is the input with each reviewed simulation's review fields set (`review` and
`auth_classification` in mode full, `user_only_review` in mode user), the reference's layout;
earlier review fields are kept. It is written whole at the end, never half.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tau_mcp.conversation.reference_prompts import user_guidelines_path
from tau_mcp.conversation.reference_texts import ReferenceTexts, reference_texts
from tau_mcp.harness.errors import ConfigError
from tau_mcp.harness.preflight import ModelUse
from tau_mcp.servers.engine.tasks import Task

if TYPE_CHECKING:  # grading.review is imported when a review is made, not by every run
    from tau_mcp.grading.review import ReviewInputs, ReviewTexts
    from tau_mcp.harness.results import SimulationRecord

REVIEWED_NAME = "results_reviewed.json"
MODEL_HINT = "; or pass --review-llm MODEL"


@dataclass(frozen=True)
class ReviewSettings:
    """`--review-mode` and `--review-llm` (None: the review texts' default model)."""

    mode: str = "full"
    model: str | None = None


def check_mode(mode: str) -> str:
    from tau_mcp.grading.review import MODES

    if mode not in MODES:
        raise ConfigError(f"unknown review mode '{mode}': use full or user")
    return mode


@dataclass
class Reviewer:
    """What a review needs of the data folder, loaded once: the review texts, the prompt texts
    (the user scenario's layout) and the model, settled."""

    mode: str
    model: str
    texts: ReviewTexts
    prompts: ReferenceTexts

    @classmethod
    def for_data(cls, settings: ReviewSettings, data_dir: Path | str | None) -> Reviewer:
        from tau_mcp.grading.review import review_texts

        check_mode(settings.mode)
        texts, prompts = review_texts(data_dir), reference_texts(data_dir)
        if texts is None or prompts is None:
            raise ConfigError(
                "reviews need the reference texts (tau2/reference_texts/review.json and "
                f"prompts.json) in the data folder, and {data_dir} has none; pass --data-dir or "
                "set TAU2_DATA_DIR to the reference data"
            )
        return cls(settings.mode, settings.model or texts.default_model, texts, prompts)

    def model_use(self) -> ModelUse:
        return ModelUse("review", self.model, {}, MODEL_HINT)

    async def review(self, inputs: ReviewInputs) -> dict[str, Any]:
        from tau_mcp.grading.review import review_simulation

        return await review_simulation(self.model, self.mode, self.texts, self.prompts, inputs)

    # --- run --auto-review -------------------------------------------------------------------
    def plain_guidelines(self) -> str:
        """The user simulator's plain guidelines file (the one without user tools), which the
        reference's auto-review gives the reviewer in every domain."""
        return self.prompts.data_file(user_guidelines_path(self.prompts, False))

    async def attach(self, task: Task, record: SimulationRecord, policy: str) -> None:
        """Review a finished simulation record and set its review fields; a failed model call
        raises (the simulation attempt fails with it, as in the reference)."""
        from tau_mcp.grading.review import ReviewInputs

        inputs = ReviewInputs(task, record.messages or [], self.plain_guidelines(), policy)
        for name, value in (await self.review(inputs)).items():
            setattr(record, name, value)


# --- tau-harness review FILE --------------------------------------------------------------------
@dataclass
class ReviewOutcome:
    document: dict[str, Any]
    reviewed: int = 0
    skipped: list[str] = field(default_factory=list)  # simulations whose task is not in the file
    failed: list[str] = field(default_factory=list)  # "id: error" of reviews that raised
    cost: float = 0.0


def select(sims: list[dict[str, Any]], task_ids: list[str] | None, limit: int | None) -> list:
    if task_ids:
        sims = [s for s in sims if str(s.get("task_id")) in task_ids]
    if limit is not None:
        sims = sims[:limit]
    return sims


def _tasks(document: dict[str, Any]) -> dict[str, Task]:
    tasks = {}
    for raw in document.get("tasks") or []:
        if isinstance(raw, dict) and raw.get("id") is not None:
            tasks[str(raw["id"])] = Task.model_validate(raw)
    return tasks


async def review_document(
    reviewer: Reviewer,
    document: dict[str, Any],
    concurrency: int = 32,
    task_ids: list[str] | None = None,
    limit: int | None = None,
    on_done: Callable[[], None] | None = None,
) -> ReviewOutcome:
    """The document with the selected simulations reviewed (the others left out, as the
    reference does). A review that raises is kept as the reference's empty review and listed
    in `failed`; a simulation whose task the file lacks is not reviewed."""
    from tau_mcp.grading.review import ReviewInputs, failed_review, review_cost

    sims = select(document["simulations"], task_ids, limit)
    info = document.get("info") or {}
    guidelines = (info.get("user_info") or {}).get("global_simulation_guidelines")
    policy = (info.get("environment_info") or {}).get("policy")
    tasks = _tasks(document)
    outcome = ReviewOutcome({**document, "simulations": sims})
    gate = asyncio.Semaphore(max(1, concurrency))

    async def one(sim: dict[str, Any]) -> None:
        task = tasks.get(str(sim.get("task_id")))
        if task is None:
            outcome.skipped.append(str(sim.get("id")))
        else:
            async with gate:
                try:
                    fields = await reviewer.review(
                        ReviewInputs(task, sim.get("messages") or [], guidelines, policy)
                    )
                except ConfigError:
                    raise
                except Exception as exc:  # noqa: BLE001 - kept as the reference keeps it
                    outcome.failed.append(f"{sim.get('id')}: {type(exc).__name__}: {exc}")
                    fields = failed_review(reviewer.mode)
            sim.update(fields)
            outcome.reviewed += 1
            outcome.cost += review_cost(fields) or 0.0
        if on_done is not None:
            on_done()

    await asyncio.gather(*(one(s) for s in sims))
    return outcome


def default_output(source: Path) -> Path:
    return source.with_name(REVIEWED_NAME)
