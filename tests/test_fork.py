"""Issue 33, item 2: `tau-harness fork RESULTS --sim ID --at-turn N`.

A recorded fake-model run is forked after its agent's write: the fork keeps the parent's first N
messages exactly, its episode holds the write again (the same final database), and it diverges
with another agent; forked with the same agent and the parent's cassette it is the parent again,
with no model asked. Forks compare in `report`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import tau_mcp
from tau_mcp.harness.cli import app
from tau_mcp.harness.config import RunConfig
from tests.support.data import DATA_DIR
from tests.support.fake_llm_server import call, text
from tests.support.replay import AGENT, OTHER_AGENT, USER, comparable, model_args, script_models

pytestmark = pytest.mark.needs_data("mock")
TASK = "create_task_1"
WRITE_RESULT = 4  # greeting, user, the agent's create_task, its result: turns 0-3


def writer(body: dict) -> dict:
    """An agent that creates the task first, then talks."""
    if not any(m["role"] == "tool" for m in body["messages"]):
        return call("create_task", user_id="user_1", title="Important Meeting")
    return text("Your task is created. Anything else?")


def _invoke(*args, code: int = 0):
    result = CliRunner().invoke(app, [str(a) for a in args])
    assert result.exit_code == code, result.output
    return result


@pytest.fixture
def parent(fake, tmp_path) -> tuple[Path, Path]:
    script_models(fake)
    fake.respond(AGENT, writer)
    args = model_args(fake)
    path, tape = tmp_path / "parent.json", tmp_path / "parent-tape"
    tau_mcp.run(
        RunConfig(
            domain="mock",
            data_dir=DATA_DIR,
            task_ids=[TASK, "update_task_1"],
            agent_llm=f"openai/{AGENT}",
            agent_llm_args=args,
            user_llm=f"openai/{USER}",
            user_llm_args=args,
            judge_llm="none",
            save_to=path,
            record=tape,
        )
    )
    return path, tape


def _sim(path: Path, task: str = TASK) -> dict:
    (found,) = [s for s in json.loads(path.read_text())["simulations"] if s["task_id"] == task]
    return found


def test_a_fork_keeps_the_opening_and_its_state_and_diverges(fake, parent, tmp_path):
    path, _ = parent
    mother = _sim(path)
    assert mother["messages"][2]["tool_calls"][0]["name"] == "create_task"
    out = tmp_path / "fork.json"
    args = json.dumps(model_args(fake))
    _invoke(
        "fork", path, "--sim", mother["id"], "--at-turn", WRITE_RESULT, "--agent-llm",
        f"openai/{OTHER_AGENT}", "--agent-llm-args", args, "--data-dir", DATA_DIR,
        "--save-to", out,
    )  # fmt: skip
    document = json.loads(out.read_text())
    child = document["simulations"][0]
    assert [s["id"] for s in document["simulations"]] == [child["id"]]  # that one only
    assert child["messages"][:WRITE_RESULT] == mother["messages"][:WRITE_RESULT]
    assert child["messages"][WRITE_RESULT]["content"] == "I cannot look that up, sorry."
    assert child["messages"][WRITE_RESULT]["raw_data"]["model"] == OTHER_AGENT
    assert (child["task_id"], child["trial"], child["seed"]) == (
        mother["task_id"],
        mother["trial"],
        mother["seed"],
    )
    # The write was made again on the fork's own episode: the same final database.
    hashes = lambda sim: sim["reward_info"]["info"]["env"]["db_hashes"]["final"]  # noqa: E731
    assert hashes(child) == hashes(mother)
    assert child["reward_info"]["reward"] == mother["reward_info"]["reward"] == 1.0
    info = document["info"]
    assert info["fork"]["parent"] == str(path) and info["fork"]["at_turn"] == WRITE_RESULT
    assert len(info["fork"]["parent_sha256"]) == 64
    assert info["agent_info"]["llm"] == f"openai/{OTHER_AGENT}"
    assert info["user_info"]["llm"] == f"openai/{USER}"  # the parent's, as recorded
    assert child["info"]["forked_from"] == {"simulation": mother["id"], "at_turn": WRITE_RESULT}


def test_a_fork_with_the_same_agent_and_the_parents_cassette_is_the_parent(fake, parent, tmp_path):
    path, tape = parent
    asked = sum(len(v) for v in fake.requests.values())
    forks = {}
    for name, extra in (
        ("same", ("--replay", tape)),
        ("other", ("--agent-llm", f"openai/{OTHER_AGENT}")),
    ):
        forks[name] = tmp_path / f"{name}.json"
        _invoke(
            "fork", path, "--sim", "all", "--at-turn", "2", "--data-dir", DATA_DIR,
            "--agent-llm-args", json.dumps(model_args(fake)), "--save-to", forks[name], *extra,
        )  # fmt: skip
        if name == "same":
            assert sum(len(v) for v in fake.requests.values()) == asked  # all from the tape
    same = json.loads(forks["same"].read_text())["simulations"]
    mothers = json.loads(path.read_text())["simulations"]
    drop = lambda sims: [{**s, "info": {**s["info"], "forked_from": None}} for s in sims]  # noqa: E731
    assert comparable({"simulations": drop(same)}) == comparable({"simulations": drop(mothers)})
    # Two forks of one run: paired in the report, task by task.
    report = json.loads(_invoke("report", forks["same"], forks["other"], "--format", "json").stdout)
    (comparison,) = report["comparisons"]
    assert comparison["tasks"] == 2


def test_fork_refuses_what_it_cannot_fork(parent, tmp_path):
    path, _ = parent
    sim = _sim(path)
    count = len(sim["messages"])
    out = _invoke("fork", path, "--sim", sim["id"], "--at-turn", count + 1, code=1).output
    assert f"has {count} messages" in out and "past its end" in out
    out = _invoke("fork", path, "--sim", "nosuch", "--at-turn", 2, code=1).output
    assert "has no simulation 'nosuch'" in out
    taken = tmp_path / "taken.json"
    taken.write_text("{}")
    out = _invoke(
        "fork", path, "--sim", sim["id"], "--at-turn", 2, "--save-to", taken,
        "--data-dir", DATA_DIR, code=1,
    ).output  # fmt: skip
    assert "exists; fork into a new --save-to" in out
    assert "Traceback" not in out
