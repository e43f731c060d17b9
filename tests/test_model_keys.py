"""Issue 31 item 15, slow to fail: a missing agent, user or judge key is found without importing
litellm (seconds of CPU), and the agent's and user's before any data is read.

`tau_mcp.harness.model_keys` knows the key variables of the common providers; these tests hold
its table to what litellm itself asks for, so the short way never disagrees with the long one.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from tau_mcp.harness import api
from tau_mcp.harness.cli import app
from tau_mcp.harness.model_keys import PROVIDER_KEYS, _bare_model_providers, provider_keys
from tau_mcp.harness.preflight import ModelUse, check_known, known_problem
from tests.support.data import DEMO_DIR

cli = CliRunner()
ALL_KEYS = sorted({k for keys in PROVIDER_KEYS.values() for k in keys})


@pytest.fixture
def no_keys(monkeypatch):
    for key in ALL_KEYS:
        monkeypatch.delenv(key, raising=False)
    for provider in PROVIDER_KEYS:
        for name in ("API_BASE", "BASE_URL"):
            monkeypatch.delenv(f"{provider.upper()}_{name}", raising=False)


def test_the_provider_table_asks_for_what_litellm_asks_for(no_keys, monkeypatch):
    from tau_mcp.conversation.llm import litellm_module

    litellm = litellm_module()
    for provider, keys in PROVIDER_KEYS.items():
        model = f"{provider}/some-model"
        assert litellm.get_llm_provider(model=model)[1] == provider
        found = litellm.validate_environment(model=model)
        assert set(found["missing_keys"]) == set(keys), provider
        assert not found["keys_in_environment"]
        for key in keys:  # any one of them is enough, for litellm as for us
            with monkeypatch.context() as patched:
                patched.setenv(key, "sk-test")
                assert litellm.validate_environment(model=model)["keys_in_environment"], key
                assert known_problem(ModelUse("agent", model, {})) == (True, None)
        assert known_problem(ModelUse("agent", model, {}))[0]


def test_bare_names_resolve_to_the_provider_litellm_gives_them():
    from tau_mcp.conversation.llm import litellm_module

    litellm = litellm_module()
    bare = _bare_model_providers()
    assert bare["gpt-4.1-2025-04-14"] == "openai" and len(bare) > 100
    assert {p for p in bare.values()} == {"openai", "anthropic"}
    for model, provider in bare.items():
        assert litellm.get_llm_provider(model=model)[1] == provider, model


def test_what_the_table_does_not_know_is_left_to_litellm(no_keys):
    assert provider_keys("vertex_ai/gemini-pro") is None  # project and location, not a key
    assert provider_keys("azure/gpt-4") is None
    assert provider_keys("no-such-model") is None
    assert provider_keys("deepseek-chat") is None  # litellm wants deepseek/ here
    uses = [ModelUse("agent", "azure/gpt-4", {}), ModelUse("user", "openai/x", {"api_key": "k"})]
    assert check_known(uses) == uses[:1]


def test_a_missing_key_message_names_every_variable_that_would_do(no_keys):
    known, reason = known_problem(ModelUse("judge", "gemini/gemini-2.5-pro", {}))
    assert known and "GEMINI_API_KEY or GOOGLE_API_KEY" in (reason or "")
    base = {"api_base": "http://127.0.0.1:9/v1"}
    assert known_problem(ModelUse("agent", "openai/fake", base)) == (True, None)


def test_the_agent_key_is_checked_before_any_data_is_read(tmp_path, no_keys, monkeypatch):
    def not_yet(*args, **kwargs):
        raise AssertionError("the data was read before the key check")

    monkeypatch.setattr(api, "load_now", not_yet)
    refused = cli.invoke(
        app,
        ["run", "--domain", "mock", "--agent", "llm", "--agent-llm", "gpt-4.1", "--user", "llm"]
        + ["--data-dir", str(DEMO_DIR), "--save-to", str(tmp_path / "r.json")],
    )
    assert refused.exit_code == 1
    assert refused.output.startswith("error: the agent model 'gpt-4.1' needs OPENAI_API_KEY")
    assert not (tmp_path / "r.json").exists()


PROBE = """
import atexit, json, sys
atexit.register(lambda: print("PROBE", json.dumps("litellm" in sys.modules), flush=True))
from tau_mcp.harness.cli import main
sys.argv = ["tau-harness", *json.loads(sys.argv[1])]
main()
"""


@pytest.mark.needs_data("retail")
@pytest.mark.parametrize(
    "args",
    [
        ["--domain", "mock", "--agent", "llm", "--user", "llm", "--data-dir", str(DEMO_DIR)],
        ["--domain", "retail", "--agent", "oracle", "--user", "scripted", "--task-ids", "2"],
    ],
    ids=["agent", "judge"],
)
def test_a_missing_key_is_found_without_importing_litellm(tmp_path, args):
    from tests.support.data import DATA_DIR

    env = {k: v for k, v in __import__("os").environ.items() if k not in ALL_KEYS}
    env["TAU2_DATA_DIR"] = str(DATA_DIR)
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(["run", *args, "--save-to", str(tmp_path / "r")])],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 1, done.stderr
    assert "needs OPENAI_API_KEY" in done.stderr, done.stderr
    probe = next(line for line in done.stdout.splitlines() if line.startswith("PROBE"))
    assert json.loads(probe.split(" ", 1)[1]) is False
