"""Robustness runs end to end: the oracle that retries recovers from every retryable fault on
airline's base split where the plain oracle does not; records and headers say which calls were
faulted and how; the reports, `view --why`, resuming and `submit prepare` treat the run as what
it is; a fake-model run under faults is reproducible bit for bit (docs/faults.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import tau_mcp
from tau_mcp.harness.cli import app
from tau_mcp.harness.report import summary
from tests.support.data import DATA_DIR
from tests.support.fake_llm_server import FakeLLMServer, call, text

pytestmark = pytest.mark.needs_data("airline")
FAULTS = "transient=0.2,rate_limit=0.1"


def _run(agent: str, save_to: Path | None = None, **extra: Any):
    config = tau_mcp.RunConfig(
        domain="airline",
        data_dir=DATA_DIR,
        agent=agent,
        user="scripted",
        judge_llm="none",
        max_concurrency=8,
        save_to=save_to,
        **extra,
    )
    return tau_mcp.run(config)


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """Airline's base split three times: the retrying oracle and the plain oracle under
    faults, and the plain oracle clean."""
    folder = tmp_path_factory.mktemp("runs")
    paths = {
        "retry": folder / "retry.json",
        "plain": folder / "plain.json",
        "clean": folder / "clean.json",
    }
    _run("oracle-retry", paths["retry"], faults=FAULTS)
    _run("oracle", paths["plain"], faults=FAULTS)
    _run("oracle", paths["clean"])
    return paths


def _document(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


def _rewards(path: Path) -> list[float]:
    return [s["reward_info"]["reward"] for s in _document(path)["simulations"]]


def test_the_retrying_oracle_reaches_one_and_the_plain_oracle_does_not(runs):
    retry, plain = _rewards(runs["retry"]), _rewards(runs["plain"])
    assert len(retry) == len(plain) == 50
    assert sum(retry) / len(retry) == 1.0
    assert sum(plain) / len(plain) < 1.0
    report = summary.build([(p, _document(p)) for p in (runs["retry"], runs["plain"])])
    recovery = {r["file"]: r["faults"] for r in report["runs"]}
    assert recovery[str(runs["retry"])]["recovery_rate"] == 1.0
    assert recovery[str(runs["plain"])]["recovery_rate"] < 1.0
    assert set(recovery[str(runs["retry"])]["by_kind"]) == {"transient", "rate_limit"}


def test_records_and_header_say_which_calls_were_faulted_and_how(runs):
    document = _document(runs["plain"])
    assert document["info"]["faults"]["spec"] == FAULTS
    faulted = [s for s in document["simulations"] if s["info"]["faults"]]
    assert faulted
    for sim in document["simulations"]:
        assert isinstance(sim["info"]["faults"], list)
        for fault in sim["info"]["faults"]:
            message = sim["messages"][fault["turn_idx"]]
            assert message["role"] == "tool" and message["id"] == fault["tool_call_id"]
            assert message["error"] is True and message["content"].startswith("Error: ")
            assert fault["kind"] in ("transient", "rate_limit")
    clean = _document(runs["clean"])
    assert "faults" not in clean["info"]
    assert all("faults" not in s["info"] for s in clean["simulations"])


def test_the_grader_grades_the_end_state_as_in_a_clean_run(runs):
    """Every simulation the faults left untouched scores as the clean run's; the retrying
    oracle's end states are the gold states."""
    clean = {s["task_id"]: s for s in _document(runs["clean"])["simulations"]}
    for sim in _document(runs["plain"])["simulations"]:
        if not sim["info"]["faults"]:
            assert sim["reward_info"]["reward"] == clean[sim["task_id"]]["reward_info"]["reward"]
    for sim in _document(runs["retry"])["simulations"]:
        assert sim["reward_info"]["db_check"]["db_match"] is True


def test_report_puts_pass_hat_under_faults_beside_the_clean_run(runs, tmp_path):
    result = CliRunner().invoke(
        app, ["report", str(runs["plain"]), str(runs["clean"]), "--format", "json"]
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    (pair,) = report["comparisons"]
    robust = pair["robustness"]
    assert robust["tasks"] == 50
    one = robust["pass_hat"]["1"]
    assert one["clean"]["value"] == 1.0 and one["faulted"]["value"] < 1.0
    assert one["difference"]["ci_low"] <= one["difference"]["value"] <= one["difference"]["ci_high"]
    assert one["difference"]["value"] == pytest.approx(one["faulted"]["value"] - 1.0)
    html = tmp_path / "r.html"
    result = CliRunner().invoke(
        app, ["report", str(runs["retry"]), str(runs["plain"]), str(runs["clean"]), "-o", str(html)]
    )
    assert result.exit_code == 0, result.output
    page = html.read_text()
    assert 'id="robustness"' in page and "Recovery rate 100.0%" in page
    assert "[faults: transient=0.2,rate_limit=0.1]" in page
    assert 'data-flag="after_faults"' in page
    markdown = CliRunner().invoke(app, ["report", str(runs["plain"]), "--format", "md"]).output
    assert "Robustness run" in markdown and "[faults: transient=0.2,rate_limit=0.1]" in markdown


def test_view_says_a_failure_came_after_faults(runs):
    result = CliRunner().invoke(app, ["view", str(runs["plain"]), "--why"])
    assert result.exit_code == 0, result.output
    assert "after injected faults: The failure came after" in result.output
    summary_view = CliRunner().invoke(app, ["view", str(runs["plain"])])
    assert "Robustness run" in summary_view.output and "Recovery rate" in summary_view.output


def test_submit_prepare_refuses_a_faulted_run(runs, tmp_path):
    out = tmp_path / "submission"
    result = CliRunner().invoke(
        app,
        ["submit", "prepare", str(runs["retry"]), "-o", str(out), "--no-verify"]
        + ["--model-name", "m", "--email", "a@b.c"],
        input="\n" * 40,
    )
    assert result.exit_code != 0
    assert "[no-faults]" in result.output and "robustness run" in result.output
    assert not out.exists()


def test_resuming_with_other_faults_is_refused(runs, tmp_path):
    path = tmp_path / "one.json"
    _run("oracle", path, task_ids=["1", "2"])
    with pytest.raises(Exception, match="faults none \\(now transient=0.1\\)"):
        _run("oracle", path, task_ids=["1", "2"], faults="transient=0.1")


def test_injected_faults_do_not_count_toward_the_error_limit():
    results = _run("oracle-retry", task_ids=["5"], faults="transient=0.9", max_errors=1)
    (sim,) = results.simulations
    assert sim["info"]["faults"] and sim["termination_reason"] == "agent_stop"
    assert sim["reward_info"]["reward"] == 1.0


# --- bit for bit with the fake model --------------------------------------------------------
AGENT, USER = "agent-model", "user-model"
PLAN = [
    ("get_user_details", {"user_id": "raj_sanchez_7340"}),
    ("get_reservation_details", {"reservation_id": "Q69X3R"}),
    ("get_reservation_details", {"reservation_id": "Q69X3R"}),
]


def _agent(body: dict[str, Any]) -> dict[str, Any]:
    """Works down PLAN, retrying a call that failed at most once."""
    tools = [m for m in body["messages"] if m["role"] == "tool"]
    done = sum(1 for m in tools if not str(m["content"]).startswith("Error"))
    if done >= len(PLAN) or len(tools) >= 2 * len(PLAN):
        return text(f"Done after {len(tools)} calls.")
    name, arguments = PLAN[done]
    return call(name, **arguments)


def _user(body: dict[str, Any]) -> dict[str, Any]:
    heard = [m for m in body["messages"] if m["role"] == "user"]
    if len(heard) >= 2:
        return text("Thanks. ###STOP###")
    return text("What does my reservation Q69X3R look like?")


FAKE_FAULTS = "transient=0.3,rate_limit=0.2,stale_read=0.5,slow=0.2,slow_seconds=0.01"


def _fake_config(seed: int, model_args: dict[str, Any], **extra: Any) -> tau_mcp.RunConfig:
    return tau_mcp.RunConfig(
        domain="airline",
        data_dir=DATA_DIR,
        task_ids=["1", "2"],
        agent="llm",
        agent_llm=f"openai/{AGENT}",
        agent_llm_args=model_args,
        user="llm",
        user_llm=f"openai/{USER}",
        user_llm_args=model_args,
        judge_llm="none",
        max_retries=0,
        num_trials=2,
        seed=seed,
        max_concurrency=1,
        faults=FAKE_FAULTS,
        **extra,
    )


def _fake_run(seed: int) -> list[dict[str, Any]]:
    with FakeLLMServer() as fake:
        fake.respond(AGENT, _agent)
        fake.respond(USER, _user)
        config = _fake_config(seed, fake.llm_args())
        return [_stable(s) for s in tau_mcp.run(config).simulations]


def _stable(sim: dict[str, Any]) -> dict[str, Any]:
    """A record without what differs between any two runs: ids, clocks (time stamps, the
    duration, how long the model took to answer) and the server's episode id."""
    out = {k: v for k, v in sim.items() if k not in ("id", "timestamp", "start_time", "end_time")}
    out.pop("duration")
    out["info"] = {k: v for k, v in sim["info"].items() if k != "episode_id"}
    out["messages"] = [_timeless(m) for m in sim["messages"]]
    return out


def _timeless(message: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in message.items() if k != "timestamp"}
    if isinstance(out.get("raw_data"), dict):  # how long the model took: a clock
        out["raw_data"] = {k: v for k, v in out["raw_data"].items() if k != "generation_seconds"}
    return out


def test_a_fake_model_run_under_faults_is_reproducible_and_another_seed_differs():
    first, again, other = _fake_run(300), _fake_run(300), _fake_run(301)
    assert first == again
    assert any(s["info"]["faults"] for s in first)
    faults = [[(f["call"], f["kind"]) for f in s["info"]["faults"]] for s in first]
    assert faults != [[(f["call"], f["kind"]) for f in s["info"]["faults"]] for s in other]


def test_a_faulted_run_recorded_to_a_cassette_replays_with_no_model_and_no_key(
    tmp_path, monkeypatch
):
    """Issue 34, item 5: a robustness run with the fake model, recorded with `--record`, is
    the same run replayed with `--replay` (strict, no key, the model server gone): the same
    trajectories, the same faults in every record and the same rewards (ids, clocks aside)."""
    from tests.support.replay import comparable

    tape = tmp_path / "tape"
    with FakeLLMServer() as fake:
        fake.respond(AGENT, _agent)
        fake.respond(USER, _user)
        recorded = tau_mcp.run(
            _fake_config(300, fake.llm_args(), record=tape, save_to=tmp_path / "recorded.json")
        )
        asked = sum(len(v) for v in fake.requests.values())
    assert asked and any(s["info"]["faults"] for s in recorded.simulations)
    assert all(s["termination_reason"] != "infrastructure_error" for s in recorded.simulations)

    # Replayed by the command line, both options given, with no key and nothing listening
    # where the model was.
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    nowhere = json.dumps({"api_base": "http://127.0.0.1:9/v1", "num_retries": 0})
    options = ["--domain", "airline", "--data-dir", str(DATA_DIR), "--task-ids", "1", "2"]
    options += ["--agent", "llm", "--agent-llm", f"openai/{AGENT}", "--agent-llm-args", nowhere]
    options += ["--user", "llm", "--user-llm", f"openai/{USER}", "--user-llm-args", nowhere]
    options += ["--judge-llm", "none", "--max-retries", "0", "--num-trials", "2", "--seed", "300"]
    options += ["--max-concurrency", "1", "--faults", FAKE_FAULTS, "--replay", str(tape)]
    result = CliRunner().invoke(
        app, ["run", *options, "--save-to", str(tmp_path / "replayed.json")]
    )
    assert result.exit_code == 0, result.output
    one, two = _document(tmp_path / "recorded.json"), _document(tmp_path / "replayed.json")
    # Trajectories, each record's faults, rewards: the same (the header differs by the
    # model's address and key only, and by its cassette).
    assert comparable(one["simulations"]) == comparable(two["simulations"])
    assert one["info"]["faults"] == two["info"]["faults"]
    assert one["info"]["faults"]["spec"] == FAKE_FAULTS
    assert two["info"]["cassette"]["replay"] == str(tape)

    def faults_and_rewards(document: dict[str, Any]) -> list:
        sims = sorted(document["simulations"], key=lambda s: (s["task_id"], s["trial"]))
        return [(s["info"]["faults"], s["reward_info"]["reward"]) for s in sims]

    assert faults_and_rewards(one) == faults_and_rewards(two)

    # The same tape replayed clean: the first call the tape saw faulted now answers, so the
    # next request is not the recorded one, and the strict replay says so.
    clean = [o for o in options if o not in ("--faults", FAKE_FAULTS)]
    result = CliRunner().invoke(app, ["run", *clean, "--save-to", str(tmp_path / "clean.json")])
    assert result.exit_code == 1 and "ReplayMiss" in result.output, result.output


def test_a_gymnasium_env_injects_the_faults_it_is_given():
    gym = pytest.importorskip(
        "gymnasium", reason="gymnasium not installed (pip install -e '.[gym]')"
    )
    import tau_mcp.harness.integrations.gym  # noqa: F401 - registers the ids
    from tests.support.gym import gold_policy

    env = gym.make(
        "tau-mcp/Agent-v0",
        domain="airline",
        task_id="3",
        user="scripted",
        data_dir=str(DATA_DIR),
        faults="transient=1",
    )
    try:
        observation, _ = env.reset(seed=7, options={"task_id": "3"})
        policy = gold_policy(env.unwrapped.driver.domain.task("3"))
        next(policy)
        seen = []
        for _ in range(60):
            observation, reward, terminated, truncated, info = env.step(policy.send(observation))
            seen.append(observation)
            if terminated or truncated:
                break
        assert any("Service temporarily unavailable" in str(o) for o in seen)
        faults = info["simulation"]["info"]["faults"]
        assert faults and {f["kind"] for f in faults} == {"transient"}
    finally:
        env.close()


def test_a_runs_interval_beside_the_clean_run_is_its_own_sections():
    """One figure, one interval: pass^k under faults in the pairing shows the interval the
    faulted run's own section draws (over its tasks in its order), whatever order pairs them."""
    import random

    from tau_mcp.harness.report.robustness import faults_vs_clean
    from tau_mcp.harness.report.summary import run_summary

    draw = random.Random(7)
    sims = [
        {"task_id": str(t), "trial": n, "reward_info": {"reward": float(draw.random() < 0.7)}}
        for t in range(40)
        for n in range(4)
    ]
    document = {"info": {}, "simulations": sims}
    own = run_summary(Path("faulted.json"), document)["pass_hat"]
    outcomes = {str(t): [s["reward_info"]["reward"] == 1.0 for s in sims if s["task_id"] == str(t)] for t in range(40)}  # fmt: skip
    clean = {t: [True] * 4 for t in outcomes}
    paired = faults_vs_clean("f", "c", outcomes, clean, sorted(outcomes))
    for k in ("1", "2", "3", "4"):
        assert paired["pass_hat"][k]["faulted"] == own[k], k
