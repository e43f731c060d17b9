"""`tau-harness submit prepare|validate`: the board's submission folder from results files, and
checking such a folder (docs/leaderboard.md)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import typer

from tau_mcp.harness.cli.common import console, fail
from tau_mcp.harness.leaderboard.schema import SchemaError
from tau_mcp.harness.results import ResultsError, load_results
from tau_mcp.harness.results.folder import LayoutError
from tau_mcp.servers.cli_help import PlainFlagsGroup
from tau_mcp.servers.engine.errors import EngineError

submit_app = typer.Typer(
    cls=PlainFlagsGroup,
    help="Leaderboard submissions: prepare a folder from results files, validate a folder.",
    no_args_is_help=True,
)


def _date(value: str | None, option: str) -> dt.date | None:
    from tau_mcp.harness.leaderboard.submission import SubmissionError, parse_date

    if value is None:
        return None
    try:
        return parse_date(value, option)
    except SubmissionError as exc:
        fail(str(exc))


@submit_app.command("prepare")
def prepare(
    results: list[Path] = typer.Argument(
        ..., help="Results files or folders, one per domain (any layout)."
    ),
    output: Path = typer.Option(
        ..., "-o", "--output", help="Folder to create the submission folder in."
    ),
    metadata: Path = typer.Option(
        None, "--metadata", help="TOML file of metadata (keys: the option names, underscored)."
    ),
    model_name: str = typer.Option(None, "--model-name", help="Default: the runs' agent model."),
    model_organization: str = typer.Option(
        None, "--model-organization", help="Who made the model (default: My-Organization)."
    ),
    submitting_organization: str = typer.Option(
        None,
        "--submitting-organization",
        help="Who ran the evaluation (default: the model organization).",
    ),
    email: str = typer.Option(None, "--email", help="Contact email."),
    contact_name: str = typer.Option(None, "--contact-name"),
    github: str = typer.Option(None, "--github", help="Contact's GitHub user name."),
    is_new: bool = typer.Option(
        None, "--new/--not-new", help="Highlight as new on the board (default: new)."
    ),
    submission_type: str = typer.Option(
        None, "--submission-type", help="standard (default) or custom (a modified scaffold)."
    ),
    reasoning_effort: str = typer.Option(None, "--reasoning-effort"),
    submission_date: str = typer.Option(
        None, "--submission-date", help="YYYY-MM-DD (default: today; names the folder)."
    ),
    evaluation_date: str = typer.Option(None, "--evaluation-date", help="Default: today."),
    tau2_version: str = typer.Option(
        None, "--tau2-version", help="tau2-bench version the run follows (default: 1.0.1)."
    ),
    user_simulator: str = typer.Option(
        None, "--user-simulator", help="Default: the runs' user model."
    ),
    notes: str = typer.Option(None, "--notes", help="Methodology notes."),
    modified_prompts: bool = typer.Option(
        None, "--modified-prompts/--unmodified-prompts", help="Default: unmodified."
    ),
    omitted_questions: bool = typer.Option(
        None, "--omitted-tasks/--all-tasks", help="Default: all tasks."
    ),
    verification_details: str = typer.Option(None, "--verification-details"),
    retrieval_config: str = typer.Option(
        None,
        "--retrieval-config",
        help="The retrieval config of a domain that has them, when its results do not record it.",
    ),
    release_date: str = typer.Option(
        None, "--release-date", help="The model's public release date (YYYY-MM-DD)."
    ),
    announcement_url: str = typer.Option(None, "--announcement-url"),
    announcement_title: str = typer.Option(None, "--announcement-title"),
    no_verify: bool = typer.Option(
        False,
        "--no-verify",
        help="Skip the trajectory checks (base split, trial counts, 4+ trials, no errors).",
    ),
    voice: bool = typer.Option(
        False,
        "--voice",
        help="The reference's voice-submission mode; tau-mcp has no voice runs: refused.",
    ),
    interactive: bool = typer.Option(
        False, "--interactive", help="Ask for each value at a prompt (defaults as resolved)."
    ),
    force: bool = typer.Option(False, "--force", help="Replace an existing submission folder."),
    data_dir: Path = typer.Option(
        None, "--data-dir", help="Benchmark data folder (default $TAU2_DATA_DIR)."
    ),
) -> None:
    """Make the board's submission folder (submission.json + trajectories/) from results files."""
    from tau_mcp.harness.leaderboard import submission as sub

    if voice:
        fail("tau-mcp has no voice (full-duplex) runs to submit; drop --voice")

    try:
        runs = sub.load_runs(results)
        sub.refuse_off_board(runs, data_dir)
        given = sub.Metadata(
            model_name=model_name,
            model_organization=model_organization,
            submitting_organization=submitting_organization,
            email=email,
            contact_name=contact_name,
            github=github,
            is_new=is_new,
            submission_type=submission_type,
            reasoning_effort=reasoning_effort,
            submission_date=_date(submission_date, "--submission-date"),
            evaluation_date=_date(evaluation_date, "--evaluation-date"),
            tau2_bench_version=tau2_version,
            user_simulator=user_simulator,
            notes=notes,
            modified_prompts=modified_prompts,
            omitted_questions=omitted_questions,
            verification_details=verification_details,
            retrieval_config=retrieval_config,
            release_date=_date(release_date, "--release-date"),
            announcement_url=announcement_url,
            announcement_title=announcement_title,
        )
        meta = sub.defaults(runs)
        if metadata is not None:
            meta = sub.metadata_from_toml(metadata).over(meta)
        meta = given.over(meta)
        if interactive:
            meta = _ask(meta)
        meta = sub.finish(meta)
        done = sub.prepare(runs, meta, output, verify=not no_verify, data_dir=data_dir, force=force)
    except sub.SubmissionError as exc:
        for problem in exc.problems:
            typer.echo(f"error: {problem}", err=True)
        fail(str(exc))
        return
    except (ResultsError, LayoutError, SchemaError, EngineError, ValueError) as exc:
        fail(str(exc))
        return
    console.print(f"submission written to {done.folder}", soft_wrap=True)
    for domain, scores in done.scores.items():
        shown = " | ".join(
            f"pass^{k} {scores.percent(k):.1f}%" for k in (1, 2, 3, 4) if k in scores.pass_hat
        )
        console.print(f"  {domain}: {shown or 'no scores'}")
    console.print(
        f"next: `tau-harness submit validate {done.folder}`; the board takes submission.json "
        "by pull request and the trajectories/ folder by a link (see docs/leaderboard.md)",
        soft_wrap=True,
    )


def _ask(meta):
    """Each value at a prompt, its resolved value as the default (Enter keeps it)."""
    from dataclasses import replace

    from rich.prompt import Confirm, Prompt

    from tau_mcp.harness.leaderboard.submission import SUBMISSION_TYPES, parse_date

    def text(label: str, value: str | None) -> str | None:
        answer = Prompt.ask(label, default=value or "", console=console)
        return answer or None

    def date(label: str, value: dt.date | None) -> dt.date | None:
        answer = text(label, value.isoformat() if value else None)
        return parse_date(answer, label) if answer else None

    name = text("Model name", meta.model_name)
    simulator = text("User simulator model", meta.user_simulator)
    org = text("Model organization (who made the model)", meta.model_organization)
    submitter = text(
        "Submitting organization (who ran the evaluation)", meta.submitting_organization or org
    )
    email = text("Contact email", meta.email)
    contact = text("Contact name", meta.contact_name)
    github = text("GitHub user name", meta.github)
    is_new = Confirm.ask("Highlight as new on the board?", default=bool(meta.is_new))
    kind = Prompt.ask(
        "Submission type", choices=list(SUBMISSION_TYPES), default=meta.submission_type
    )
    effort = text("Reasoning effort", meta.reasoning_effort)
    evaluated = date("Evaluation date (YYYY-MM-DD)", meta.evaluation_date)
    version = text("tau2-bench version", meta.tau2_bench_version)
    notes = text("Methodology notes", meta.notes)
    modified = Confirm.ask("Were any prompts modified?", default=bool(meta.modified_prompts))
    omitted = Confirm.ask("Were any tasks left out?", default=bool(meta.omitted_questions))
    released = date("Model release date (YYYY-MM-DD, optional)", meta.release_date)
    return replace(
        meta,
        model_name=name,
        user_simulator=simulator,
        model_organization=org,
        submitting_organization=submitter,
        email=email,
        contact_name=contact,
        github=github,
        is_new=is_new,
        submission_type=kind,
        reasoning_effort=effort,
        evaluation_date=evaluated,
        tau2_bench_version=version,
        notes=notes,
        modified_prompts=modified,
        omitted_questions=omitted,
        release_date=released,
    )


@submit_app.command("validate")
def validate(
    folder: Path = typer.Argument(
        ..., help="A submission folder (submission.json [+ trajectories/])."
    ),
    data_dir: Path = typer.Option(
        None, "--data-dir", help="Benchmark data folder (default $TAU2_DATA_DIR)."
    ),
) -> None:
    """Check a submission folder as the board does: schema, rules, every figure recomputed."""
    from tau_mcp.harness.leaderboard.validate import validate as check

    try:
        report = check(folder, data_dir)
    except (SchemaError, EngineError, ValueError) as exc:
        fail(str(exc))
        return
    for line in report.passed:
        console.print(f"[green]ok[/green] {line}", highlight=False)
    for line in report.warnings:
        console.print(f"[yellow]warning[/yellow] {line}", highlight=False)
    for line in report.errors:
        typer.echo(f"error: {line}", err=True)
    if not report.ok:
        fail(f"{folder} is not a valid submission ({len(report.errors)} problem(s))")
    console.print(f"{folder} is a valid submission")


@submit_app.command("verify-trajs")
def verify_trajs(
    paths: list[str] = typer.Argument(
        ..., help="Results files, folders of them, or glob patterns."
    ),
    data_dir: Path = typer.Option(
        None, "--data-dir", help="Benchmark data folder (default $TAU2_DATA_DIR)."
    ),
) -> None:
    """Check results files one by one as a submission's trajectories are checked: the domain's
    base split, every trial of every task, 4+ trials, no infrastructure errors (the
    reference's `submit verify-trajs`)."""
    from tau_mcp.harness.cli.tau2 import expand_paths
    from tau_mcp.harness.leaderboard.rules import Run, verify_run

    files, nothing = expand_paths(paths)
    bad = list(nothing)
    for raw in nothing:
        typer.echo(f"error: no such file: {raw}", err=True)
    for path in files:
        try:
            run = Run(path, load_results(path))
            if run.domain is None:
                raise ResultsError(f"{path} does not record its domain")
            problems = verify_run(run, data_dir)
        except (ResultsError, EngineError, ValueError) as exc:
            problems = [str(exc)]
        if problems:
            bad.append(str(path))
            for problem in problems:
                typer.echo(f"error: {problem}", err=True)
        else:
            console.print(f"[green]ok[/green] {path}", highlight=False)
    if bad:
        fail(f"{len(bad)} of {len(files) + len(nothing)} file(s) fail the checks")
    console.print(f"all {len(files)} file(s) pass the checks")
