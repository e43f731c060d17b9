"""Forking a saved conversation: its first N turns again, then live with whoever you name.

`tau-harness fork RESULTS --sim ID --at-turn N` takes simulations of a results file, keeps each
one's first N messages (turn N is the message whose `turn_idx` is N: messages 0..N-1 are kept),
makes their tool calls again on a fresh episode of the task (only those that change state, as
re-grading does, so the state the conversation continues from is real, not a copy) and runs the
conversation on from there with the agent, user and judge the options name (by default the
parent run's), under the parent's seed and trial. The result is an ordinary results file; its
header's `fork` names the parent (path, the file's sha256, the turn) and each record's
`info.forked_from` its parent simulation. Forks of one run made with different agents compare
in `report` as paired runs, task by task.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tau_mcp.conversation.messages import Message, ToolMessage, parse_message
from tau_mcp.harness import redaction
from tau_mcp.harness.config import RunConfig
from tau_mcp.harness.errors import ConfigError
from tau_mcp.harness.results import (
    INFRA,
    ResultsFile,
    load_results,
    refuse_unfinished_run,
    results_lock,
)
from tau_mcp.harness.results.select import find_simulations
from tau_mcp.harness.simulate import SimulationRunner
from tau_mcp.harness.task_group import gather_or_cancel
from tau_mcp.harness.wiring import load_domain, open_backend
from tau_mcp.servers.engine.domain import Domain
from tau_mcp.servers.engine.errors import EngineError

__all__ = ["ForkPlan", "fork", "fork_config", "plan_fork"]


@dataclass(frozen=True)
class ForkPlan:
    """What a fork continues: the parent file, its simulations to fork, the turn."""

    parent: Path
    document: dict[str, Any]
    simulations: list[dict[str, Any]]
    at_turn: int

    def header(self) -> dict[str, Any]:
        """The fork's `fork` header field: which file, which bytes, which turn, which
        simulations."""
        digest = hashlib.sha256(self.parent.read_bytes()).hexdigest()
        return {
            "parent": str(self.parent),
            "parent_sha256": digest,
            "at_turn": self.at_turn,
            "simulations": [str(s.get("id")) for s in self.simulations],
        }


def plan_fork(parent: Path, sims: list[str], at_turn: int) -> ForkPlan:
    """The simulations `sims` name in `parent` (ids, task ids, unique id prefixes, or `all`),
    checked: each finished, with more than `at_turn` messages."""
    document = load_results(parent)
    if not isinstance(document.get("info"), dict):
        raise ConfigError(f"{parent} has no run header, so a fork cannot know its settings")
    if at_turn < 1:
        raise ConfigError("--at-turn takes a turn of 1 or more (the messages kept before it)")
    chosen: list[dict[str, Any]] = []
    for key in sims or ["all"]:
        if key == "all":  # every conversation the file holds
            found = [s for s in document["simulations"] if s.get("termination_reason") != INFRA]
        else:
            found = find_simulations(document["simulations"], key)
            if not found:
                raise ConfigError(f"{parent} has no simulation '{key}' (an id, a task id or all)")
        chosen += [s for s in found if not any(s is c for c in chosen)]
    for sim in chosen:
        if sim.get("termination_reason") == INFRA:
            raise ConfigError(
                f"simulation {sim.get('id')} ended in an infrastructure error: it has no "
                "conversation to fork"
            )
        count = len(sim.get("messages") or [])
        if at_turn > count:
            raise ConfigError(
                f"simulation {sim.get('id')} has {count} messages (turns 0-{count - 1}); "
                f"--at-turn {at_turn} is past its end"
            )
    if not chosen:
        raise ConfigError(f"{parent} has no finished simulation to fork")
    return ForkPlan(Path(parent), document, chosen, at_turn)


def _recorded_args(args: Any) -> dict[str, Any] | None:
    """Model arguments as the parent recorded them, less the redacted secrets (a fork takes
    keys from the environment, or from the options given again)."""
    if not isinstance(args, dict):
        return None
    return {
        k: v
        for k, v in args.items()
        if v != redaction.REDACTED
        and not (isinstance(v, dict) and redaction.REDACTED in v.values())
    }


def fork_config(plan: ForkPlan, **options: Any) -> RunConfig:
    """The fork's run: the parent's settings (domain, task set, sides and models, judge, seed,
    limits, retrieval config), with `options` (RunConfig fields, None for not given) laid
    over them."""
    info = plan.document["info"]
    agent, user = info.get("agent_info") or {}, info.get("user_info") or {}
    settings: dict[str, Any] = {
        "domain": (info.get("environment_info") or {}).get("domain_name"),
        "task_set_name": info.get("task_set_name"),
        "agent": agent.get("implementation") or "llm",
        "agent_llm": agent.get("llm"),
        "agent_llm_args": _recorded_args(agent.get("llm_args")),
        "user": user.get("implementation") or "llm",
        "user_llm": user.get("llm"),
        "user_llm_args": _recorded_args(user.get("llm_args")),
        "judge_llm": info.get("judge_llm") or "none",
        "judge_llm_args": _recorded_args(info.get("judge_llm_args")),
        "seed": info.get("seed"),
        "max_steps": info.get("max_steps"),
        "max_errors": info.get("max_errors"),
        "timeout": info.get("timeout"),
        "enforce_protocol": bool(info.get("enforce_communication_protocol")),
        "retrieval_config": info.get("retrieval_config"),
        "retrieval_kwargs": info.get("retrieval_config_kwargs"),
    }
    given = {k: v for k, v in options.items() if v is not None}
    if "agent" in given and "agent_llm" not in given and given["agent"] != settings["agent"]:
        settings["agent_llm_args"] = None  # another agent: the parent's model args need not fit
    merged = {k: v for k, v in {**settings, **given}.items() if v is not None}
    if not merged.get("domain"):
        raise ConfigError(f"{plan.parent} does not record its domain")
    return RunConfig(**merged)


def _opening(sim: dict[str, Any], at_turn: int) -> list[Message]:
    """The first `at_turn` messages; a cut between a message's tool calls and the last of
    their results is refused (the turn just before or after them is a fork point)."""
    raw = sim.get("messages") or []
    messages = [parse_message(m) for m in raw[:at_turn]]
    if (
        at_turn < len(raw)
        and isinstance(messages[-1], ToolMessage)
        and raw[at_turn].get("role") == "tool"
    ):
        start = at_turn
        while start > 0 and raw[start - 1].get("role") == "tool":
            start -= 1
        end = at_turn
        while end < len(raw) and raw[end].get("role") == "tool":
            end += 1
        raise ConfigError(
            f"turn {at_turn} of simulation {sim.get('id')} falls between the results of the tool "
            f"calls of turn {start - 1}; fork at turn {start} or {end}"
        )
    return messages


def default_output(parent: Path, at_turn: int) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return Path("results") / f"{stamp}_fork_{parent.stem}_turn{at_turn}.json"


def fork(plan: ForkPlan, config: RunConfig, on_done: Any = None) -> ResultsFile:
    """Run the fork (the results file at `config.save_to`, which must not exist yet)."""
    try:
        domain = load_domain(config.domain, config.data_dir, task_set=config.task_set_name)
    except EngineError as exc:
        raise ConfigError(str(exc)) from None
    missing = sorted({str(s.get("task_id")) for s in plan.simulations} - set(domain.tasks))
    if missing:
        raise ConfigError(f"the data folder's {domain.name} has no task {', '.join(missing)}")
    openings = [(sim, _opening(sim, plan.at_turn)) for sim in plan.simulations]
    for sim in plan.simulations:
        own = domain.task(str(sim["task_id"])).initial_state
        history = len((own.message_history or []) if own is not None else [])
        if plan.at_turn < history:
            raise ConfigError(
                f"turn {plan.at_turn} is inside task {sim['task_id']}'s own starting history "
                f"({history} messages); fork at turn {history} or later"
            )
    return asyncio.run(_run(plan, config, domain, openings, on_done))


async def _run(
    plan: ForkPlan,
    config: RunConfig,
    domain: Domain,
    openings: list[tuple[dict[str, Any], list[Message]]],
    on_done: Any,
) -> ResultsFile:
    from tau_mcp.harness.cassettes import needs_no_model
    from tau_mcp.harness.preflight import check_models, models_called

    backend = await open_backend(domain, config.server, config.server_token)
    try:
        runner = SimulationRunner(backend, domain, config)
        tasks = [domain.task(str(sim["task_id"])) for sim, _ in openings]
        if not needs_no_model(config):
            check_models(models_called(runner.config, tasks, runner.grader.judge))
        runner.user_guidelines()
        info = runner.info()
        info.fork = plan.header()
        unique = list({t.id: t for t in tasks}.values())
        with results_lock(config.save_to):
            if config.save_to is not None and Path(config.save_to).exists():
                raise ConfigError(f"{config.save_to} exists; fork into a new --save-to")
            refuse_unfinished_run(config.save_to)
            results = ResultsFile(
                config.save_to, info, [t.model_dump(mode="json", exclude_none=True) for t in unique]
            )
            results.save()
            limit = asyncio.Semaphore(max(1, config.max_concurrency))

            async def one(sim: dict[str, Any], opening: list[Message], task) -> None:
                trial, seed = int(sim.get("trial") or 0), int(sim.get("seed") or config.seed)
                async with limit:
                    record = await runner.simulate(task, trial, seed, opening)
                record.info = {
                    **(record.info or {}),
                    "forked_from": {"simulation": str(sim.get("id")), "at_turn": plan.at_turn},
                }
                results.add(record)
                if on_done is not None:
                    on_done(record)

            await gather_or_cancel(
                *(
                    one(sim, opening, task)
                    for (sim, opening), task in zip(openings, tasks, strict=True)
                )
            )
            results.finish()
            return results
    finally:
        await backend.close()
