"""Printing runs for people: the summary table and one simulation's conversation."""

from __future__ import annotations

import json
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from harness.metrics import INFRA, Summary, summarize


def _money(value: float | None) -> str:
    return "n/a" if value is None else f"${value:.4f}"


def summary_table(summary: Summary, title: str = "Summary") -> Table:
    table = Table(title=title, show_header=True, header_style="bold")
    table.add_column("metric")
    table.add_column("value", justify="right")
    table.add_row("simulations", str(summary.simulations))
    table.add_row("tasks", str(summary.tasks))
    table.add_row("infrastructure errors (excluded)", str(summary.infra_errors))
    table.add_row("average reward", f"{summary.avg_reward:.4f}")
    for k, value in summary.pass_hat.items():
        table.add_row(f"pass^{k}", f"{value:.4f}")
    rate = summary.db_match_rate
    table.add_row(
        "DB match rate",
        "n/a" if rate is None else f"{rate:.4f} ({summary.db_matches}/{summary.db_checked})",
    )
    table.add_row("agent cost / simulation", _money(summary.avg_agent_cost))
    table.add_row("user cost / simulation", _money(summary.avg_user_cost))
    table.add_row(
        "tokens (prompt / completion)", f"{summary.prompt_tokens} / {summary.completion_tokens}"
    )
    table.add_row("duration / simulation", f"{summary.avg_duration:.2f}s")
    endings = ", ".join(f"{k}: {v}" for k, v in sorted(summary.terminations.items()))
    table.add_row("endings", endings or "-")
    return table


def print_summary(
    console: Console, simulations: list[dict[str, Any]], title: str = "Summary"
) -> Summary:
    summary = summarize(simulations)
    console.print(summary_table(summary, title))
    causes = infrastructure_causes(simulations)
    if causes:
        console.print(
            "[bold red]infrastructure errors[/] (re-run with the same --save-to to retry):"
        )
        for cause, count in causes:
            console.print(Text(f"  {count} x {cause}"))
    return summary


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
    for column in ("trial", "reward", "ending"):
        table.add_column(column)
    for sim in simulations:
        reward = (sim.get("reward_info") or {}).get("reward")
        table.add_row(
            str(sim.get("id")),
            str(sim.get("task_id")),
            str(sim.get("trial")),
            "-" if reward is None else f"{reward:.2f}",
            str(sim.get("termination_reason")),
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
    for message in sim.get("messages") or []:
        role = message.get("role", "?")
        style = _STYLE.get(role, "white")
        head = f"{message.get('turn_idx', '-')} {role}"
        if role == "tool":
            flag = " (error)" if message.get("error") else ""
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
    info = sim.get("reward_info") or {}
    console.rule(f"ending: {sim.get('termination_reason')} - reward: {info.get('reward')}")
    for label, key in (("breakdown", "reward_breakdown"), ("db check", "db_check")):
        if info.get(key):
            console.print(_line("bold", f"{label}: ", info[key]))
    note = (info.get("info") or {}).get("note")
    if note:
        console.print(_line("bold", "note: ", note))
