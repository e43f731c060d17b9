"""Issue 31 item 3: `--server` with `--task-set-name`.

Only the task id crossed the wire, so a remote `tau-server` built the episode from its own task
of that id while the harness graded against the named set's task. The episode now carries the
task set (`POST /{domain}/episodes {"task_id", "task_set"}`), the server builds it from that
set of its own data, and says so in its answer; a server that does not (an older one) is
refused in one sentence before any simulation is graded against the wrong task.

The data is a copy of the reference's telecom folder whose `tasks_small.json` differs from
`tasks.json` in one task's initial state (the shipped sets are equal, which hid the bug).
"""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route
from typer.testing import CliRunner

from tau_mcp.conversation.errors import ConfigError
from tau_mcp.harness.backends.http import HttpBackend
from tau_mcp.harness.cli import app
from tau_mcp.harness.wiring import load_domain, open_backend
from tests.support.data import DATA_DIR
from tests.support.server import real_server

pytestmark = [pytest.mark.needs_data("telecom"), pytest.mark.e2e]
TASK = "[service_issue]airplane_mode_on[PERSONA:None]"


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory) -> Path:
    """The reference data with telecom's small set changed: in it, TASK's phone does not
    start in airplane mode."""
    root = tmp_path_factory.mktemp("data")
    source = DATA_DIR / "tau2" / "domains" / "telecom"
    folder = root / "tau2" / "domains" / "telecom"
    folder.mkdir(parents=True)
    for path in source.iterdir():
        if path.name != "tasks_small.json":
            (folder / path.name).symlink_to(path)
    (root / "tau2" / "reference_texts").symlink_to(DATA_DIR / "tau2" / "reference_texts")
    tasks = json.loads((source / "tasks_small.json").read_text())
    [task] = [t for t in tasks if t["id"] == TASK]
    actions = task["initial_state"]["initialization_actions"]
    task["initial_state"]["initialization_actions"] = [
        a for a in actions if a["func_name"] != "turn_airplane_mode_on"
    ]
    assert len(task["initial_state"]["initialization_actions"]) == len(actions) - 1
    (folder / "tasks_small.json").write_text(json.dumps(tasks))
    yield root
    shutil.rmtree(root, ignore_errors=True)


async def _start_hashes(data_dir: Path, server: str | None) -> dict:
    domain = load_domain("telecom", data_dir, task_set="telecom_small")
    backend = await open_backend(domain, server)
    try:
        ref = await backend.create_episode("telecom", TASK)
        return await backend.hashes(ref)
    finally:
        await backend.close()


def test_a_remote_episode_starts_from_the_sets_task(data_dir):
    with real_server("telecom", data_dir=data_dir) as url:
        remote = asyncio.run(_start_hashes(data_dir, url))
    local = asyncio.run(_start_hashes(data_dir, None))
    assert remote == local


def test_a_remote_run_on_a_task_set_grades_as_in_process(data_dir, tmp_path):
    def run(*server: str) -> dict:
        save_to = tmp_path / f"r{len(server)}.json"
        done = CliRunner().invoke(
            app,
            [
                "run", "--domain", "telecom", "--task-set-name", "telecom_small",
                "--task-ids", TASK, "--agent", "oracle", "--user", "scripted",
                "--judge-llm", "none", "--data-dir", str(data_dir), "--save-to", str(save_to),
                *server,
            ],
        )  # fmt: skip
        assert done.exit_code == 0, done.output
        [sim] = json.loads(save_to.read_text())["simulations"]
        return sim["reward_info"]

    local = run()
    with real_server("telecom", data_dir=data_dir) as url:
        remote = run("--server", url)
    # (the changed task fails its own gold plan: the plan turns airplane mode off, and the
    # assertions expect the phone as the set's start leaves it; before the fix the remote run
    # started from the server's own task and scored 1.0 against the set's 0.0)
    for part in ("reward", "db_check", "reward_breakdown", "env_assertions"):
        assert remote.get(part) == local.get(part), part


def test_a_server_that_ignores_the_task_set_is_refused():
    """An older tau-server answers without `task_set`: it built the episode from its own task."""

    async def create(request):
        return JSONResponse(
            {"episode_id": "e1", "agent_mcp": "/a/mcp", "user_mcp": "/u/mcp"}, status_code=201
        )

    old = Starlette(routes=[Route("/{domain}/episodes", create, methods=["POST"])])

    async def attempt() -> None:
        backend = await HttpBackend(app=old, task_set="telecom_small").start()
        try:
            await backend.create_episode("telecom", TASK)
        finally:
            await backend.close()

    with pytest.raises(ConfigError) as refused:
        asyncio.run(attempt())
    assert "does not take a task set" in str(refused.value)
    assert "--task-set-name" in str(refused.value)
