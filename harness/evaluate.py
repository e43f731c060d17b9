"""Re-grading saved simulations: replay each trajectory on a fresh episode, then grade it."""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic import ValidationError

from tau_mcp.conversation.cassette import Cassette
from tau_mcp.conversation.messages import parse_message
from tau_mcp.grading import Grader
from tau_mcp.harness.backends import EpisodeBackend
from tau_mcp.harness.benchmarks import with_original_reward
from tau_mcp.harness.cassettes import saved_simulation_lane
from tau_mcp.harness.metrics import INFRA
from tau_mcp.harness.task_group import gather_or_cancel
from tau_mcp.servers.engine.domain import Domain

SOLO_AGENTS = {"solo", "llm_agent_solo", "llm_solo_agent"}


def is_solo_run(document: dict[str, Any]) -> bool:
    info = document.get("info") or {}
    agent = (info.get("agent_info") or {}).get("implementation")
    user = (info.get("user_info") or {}).get("implementation")
    return agent in SOLO_AGENTS or user in ("dummy", "dummy_user")


def _messages(sim: dict[str, Any]) -> list[Any]:
    """A simulation's trajectory as messages; a message that is not one is one sentence."""
    parsed = []
    for index, raw in enumerate(sim.get("messages") or []):
        try:
            parsed.append(parse_message(raw))
        except ValidationError as exc:
            error = exc.errors(include_url=False)[0]
            field = ".".join(str(part) for part in error["loc"]) or "message"
            raise ValueError(
                f"simulation {sim.get('id')}: message {index} cannot be replayed "
                f"({field}: {error['msg']})"
            ) from None
        except (TypeError, ValueError) as exc:
            raise ValueError(
                f"simulation {sim.get('id')}: message {index} cannot be replayed ({exc})"
            ) from None
    return parsed


async def regrade(
    backend: EpisodeBackend,
    domain: Domain,
    grader: Grader,
    document: dict[str, Any],
    concurrency: int = 8,
    cassette: Cassette | None = None,
) -> dict[str, Any]:
    """The document with every simulation's reward_info recomputed (infrastructure failures
    keep none). Unknown task ids fail with one sentence. With a cassette, each simulation's
    judge calls go through its lane (the lane the run that made it used)."""
    solo = is_solo_run(document)
    sims = document["simulations"]
    missing = sorted({str(s.get("task_id")) for s in sims} - set(domain.tasks))
    if missing:
        raise ValueError(f"task id(s) not in domain '{domain.name}': {', '.join(missing[:5])}")
    limit = asyncio.Semaphore(max(1, concurrency))

    async def one(sim: dict[str, Any]) -> dict[str, Any]:
        if sim.get("termination_reason") == INFRA:
            return {**sim, "reward_info": None}
        task = domain.task(str(sim["task_id"]))
        messages = _messages(sim)
        history = task.initial_state.message_history if task.initial_state else None
        async with limit:
            ref = await grader.rebuild(task, messages, len(history or []), solo)
            try:
                with saved_simulation_lane(cassette, sim):
                    reward_info = await grader.grade(
                        task, messages, str(sim.get("termination_reason")), ref
                    )
            finally:
                await backend.delete_episode(ref)
        return {**sim, "reward_info": with_original_reward(domain, task, reward_info)}

    graded = await gather_or_cancel(*(one(s) for s in sims))
    return {**_with_domain(document, domain.name), "simulations": list(graded)}


def _with_domain(document: dict[str, Any], name: str) -> dict[str, Any]:
    """A header that leaves its domain unsaid (a converted τ-bench results file) names the
    domain it was graded on."""
    info = document.get("info")
    environment = info.get("environment_info") if isinstance(info, dict) else None
    if not isinstance(environment, dict) or environment.get("domain_name") is not None:
        return document
    return {**document, "info": {**info, "environment_info": {**environment, "domain_name": name}}}


def with_grader_header(document: dict[str, Any], judge: Any, cassette: Any = None) -> dict:
    """A re-graded document's header says which judge graded it (its model and arguments,
    in the places a run's header keeps them) and, with a cassette, which one."""
    info = document.get("info")
    if not isinstance(info, dict):
        return document
    info = {
        **info,
        "judge_llm": judge.model if judge is not None else None,
        "judge_llm_args": judge.llm_args if judge is not None else None,
    }
    if cassette is not None:
        info["cassette"] = cassette.describe()
    return {**document, "info": info}


def check_domain(document: dict[str, Any], domain: str, source: Any) -> None:
    """Refuse to re-grade a results file recorded on another domain: task ids overlap across
    domains ("0", "1", ...), so the wrong domain would grade silently and wrongly."""
    info = document.get("info") or {}
    recorded = (info.get("environment_info") or {}).get("domain_name")
    if recorded not in (None, domain):
        raise ValueError(f"{source} holds simulations of domain '{recorded}', not '{domain}'")


def recorded_domain(document: dict[str, Any], source: Any) -> str:
    """The domain a results file's header records; a file without one needs --domain."""
    info = document.get("info") or {}
    recorded = (info.get("environment_info") or {}).get("domain_name")
    if not isinstance(recorded, str) or not recorded:
        raise ValueError(f"{source} does not record its domain; pass --domain")
    return recorded


def recorded_task_set(document: dict[str, Any]) -> str | None:
    """The named task set a results file's header records (None: the domain's own tasks)."""
    info = document.get("info") or {}
    recorded = info.get("task_set_name") if isinstance(info, dict) else None
    return recorded if isinstance(recorded, str) and recorded else None


def tasks_of(domain: Domain, document: dict[str, Any]) -> list[Any]:
    """The tasks a document's simulations were run on (those this domain knows)."""
    ids = {str(sim.get("task_id")) for sim in document["simulations"]}
    return [domain.task(t) for t in sorted(ids) if t in domain.tasks]
