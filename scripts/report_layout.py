"""How tall `tau-harness report` pages are, measured by a headless Chromium, on realistic runs.

    python scripts/report_layout.py --out /tmp/report-layout [--b FILE] [--screenshots]

Builds the inputs (needs $TAU2_DATA_DIR and the conformance fixtures in ../shared):

- A: the reference's own 114-task, 4-trial retail run (the leaderboard fixture's results file),
  re-graded and diagnosed by `tau-harness evaluate`;
- B: `--b FILE` (e.g. `scripts/failure_breakdown.py --domain retail --num-tasks 114 --trials 4`,
  a fake-model run with failures of every kind), else A with the outcome of most tasks flipped;
- A1, B1: the same two runs cut to trial 0 (one trial each, where McNemar's test applies);
- an airline run (the fixture's airline run, re-graded), for a report mixing domains;
- two banking_knowledge oracle runs, retrieval configs `bm25` (top_k 5) and `grep_only`.

Writes the reports `pair.html` (A, B), `single-trial.html` (A1, B1), `mixed.html` (A, airline)
and `banking.html` (the two banking runs) and prints each page's height in CSS pixels as
Chromium lays it out at 1400 px wide (`document.documentElement.scrollHeight`, read from the
DOM Chromium dumps after load). `--screenshots` also writes full-height PNGs beside them.
"""

from __future__ import annotations

import argparse
import copy
import gzip
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
FIXTURES = Path(os.environ.get("TAU_CONFORMANCE_DIR", "/work/shared/conformance"))
WIDTH = 1400
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def harness(*args: str) -> None:
    done = subprocess.run(["tau-harness", *args], capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"tau-harness {args[0]} failed: {done.stdout[-2000:]}{done.stderr[-2000:]}")


def regraded_fixture(domain: str, out: Path) -> Path:
    """The leaderboard fixture's run of `domain`, re-graded (so every failure is diagnosed)."""
    target = out / f"{domain}_A.json"
    if not target.exists():
        raw = out / f"{domain}_reference.json"
        source = FIXTURES / "leaderboard" / "results" / f"{domain}_results.json.gz"
        raw.write_bytes(gzip.decompress(source.read_bytes()))
        harness("evaluate", "--input", str(raw), "--save-to", str(target), "--judge-llm", "none")
    return target


def banking_run(config: str, kwargs: str | None, out: Path) -> Path:
    target = out / f"banking_{config}.json"
    if not target.exists():
        extra = ["--retrieval-config-kwargs", kwargs] if kwargs else []
        harness(
            "run", "--domain", "banking_knowledge", "--agent", "oracle", "--user", "scripted",
            "--retrieval-config", config, *extra, "--num-trials", "2", "--judge-llm", "none",
            "--save-to", str(target),
        )  # fmt: skip
    return target


def flipped(document: dict[str, Any], share: float = 0.9, seed: int = 7) -> dict[str, Any]:
    """A second run: every trial of most tasks gets the opposite outcome (a failure takes the
    diagnosis of one of the run's own failures), and costs are drawn at random."""
    out = copy.deepcopy(document)
    rng = random.Random(seed)
    sims = out["simulations"]
    diagnoses = [
        s["reward_info"]["info"]["diagnosis"]
        for s in sims
        if ((s.get("reward_info") or {}).get("info") or {}).get("diagnosis")
    ]
    tasks = sorted({str(s["task_id"]) for s in sims})
    flip = set(rng.sample(tasks, round(share * len(tasks))))
    for sim in sims:
        sim["agent_cost"] = round(rng.uniform(0.01, 0.06), 5)
        sim["user_cost"] = round(rng.uniform(0.002, 0.01), 5)
        info = sim["reward_info"]
        if str(sim["task_id"]) not in flip:
            continue
        passed = (info.get("reward") or 0) >= 1
        info["reward"] = 0.0 if passed else 1.0
        if info.get("db_check"):
            info["db_check"] = {"db_match": not passed, "db_reward": info["reward"]}
        extra = info.get("info") if isinstance(info.get("info"), dict) else {}
        extra.pop("diagnosis", None)
        if passed and diagnoses:
            extra["diagnosis"] = rng.choice(diagnoses)
        info["info"] = extra or None
    out["info"]["agent_info"]["llm"] = "openai/fake-b"
    return out


def first_trial(document: dict[str, Any]) -> dict[str, Any]:
    out = dict(document)
    out["simulations"] = [s for s in document["simulations"] if int(s.get("trial") or 0) == 0]
    out.pop("simulation_index", None)
    out["info"] = {**document["info"], "num_trials": 1}
    return out


def chromium() -> str | None:
    return next((p for p in map(shutil.which, ("chromium", "chromium-browser")) if p), None)


def page_height(browser: str, html: Path) -> int:
    """The laid-out height: a copy of the page writes it into its title; Chromium dumps the DOM."""
    probe = html.with_suffix(".probe.html")
    script = "<script>document.title='H='+document.documentElement.scrollHeight</script>"
    probe.write_text(html.read_text().replace("</body>", script + "</body>"))
    with tempfile.TemporaryDirectory() as profile:
        done = subprocess.run(
            [browser, *CHROMIUM_FLAGS, f"--user-data-dir={profile}",
             f"--window-size={WIDTH},1000", "--dump-dom", probe.as_uri()],
            capture_output=True, text=True, timeout=180,
        )  # fmt: skip
    probe.unlink()
    found = re.search(r"<title>H=(\d+)</title>", done.stdout)
    if not found:
        sys.exit(f"could not read the height of {html}: {done.stderr[-500:]}")
    return int(found.group(1))


def screenshot(browser: str, html: Path, height: int) -> Path:
    png = html.with_suffix(".png")
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run(
            [browser, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--hide-scrollbars",
             f"--window-size={WIDTH},{height}", f"--screenshot={png}", html.as_uri()],
            capture_output=True, text=True, timeout=300, check=True,
        )  # fmt: skip
    return png


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--b", type=Path, default=None, help="run B (default: A flipped)")
    parser.add_argument("--screenshots", action="store_true")
    args = parser.parse_args()
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    a = regraded_fixture("retail", out)
    b = args.b or out / "retail_B.json"
    if args.b is None and not b.exists():
        b.write_text(json.dumps(flipped(json.loads(a.read_text()))))
    a1, b1 = out / "retail_A1.json", out / "retail_B1.json"
    for full, cut in ((a, a1), (b, b1)):
        cut.write_text(json.dumps(first_trial(json.loads(full.read_text()))))
    airline = regraded_fixture("airline", out)
    bm25 = banking_run("bm25", '{"top_k": 5}', out)
    grep = banking_run("grep_only", None, out)
    reports = {
        "pair": (a, b),
        "single-trial": (a1, b1),
        "mixed": (a, airline),
        "banking": (bm25, grep),
    }
    browser = chromium()
    if browser is None:
        print("no chromium on PATH: reports written, heights not measured")
    for name, files in reports.items():
        html = out / f"{name}.html"
        harness("report", *map(str, files), "-o", str(html))
        if browser is None:
            print(f"{name}: {html}")
            continue
        height = page_height(browser, html)
        shot = f", screenshot {screenshot(browser, html, height)}" if args.screenshots else ""
        print(f"{name}: {height} px tall at {WIDTH} px wide ({html}{shot})")


if __name__ == "__main__":
    main()
