"""`tau-harness submit prepare`: results files in, the board's submission folder out.

The folder is the reference's: `<model>_<organization>_<date>/submission.json` and
`trajectories/<domain>_results.json`. Metadata comes from, in rising precedence: defaults taken
from the runs (as the reference's prompts default), a TOML file, command-line options, and, only
when asked for, answers typed at prompts. Nothing is written unless every check passes, and the
folder appears whole (built beside its place, then renamed).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import tempfile
import tomllib
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from tau_mcp.harness.leaderboard import SUBMISSION_FILE, TRAJECTORIES_DIR
from tau_mcp.harness.leaderboard.metrics import BOARD_KS, DomainScores, domain_scores
from tau_mcp.harness.leaderboard.rules import (
    Problem,
    Run,
    has_retrieval_configs,
    off_board,
    run_problems,
)
from tau_mcp.harness.leaderboard.schema import board_domains, load_schema, schema_problems
from tau_mcp.harness.results import journal_path, load_results
from tau_mcp.harness.results.layouts import convert_document, detect, json_text

REFERENCE_VERSION = "1.0.1"  # the tau2-bench release whose tasks, prompts and grading we run
SUBMISSION_TYPES = ("standard", "custom")
REFERENCE_TYPES = ("paper", "blog_post", "documentation", "model_card", "github", "huggingface")


class SubmissionError(ValueError):
    """The submission cannot be made; `problems` holds every broken rule when there are some."""

    def __init__(self, message: str, problems: list[Problem] | None = None) -> None:
        super().__init__(message)
        self.problems = problems or []


@dataclass
class Metadata:
    """What the board asks about a submission besides its figures. None means "not given"."""

    model_name: str | None = None
    model_organization: str | None = None
    submitting_organization: str | None = None
    email: str | None = None
    contact_name: str | None = None
    github: str | None = None
    is_new: bool | None = None
    submission_type: str | None = None
    reasoning_effort: str | None = None
    submission_date: dt.date | None = None
    evaluation_date: dt.date | None = None
    tau2_bench_version: str | None = None
    user_simulator: str | None = None
    notes: str | None = None
    modified_prompts: bool | None = None
    omitted_questions: bool | None = None
    verification_details: str | None = None
    retrieval_config: str | None = None
    release_date: dt.date | None = None
    announcement_url: str | None = None
    announcement_title: str | None = None
    references: list[dict[str, str]] = field(default_factory=list)

    def over(self, base: Metadata) -> Metadata:
        """These values where given, `base`'s elsewhere."""
        given = {f.name: getattr(self, f.name) for f in fields(self)}
        given = {k: v for k, v in given.items() if v not in (None, [])}
        return replace(base, **given)


_DATES = {"submission_date", "evaluation_date", "release_date"}
_BOOLS = {"is_new", "modified_prompts", "omitted_questions"}


def metadata_from_toml(path: Path) -> Metadata:
    """A metadata file: the option names (underscores) as keys, `[[references]]` tables with
    title, url and type; an unknown key or a wrong type is one sentence naming it."""
    try:
        raw = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SubmissionError(f"no such metadata file: {path}") from None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise SubmissionError(f"cannot read metadata file {path} ({exc})") from None
    known = {f.name for f in fields(Metadata)}
    unknown = sorted(set(raw) - known)
    if unknown:
        raise SubmissionError(
            f"{path}: unknown key(s) {', '.join(unknown)} (known: {', '.join(sorted(known))})"
        )
    values: dict[str, Any] = {}
    for key, value in raw.items():
        values[key] = _typed(path, key, value)
    return Metadata(**values)


def _typed(path: Path, key: str, value: Any) -> Any:
    if key in _DATES:
        if isinstance(value, dt.date) and not isinstance(value, dt.datetime):
            return value
        return parse_date(value, f"{path}: {key}")
    if key in _BOOLS:
        if not isinstance(value, bool):
            raise SubmissionError(f"{path}: {key} must be true or false")
        return value
    if key == "references":
        if not isinstance(value, list) or not all(isinstance(r, dict) for r in value):
            raise SubmissionError(f"{path}: references must be [[references]] tables")
        return [check_reference(r, f"{path}: references") for r in value]
    if not isinstance(value, str):
        raise SubmissionError(f"{path}: {key} must be a string")
    return value


def parse_date(value: Any, what: str) -> dt.date:
    try:
        return dt.date.fromisoformat(str(value))
    except ValueError:
        raise SubmissionError(f"{what} is not a date (YYYY-MM-DD): {value}") from None


def check_reference(raw: dict[str, Any], what: str) -> dict[str, str]:
    unknown = sorted(set(raw) - {"title", "url", "type"})
    if unknown or not isinstance(raw.get("title"), str) or not isinstance(raw.get("url"), str):
        raise SubmissionError(f"{what}: each needs a title and a url (and may have a type)")
    kind = raw.get("type", "other")
    if kind not in (*REFERENCE_TYPES, "other"):
        raise SubmissionError(f"{what}: type {kind!r} is not one of {', '.join(REFERENCE_TYPES)}")
    return {"title": raw["title"], "url": raw["url"], "type": kind}


def tau_mcp_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("tau-mcp")
    except PackageNotFoundError:  # pragma: no cover - an uninstalled tree
        return "unknown"


def defaults(runs: list[Run], today: dt.date | None = None) -> Metadata:
    """What the reference's prompts offer when Enter is pressed, from the runs where it can."""
    today = today or dt.date.today()
    first = runs[0]
    return Metadata(
        model_name=first.side("agent")["llm"],
        model_organization="My-Organization",
        is_new=True,
        submission_type="standard",
        submission_date=today,
        evaluation_date=today,
        tau2_bench_version=REFERENCE_VERSION,
        user_simulator=first.side("user")["llm"],
        notes=f"Evaluated with tau-mcp {tau_mcp_version()} (tau2-bench {REFERENCE_VERSION}).",
        modified_prompts=False,
        omitted_questions=False,
    )


def finish(meta: Metadata) -> Metadata:
    """Values that default to other values, and the checks a submission needs."""
    if not meta.submitting_organization:
        meta = replace(meta, submitting_organization=meta.model_organization)
    if not meta.model_name:
        raise SubmissionError(
            "the runs record no agent model to name the submission after; pass --model-name"
        )
    if meta.submission_type not in SUBMISSION_TYPES:
        raise SubmissionError(
            f"submission type {meta.submission_type!r} is not one of {', '.join(SUBMISSION_TYPES)}"
        )
    if meta.announcement_url and not meta.release_date:
        raise SubmissionError("an announcement URL needs the model's --release-date too")
    return meta


def load_runs(paths: list[Path]) -> list[Run]:
    """Each results file or folder, read (any layout); an unfinished run is refused."""
    runs = []
    for path in paths:
        path = Path(path)
        if detect(path) != "dir" and journal_path(path).exists():
            raise SubmissionError(
                f"{path} belongs to an unfinished run ({journal_path(path).name} is beside it); "
                "finish it by rerunning with the same --save-to"
            )
        runs.append(Run(path, load_results(path)))
    if not runs:
        raise SubmissionError("no results files given")
    return runs


def refuse_off_board(runs: list[Run], data_dir: Path | None = None) -> None:
    """One sentence when a run is of a domain the board does not rank (before any metadata is
    asked for: nothing else matters then)."""
    problem = off_board(runs, board_domains(load_schema(data_dir)))
    if problem is not None:
        raise SubmissionError(str(problem))


def domain_entry(scores: DomainScores, retrieval_config: str | None) -> dict[str, Any]:
    entry: dict[str, Any] = {}
    for k in BOARD_KS:
        value = scores.percent(k)
        if value is not None:
            entry[f"pass_{k}"] = value
    if scores.cost is not None:
        entry["cost"] = scores.cost
    if retrieval_config and has_retrieval_configs(scores.domain):
        entry["retrieval_config"] = retrieval_config
    return entry


def build(
    runs: list[Run], meta: Metadata, domains: list[str], files: dict[str, str]
) -> tuple[dict[str, Any], dict[str, DomainScores]]:
    """submission.json's content (unset fields left out) and each domain's figures."""
    scores = {run.domain: domain_scores(run.document) for run in runs}
    retrieval = {run.domain: run.retrieval_config or meta.retrieval_config for run in runs}
    results = {d: domain_entry(scores[d], retrieval.get(d)) for d in domains if d in scores}
    contact = {"email": meta.email, "name": meta.contact_name, "github": meta.github}
    verification = {
        "modified_prompts": meta.modified_prompts,
        "omitted_questions": meta.omitted_questions,
        "details": meta.verification_details,
    }
    methodology = {
        "evaluation_date": _iso(meta.evaluation_date),
        "tau2_bench_version": meta.tau2_bench_version,
        "user_simulator": meta.user_simulator,
        "notes": meta.notes,
        "verification": _drop_none(verification),
    }
    release = {
        "release_date": _iso(meta.release_date),
        "announcement_url": meta.announcement_url,
        "announcement_title": meta.announcement_title,
    }
    submission = {
        "model_name": meta.model_name,
        "model_organization": meta.model_organization,
        "submitting_organization": meta.submitting_organization,
        "submission_date": _iso(meta.submission_date),
        "submission_type": meta.submission_type,
        "modality": "text",
        "contact_info": _drop_none(contact),
        "results": results,
        "is_new": meta.is_new,
        "trajectories_available": bool(files),
        "trajectory_files": files or None,
        "references": meta.references or None,
        "methodology": _drop_none(methodology),
        "model_release": _drop_none(release) or None,
        "reasoning_effort": meta.reasoning_effort,
    }
    return _drop_none(submission), scores


def _iso(value: dt.date | None) -> str | None:
    return value.isoformat() if value is not None else None


def _drop_none(values: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}


def slug(text: str) -> str:
    """The reference's folder-name form: lower case, spaces, slashes and dots as dashes."""
    return text.lower().replace(" ", "-").replace("/", "-").replace(".", "-")


def folder_name(meta: Metadata) -> str:
    day = (meta.submission_date or dt.date.today()).isoformat()
    return f"{slug(meta.model_name or '')}_{slug(meta.model_organization or '')}_{day}"


@dataclass(frozen=True)
class Prepared:
    folder: Path
    submission: dict[str, Any]
    scores: dict[str, DomainScores]


def trajectory_name(run: Run) -> str:
    return f"{run.domain}_results.json"


def prepare(
    runs: list[Run],
    meta: Metadata,
    output: Path,
    *,
    verify: bool = True,
    data_dir: Path | None = None,
    force: bool = False,
) -> Prepared:
    """Check the runs, compute the figures, write the folder under `output`."""
    schema = load_schema(data_dir)
    domains = board_domains(schema)
    problems = run_problems(
        runs, domains, verify=verify, data_dir=data_dir, retrieval_config=meta.retrieval_config
    )
    if problems:
        raise SubmissionError(
            f"the runs break {len(problems)} of the board's rules", problems=problems
        )
    files = {run.domain: trajectory_name(run) for run in runs}
    submission, scores = build(runs, meta, domains, files)
    broken = schema_problems(submission, schema)
    if broken:
        raise SubmissionError(f"the submission would not match the board's schema: {broken[0]}")
    folder = Path(output) / folder_name(meta)
    _write(folder, submission, runs, force)
    return Prepared(folder, submission, scores)


def _folder_mode() -> int:
    """What mkdir would give (mkdtemp makes 0700)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o777 & ~mask


def _write(folder: Path, submission: dict[str, Any], runs: list[Run], force: bool) -> None:
    if folder.exists() and not force:
        raise SubmissionError(f"{folder} already exists; remove it or pass --force to replace it")
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    try:
        trajectories = staging / TRAJECTORIES_DIR
        trajectories.mkdir()
        for run in runs:
            target = trajectories / trajectory_name(run)
            source = detect(run.path)
            if source == "dir":  # one file, as the board keeps text trajectories
                document = convert_document(run.document, "dir", "json")
                target.write_text(json_text(document), encoding="utf-8")
            else:  # byte for byte, as the reference copies them
                shutil.copyfile(run.path, target)
        text = json.dumps(submission, indent=2, ensure_ascii=False) + "\n"
        (staging / SUBMISSION_FILE).write_text(text, encoding="utf-8")
        staging.chmod(_folder_mode())
        if folder.exists():
            shutil.rmtree(folder)
        staging.rename(folder)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
