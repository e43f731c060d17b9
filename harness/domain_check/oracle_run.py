"""The oracle reaches reward 1.0 on every task: each task simulated as `tau-harness run --agent
oracle --user scripted` simulates it (the oracle performs the agent's gold actions and says the
task's communicate_info, the scripted user performs the user's), graded by the same grader
(DB, env assertions, actions, communication), all tasks concurrently on one in-process backend.
NL assertions are left to `inaction` and a real run: the oracle holds no conversation to judge."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from tau_mcp.grading import Grader
from tau_mcp.grading.checks import passed
from tau_mcp.grading.grader import GRADED_ENDINGS
from tau_mcp.harness.backends import EpisodeBackend
from tau_mcp.harness.config import RunConfig
from tau_mcp.harness.domain_check.findings import Finding, error
from tau_mcp.harness.domain_check.verdicts import failed_parts
from tau_mcp.harness.results import SimulationRecord
from tau_mcp.harness.simulate import SimulationRunner
from tau_mcp.servers.engine.domain import Domain
from tau_mcp.servers.engine.tasks import Task


async def run_oracle(
    domain: Domain,
    tasks: list[Task],
    backend: EpisodeBackend,
    grader: Grader,
    variant: str | None,
    concurrency: int,
    done: Callable[[], None] = lambda: None,
) -> list[Finding]:
    """`grader` judges no NL assertions; sharing it keeps each task's gold state for later.
    `done` is called as each task's simulation ends."""
    config = RunConfig(
        domain=domain.name,
        agent="oracle",
        user="scripted",
        judge_llm="none",
        retrieval_config=variant,
        task_split=None,
        max_retries=0,
        max_concurrency=concurrency,
    )
    runner = SimulationRunner(backend, domain, config, grader=grader)
    gate = asyncio.Semaphore(concurrency)

    async def one(task: Task) -> list[Finding]:
        try:
            async with gate:
                record = await runner.attempt(task, 0, config.seed)
        except Exception as exc:  # noqa: BLE001 - any failure is this task's finding
            message = f"the oracle's simulation did not run: {type(exc).__name__}: {exc}"
            return [error("oracle", message, task.id)]
        finally:
            done()
        return verdict(task, record)

    found = await asyncio.gather(*(one(task) for task in tasks))
    return [finding for task_findings in found for finding in task_findings]


def verdict(task: Task, record: SimulationRecord) -> list[Finding]:
    ending = record.termination_reason
    reward_info = record.reward_info or {}
    if ending not in GRADED_ENDINGS:
        return [
            error("oracle", f"the oracle's conversation ended with '{ending}', not graded", task.id)
        ]
    if passed(reward_info.get("reward")):
        return []
    return [
        error(
            "oracle",
            f"the oracle scores {reward_info.get('reward'):g} ({failed_parts(reward_info)})",
            task.id,
        )
    ]
