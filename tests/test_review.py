"""The reference's LLM review: request parity with the recorded fixtures (the conformance kit's
own checker), `run --auto-review` against its fixture, the parsers against every probe reply the
review texts record, the trajectory layout against its rendered examples, and the command's
errors (one sentence, nothing written)."""

from __future__ import annotations

import collections
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tau_mcp.grading.review import (
    extract_json,
    parse_auth,
    parse_full_review,
    parse_user_review,
    render_actions,
    render_assertions,
    render_trajectory,
    review_texts,
    user_visible,
)
from tests.support.data import CONFORMANCE_DIR, DATA_DIR

REVIEW = CONFORMANCE_DIR / "review"
TOOLS = CONFORMANCE_DIR / "requests" / "tools"
CHECKER = TOOLS / "review_parity.py"
SUMMARY = re.compile(
    r"review parity: (\d+)/(\d+) fixtures identical \(requests (\d+)/(\d+), reviews (\d+)/(\d+)\)"
)

needs_texts = pytest.mark.skipif(
    review_texts(DATA_DIR) is None,
    reason=f"no review texts in {DATA_DIR / 'tau2' / 'reference_texts'} (set TAU2_DATA_DIR)",
)
needs_fixtures = pytest.mark.skipif(
    not CHECKER.is_file() or not (REVIEW / "index.json").is_file(),
    reason=f"review fixtures or their checker not found ({REVIEW}, {CHECKER})",
)
pytestmark = needs_texts


@pytest.fixture(scope="module")
def texts():
    return review_texts(DATA_DIR)


def _env() -> dict[str, str]:
    bin_dir = str(Path(sys.executable).parent)  # this venv's tau-harness
    return dict(
        os.environ,
        PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        TAU2_DATA_DIR=str(DATA_DIR),
        LITELLM_LOCAL_MODEL_COST_MAP="True",
    )


# --- parity with the recordings --------------------------------------------------------------
@needs_fixtures
def test_review_sends_the_reference_requests_and_saves_its_reviews():
    done = subprocess.run(
        [sys.executable, str(CHECKER), str(REVIEW), "--data-dir", str(DATA_DIR)],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=1800,
    )
    output = done.stdout + done.stderr
    match = SUMMARY.search(output)
    assert match, f"the checker printed no summary:\n{output[-3000:]}"
    same, fixtures, same_requests, requests, same_reviews, reviews = map(int, match.groups())
    assert (fixtures, requests, reviews) == (6, 18, 12), output
    assert (same, same_requests, same_reviews) == (fixtures, requests, reviews), output


@needs_fixtures
def test_auto_review_sends_the_reference_requests(tmp_path):
    sys.path.insert(0, str(TOOLS))
    try:
        import fake_review_llm
        import review_parity
    finally:
        sys.path.remove(str(TOOLS))
    fixture = json.loads((REVIEW / "auto_review" / "airline_3_full.json").read_text())
    server = fake_review_llm.ReviewFakeLLM(str(DATA_DIR), [fixture["domain"]]).start()
    try:
        server.configure(fixture["script"]["review_script"], fixture["script"]["variants"])
        save = tmp_path / "results.json"
        args = json.dumps({"api_base": server.api_base, "temperature": 0.0})
        command = [
            "tau-harness", "run", "--domain", "airline", "--agent", "llm",
            "--agent-llm", "openai/fake", "--agent-llm-args", args, "--user", "llm",
            "--user-llm", "openai/fake", "--user-llm-args", args,
            "--task-ids", *fixture["task_ids"], "--max-concurrency", "1", "--num-trials", "1",
            "--save-to", str(save), "--auto-review", "--review-mode", fixture["mode"],
            "--review-llm", "openai/fake-review",
        ]  # fmt: skip
        env = dict(
            _env(),
            OPENAI_API_BASE=server.api_base,
            OPENAI_BASE_URL=server.api_base,
            OPENAI_API_KEY="fake-key",
        )
        done = subprocess.run(
            command, env=env, capture_output=True, text=True, timeout=600, cwd=tmp_path
        )
        log = server.take_log()
    finally:
        server.stop()
    assert done.returncode == 0, done.stderr[-2000:]
    want, got = collections.defaultdict(list), collections.defaultdict(list)
    for request in fixture["requests"]:
        want[request["caller"]].append(request["body"])
    for request in log:
        got[request["caller"]].append(request["body"])
    assert sorted(got) == sorted(want)
    for caller, bodies in want.items():
        assert len(got[caller]) == len(bodies), caller
        for recorded, sent in zip(bodies, got[caller], strict=True):
            assert review_parity.diff_body(recorded, sent) == [], caller
    [sim] = json.loads(save.read_text())["simulations"]
    [expected] = fixture["reviews"]
    assert sim["review"] == expected["review"]
    assert sim["auth_classification"] == expected["auth_classification"]


# --- the parsers against the recorded probes ---------------------------------------------------
def test_json_extraction_probes(texts):
    for name, probe in texts.section("parsing")["extract_json"]["probes"].items():
        assert extract_json(texts, probe["response"]) == probe["extracted"], name


@pytest.mark.parametrize(
    ("section", "parse", "key"),
    [
        ("full_review", parse_full_review, "review"),
        ("user_review", parse_user_review, "review"),
        ("auth", parse_auth, "classification"),
    ],
)
def test_reply_probes_parse_as_the_reference_parsed_them(texts, section, parse, key):
    probes = texts.section("parsing")[section]["probes"]
    assert probes
    for name, probe in probes.items():
        assert parse(texts, probe["reply"], None) == probe[key], name


# --- what the review model reads ---------------------------------------------------------------
def test_trajectory_layout_matches_the_rendered_examples(texts):
    layout = texts.section("trajectory_format")
    messages = layout["example_messages"]
    assert render_trajectory(texts, messages) == layout["example_full"]
    visible = user_visible(messages)
    assert [m["turn_idx"] for m in visible] == layout["user_visible_filter"][
        "kept_turns_of_example"
    ]
    assert render_trajectory(texts, visible) == layout["example_user_visible"]
    empty = layout["empty_cases_rendered"]
    call = {"id": "x", "name": "f", "arguments": {}}
    assert (
        render_trajectory(texts, [{"role": "assistant", "content": "", "tool_calls": [call]}])
        == empty["assistant_content_empty_string"]
    )
    assert (
        render_trajectory(texts, [{"role": "tool", "content": "", "requestor": "assistant"}])
        == empty["tool_content_empty"]
    )
    calling = {"role": "assistant", "tool_calls": [call], "turn_idx": 3}
    assert (
        render_trajectory(texts, user_visible([{**calling, "content": ""}]))
        == empty["user_visible_of_assistant_tool_call_with_empty_content"]
    )
    assert (
        render_trajectory(texts, user_visible([{**calling, "content": None}]))
        == empty["user_visible_of_assistant_tool_call_with_null_content"]
    )


def test_task_inputs_match_the_reference_examples(texts):
    from tau_mcp.conversation.reference_prompts import render_scenario
    from tau_mcp.conversation.reference_texts import reference_texts
    from tests.support.harness import load

    prompts = reference_texts(DATA_DIR)
    for example in texts.section("inputs")["examples"]:
        task = load(example["domain"]).task(example["task_id"])
        assert render_scenario(prompts, task.user_scenario) == example["user_instructions"]
        assert render_actions(texts, task) == example["example_action_trajectory"]
        assert render_assertions(task) == example["natural_language_assertions"]


# --- the command -------------------------------------------------------------------------------
@needs_fixtures
def test_a_missing_key_is_one_sentence_and_writes_nothing(tmp_path, monkeypatch):
    from tau_mcp.harness.cli import app

    source = tmp_path / "results.json"
    source.write_text((REVIEW / "inputs" / "airline.json").read_text())
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_API_BASE", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TAU2_DATA_DIR", str(DATA_DIR))
    result = CliRunner().invoke(app, ["review", str(source)])
    assert result.exit_code == 1
    message = result.output.strip()
    assert message.startswith("error: ") and "ANTHROPIC_API_KEY" in message
    assert "claude-opus-4-5" in message and "\n" not in message and "Traceback" not in message
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.json"]


@needs_fixtures
def test_an_existing_output_is_not_replaced_unasked(tmp_path, monkeypatch):
    from tau_mcp.harness.cli import app

    source = tmp_path / "results.json"
    source.write_text((REVIEW / "inputs" / "airline.json").read_text())
    (tmp_path / "results_reviewed.json").write_text("keep me")
    monkeypatch.setenv("TAU2_DATA_DIR", str(DATA_DIR))
    result = CliRunner().invoke(app, ["review", str(source), "--review-llm", "openai/x"])
    assert result.exit_code == 1 and "--overwrite" in result.output
    assert (tmp_path / "results_reviewed.json").read_text() == "keep me"


# --- issue 31 item 8: a task without gold actions is reviewed, not an infrastructure error -------
FULL_REVIEW_REPLY = '{"summary": "Fine.", "errors": []}'
AUTH_REPLY = '{"status": "not_needed", "reasoning": "No account was touched."}'


def test_a_task_without_gold_actions_shows_the_reviewer_an_empty_trajectory(texts):
    from tests.support.harness import load

    task = load("mock", DATA_DIR).task("create_task_1_nl_eval")
    assert task.evaluation_criteria.actions is None
    assert render_actions(texts, task) == "```json\n[]\n```"


def test_auto_review_on_tasks_without_gold_actions_runs_clean(tmp_path, monkeypatch):
    """mock's create_task_1_nl_eval and update_task_with_history_and_env_assertions have no
    gold actions: each was an infrastructure error and the run exited 1."""
    import tau_mcp
    from tau_mcp.harness.review import ReviewSettings
    from tests.support.fake_llm_server import FakeLLMServer
    from tests.support.fake_llm_server import text as reply

    with FakeLLMServer() as fake:

        def answer(body):
            wants_auth = "authentication" in json.dumps(body["messages"]).lower()
            return reply(AUTH_REPLY if wants_auth else FULL_REVIEW_REPLY)

        fake.respond("fake-review", answer)
        monkeypatch.setenv("OPENAI_API_BASE", fake.api_base)
        monkeypatch.setenv("OPENAI_BASE_URL", fake.api_base)
        monkeypatch.setenv("OPENAI_API_KEY", "fake-key")
        ids = ["create_task_1_nl_eval", "update_task_with_history_and_env_assertions"]
        results = tau_mcp.run(
            tau_mcp.RunConfig(
                domain="mock", data_dir=DATA_DIR, agent="oracle", user="scripted",
                judge_llm="none", task_ids=ids, max_retries=0,
                review=ReviewSettings("full", "openai/fake-review"),
            )
        )  # fmt: skip
        assert len(fake.requests["fake-review"]) == 4
    for sim in results.simulations:
        assert sim["termination_reason"] != "infrastructure_error", sim["info"].get("error")
        assert sim["review"]["summary"] == "Fine."
        assert sim["auth_classification"]["reasoning"] == "No account was touched."
