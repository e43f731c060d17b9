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


def mixes_domains(runs: list[dict[str, Any]]) -> bool:
    """Do these runs cover more than one domain (so each row needs its domain)?"""
    return len({run["settings"]["domain"] for run in runs}) > 1


def leaderboard_rows(runs: list[dict[str, Any]], with_domain: bool = False) -> list[list[str]]:
    """`model | pass^1..4 | avg reward | cost`, as published tables lay it out (percent); with
    the domain after the model when asked (a report that mixes domains)."""
    rows = []
    for run in runs:
        row = [run["label"]] + ([str(run["settings"]["domain"])] if with_domain else [])
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
    if mixes_domains(runs):
        header = [LEADERBOARD_HEADER[0], "domain", *LEADERBOARD_HEADER[1:]]
        return table(header, leaderboard_rows(runs, with_domain=True))
    return table(LEADERBOARD_HEADER, leaderboard_rows(runs))


SIDE_NAMES = {"agent": "agent", "user": "user simulator", "infrastructure": "infrastructure"}


def breakdown_rows(runs: list[dict[str, Any]], with_domain: bool = False) -> list[list[str]]:
    """Per run: failed simulations, how many fall on each side, and the categories (with the
    run's domain after its name when asked)."""
    rows = []
    for run in runs:
        f = run["failures"]
        categories = ", ".join(f"{k} {v}" for k, v in f["by_category"].items())
        if f["undiagnosed"]:
            categories = ", ".join(filter(None, [categories, f"undiagnosed {f['undiagnosed']}"]))
        rows.append(
            [run["label"]]
            + ([str(run["settings"]["domain"])] if with_domain else [])
            + [str(f["failed"])]
            + [str(f["by_side"][side]) for side in SIDE_NAMES]
            + [categories or "-"]
        )
    return rows


BREAKDOWN_HEADER = ["model", "failed", *SIDE_NAMES.values(), "categories"]


def failures_section(run: dict[str, Any]) -> list[str]:
    f = run["failures"]
    out = ["### Failures", ""]
    if not f["failed"]:
        return out + ["No failed simulations.", ""]
    rows = [
        [k] + [str(parts[side]) for side in SIDE_NAMES] + [str(f["by_category"][k])]
        for k, parts in f["by_category_and_side"].items()
    ]
    rows.append(
        ["**by side**"]
        + [str(f["by_side"][side]) for side in SIDE_NAMES]
        + [str(f["failed"] - f["undiagnosed"])]
    )
    out += [table(["category", *SIDE_NAMES.values(), "total"], rows), ""]
    if f["undiagnosed"]:
        out += [
            f"{f['undiagnosed']} failed simulation(s) carry no diagnosis (graded before "
            "tau-mcp diagnosed failures); `tau-harness evaluate` re-grades and diagnoses them.",
            "",
        ]
    if f["user_ended_with_write_pending"]:
        out += [
            f"In {f['user_ended_with_write_pending']} failed simulation(s) the user ended the "
            "call while a gold write was still pending.",
            "",
        ]
    return out


def reviews_section(run: dict[str, Any]) -> list[str]:
    rv, out = run.get("reviews"), []
    if not rv:
        return out
    if rv["reviewed"]:
        auth = ", ".join(f"{k} {v}" for k, v in rv["auth"].items())
        out.append(
            f"LLM reviews: {rv['reviewed']} full review(s), {rv['with_errors']} with errors; agent "
            f"errors in {rv['agent_error']}, user-simulator errors in {rv['user_error']} "
            f"(critical in {rv['critical_user_error']}); failures blamed on the user simulator: "
            f"{rv['user_caused']}; authentication: {auth}."
        )
    if rv["user_only_reviewed"]:
        out.append(
            f"User-only reviews: {rv['user_only_reviewed']}, {rv['user_only_with_errors']} with "
            "errors."
        )
    out += [f"Review cost (apart from the run's): {money(rv['cost'])}.", ""]
    excluded = run.get("pass_hat_excluding_user_caused")
    if excluded:
        out += [
            "**Diagnostic, not the score:** pass^k with the "
            f"{excluded['excluded']} failure(s) a review blames on the user simulator left out.",
            "",
        ]
        rows = [
            [f"pass^{k}", pct((run["pass_hat"].get(k) or {}).get("value")), with_ci(e)]
            for k, e in excluded["pass_hat"].items()
        ]
        out += [table(["metric (percent)", "the score", "excluding user-caused"], rows), ""]
    return out


def render(report: dict[str, Any]) -> str:
    runs = report["runs"]
    out = ["# tau-mcp report", "", "## Leaderboard (percent)", "", leaderboard(runs), ""]
    mixed = mixes_domains(runs)
    header = [BREAKDOWN_HEADER[0], "domain", *BREAKDOWN_HEADER[1:]] if mixed else BREAKDOWN_HEADER
    out += ["## Error breakdown", "", table(header, breakdown_rows(runs, mixed)), ""]
    for run in runs:
        s = run["settings"]
        out += [f"## {run['label']}", ""]
        out.append(
            f"Domain {s['domain']}"
            + (f" (retrieval config {s['retrieval']})" if s.get("retrieval") else "")
            + f"; agent {s['agent']} ({s['agent_llm'] or '-'}); "
            f"user {s['user']} ({s['user_llm'] or '-'}); judge {s['judge_llm'] or '-'}; "
            f"{run['simulations']} simulations over {run['tasks']} tasks, "
            f"{run['infra_errors']} infrastructure errors (excluded). File: `{run['file']}`."
        )
        out.append("")
        rows = [[f"pass^{k}", with_ci(v)] for k, v in run["pass_hat"].items()]
        rows.append(["average reward", with_ci(run["avg_reward"])])
        rows.append(["DB match", pct(run["db_match_rate"])])
        out += [table(["metric (percent)", "value [95% CI]"], rows), ""]
        costs = [
            [part, money(run["cost"][part]["total"]), money(run["cost"][part]["per_simulation"])]
            for part in ("agent", "user", "judge", "all")
        ]
        review = run["cost"].get("review") or {}
        if review.get("total") is not None:
            costs.append(
                ["LLM review (apart)", money(review["total"]), money(review["per_simulation"])]
            )
        out += [table(["cost", "total", "per simulation"], costs), ""]
        duration = run["avg_duration"]
        endings = ", ".join(f"{k}: {v}" for k, v in run["terminations"].items()) or "-"
        out += [
            f"Tokens (prompt / completion): {run['tokens']['prompt']} / "
            f"{run['tokens']['completion']}; duration per simulation: "
            f"{'-' if duration is None else f'{duration:.2f}s'}; endings: {endings}.",
            "",
        ]
        if run.get("noise"):
            out += [f"Noise: {run['noise']['statement']}", ""]
        out += failures_section(run) + reviews_section(run)
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
            if comp.get("mcnemar_note"):
                out += [comp["mcnemar_note"], ""]
            if comp.get("noise"):
                out += [f"Noise: {comp['noise']['statement']}", ""]
            if comp["flips"]:
                out.append("Tasks that flip (success rate in A / in B):")
                out += [f"- {f['task_id']}: {pct(f['a'])} / {pct(f['b'])}" for f in comp["flips"]]
                out.append("")
    return "\n".join(out).rstrip() + "\n"
