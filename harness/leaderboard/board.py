"""`tau-harness leaderboard`: rank folders of submissions, per domain or overall.

A folder given is either one submission (it holds `submission.json`) or a folder of them (its
`manifest.json` lists them, else every sub-folder is read but hidden ones and the `A_EXAMPLE`
templates, in name order). Ranking follows the reference's board: a submission's overall score
is the mean of its domains' values (the domains it has), entries without the metric are left
out, ties keep the reading order. pass^k ranks highest first, cost cheapest first.

The board's domains are the schema's (`schema.board_domains`, read from the data folder); with
no schema at hand, the domains the submissions hold, in the order first met.

A submission whose `trajectories/` hold robustness runs (a results header with `info.faults`,
docs/faults.md) is ranked, as the board's rules are not this command's to enforce, but never
as a plain score: its model is shown as `<model> [faults: <spec>]` (the report's label), JSON
rows list the plans under `faults`, and a warning says so.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tau_mcp.harness.leaderboard import SUBMISSION_FILE, TRAJECTORIES_DIR

METRICS = ("pass_1", "pass_2", "pass_3", "pass_4", "cost")
MANIFEST_FILE = "manifest.json"


class BoardError(ValueError):
    pass


@dataclass(frozen=True)
class Entry:
    submission_id: str
    submission: dict[str, Any]
    faults: tuple[str, ...] = ()  # the fault plans its trajectories ran under (none: clean)

    @property
    def label(self) -> str:
        """The model's name, marked when the submission holds robustness runs."""
        name = str(self.submission.get("model_name", "?"))
        return f"{name} [faults: {'; '.join(self.faults)}]" if self.faults else name

    @property
    def results(self) -> dict[str, Any]:
        results = self.submission.get("results")
        return results if isinstance(results, dict) else {}

    def value(self, domain: str, metric: str) -> float | None:
        entry = self.results.get(domain)
        value = entry.get(metric) if isinstance(entry, dict) else None
        return value if isinstance(value, int | float) and not isinstance(value, bool) else None

    def overall(self, metric: str, domains: Sequence[str]) -> float | None:
        scores = [v for d in domains if (v := self.value(d, metric)) is not None]
        return sum(scores) / len(scores) if scores else None


@dataclass(frozen=True)
class Row:
    rank: int
    score: float
    entry: Entry


def _submission_ids(folder: Path) -> list[str]:
    manifest = folder / MANIFEST_FILE
    if manifest.is_file():
        try:
            data = json.loads(manifest.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise BoardError(f"cannot read {manifest} ({exc})") from None
        listed = data.get("submissions", []) + data.get("voice_submissions", [])
        return [str(s) for s in listed]
    return sorted(
        d.name for d in folder.iterdir() if d.is_dir() and not d.name.startswith((".", "A_EXAMPLE"))
    )


def _fault_plans(submission: Path, warnings: list[str]) -> tuple[str, ...]:
    """The fault plans of the robustness runs among a submission's trajectories (published
    submissions have none: nothing is read)."""
    directory = submission / TRAJECTORIES_DIR
    if not directory.is_dir():
        return ()
    from tau_mcp.harness.leaderboard.validate import trajectory_paths
    from tau_mcp.harness.results.folder import LayoutError
    from tau_mcp.harness.results.layouts import read
    from tau_mcp.harness.robustness import fault_plan_of, is_faulted

    plans: list[str] = []
    for path in trajectory_paths(directory):
        try:
            document = read(path)
        except (LayoutError, OSError, ValueError) as exc:
            warnings.append(f"cannot read {path} to check it for injected faults ({exc})")
            continue
        if is_faulted(document):
            plans.append(str((fault_plan_of(document) or {}).get("spec") or "injected"))
    return tuple(dict.fromkeys(plans))


def load_entries(folders: list[Path]) -> tuple[list[Entry], list[str]]:
    """Every submission under the folders, and a warning for each one that cannot be read."""
    entries: list[Entry] = []
    warnings: list[str] = []
    for folder in folders:
        folder = Path(folder)
        if not folder.is_dir():
            raise BoardError(f"{folder} is not a folder")
        if (folder / SUBMISSION_FILE).is_file():
            places = [(folder.name, folder / SUBMISSION_FILE)]
        else:
            places = [(s, folder / s / SUBMISSION_FILE) for s in _submission_ids(folder)]
        for submission_id, path in places:
            if not path.is_file():
                continue
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
                warnings.append(f"skipped {path}: {exc}")
                continue
            if not isinstance(data, dict) or not isinstance(data.get("results"), dict):
                warnings.append(f"skipped {path}: not a submission (no results object)")
                continue
            faults = _fault_plans(path.parent, warnings)
            if faults:
                warnings.append(
                    f"{submission_id} holds robustness runs (injected tool faults: "
                    f"{'; '.join(faults)}), not benchmark runs: marked [faults: ...]"
                )
            entries.append(Entry(submission_id, data, faults))
    return entries, warnings


def board_domains(entries: list[Entry], data_dir: Path | None = None) -> list[str]:
    """The board's domains: the schema's in the data folder, else those the entries hold."""
    from tau_mcp.harness.leaderboard.schema import SchemaError, load_schema
    from tau_mcp.harness.leaderboard.schema import board_domains as schema_domains
    from tau_mcp.servers.engine.errors import DataError

    try:
        return schema_domains(load_schema(data_dir))
    except (SchemaError, DataError):
        return list(dict.fromkeys(d for entry in entries for d in entry.results))


def rank(
    entries: list[Entry],
    metric: str,
    domain: str | None = None,
    domains: Sequence[str] | None = None,
) -> list[Row]:
    """The entries that have the metric, ranked, in one domain or overall (the mean over the
    board's `domains`; None: `board_domains` of the data folder)."""
    domains = board_domains(entries) if domains is None else domains
    if metric not in METRICS:
        raise BoardError(f"unknown metric {metric!r} (one of {', '.join(METRICS)})")
    if domain is not None and domain not in domains:
        from tau_mcp.harness.benchmarks import leaderboard_refusal

        refusal = leaderboard_refusal(domain)
        if refusal:
            raise BoardError(refusal)
        raise BoardError(
            f"unknown domain {domain!r}: the board has {', '.join(domains) or 'no domains'}"
        )
    scored = []
    for entry in entries:
        score = entry.value(domain, metric) if domain else entry.overall(metric, domains)
        if score is not None:
            scored.append((score, entry))
    scored.sort(key=lambda pair: pair[0], reverse=metric != "cost")
    return [Row(i + 1, score, entry) for i, (score, entry) in enumerate(scored)]


def fmt(value: float | None, metric: str) -> str:
    if value is None:
        return "-"
    return f"${value:.3f}" if metric == "cost" else f"{value:.1f}%"


def title(metric: str, domain: str | None) -> str:
    where = domain.capitalize() if domain else "Overall"
    return f"Tau2-Bench Leaderboard - {where} ({metric})"


def columns(domain: str | None, metric: str, domains: Sequence[str]) -> list[str]:
    head = ["Rank", "Model", "Organization", "Modality", metric.replace("_", "^")]
    if domain is None:
        head += [d.replace("_", " ").title() for d in domains]
    return head


def cells(row: Row, domain: str | None, metric: str, domains: Sequence[str]) -> list[str]:
    sub = row.entry.submission
    out = [
        str(row.rank),
        row.entry.label,
        str(sub.get("model_organization", "?")),
        str(sub.get("modality") or "text"),
        fmt(row.score, metric),
    ]
    if domain is None:
        out += [fmt(row.entry.value(d, metric), metric) for d in domains]
    return out


def _shown_domains(rows: list[Row], domains: Sequence[str] | None) -> Sequence[str]:
    return board_domains([row.entry for row in rows]) if domains is None else domains


def as_table(
    rows: list[Row],
    domain: str | None,
    metric: str,
    total: int,
    domains: Sequence[str] | None = None,
):
    """A rich table shaped like the reference's `tau2 leaderboard` one."""
    from rich.markup import escape
    from rich.table import Table

    domains = _shown_domains(rows, domains)
    table = Table(title=title(metric, domain), show_header=True, header_style="bold cyan")
    for i, name in enumerate(columns(domain, metric, domains)):
        if i == 0:
            table.add_column(name, style="dim", width=4)
        elif i == 1:
            table.add_column(name, style="bold")
        elif i == 2:
            table.add_column(name)
        elif i == 3:
            table.add_column(name, justify="center")
        elif i == 4:
            table.add_column(name, justify="right", style="green")
        else:
            table.add_column(name, justify="right")
    for row in rows:
        # Text, not markup: a `[faults: ...]` mark would read as a style tag and vanish.
        table.add_row(*(escape(c) for c in cells(row, domain, metric, domains)))
    return table


def as_markdown(
    rows: list[Row], domain: str | None, metric: str, domains: Sequence[str] | None = None
) -> str:
    domains = _shown_domains(rows, domains)
    head = columns(domain, metric, domains)
    lines = [
        f"**{title(metric, domain)}**",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "|".join("---:" if i in (0,) or i >= 4 else "---" for i in range(len(head))) + "|",
    ]
    for row in rows:
        lines.append(
            "| "
            + " | ".join(c.replace("|", "\\|") for c in cells(row, domain, metric, domains))
            + " |"
        )
    return "\n".join(lines) + "\n"


def as_json(rows: list[Row], domain: str | None, metric: str) -> str:
    out = []
    for row in rows:
        sub = row.entry.submission
        out.append(
            {
                "rank": row.rank,
                "submission_id": row.entry.submission_id,
                "model_name": sub.get("model_name"),
                "faults": list(row.entry.faults),
                "model_organization": sub.get("model_organization"),
                "submitting_organization": sub.get("submitting_organization"),
                "modality": sub.get("modality") or "text",
                "submission_type": sub.get("submission_type") or "standard",
                "user_simulator": (sub.get("methodology") or {}).get("user_simulator"),
                "metric": metric,
                "domain": domain or "overall",
                "score": row.score,
                "results": row.entry.results,
            }
        )
    return json.dumps(out, indent=2, ensure_ascii=False) + "\n"
