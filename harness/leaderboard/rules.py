"""The board's rules for the runs of one submission, each with a name and a one-sentence verdict.

The rules are the reference's (its submission guide and its `submit prepare` / `submit
validate` checks) plus two that protect the submitter:

| rule              | what it asks                                                          |
|-------------------|-----------------------------------------------------------------------|
| board-domain      | the run's domain is one the board has (the schema's `Results`)        |
| one-per-domain    | one run per domain                                                    |
| same-models       | the same agent and user simulator, models and arguments, in every run |
| retrieval-config  | a run of a domain with retrieval configs records its config (or one is given) |
| no-secrets        | no API key in the recorded model arguments (the files are shared)     |
| base-split        | every task of the domain's base split, as the data folder defines it  |
| trial-count       | every task run the run's `num_trials` times                           |
| min-trials        | at least 4 trials                                                     |
| no-infra-errors   | no simulation left as an infrastructure error                         |

The last four are the verification `--no-verify` skips, as the reference's flag skips its
trajectory checks; the others are always checked, as the reference checks them (or because the
submission could not be written without them).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tau_mcp.harness.metrics import INFRA

MIN_TRIALS = 4
SECRET_ARGS = frozenset({"api_key", "aws_secret_access_key", "aws_session_token", "token"})
VERIFY_RULES = ("base-split", "trial-count", "min-trials", "no-infra-errors")


@dataclass(frozen=True)
class Problem:
    rule: str
    message: str

    def __str__(self) -> str:
        return f"[{self.rule}] {self.message}"


@dataclass
class Run:
    """One results document given to a submission, with where it came from."""

    path: Path
    document: dict[str, Any]

    @property
    def info(self) -> dict[str, Any]:
        return self.document.get("info") or {}

    @property
    def domain(self) -> str | None:
        return (self.info.get("environment_info") or {}).get("domain_name")

    def side(self, name: str) -> dict[str, Any]:
        """The recorded agent or user: implementation, model and model arguments."""
        part = self.info.get(f"{name}_info") or {}
        return {
            "implementation": part.get("implementation"),
            "llm": part.get("llm"),
            "llm_args": part.get("llm_args") or None,
        }

    @property
    def retrieval_config(self) -> str | None:
        return self.info.get("retrieval_config")


def run_problems(
    runs: list[Run],
    board_domains: list[str],
    *,
    verify: bool = True,
    data_dir: Path | None = None,
    retrieval_config: str | Mapping[str, str | None] | None = None,
) -> list[Problem]:
    """Every rule the runs break, in the order of the table above. `retrieval_config` is the
    config given for the runs of domains with retrieval configs (one for all, or by domain)."""
    problems = [p for run in runs for p in _header_problems(run, board_domains)]
    if problems:
        return problems  # the later rules need a domain for every run
    problems += _one_per_domain(runs)
    problems += _same_models(runs)
    problems += _retrieval(runs, retrieval_config)
    problems += _secrets(runs)
    if verify:
        for run in runs:
            problems += verify_run(run, data_dir)
    return problems


def off_board(runs: list[Run], board_domains: list[str]) -> Problem | None:
    """The first run the board cannot take at all (no header, or a domain it does not rank,
    a domain pack's say): checked before anything else is asked of a submission."""
    return next((p for run in runs for p in _header_problems(run, board_domains)), None)


def _header_problems(run: Run, board_domains: list[str]) -> list[Problem]:
    if not run.info:
        return [
            Problem(
                "board-domain",
                f"{run.path} has no run header (info), so its domain and models are unknown; "
                "give the results file a run wrote",
            )
        ]
    if run.domain not in board_domains:
        return [
            Problem(
                "board-domain",
                f"{run.path} is a run of '{run.domain}', which the board does not rank "
                f"(its domains: {', '.join(board_domains)})",
            )
        ]
    return []


def _one_per_domain(runs: list[Run]) -> list[Problem]:
    seen = Counter(run.domain for run in runs)
    return [
        Problem(
            "one-per-domain",
            f"{count} runs of {domain} were given; a submission holds one run per domain",
        )
        for domain, count in seen.items()
        if count > 1
    ]


def _same_models(runs: list[Run]) -> list[Problem]:
    first = runs[0] if runs else None
    problems = []
    for run in runs[1:]:
        for side in ("agent", "user"):
            a, b = first.side(side), run.side(side)
            diff = [k for k in a if a[k] != b[k]]
            if diff:
                what = ", ".join(f"{k} {_show(a[k])} vs {_show(b[k])}" for k in diff)
                label = "agent" if side == "agent" else "user simulator"
                problems.append(
                    Problem(
                        "same-models",
                        f"the {label} differs between {first.domain} and {run.domain} ({what}); "
                        "every domain must be run with the same agent and user simulator, "
                        "models and arguments",
                    )
                )
    return problems


def _show(value: Any) -> str:
    import json

    return json.dumps(value, sort_keys=True) if not isinstance(value, str) else value


def has_retrieval_configs(domain: str | None) -> bool:
    """Whether a domain has retrieval configs (the board records the one a run used)."""
    from tau_mcp.servers.domains.registry import domain_spec
    from tau_mcp.servers.engine.errors import EngineError

    try:
        return domain is not None and domain_spec(domain).variants is not None
    except EngineError:
        return False


def _retrieval(runs: list[Run], given: str | Mapping[str, str | None] | None) -> list[Problem]:
    def given_for(run: Run) -> str | None:
        return given.get(run.domain or "") if isinstance(given, Mapping) else given

    return [
        Problem(
            "retrieval-config",
            f"the {run.domain} run {run.path} records no retrieval config; pass "
            "--retrieval-config NAME (the config it was run with)",
        )
        for run in runs
        if has_retrieval_configs(run.domain) and not (run.retrieval_config or given_for(run))
    ]


def _secrets(runs: list[Run]) -> list[Problem]:
    problems = []
    for run in runs:
        for side in ("agent", "user"):
            args = run.side(side)["llm_args"] or {}
            found = sorted(k for k in args if k.lower() in SECRET_ARGS and args[k])
            if found:
                problems.append(
                    Problem(
                        "no-secrets",
                        f"{run.path} records the {side} model's {', '.join(found)} in its "
                        "model arguments and submissions are shared; rerun with the key in an "
                        "environment variable instead",
                    )
                )
    return problems


def verify_run(run: Run, data_dir: Path | None) -> list[Problem]:
    """The reference's trajectory checks (tasks, trial counts) and ours (4 trials, no errors)."""
    problems = _tasks(run, data_dir)
    sims = run.document.get("simulations") or []
    trials = run.info.get("num_trials")
    per_task = Counter(str(s.get("task_id")) for s in sims)
    task_ids = {str(t.get("id")) for t in run.document.get("tasks") or [] if isinstance(t, dict)}
    wrong = sorted(t for t in task_ids if per_task.get(t, 0) != trials)
    if wrong:
        problems.append(
            Problem(
                "trial-count",
                f"{run.path}: {len(wrong)} task(s) do not have {trials} simulations, the run's "
                f"num_trials (first: task {wrong[0]} has {per_task.get(wrong[0], 0)}); "
                "rerun with the same --save-to to finish the run",
            )
        )
    if not isinstance(trials, int) or trials < MIN_TRIALS:
        problems.append(
            Problem(
                "min-trials",
                f"{run.path} has {trials} trial(s) per task; the board asks for at least "
                f"{MIN_TRIALS} (--num-trials {MIN_TRIALS})",
            )
        )
    infra = sum(1 for s in sims if s.get("termination_reason") == INFRA)
    if infra:
        problems.append(
            Problem(
                "no-infra-errors",
                f"{run.path} has {infra} simulation(s) that ended in an infrastructure error; "
                "rerun with the same --save-to to redo them",
            )
        )
    return problems


def _tasks(run: Run, data_dir: Path | None) -> list[Problem]:
    from tau_mcp.harness.leaderboard.tasks import base_split_tasks, normalized_task

    expected = base_split_tasks(run.domain, data_dir)
    given: dict[str, Any] = {}
    for task in run.document.get("tasks") or []:
        if isinstance(task, dict):
            given[str(task.get("id"))] = task
    missing = [t for t in expected if t not in given]
    extra = [t for t in given if t not in expected]
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"{len(missing)} missing (first: {missing[0]})")
        if extra:
            parts.append(f"{len(extra)} not in it (first: {extra[0]})")
        return [
            Problem(
                "base-split",
                f"{run.path} does not hold the {len(expected)} tasks of {run.domain}'s base "
                f"split: {'; '.join(parts)}; run with --task-split base and no --task-ids or "
                "--num-tasks",
            )
        ]
    changed = [t for t in expected if normalized_task(given[t]) != expected[t]]
    if changed:
        return [
            Problem(
                "base-split",
                f"{run.path}: {len(changed)} task definition(s) differ from the data folder's "
                f"(first: task {changed[0]}); run against the reference data",
            )
        ]
    return []
