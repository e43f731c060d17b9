"""The report as Markdown: the leaderboard table tau-bench papers use, per-run details, and the
paired comparisons."""

from __future__ import annotations

from typing import Any

LEADERBOARD_K = (1, 2, 3, 4)


def pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.1f}"


def with_ci(entry: dict[str, float] | None) -> str:
    if not entry:
        return "-"
    return f"{pct(entry['value'])} [{pct(entry['ci_low'])}, {pct(entry['ci_high'])}]"


def money(value: float | None) -> str:
    return "-" if value is None else f"${value:.4f}"


def leaderboard_rows(runs: list[dict[str, Any]]) -> list[list[str]]:
    """`model | pass^1..4 | avg reward | cost`, as published tables lay it out (percent)."""
    rows = []
    for run in runs:
        row = [run["label"]]
        row += [pct((run["pass_hat"].get(str(k)) or {}).get("value")) for k in LEADERBOARD_K]
        row.append(pct((run["avg_reward"] or {}).get("value")))
        row.append(money(run["cost"]["all"]["per_simulation"]))
        rows.append(row)
    return rows


LEADERBOARD_HEADER = ["model", "pass^1", "pass^2", "pass^3", "pass^4", "avg reward", "cost/sim"]


def table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c).replace("|", "\\|") for c in row) + " |" for row in rows]
    return "\n".join(lines)


def leaderboard(runs: list[dict[str, Any]]) -> str:
    return table(LEADERBOARD_HEADER, leaderboard_rows(runs))


def render(report: dict[str, Any]) -> str:
    runs = report["runs"]
    out = ["# tau-mcp report", "", "## Leaderboard (percent)", "", leaderboard(runs), ""]
    for run in runs:
        s = run["settings"]
        out += [f"## {run['label']}", ""]
        out.append(
            f"Domain {s['domain']}; agent {s['agent']} ({s['agent_llm'] or '-'}); "
            f"user {s['user']} ({s['user_llm'] or '-'}); judge {s['judge_llm'] or '-'}; "
            f"{run['simulations']} simulations over {run['tasks']} tasks, "
            f"{run['infra_errors']} infrastructure errors (excluded). File: `{run['file']}`."
        )
        out.append("")
        rows = [[f"pass^{k}", with_ci(v)] for k, v in run["pass_hat"].items()]
        rows.append(["average reward", with_ci(run["avg_reward"])])
        rows.append(["DB match", pct(run["db_match_rate"])])
        for part in ("agent", "user", "judge", "all"):
            c = run["cost"][part]
            rows.append(
                [
                    f"{part} cost (total / per sim)",
                    f"{money(c['total'])} / {money(c['per_simulation'])}",
                ]
            )
        rows.append(
            [
                "tokens (prompt / completion)",
                f"{run['tokens']['prompt']} / {run['tokens']['completion']}",
            ]
        )
        duration = run["avg_duration"]
        rows.append(["duration / sim", "-" if duration is None else f"{duration:.2f}s"])
        rows.append(
            ["endings", ", ".join(f"{k}: {v}" for k, v in run["terminations"].items()) or "-"]
        )
        out += [table(["metric (percent, 95% CI)", "value"], rows), ""]
        failing = [
            task
            for task, cells in run["grid"].items()
            if any(c["outcome"] != "pass" for c in cells)
        ]
        if failing:
            out += [f"Tasks with a failed or errored trial: {', '.join(failing)}", ""]
    if report["comparisons"]:
        out += ["## Comparisons", ""]
        for comp in report["comparisons"]:
            out += [f"### {comp['a']} vs {comp['b']}", "", comp["verdict"], ""]
            if comp["mcnemar_p"] is not None:
                out += [f"McNemar exact test: p = {comp['mcnemar_p']:.4f}.", ""]
            if comp["flips"]:
                out.append("Tasks that flip (success rate in A / in B):")
                out += [f"- {f['task_id']}: {pct(f['a'])} / {pct(f['b'])}" for f in comp["flips"]]
                out.append("")
    return "\n".join(out).rstrip() + "\n"
