"""Issue 31 items 15 and 16: a run says at once that it started, shows simulations as they start
(not only as they end), and a log (no terminal) gets progress lines as the run goes, not only the
bar at the end."""

from __future__ import annotations

import io
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rich.console import Console
from typer.testing import CliRunner

from tau_mcp.harness import api
from tau_mcp.harness.cli import app
from tau_mcp.harness.cli import run as run_command
from tau_mcp.harness.config import RunConfig
from tests.support.data import DEMO_DIR

cli = CliRunner()
TASKS = "demo_create,demo_notice,demo_complete"


class Recorder:
    """A watcher that writes down what it is told, in order."""

    def __init__(self) -> None:
        self.seen: list[tuple[Any, ...]] = []
        self.running = self.most = 0

    def loading(self) -> None:
        self.seen.append(("loading",))

    @contextmanager
    def watching(self):
        yield

    def started(self, notes: list[str], todo: int) -> None:
        self.seen.append(("started", todo))

    def began(self, task_id: str, trial: int) -> None:
        self.running += 1
        self.most = max(self.most, self.running)
        self.seen.append(("began", task_id, trial))

    def finished(self, record: Any) -> None:
        self.running -= 1
        self.seen.append(("finished", str(record.task_id), record.trial))


def test_the_watcher_hears_of_the_run_before_the_data_and_of_each_simulation_as_it_starts(
    tmp_path: Path, monkeypatch
) -> None:
    loaded = api.load_now

    def load_now(domain, *args):
        watcher.seen.append(("data read",))
        loaded(domain, *args)

    monkeypatch.setattr(api, "load_now", load_now)
    watcher = Recorder()
    config = RunConfig(
        domain="mock", data_dir=DEMO_DIR, agent="oracle", user="scripted", task_ids=TASKS,
        num_trials=2, max_concurrency=2, save_to=tmp_path / "r.json",
    )  # fmt: skip
    results = api.run(config, watcher)
    assert len(results.simulations) == 6
    assert watcher.seen[:3] == [("loading",), ("data read",), ("started", 6)]
    events = watcher.seen[3:]
    began = [e[1:] for e in events if e[0] == "began"]
    finished = [e[1:] for e in events if e[0] == "finished"]
    assert sorted(began) == sorted(finished) and len(began) == 6
    for key in began:  # each simulation is seen starting before it is seen ending
        assert events.index(("began", *key)) < events.index(("finished", *key))
    assert watcher.most == 2  # at most --max-concurrency at once


def test_a_log_gets_progress_lines_as_the_run_goes(tmp_path: Path) -> None:
    done = cli.invoke(
        app,
        ["run", "--domain", "mock", "--agent", "oracle", "--user", "scripted", "--task-ids", TASKS]
        + ["--data-dir", str(DEMO_DIR), "--save-to", str(tmp_path / "r.json")],
        env={"COLUMNS": "200"},
    )
    assert done.exit_code == 0, done.output
    lines = done.output.splitlines()
    to_run = lines.index("mock: 3 simulations to run")
    last = next(i for i, line in enumerate(lines) if line.startswith("mock: 3/3 done, 0 running"))
    assert to_run < last, done.output
    assert "starting a run" not in done.output  # that line is for a terminal only


def test_a_terminal_is_told_at_once_and_counts_the_simulations_running(monkeypatch) -> None:
    screen = io.StringIO()
    terminal = Console(file=screen, force_terminal=True, width=200)
    monkeypatch.setattr(run_command, "console", terminal)
    bar = run_command.ProgressBar(RunConfig(domain="mock", agent="oracle", user="scripted"))
    bar.loading()
    assert "starting a run on mock (oracle agent, scripted user)" in screen.getvalue()
    with bar.watching():
        bar.started([], 3)
        bar.began("demo_create", 0)
        bar.began("demo_notice", 0)
        assert bar.progress is not None
        shown = bar.progress.tasks[0]
        assert shown.fields["running"] == 2 and shown.completed == 0
