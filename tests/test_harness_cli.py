"""`tau-harness run / evaluate / view` end to end in-process, and their one-sentence errors."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from tau_mcp.harness.cli import app
from tests.support.data import DEMO_DIR

cli = CliRunner()


def _run(tmp_path, *extra: str):
    out = tmp_path / "run.json"
    result = cli.invoke(
        app,
        [
            "run",
            "--domain",
            "mock",
            "--agent",
            "oracle",
            "--user",
            "scripted",
            "--judge-llm",
            "none",
            "--data-dir",
            str(DEMO_DIR),
            "--save-to",
            str(out),
            *extra,
        ],
    )
    assert result.exit_code == 0, result.output
    return out, result.output


def test_run_then_evaluate_gives_the_same_rewards(tmp_path):
    out, printed = _run(tmp_path, "--num-trials", "2", "--task-ids", "demo_create,demo_complete")
    document = json.loads(out.read_text())
    assert {"info", "tasks", "simulations"} <= set(document)
    assert [(s["task_id"], s["trial"]) for s in document["simulations"]].count(
        ("demo_create", 1)
    ) == 1
    assert len(document["simulations"]) == 4 and "pass^2" in printed

    regraded_path = tmp_path / "regraded.json"
    result = cli.invoke(
        app,
        [
            "evaluate",
            "--domain",
            "mock",
            "--input",
            str(out),
            "--save-to",
            str(regraded_path),
            "--judge-llm",
            "none",
            "--data-dir",
            str(DEMO_DIR),
        ],
    )
    assert result.exit_code == 0, result.output
    regraded = json.loads(regraded_path.read_text())
    assert [s["reward_info"] for s in regraded["simulations"]] == [
        s["reward_info"] for s in document["simulations"]
    ]

    # A bare list of simulations works too; dropping the write call makes the DB check fail.
    sims = document["simulations"][:1]
    sims[0]["messages"] = [
        m for m in sims[0]["messages"] if not m.get("tool_calls") and m["role"] != "tool"
    ]
    bare = tmp_path / "bare.json"
    bare.write_text(json.dumps(sims))
    result = cli.invoke(
        app,
        [
            "evaluate",
            "--domain",
            "mock",
            "--input",
            str(bare),
            "--save-to",
            str(regraded_path),
            "--judge-llm",
            "none",
            "--data-dir",
            str(DEMO_DIR),
        ],
    )
    assert result.exit_code == 0, result.output
    (sim,) = json.loads(regraded_path.read_text())["simulations"]
    assert (
        sim["reward_info"]["db_check"]["db_match"] is False and sim["reward_info"]["reward"] == 0.0
    )


def test_view_shows_summary_and_a_conversation(tmp_path):
    out, _ = _run(tmp_path, "--task-ids", "demo_complete")
    result = cli.invoke(app, ["view", str(out)])
    assert (
        result.exit_code == 0
        and "average reward" in result.output
        and "demo_complete" in result.output
    )
    sim_id = json.loads(out.read_text())["simulations"][0]["id"]
    result = cli.invoke(app, ["view", str(out), "--sim", sim_id[:8]])
    assert result.exit_code == 0, result.output
    assert "update_task_status" in result.output and "###STOP###" in result.output


def test_errors_are_one_sentence(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    cases = [
        ["view", str(bad)],
        [
            "run",
            "--domain",
            "nowhere",
            "--agent",
            "oracle",
            "--user",
            "scripted",
            "--data-dir",
            str(DEMO_DIR),
        ],
        [
            "run",
            "--domain",
            "mock",
            "--agent",
            "oracle",
            "--user",
            "scripted",
            "--task-ids",
            "nope",
            "--data-dir",
            str(DEMO_DIR),
        ],
        [
            "run",
            "--domain",
            "mock",
            "--agent",
            "llm",
            "--user",
            "dummy",
            "--data-dir",
            str(DEMO_DIR),
        ],
        [
            "run",
            "--domain",
            "mock",
            "--agent",
            "oracle",
            "--user",
            "scripted",
            "--agent-llm-args",
            "{x",
            "--data-dir",
            str(DEMO_DIR),
        ],
    ]
    for args in cases:
        result = cli.invoke(app, args)
        assert result.exit_code == 1, (args, result.output)
        assert "Traceback" not in result.output
        assert (
            result.output.strip().startswith("error:") and result.output.strip().count("\n") == 0
        ), result.output


def test_infrastructure_causes_are_counted_and_shortened() -> None:
    from tau_mcp.harness.report.console import infrastructure_causes

    sims = [
        {
            "termination_reason": "infrastructure_error",
            "info": {"error": "AuthenticationError: no key"},
        },
        {
            "termination_reason": "infrastructure_error",
            "info": {"error": "AuthenticationError: no key"},
        },
        {"termination_reason": "infrastructure_error", "info": {"error": "x" * 400}},
        {"termination_reason": "user_stop", "info": {"error": "ignored"}},
    ]
    causes = infrastructure_causes(sims)
    assert causes[0] == ("AuthenticationError: no key", 2)
    assert len(causes) == 2 and causes[1][0].endswith("...") and len(causes[1][0]) == 300


def test_task_ids_take_space_separated_values_like_the_reference(tmp_path):
    out, _ = _run(tmp_path, "--task-ids", "demo_create", "demo_complete", "--num-trials", "1")
    sims = json.loads(out.read_text())["simulations"]
    assert sorted(s["task_id"] for s in sims) == ["demo_complete", "demo_create"]
    stray = CliRunner().invoke(
        app, ["run", "--domain", "mock", "stray", "--data-dir", str(DEMO_DIR)]
    )
    assert stray.exit_code == 1 and "unexpected arguments: stray" in stray.output
