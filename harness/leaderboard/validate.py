"""`tau-harness submit validate`: check a submission folder, ours or anyone's.

What is checked, in order: `submission.json` reads and matches the board's schema (read from
the data folder); banking_knowledge names its retrieval config; the files `trajectory_files`
names are there; then, when the folder has trajectories, every rule of `rules` on them and every
figure recomputed from them, compared with `!=` as the board's validator compares. A model name
or user simulator other than the runs' is a warning, as there. A folder without trajectories
(the board's published submissions keep only `submission.json`) is checked as far as it can be.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tau_mcp.harness.leaderboard import SUBMISSION_FILE, TRAJECTORIES_DIR
from tau_mcp.harness.leaderboard.metrics import BOARD_KS, domain_scores
from tau_mcp.harness.leaderboard.rules import Run, has_retrieval_configs, run_problems
from tau_mcp.harness.leaderboard.schema import board_domains, load_schema, schema_problems
from tau_mcp.harness.results import ResultsError, load_results
from tau_mcp.harness.results.folder import META_FILE


@dataclass
class Report:
    """Errors fail the validation; warnings and notes are said."""

    folder: Path
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    passed: list[str] = field(default_factory=list)
    trajectories: list[Path] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors


def trajectory_paths(folder: Path) -> list[Path]:
    """The results in a trajectories folder: its .json files and its results folders."""
    found = [p for p in folder.iterdir() if p.is_file() and p.suffix == ".json"]
    found += [p for p in folder.iterdir() if p.is_dir() and (p / META_FILE).is_file()]
    return sorted(found)


def _read_submission(path: Path, report: Report) -> dict[str, Any] | None:
    try:
        submission = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        report.errors.append(f"{path} is missing")
        return None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        report.errors.append(f"{path} cannot be read ({exc})")
        return None
    if not isinstance(submission, dict):
        report.errors.append(f"{path} is not a JSON object")
        return None
    return submission


def validate(folder: Path, data_dir: Path | None = None) -> Report:
    folder = Path(folder)
    report = Report(folder)
    if not folder.is_dir():
        report.errors.append(f"{folder} is not a folder")
        return report
    schema = load_schema(data_dir)
    submission = _read_submission(folder / SUBMISSION_FILE, report)
    if submission is None:
        return report
    problems = schema_problems(submission, schema)
    report.errors += [f"{SUBMISSION_FILE} does not match the schema at {p}" for p in problems]
    if not problems:
        report.passed.append(f"{SUBMISSION_FILE} matches the board's schema")
    results = submission.get("results") if isinstance(submission.get("results"), dict) else {}
    for domain, entry in results.items():
        if has_retrieval_configs(domain) and isinstance(entry, dict):
            if not entry.get("retrieval_config"):
                report.errors.append(
                    f"results.{domain} has no retrieval_config (the board needs one)"
                )
    _check_trajectories(folder, submission, results, board_domains(schema), data_dir, report)
    return report


def _check_trajectories(
    folder: Path,
    submission: dict[str, Any],
    results: dict[str, Any],
    domains: list[str],
    data_dir: Path | None,
    report: Report,
) -> None:
    directory = folder / TRAJECTORIES_DIR
    if not directory.is_dir():
        if submission.get("trajectories_available"):
            report.errors.append(f"trajectories_available is true but {directory} is missing")
        else:
            report.warnings.append(
                f"no {TRAJECTORIES_DIR}/ folder: the figures cannot be recomputed"
            )
        return
    report.trajectories = trajectory_paths(directory)
    named = submission.get("trajectory_files") or {}
    for domain, name in named.items() if isinstance(named, dict) else []:
        if not (directory / str(name)).exists():
            report.errors.append(f"trajectory_files names {name} for {domain}, not in {directory}")
    if not report.trajectories:
        report.errors.append(f"{directory} holds no results files")
        return
    runs = []
    for path in report.trajectories:
        try:
            runs.append(Run(path, load_results(path)))
        except ResultsError as exc:
            report.errors.append(str(exc))
    if len(runs) != len(report.trajectories):
        return
    recorded = {
        domain: entry.get("retrieval_config")
        for domain, entry in results.items()
        if isinstance(entry, dict)
    }
    problems = run_problems(runs, domains, data_dir=data_dir, retrieval_config=recorded)
    report.errors += [str(p) for p in problems]
    if problems:
        return
    report.passed.append(f"{len(runs)} trajectory file(s) follow the board's rules")
    _compare_figures(submission, results, runs, report)


def _compare_figures(
    submission: dict[str, Any], results: dict[str, Any], runs: list[Run], report: Report
) -> None:
    before = len(report.errors)
    for run in runs:
        scores = domain_scores(run.document)
        given = results.get(run.domain)
        if not isinstance(given, dict):
            report.errors.append(f"the trajectories hold {run.domain}, which results lacks")
            continue
        computed = {f"pass_{k}": scores.percent(k) for k in BOARD_KS}
        computed["cost"] = scores.cost
        for key, value in computed.items():
            if given.get(key) != value:
                report.errors.append(
                    f"{run.domain} {key} is {given.get(key)} in {SUBMISSION_FILE}; the "
                    f"trajectories give {value}"
                )
    for domain in results:
        if domain not in {run.domain for run in runs}:
            report.warnings.append(f"results.{domain} has no trajectory file to check it with")
    if len(report.errors) == before:
        report.passed.append("every figure equals the one recomputed from the trajectories")
    first = runs[0]
    agent, user = first.side("agent")["llm"], first.side("user")["llm"]
    if submission.get("model_name") != agent:
        report.warnings.append(
            f"model_name {submission.get('model_name')!r} is not the runs' agent model {agent!r}"
        )
    simulator = (submission.get("methodology") or {}).get("user_simulator")
    if simulator != user:
        report.warnings.append(
            f"methodology.user_simulator {simulator!r} is not the runs' user model {user!r}"
        )
