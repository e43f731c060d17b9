"""Printing runs for people: the summary table and one simulation's conversation."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from tau_mcp.grading.diagnosis import diagnosis_of
from tau_mcp.harness.metrics import INFRA
from tau_mcp.harness.report.markdown import LEADERBOARD_HEADER, SIDE_NAMES, leaderboard_rows
from tau_mcp.harness.report.summary import (
    ERROR,
    FAIL,
    PASS,
    natural_key,
    outcome,
    run_summary,
    task_grid,
)
from tau_mcp.harness.robustness import faults_of, recovery_line


def _money(value: float | None) -> str:
    return "n/a" if value is None else f"${value:.4f}"


def summary_table(run: dict[str, Any], title: str = "Summary") -> Table:
    """One run's figures, pass^k and average reward with 95% bootstrap intervals over tasks."""
    table = Table(title=title, show_header=True, header_style="bold")
    table.add_column("metric")
    table.add_column("value", justify="right")
    table.add_column("95% CI", justify="right", style="dim")
    table.add_row("simulations", str(run["simulations"]), "")
    table.add_row("tasks", str(run["tasks"]), "")
    table.add_row("infrastructure errors (excluded)", str(run["infra_errors"]), "")
    for label, entry in [
        ("average reward", run["avg_reward"]),
        *((f"pass^{k}", v) for k, v in run["pass_hat"].items()),
    ]:
        if entry is None:
            table.add_row(label, "n/a", "")
        else:
            table.add_row(
                label, f"{entry['value']:.4f}", f"{entry['ci_low']:.4f} - {entry['ci_high']:.4f}"
            )
    rate = run["db_match_rate"]
    table.add_row("DB match rate", "n/a" if rate is None else f"{rate:.4f}", "")
    for part in ("agent", "user", "judge"):
        cost = run["cost"][part]
        table.add_row(
            f"{part} cost (total, per simulation)",
            f"{_money(cost['total'])}, {_money(cost['per_simulation'])}",
            "",
        )
    review = run["cost"].get("review") or {}
    if review.get("total") is not None:
        table.add_row(
            "LLM review cost, apart (total, per simulation)",
            f"{_money(review['total'])}, {_money(review['per_simulation'])}",
            "",
        )
    tokens = run["tokens"]
    table.add_row(
        "tokens (prompt / completion)", f"{tokens['prompt']} / {tokens['completion']}", ""
    )
    duration = run["avg_duration"]
    table.add_row("duration / simulation", "n/a" if duration is None else f"{duration:.2f}s", "")
    endings = ", ".join(f"{k}: {v}" for k, v in run["terminations"].items())
    table.add_row("endings", endings or "-", "")
    without = run.get("pass_hat_excluding_simulator_flags")
    if without and without["pass_hat"].get("1"):
        entry = without["pass_hat"]["1"]
        table.add_row(
            f"pass^1 without {without['excluded']} user-simulator-flagged failure(s) (diagnostic)",
            f"{entry['value']:.4f}",
            f"{entry['ci_low']:.4f} - {entry['ci_high']:.4f}",
        )
    original = run.get("original")
    if original:  # a τ-bench run: the figures its run.py prints
        table.add_row("τ-bench average reward (its run.py)", f"{original['avg_reward']:.4f}", "")
        for k, value in original["pass_hat"].items():
            table.add_row(f"τ-bench pass^{k} (its run.py)", f"{value:.4f}", "")
    if run.get("noise"):
        points = run["noise"]["detectable_difference"] * 100
        # Zero means no trial differed from another: nothing was observed, not a tight bound.
        shown = f"{points:.1f} points" if points else "n/a (no variation between trials observed)"
        table.add_row("smallest pass^1 difference beyond noise (95%)", shown, "")
        if run["noise"].get("flip_share") is not None:
            table.add_row(
                "tasks that flip between trials",
                f"{run['noise']['flip_share'] * 100:.0f}% of {run['noise']['tasks_with_trials']}",
                "",
            )
            icc = run["noise"].get("icc")
            table.add_row(
                "intraclass correlation of rewards, ICC(1)",
                "n/a" if icc is None else f"{icc:.2f}",
                "",
            )
    return table


def failures_table(run: dict[str, Any]) -> Table | None:
    """Failed simulations by diagnosis category and by side; None when none failed."""
    f = run["failures"]
    if not f["failed"]:
        return None
    table = Table(title="Failures (why: tau-harness view FILE --why)", header_style="bold")
    table.add_column("category")
    for name in SIDE_NAMES.values():
        table.add_column(name, justify="right")
    table.add_column("total", justify="right")
    for category, parts in f["by_category_and_side"].items():
        table.add_row(
            category,
            *(str(parts[side]) for side in SIDE_NAMES),
            str(f["by_category"][category]),
        )
    if f["undiagnosed"]:
        table.add_row(
            "undiagnosed (re-grade: tau-harness evaluate)", "", "", "", str(f["undiagnosed"])
        )
    table.add_row(
        "by side",
        *(str(f["by_side"][side]) for side in SIDE_NAMES),
        str(f["failed"] - f["undiagnosed"]),
        style="bold",
    )
    return table


def faults_table(run: dict[str, Any]) -> Table | None:
    """A robustness run's recovery: overall and per fault kind; None for a clean run."""
    f = run.get("faults")
    if not f:
        return None
    spec = (f.get("plan") or {}).get("spec") or "injected by the server"
    table = Table(
        title=f"Robustness run, faults {spec} (not a benchmark score)", header_style="bold"
    )
    table.add_column("faults met")
    for column in ("faults", "simulations", "recovered", "recovery rate"):
        table.add_column(column, justify="right")
    rate = f["recovery_rate"]
    table.add_row(
        "any",
        str(f["faults"]),
        str(f["faulted_simulations"]),
        str(f["recovered"]),
        "n/a" if rate is None else f"{rate:.1%}",
        style="bold",
    )
    for kind, e in f["by_kind"].items():
        table.add_row(
            kind,
            str(e["faults"]),
            str(e["simulations"]),
            str(e["recovered"]),
            f"{e['recovery_rate']:.1%}",
        )
    return table


def leaderboard_table(runs: list[dict[str, Any]]) -> Table:
    """The layout of tau-bench papers and leaderboards (percent), to paste beside them."""
    table = Table(box=box.MARKDOWN, show_edge=True, header_style="bold")
    for name in LEADERBOARD_HEADER:
        table.add_column(name, justify="left" if name == "model" else "right")
    for row in leaderboard_rows(runs):
        table.add_row(*(Text(cell) for cell in row))  # a label may hold [brackets]
    return table


def print_summary(
    console: Console,
    simulations: list[dict[str, Any]],
    title: str = "Summary",
    info: dict[str, Any] | None = None,
    label: str = "run",
) -> dict[str, Any]:
    """Print a run's summary, its leaderboard row and its infrastructure errors; return the
    figures (the same structure `tau-harness report` uses)."""
    run = run_summary(Path(label), {"info": info or {}, "simulations": simulations})
    console.print(summary_table(run, title))
    if run["simulations"]:
        console.print(leaderboard_table([run]))
    faults = faults_table(run)
    if faults is not None:
        console.print(faults)
        console.print(Text(recovery_line(run["faults"])))
    failures = failures_table(run)
    if failures is not None:
        console.print(failures)
    causes = infrastructure_causes(simulations)
    if causes:
        console.print(
            "[bold red]infrastructure errors[/] (re-run with the same --save-to to retry):"
        )
        for cause, count in causes:
            console.print(Text(f"  {count} x {cause}"))
    return run


def infrastructure_causes(
    simulations: list[dict[str, Any]], limit: int = 5
) -> list[tuple[str, int]]:
    """The most frequent reasons simulations failed for infrastructure reasons, shortened."""
    counts: dict[str, int] = {}
    for sim in simulations:
        if sim.get("termination_reason") != INFRA:
            continue
        cause = str((sim.get("info") or {}).get("error") or "unknown error")
        cause = cause if len(cause) <= 300 else cause[:297] + "..."
        counts[cause] = counts.get(cause, 0) + 1
    return sorted(counts.items(), key=lambda kv: -kv[1])[:limit]


def simulations_table(simulations: list[dict[str, Any]]) -> Table:
    table = Table(title="Simulations", header_style="bold")
    table.add_column("id", overflow="fold")
    table.add_column("task", overflow="fold")
    for column in ("trial", "reward", "ending", "why"):
        table.add_column(column)
    ordered = sorted(
        simulations, key=lambda s: (natural_key(s.get("task_id")), s.get("trial") or 0)
    )
    for sim in ordered:
        reward = (sim.get("reward_info") or {}).get("reward")
        found = diagnosis_of(sim)
        table.add_row(
            str(sim.get("id")),
            str(sim.get("task_id")),
            str(sim.get("trial")),
            "-" if reward is None else f"{reward:.2f}",
            str(sim.get("termination_reason")),
            ""
            if found is None
            else f"{found.get('category')} ({found.get('side')})"
            + (" after faults" if found.get("after_faults") else ""),
        )
    return table


_STYLE = {"assistant": "cyan", "user": "green", "tool": "yellow", "system": "magenta"}


def _line(style: str, head: str, body: Any) -> Text:
    """A labelled line; the body is shown literally (tool output may look like markup)."""
    line = Text(head, style=style)
    line.append(body if isinstance(body, str) else json.dumps(body, default=str))
    return line


def print_conversation(console: Console, sim: dict[str, Any]) -> None:
    console.rule(
        f"simulation {sim.get('id')} - task {sim.get('task_id')} - trial {sim.get('trial')}"
    )
    faulted = {f.get("turn_idx"): f.get("kind") for f in faults_of(sim)}
    for message in sim.get("messages") or []:
        role = message.get("role", "?")
        style = _STYLE.get(role, "white")
        head = f"{message.get('turn_idx', '-')} {role}"
        if role == "tool":
            flag = " (error)" if message.get("error") else ""
            if message.get("turn_idx") in faulted:
                flag += f" [injected fault: {faulted[message['turn_idx']]}]"
            console.print(
                _line(
                    style,
                    f"{head} -> {message.get('requestor')}{flag}: ",
                    message.get("content") or "",
                )
            )
            continue
        if message.get("content"):
            console.print(_line(style, f"{head}: ", message["content"]))
        for call in message.get("tool_calls") or []:
            console.print(
                _line(style, f"{head} calls {call.get('name')} ", call.get("arguments") or {})
            )
    print_grade(console, sim)


def print_grade(console: Console, sim: dict[str, Any]) -> None:
    """The ending, the reward and what it is made of."""
    info = sim.get("reward_info") or {}
    console.rule(f"ending: {sim.get('termination_reason')} - reward: {info.get('reward')}")
    for label, key in (("breakdown", "reward_breakdown"), ("db check", "db_check")):
        if info.get(key):
            console.print(_line("bold", f"{label}: ", info[key]))
    for label, key, flag in (
        ("env assertion", "env_assertions", "met"),
        ("action", "action_checks", "action_match"),
        ("communicate", "communicate_checks", "met"),
        ("NL assertion", "nl_assertions", "met"),
    ):
        for check in info.get(key) or []:
            mark = "met" if check.get(flag) else "NOT met"
            detail = {k: v for k, v in check.items() if k not in (flag, "reward", "action_reward")}
            console.print(_line("bold", f"{label} {mark}: ", detail))
    note = (info.get("info") or {}).get("note")
    if note:
        console.print(_line("bold", "note: ", note))
    error = (sim.get("info") or {}).get("error")
    if error:
        console.print(_line("bold red", "error: ", error))
    print_diagnosis(console, sim, rule=False)
    print_review(console, sim)


def _value(value: Any) -> str:
    return json.dumps(value, default=str, ensure_ascii=False)


def print_diagnosis(console: Console, sim: dict[str, Any], rule: bool = True) -> bool:
    """Why a simulation failed (nothing for a passing one); whether there was anything."""
    d = diagnosis_of(sim)
    if d is None:
        return False
    if rule:
        console.rule(
            f"simulation {sim.get('id')} - task {sim.get('task_id')} - trial {sim.get('trial')}"
        )
    side = SIDE_NAMES.get(str(d.get("side")), str(d.get("side")))
    console.print(_line("bold red", f"why: {d.get('category')} ({side}): ", d.get("summary", "")))
    faulted = d.get("after_faults")
    if faulted:
        console.print(_line("bold red", "  after injected faults: ", faulted.get("summary", "")))
    ending = d.get("ending") or {}
    flag = (
        "; the user ended the call while a gold write was still pending"
        if d.get("user_ended_with_write_pending")
        else ""
    )
    console.print(
        _line("bold", "  ending: ", f"{ending.get('kind')} (by {ending.get('by')}){flag}")
    )
    if d.get("failed_components"):
        console.print(_line("bold", "  failed: ", ", ".join(d["failed_components"])))
    left = d.get("left_gold_plan")
    if left:
        console.print(
            _line("bold", "  left the gold plan: ", f"turn {left['turn_idx']}: {left['reason']}")
        )
    for m in d.get("missing_actions") or []:
        action = m["action"]
        line = f"{action['name']}({_value(action['arguments'])}) [{action['requestor']}]"
        close = m.get("closest_call")
        if close:
            line += (
                f"; closest: turn {close['turn_idx']} {close['name']}({_value(close['arguments'])})"
            )
        console.print(_line("bold", "  missing action: ", line))
        for a in m.get("argument_diff") or []:
            console.print(
                _line(
                    "",
                    f"      {a['argument']}: ",
                    f"got {_value(a['got'])}, expected {_value(a['expected'])}",
                )
            )
    for w in d.get("unexpected_writes") or []:
        failed = " (failed)" if w.get("error") else ""
        console.print(
            _line(
                "bold",
                "  unexpected write: ",
                f"turn {w['turn_idx']} {w['side']} {w['name']}({_value(w['arguments'])}){failed}",
            )
        )
    for row in d.get("db_diff") or []:
        where = ".".join(str(x) for x in (row["table"], row["id"], row["field"]) if x is not None)
        console.print(
            _line(
                "bold",
                f"  {row['db']} {where}: ",
                f"got {_value(row['got'])}, expected {_value(row['expected'])}",
            )
        )
    if d.get("db_diff_more"):
        console.print(_line("bold", "  ", f"... and {d['db_diff_more']} more differing field(s)"))
    for a in d.get("unmet_env_assertions") or []:
        console.print(
            _line(
                "bold",
                "  unmet env assertion: ",
                f"{a.get('func_name')}({_value(a.get('arguments'))})",
            )
        )
    for info in d.get("missing_information") or []:
        console.print(_line("bold", "  not communicated: ", str(info)))
    for n in d.get("failed_nl_assertions") or []:
        console.print(
            _line(
                "bold", "  NL assertion failed: ", f"{n['assertion']} - judge: {n['justification']}"
            )
        )
    errors = d.get("tool_errors") or {}
    for side_name in ("agent", "user"):
        entry = errors.get(side_name) or {}
        if entry.get("count"):
            console.print(_line("bold", f"  {side_name} tool errors: ", str(entry["count"])))
            for e in entry.get("examples") or []:
                console.print(_line("", f"      turn {e['turn_idx']} {e['name']}: ", e["error"]))
    return True


def print_review(console: Console, sim: dict[str, Any]) -> None:
    """The LLM reviews saved with a simulation, if any."""
    review = sim.get("review")
    if isinstance(review, dict):
        console.print(_line("bold blue", "LLM review: ", review.get("summary") or "-"))
        for e in review.get("errors") or []:
            head = f"  {e.get('source')} {e.get('severity') or ''} turn {e.get('turn_idx')}: "
            console.print(
                _line("blue", head, f"{', '.join(e.get('error_tags') or [])} {e.get('reasoning')}")
            )
        auth = sim.get("auth_classification")
        if isinstance(auth, dict):
            console.print(
                _line("blue", "  authentication: ", f"{auth.get('status')} {auth.get('reasoning')}")
            )
    user_only = sim.get("user_only_review")
    if isinstance(user_only, dict):
        console.print(
            _line("bold blue", "LLM review (user simulator): ", user_only.get("summary") or "-")
        )
        for e in user_only.get("errors") or []:
            head = f"  user {e.get('severity') or ''} turn {e.get('turn_idx')}: "
            console.print(
                _line("blue", head, f"{', '.join(e.get('error_tags') or [])} {e.get('reasoning')}")
            )


def task_rates_table(simulations: list[dict[str, Any]], tasks: set[str] | None = None) -> Table:
    """Per task (of `tasks` only, when given): trials passed, failed and errored, and the
    success rate of the finished ones."""
    table = Table(title="Tasks", header_style="bold")
    table.add_column("task", overflow="fold")
    for column in ("passed", "failed", "errors", "success rate"):
        table.add_column(column, justify="right")
    grid = task_grid(simulations)
    for task, cells in sorted(grid.items(), key=lambda kv: natural_key(kv[0])):
        if tasks is not None and task not in tasks:
            continue
        counts = {o: sum(1 for s in cells if outcome(s) == o) for o in (PASS, FAIL, ERROR)}
        finished = counts[PASS] + counts[FAIL]
        rate = f"{counts[PASS] / finished:.0%}" if finished else "-"
        table.add_row(task, str(counts[PASS]), str(counts[FAIL]), str(counts[ERROR]), rate)
    return table
