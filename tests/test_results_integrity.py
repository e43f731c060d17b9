"""Issue 22, item 10: hand-edited results files.

Two different results for one (task, trial), or a simulation of a task the file does not list,
are refused in one sentence naming them by every reader (resume, view, report, evaluate); exact
copies of one simulation count once; infrastructure errors are attempts, never conflicts.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tau_mcp.harness.cli import app
from tau_mcp.harness.results import ResultsError, ResultsFile, load_results
from tests.support.data import DEMO_DIR

cli = CliRunner()
DATA = ["--data-dir", str(DEMO_DIR)]  # the bundled demo set: these tests need no reference data
RUN = ["run", "--domain", "mock", "--agent", "oracle", "--user", "scripted", *DATA]


def _run(save_to: Path, *extra: str):
    return cli.invoke(app, [*RUN, "--num-tasks", "3", "--save-to", str(save_to), *extra])


@pytest.fixture
def results_file(tmp_path: Path) -> Path:
    path = tmp_path / "run.json"
    result = _run(path, "--num-trials", "2")
    assert result.exit_code == 0, result.output
    return path


def _edit(path: Path, change) -> dict:
    document = json.loads(path.read_text())
    change(document)
    path.write_text(json.dumps(document, indent=1))
    return document


def _readers(path: Path, tmp_path: Path) -> dict[str, list[str]]:
    return {
        "view": ["view", str(path)],
        "report json": ["report", str(path), "--format", "json"],
        "report html": ["report", str(path), "-o", str(tmp_path / "r.html")],
        "evaluate": [
            "evaluate",
            "--domain",
            "mock",
            "--input",
            str(path),
            "--save-to",
            str(tmp_path / "regraded.json"),
            "--judge-llm",
            "none",
            *DATA,
        ],
        "resume": [*RUN, "--num-tasks", "3", "--num-trials", "2", "--save-to", str(path)],
    }


def _refused_by_every_reader(path: Path, tmp_path: Path, *expected: str) -> None:
    before = path.read_bytes()
    for name, args in _readers(path, tmp_path).items():
        result = cli.invoke(app, args)
        lines = [ln for ln in result.output.splitlines() if ln.strip()]
        assert result.exit_code == 1, (name, result.output)
        assert len(lines) == 1 and lines[0].startswith("error: "), (name, result.output)
        for part in expected:
            assert part in lines[0], (name, lines[0])
        assert "Traceback" not in result.output
    assert path.read_bytes() == before  # resuming wrote nothing into the refused file
    assert not (tmp_path / "r.html").exists() and not (tmp_path / "regraded.json").exists()


def test_conflicting_copies_of_one_trial_are_refused_by_every_reader(results_file, tmp_path):
    def conflict(document):
        sims = document["simulations"]
        twin = copy.deepcopy(next(s for s in sims if s["trial"] == 1))
        twin["id"] = "hand-made-copy"
        twin["reward_info"]["reward"] = 0.0
        sims.append(twin)

    document = _edit(results_file, conflict)
    original = next(
        s
        for s in document["simulations"]
        if s["task_id"] == document["simulations"][-1]["task_id"]
        and s["trial"] == 1
        and s["id"] != "hand-made-copy"
    )
    task = original["task_id"]
    _refused_by_every_reader(
        results_file,
        tmp_path,
        f"2 different results for task '{task}' trial 1",
        original["id"],
        "hand-made-copy",
    )


def test_a_simulation_of_an_unlisted_task_is_refused_by_every_reader(results_file, tmp_path):
    def stray(document):
        sim = copy.deepcopy(document["simulations"][0])
        sim["id"], sim["task_id"] = "stray", "no_such_task"
        document["simulations"].append(sim)

    _edit(results_file, stray)
    _refused_by_every_reader(
        results_file, tmp_path, "simulation stray of task 'no_such_task'", "not among"
    )


def test_exact_copies_count_once(results_file, tmp_path):
    def duplicate(document):
        document["simulations"].append(copy.deepcopy(document["simulations"][0]))

    document = _edit(results_file, duplicate)
    assert len(document["simulations"]) == 7
    assert len(load_results(results_file)["simulations"]) == 6
    view = cli.invoke(app, ["view", str(results_file)])
    assert view.exit_code == 0, view.output
    report = cli.invoke(app, ["report", str(results_file), "--format", "json"])
    assert report.exit_code == 0, report.output
    run = json.loads(report.output)["runs"][0]
    assert run["simulations"] == 6
    # Resuming keeps the six results and runs nothing: the copy is not a missing trial.
    again = _run(results_file, "--num-trials", "2")
    assert again.exit_code == 0, again.output
    assert len(json.loads(results_file.read_text())["simulations"]) == 6


def test_unknown_task_of_the_domain_is_refused_for_a_file_without_a_task_list(tmp_path):
    bare = tmp_path / "bare.json"
    bare.write_text(json.dumps([{"id": "a", "task_id": "not_a_mock_task", "trial": 0}]))
    assert load_results(bare)["simulations"][0]["id"] == "a"  # no list, no domain: kept
    with pytest.raises(ResultsError, match="not a task of this domain"):
        load_results(bare, task_ids={"demo_create"})
    result = cli.invoke(
        app,
        ["evaluate", "--domain", "mock", "--input", str(bare), "--save-to", str(tmp_path / "o")]
        + DATA,
    )
    assert result.exit_code == 1 and "not_a_mock_task" in result.output
    assert "Traceback" not in result.output


def test_infrastructure_errors_beside_a_result_are_attempts_not_conflicts(tmp_path):
    path = tmp_path / "r.json"
    results = ResultsFile(path, {"note": "x"}, [{"id": "t1"}, {"id": "t2"}])
    failed = {"task_id": "t1", "trial": 0, "termination_reason": "infrastructure_error"}
    results.add({"id": "f1", **failed})
    results.add({"id": "ok", "task_id": "t1", "trial": 0, "termination_reason": "user_stop"})
    results.add({"id": "f2", **failed, "task_id": "t2"})
    results.add({"id": "f3", **failed, "task_id": "t2"})
    results.save()
    assert [s["id"] for s in load_results(path)["simulations"]] == ["f1", "ok", "f2", "f3"]


def test_serve_style_file_lists_a_task_before_its_first_simulation(tmp_path):
    """A file whose header gains tasks as they are played never has a simulation in its
    journal whose task the saved header does not list (readers would refuse it)."""
    import asyncio

    from tau_mcp.harness.backends.http import in_process_backend
    from tau_mcp.harness.config import RunConfig
    from tau_mcp.harness.serve.simulation import make_hub
    from tests.support.harness import load

    async def go() -> None:
        domain = load("mock", DEMO_DIR)
        backend = await in_process_backend({"mock": domain})
        try:
            config = RunConfig(
                judge_llm="none", domain="mock", agent="mcp", user="scripted", save_to=None
            )
            hub = make_hub(backend, domain, config, tmp_path / "s.json")
            simulation = hub.create("demo_create", 0)
            await simulation.end()
            await asyncio.sleep(0)
            saved_header = json.loads((tmp_path / "s.json").read_text())["tasks"]
            assert [t["id"] for t in saved_header] == ["demo_create"]
            assert load_results(tmp_path / "s.json")["simulations"]
            await hub.close()
        finally:
            await backend.close()

    asyncio.run(go())


def test_simulations_without_a_trial_number_are_not_copies(tmp_path):
    """A hand-made list may leave out trial numbers: two such simulations of one task are two
    simulations, not a conflict."""
    path = tmp_path / "list.json"
    sims = [
        {"id": "a", "task_id": "t", "reward_info": {"reward": 1.0}},
        {"id": "b", "task_id": "t", "reward_info": {"reward": 0.0}},
    ]
    path.write_text(json.dumps(sims))
    assert [s["id"] for s in load_results(path)["simulations"]] == ["a", "b"]
