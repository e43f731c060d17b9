"""The reference's (`tau2`) commands that tau-harness names differently or did not have, under
the reference's names, so a tau2 user's commands work unchanged: `evaluate-trajs`,
`check-data`, `start`, `domain`, `intro` (docs/from-tau2.md maps every command and option).
"""

from __future__ import annotations

import asyncio
import glob
from pathlib import Path
from typing import Any

import typer

from tau_mcp.harness.backends import InfrastructureError
from tau_mcp.harness.cli.common import (
    DOMAIN_HELP,
    TASK_SET_HELP,
    console,
    fail,
    judge_option,
    load_domain,
)
from tau_mcp.harness.results import ResultsError, load_results
from tau_mcp.servers.engine.errors import EngineError, UnknownTaskSet
from tau_mcp.servers.surfaces import View, listing_as_shown, register_surface


# --- evaluate-trajs ---------------------------------------------------------------------------
def expand_paths(paths: list[str]) -> tuple[list[Path], list[str]]:
    """Files as given; a folder: its results.json, else every .json below it; else a glob.
    Also the paths that named nothing."""
    found: list[Path] = []
    nothing: list[str] = []
    for raw in paths:
        before = len(found)
        path = Path(raw)
        if path.is_file():
            found.append(path)
        elif path.is_dir():
            if (path / "results.json").is_file():
                found.append(path / "results.json")
            else:
                found += sorted(p for p in path.rglob("*.json") if p.is_file())
        else:
            found += sorted(Path(p) for p in glob.glob(raw) if Path(p).is_file())
        if len(found) == before:
            nothing.append(raw)
    return list(dict.fromkeys(found)), nothing


def embedded_tasks_differ(document: dict[str, Any], domain: Any) -> list[str]:
    """Ids of the tasks whose definition in the results file differs from the data folder's
    (tau-mcp grades against the data folder's; the reference, by default, the embedded ones)."""
    from tau_mcp.harness.leaderboard.tasks import normalized_task

    differ = []
    for raw in document.get("tasks") or []:
        if not isinstance(raw, dict) or str(raw.get("id")) not in domain.tasks:
            continue
        try:
            embedded = normalized_task(raw)
        except ValueError:
            differ.append(str(raw.get("id")))
            continue
        if embedded != normalized_task(domain.task(str(raw["id"]))):
            differ.append(str(raw["id"]))
    return differ


def evaluate_trajs(
    paths: list[str] = typer.Argument(
        ..., help="Results files, folders of them, or glob patterns."
    ),
    output_dir: Path = typer.Option(
        None,
        "-o",
        "--output-dir",
        help="Write each re-graded file here as updated_<name> (default: only show the figures).",
    ),
    fresh_tasks: bool = typer.Option(
        False,
        "--fresh-tasks",
        help="Grade against the data folder's task definitions. tau-mcp always does; without "
        "this flag a file whose embedded tasks differ from them is refused.",
    ),
    data_dir: Path = typer.Option(
        None, "--data-dir", help="Benchmark data folder (default $TAU2_DATA_DIR)."
    ),
    judge_llm: str = typer.Option(
        None, "--judge-llm", help="Model judging NL assertions; 'none' skips them."
    ),
    max_concurrency: int = typer.Option(
        8, "--max-concurrency", min=1, help="Simulations replayed and graded at once."
    ),
    task_set_name: str = typer.Option(
        None,
        "--task-set-name",
        help=TASK_SET_HELP.removesuffix(".") + " (else the one each results file records).",
    ),
) -> None:
    """Re-grade results files and show their figures (the reference's `evaluate-trajs`; the
    domain of each comes from its header)."""
    from tau_mcp.harness.cli.evaluate import _evaluate, _evaluate_options
    from tau_mcp.harness.evaluate import recorded_domain, recorded_task_set
    from tau_mcp.harness.report import print_summary
    from tau_mcp.harness.results import refuse_unfinished_run, write_regraded

    files, nothing = expand_paths(paths)
    if not files:
        fail(f"no results files found in {', '.join(paths)}")
    judge = judge_option(judge_llm, None)
    failed: list[tuple[Path | str, str]] = [(raw, "no such file") for raw in nothing]
    for raw in nothing:
        console.print(f"[red]not found:[/] {raw}", highlight=False)
    for path in files:
        console.rule(str(path))
        try:
            document = load_results(path)
            task_set = task_set_name or recorded_task_set(document)
            try:
                domain = load_domain(recorded_domain(document, path), data_dir, task_set=task_set)
            except UnknownTaskSet as exc:
                if task_set_name is not None:
                    fail(str(exc))  # a wrong option, not a wrong file: stop before grading
                raise
            differ = embedded_tasks_differ(document, domain)
            if differ and not fresh_tasks:
                raise ValueError(
                    f"{len(differ)} task(s) in {path.name} differ from the data folder's (first: "
                    f"{differ[0]}); tau-mcp grades against the data folder's tasks: pass "
                    "--fresh-tasks to do so"
                )
            options = _evaluate_options(domain, document, None, None)
            graded = asyncio.run(
                _evaluate(domain, document, judge, None, None, max_concurrency, options)
            )
            print_summary(
                console,
                graded["simulations"],
                f"{path.name}: re-graded",
                info=graded.get("info"),
                label=str(path),
            )
            if output_dir is not None:
                output_dir.mkdir(parents=True, exist_ok=True)
                target = output_dir / f"updated_{path.name}"
                refuse_unfinished_run(target)
                write_regraded(target, graded)
                console.print(f"saved to {target}")
        except (EngineError, InfrastructureError, ResultsError, ValueError, OSError) as exc:
            failed.append((path, str(exc)))
            console.print(f"[red]not re-graded:[/] {exc}", markup=True, highlight=False)
    console.rule()
    total = len(files) + len(nothing)
    console.print(f"{total - len(failed)} of {total} file(s) re-graded")
    if failed:
        fail(f"{len(failed)} file(s) could not be re-graded (first: {failed[0][0]})")


# --- start, domain, intro -------------------------------------------------------------------
def start(ctx: typer.Context) -> None:
    """Serve every domain over MCP (the reference's `start`): `tau-server serve`, whose options
    it takes (--help lists them)."""
    from tau_mcp.servers.cli import app as server_app

    group = typer.main.get_command(server_app)
    serve = group.get_command(typer.Context(group), "serve")  # type: ignore[attr-defined]
    serve.main(ctx.args, prog_name="tau-harness start")


def domain_tools(domain: Any, variant: str | None = None) -> dict[str, Any]:
    """Each side's tool listing as `domain` prints it (the user side only if it has tools)."""
    sides = {"agent": DOMAIN_DOC.tools(domain, "agent", variant)}
    user = DOMAIN_DOC.tools(domain, "user", variant)
    if user.tools:
        sides["user"] = user
    return sides


async def _shown_by_domain_doc(domain: Any, view: View, variant: str | None) -> Any:
    if view == "solo":
        return None  # the command prints each side, not a solo agent's offer
    listing = domain_tools(domain, variant).get(view)
    return listing_as_shown(listing) if listing is not None else []


#: `tau-harness domain NAME`: the tools of each side, printed with their parameters.
DOMAIN_DOC = register_surface("tau-harness domain", ("agent", "user"), _shown_by_domain_doc)


def domain_doc(
    name: str = typer.Argument(..., help=DOMAIN_HELP),
    data_dir: Path = typer.Option(
        None, "--data-dir", help="Benchmark data folder (default $TAU2_DATA_DIR)."
    ),
    retrieval_config: str = typer.Option(
        None,
        "--retrieval-config",
        help="For a domain with retrieval configs: the config whose tools and policy are shown "
        "(default: the domain's own).",
    ),
    policy: bool = typer.Option(True, "--policy/--no-policy", help="Print the policy too."),
) -> None:
    """A domain's documentation in the terminal: its tasks, the tools of each side with their
    parameters, and its policy (the reference's `domain` serves it as a web page)."""
    from tau_mcp.harness.play.terminal import signature

    try:
        domain = load_domain(name, data_dir)
        variant = domain.resolve_variant(retrieval_config, None)  # banking: the default config
        sides = domain_tools(domain, variant.name if variant is not None else None)
        text = (
            (variant.policy(None) if variant is not None else domain.policy()) if policy else None
        )
    except (EngineError, ValueError) as exc:
        fail(str(exc))
    console.rule(f"{name} ({domain.data_dir})")
    console.print(f"{len(domain.tasks)} tasks; splits: {', '.join(domain_splits(domain)) or '-'}")
    task_sets = [name for name, file in domain.task_sets().items() if file is not None]
    if task_sets:
        console.print(f"task sets (--task-set-name): {', '.join(task_sets)}")
    if domain.variants is not None:
        configs = ", ".join(domain.variants.names)
        console.print(
            f"retrieval configs (--retrieval-config): {configs}; default {domain.variants.default}"
        )
    for side, listing in sides.items():
        console.print(f"\n[bold]{side} tools[/] ({len(listing.tools)}, {listing.source} texts)")
        for tool in listing.tools:
            console.print(f"  {signature(tool)}", markup=False, highlight=False)  # type: ignore[arg-type]
    if text:
        console.print("\n[bold]policy[/]")
        console.print(text, markup=False, highlight=False)


def domain_splits(domain: Any) -> list[str]:
    try:
        return list(domain.splits)
    except EngineError:  # a domain without a split file
        return []


INTRO = """\
tau-mcp: the tau2-bench customer-service benchmark (v1.0.1) as MCP servers and a harness.

  tau-harness run          run and grade simulations         (tau2 run)
  tau-harness view         results files, conversations       (tau2 view)
  tau-harness play         play a side yourself               (tau2 play)
  tau-harness evaluate     re-grade saved simulations         (tau2 evaluate-trajs)
  tau-harness review       the reference's LLM review         (tau2 review)
  tau-harness report       an HTML, Markdown or JSON report
  tau-harness leaderboard  rank submissions                   (tau2 leaderboard)
  tau-harness submit       prepare and validate a submission  (tau2 submit)
  tau-harness data         fetch and verify the reference data (tau2 check-data)
  tau-harness domains      every domain, tau-mcp's and the packs'
  tau-harness domain NAME  a domain's tools and policy        (tau2 domain)
  tau-harness domain new   start a domain of your own (a pack)
  tau-server serve         every domain over MCP               (tau2 start)

Start offline, no key needed:   tau-harness run --domain {demo} --agent oracle --user scripted
The real benchmark:             tau-harness data fetch, then --domain NAME --agent llm ...
From tau2: a tau2 command line works with tau2 replaced by tau-harness (tau2's
command names and run options are accepted); every command takes --help."""

#: The whole map from tau2, in a source checkout (a wheel installs no docs).
FROM_TAU2_GUIDE = Path(__file__).resolve().parents[2] / "docs" / "from-tau2.md"


def intro() -> None:
    """What tau-mcp is and its commands, beside the tau2 ones they replace."""
    from tau_mcp.servers.engine.data import demo_domains

    text = INTRO.format(demo=(demo_domains() or ["NAME"])[0])
    console.print(text, markup=False, highlight=False, soft_wrap=True)  # laid out already
    if FROM_TAU2_GUIDE.is_file():
        console.print(
            f"Every command and option: {FROM_TAU2_GUIDE}",
            markup=False,
            highlight=False,
            soft_wrap=True,  # a path cut in two could not be copied
        )
