"""Doing nothing earns nothing (tau2 #384): each task graded on its untouched initial state with
an empty trajectory (the task's own message history, else the agent's greeting, then the agent
stops). A task that still earns reward 1.0 measures nothing an idle agent fails. When only NL
assertions could fail it and no judge was given, it is a warning: a judge may well fail it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from tau_mcp.conversation.messages import ChatMessage, Message, history_messages
from tau_mcp.conversation.reference_texts import reference_texts
from tau_mcp.grading import Grader, Judge
from tau_mcp.grading.checks import passed
from tau_mcp.harness.backends import EpisodeBackend, EpisodeOptions
from tau_mcp.harness.domain_check.findings import Finding, error, warning
from tau_mcp.harness.orchestrator import GREETING
from tau_mcp.harness.prompt_sets import first_agent_message
from tau_mcp.servers.engine.domain import Domain
from tau_mcp.servers.engine.tasks import Task


async def check_inaction(
    domain: Domain,
    tasks: list[Task],
    backend: EpisodeBackend,
    grader: Grader,
    options: EpisodeOptions | None,
    judge: Judge | None,
    concurrency: int,
    done: Callable[[], None] = lambda: None,
) -> list[Finding]:
    """`grader` judges no NL assertions (the oracle's, whose gold states it keeps); with a
    `judge`, a task that passes all else and has NL assertions is graded again with it.
    `done` is called as each task's grading ends."""
    judged = Grader(backend, domain, judge, options, diagnose=False) if judge else None
    greeting = first_agent_message(reference_texts(domain.data_dir), GREETING)
    gate = asyncio.Semaphore(concurrency)

    async def grade(task: Task, by: Grader) -> bool:
        async with gate:
            ref = await backend.create_episode(domain.name, task.id, options)
            try:
                reward_info = await by.grade(task, idle(task, greeting), "agent_stop", ref)
            finally:
                await backend.delete_episode(ref)
        return passed(reward_info["reward"])

    async def one(task: Task) -> list[Finding]:
        try:
            return await judge_idle(task)
        finally:
            done()

    async def judge_idle(task: Task) -> list[Finding]:
        try:
            if not await grade(task, grader):
                return []
            if judged is not None and has_nl(task) and not await grade(task, judged):
                return []
        except Exception as exc:  # noqa: BLE001 - any failure is this task's finding
            message = f"an idle agent's trajectory could not be graded: {type(exc).__name__}: {exc}"
            return [error("inaction", message, task.id)]
        return [finding(task, judge is not None)]

    found = await asyncio.gather(*(one(task) for task in tasks))
    return [f for task_findings in found for f in task_findings]


def idle(task: Task, greeting: str) -> list[Message]:
    """The trajectory of an agent that does nothing: the task's history, else the greeting."""
    history = history_messages(task)
    return history or [ChatMessage(role="assistant", content=greeting)]


def has_nl(task: Task) -> bool:
    """Whether NL assertions count in the task's reward."""
    criteria = task.evaluation_criteria
    return (
        criteria is not None
        and "NL_ASSERTION" in criteria.reward_basis
        and bool(criteria.nl_assertions)
    )


def finding(task: Task, judged: bool) -> Finding:
    criteria = task.evaluation_criteria
    basis = list(criteria.reward_basis) if criteria is not None else []
    if not judged and has_nl(task):
        return warning(
            "inaction",
            "doing nothing earns reward 1.0 unless a judge fails its NL assertions "
            "(not judged here: pass --judge-llm)",
            task.id,
        )
    what = f"reward basis: {', '.join(basis)}" if criteria is not None else "no evaluation criteria"
    return error("inaction", f"doing nothing earns reward 1.0 ({what})", task.id)
