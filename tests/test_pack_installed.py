"""A domain pack made by `tau-harness domain new` in a temporary folder and installed with
`pip install -e` into a temporary virtualenv, used there as a user would: listed, checked, run
(the oracle, and an llm agent answered by a fake model, over worker processes), served by
`tau-server` (agent and user MCP endpoints of an episode, the Eval Protocol endpoint graded by
the server, stdio, `config claude`), all with nothing of it inside tau-mcp's tree.

The virtualenv has no packages of its own: a `.pth` file adds this test environment's
site-packages folders (tau-mcp's editable install included) with `site.addsitedir`, and the pack alone
is installed into it (its build backend fetched from the package registry, as `pip install -e`
fetches it for a user; the tests skip when the registry cannot be reached).
"""

from __future__ import annotations

import json
import os
import site
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport, StreamableHttpTransport

from tests.support.data import DEMO_DIR
from tests.support.fake_llm_server import FakeLLMServer, call, text
from tests.support.server import spawned

pytestmark = pytest.mark.e2e

NAME = "deskpack"
TASKS = ["downgrade", "plan_price", "upgrade_with_code"]
AGENT = "agent-model"


@dataclass(frozen=True)
class Installed:
    folder: Path
    python: Path
    env: dict[str, str]

    def harness(self, *args: object, timeout: float = 300) -> subprocess.CompletedProcess:
        command = [str(self.python), "-m", "tau_mcp.harness", *map(str, args)]
        return subprocess.run(
            command, capture_output=True, text=True, env=self.env, timeout=timeout
        )

    def server_command(self, *args: str) -> list[str]:
        return [str(self.python), "-c", "from tau_mcp.servers.cli import app; app()", *args]


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Installed:
    work = tmp_path_factory.mktemp("pack")
    folder = work / "desk"
    env = {k: v for k, v in os.environ.items() if k not in ("TAU_DOMAIN_PATH", "PYTHONPATH")}
    env.update(TAU2_DATA_DIR=str(DEMO_DIR), COLUMNS="200", NO_COLOR="1")
    made = subprocess.run(
        [sys.executable, "-m", "tau_mcp.harness", "domain", "new", NAME, "--dir", str(folder)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert made.returncode == 0, made.stdout + made.stderr
    home = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(home)], check=True)
    python = home / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    ours = [p for p in site.getsitepackages() if Path(p).is_dir()]
    lines = "".join(f"import site; site.addsitedir({p!r})\n" for p in ours)
    (Path(purelib) / "zz_tau_mcp_env.pth").write_text(lines)
    pip = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps",
         "-e", str(folder)],
        capture_output=True,
        text=True,
        timeout=600,
    )  # fmt: skip
    if pip.returncode != 0 and "setuptools" in pip.stderr and "satisf" in pip.stderr:
        pytest.skip("the pack's build backend (setuptools) could not be fetched from the registry")
    assert pip.returncode == 0, pip.stderr
    return Installed(folder, python, env)


def rewards(path: Path) -> dict[str, float]:
    simulations = json.loads(path.read_text())["simulations"]
    return {s["task_id"]: s["reward_info"]["reward"] for s in simulations}


def test_the_installed_pack_is_listed_with_ours_and_checks_clean(installed):
    listed = installed.harness("domains", "--format", "json")
    assert listed.returncode == 0, listed.stdout + listed.stderr
    rows = {row["name"]: row for row in json.loads(listed.stdout)["domains"]}
    assert rows[NAME]["from"] == "the installed distribution deskpack-domain 0.1.0"
    assert rows[NAME]["data"] == str(installed.folder / "src" / "deskpack_domain" / "data")
    assert rows["mock"]["from"] == "tau-mcp"
    checked = installed.harness("domain", "check", NAME)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert f"{NAME}: passed: 0 error(s), 0 warning(s)" in checked.stdout
    shown = installed.harness("domain", NAME)
    assert shown.returncode == 0 and "read_text_messages" in shown.stdout, shown.stderr


def test_the_oracle_scores_one_on_every_task(installed, tmp_path):
    out = tmp_path / "oracle.json"
    ran = installed.harness(
        "run", "--domain", NAME, "--agent", "oracle", "--user", "scripted", "--save-to", out
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert rewards(out) == dict.fromkeys(TASKS, 1.0)
    report = installed.harness("report", out, "--format", "md", "-o", tmp_path / "report.md")
    assert report.returncode == 0, report.stderr
    assert f"Domain {NAME};" in (tmp_path / "report.md").read_text()


def _desk_agent(body: dict) -> dict:
    """A model that serves the desk: the calls each task needs, in order, answered by turn."""
    said = [m for m in body["messages"] if m["role"] == "assistant"]
    opening = next(m["content"] for m in body["messages"] if m["role"] == "user")
    plans = {
        "maria@example.com": [
            call("find_customer", email="maria@example.com"),
            call("get_plan", plan_id="plus"),
            text("Your Plus plan costs 19.99 per month."),
        ],
        "ken@example.com": [
            call("find_customer", email="ken@example.com"),
            call("change_plan", customer_id="C1002", plan_id="basic"),
            text("Done: you are on the Basic plan now."),
        ],
        "ana@example.com": [
            call("find_customer", email="ana@example.com"),
            text("Please read me the code we texted to your phone."),
            call("verify_customer", customer_id="C1003", code="482913"),
            call("change_plan", customer_id="C1003", plan_id="pro"),
            text("Done: you are on the Pro plan now."),
        ],
    }
    plan = next(steps for email, steps in plans.items() if email in opening)
    return plan[min(len(said) - 1, len(plan) - 1)]  # the first assistant message is the greeting


def test_an_llm_agent_on_a_fake_model_over_worker_processes(installed, tmp_path):
    out = tmp_path / "llm.json"
    with FakeLLMServer() as fake:
        fake.respond(AGENT, _desk_agent)
        args = json.dumps(fake.llm_args())
        ran = installed.harness(
            "run", "--domain", NAME, "--agent", "llm", "--agent-llm", f"openai/{AGENT}",
            "--agent-llm-args", args, "--user", "scripted", "--judge-llm", "none",
            "--workers", "2", "--max-retries", "0", "--save-to", out,
        )  # fmt: skip
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert rewards(out) == dict.fromkeys(TASKS, 1.0)
    assert len(fake.requests[AGENT]) == 3 + 3 + 5


async def test_tau_server_serves_the_pack_over_mcp_and_eval_protocol(installed):
    command = installed.server_command("serve", "--port", "{port}", "--data-dir", str(DEMO_DIR))
    with spawned(command, env=installed.env) as base:
        assert httpx.get(base + "/health").json()["domains"] == sorted([NAME, "mock"])
        created = httpx.post(base + f"/{NAME}/episodes", json={"task_id": "upgrade_with_code"})
        assert created.status_code in (200, 201), created.text
        episode = created.json()
        async with Client(StreamableHttpTransport(base + episode["user_mcp"])) as user:
            assert [t.name for t in await user.list_tools()] == ["read_text_messages"]
            inbox = await user.call_tool("read_text_messages", {})
            assert "482913" in inbox.content[0].text
        async with Client(StreamableHttpTransport(base + episode["agent_mcp"])) as agent:
            names = [t.name for t in await agent.list_tools()]
            assert names[:2] == ["find_customer", "get_plan"] and "change_plan" in names
            early = await agent.call_tool(
                "change_plan", {"customer_id": "C1003", "plan_id": "pro"}, raise_on_error=False
            )
            assert early.is_error and "not verified" in early.content[0].text
            await agent.call_tool("verify_customer", {"customer_id": "C1003", "code": "482913"})
            await agent.call_tool("change_plan", {"customer_id": "C1003", "plan_id": "pro"})
        state = httpx.get(base + f"/{NAME}/episodes/{episode['episode_id']}/state").json()
        assert state["agent_db"]["customers"]["C1003"]["plan_id"] == "pro"

        # The Eval Protocol endpoint: a session started from a task, graded by the server.
        session = {"session_id": "ep1", "config": {"domain": NAME, "task_id": "downgrade"}}
        init = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "reward-kit", "version": "1.0.0", "_extra": session},
            },
        }
        accept = {"Accept": "application/json, text/event-stream"}
        with httpx.Client(base_url=base, headers=accept, timeout=30) as http:
            answer = http.post(f"/{NAME}/mcp/", json=init)
            assert answer.status_code == 200, answer.text
            transport = {"mcp-session-id": answer.headers["mcp-session-id"]}
            http.post(
                f"/{NAME}/mcp/",
                json={"jsonrpc": "2.0", "method": "notifications/initialized"},
                headers=transport,
            )
            reward = http.get(f"/{NAME}/control/reward", headers={"mcp-session-id": "ep1"})
            assert reward.json()["grade"]["reward"] == 0.0
            change = {
                "name": "change_plan",
                "arguments": {"customer_id": "C1002", "plan_id": "basic"},
            }
            called = http.post(
                f"/{NAME}/mcp/",
                json={"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": change},
                headers=transport,
            )
            assert called.status_code == 200 and not called.json()["result"].get("isError")
            grade = http.get(f"/{NAME}/control/reward", headers={"mcp-session-id": "ep1"})
            assert grade.json()["grade"]["reward_breakdown"] == {"DB": 1.0, "ENV_ASSERTION": 1.0}


async def test_stdio_and_the_claude_config_take_the_pack(installed):
    config = subprocess.run(
        installed.server_command("config", "claude", "--domain", NAME, "--json-only"),
        capture_output=True,
        text=True,
        env=installed.env,
        timeout=60,
    )
    assert config.returncode == 0, config.stderr
    entry = json.loads(config.stdout)["mcpServers"][f"tau2-{NAME}-agent"]
    assert entry["args"][:3] == ["stdio", "--domain", NAME]
    stdio = StdioTransport(
        str(installed.python),
        ["-c", "from tau_mcp.servers.cli import app; app()", "stdio", "--domain", NAME,
         "--side", "user", "--task-id", "upgrade_with_code"],
        env=installed.env,
    )  # fmt: skip
    async with Client(stdio) as user:
        inbox = await user.call_tool("read_text_messages", {})
        assert "482913" in inbox.content[0].text


def test_bad_packs_are_one_sentence_and_leave_the_rest_working(installed, tmp_path):
    """A broken import, a clashing name, a missing data file, a task file that is not JSON."""
    module = installed.folder / "src" / "deskpack_domain"
    copies = {}
    for case in ("broken", "clash", "nodata", "badjson"):
        made = installed.harness("domain", "new", f"{case}pack", "--dir", tmp_path / case)
        assert made.returncode == 0, made.stderr
        copies[case] = tmp_path / case / "src" / f"{case}pack_domain"
    (copies["broken"] / "agent_tools.py").write_text("from nowhere_at_all import tools\n")
    pyproject = tmp_path / "clash" / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace("\nclashpack = ", f"\n{NAME} = "))
    (copies["nodata"] / "data" / "db.json").unlink()
    (copies["badjson"] / "data" / "tasks.json").write_text("[{not json")
    paths = [f"--domain-path={tmp_path / case}" for case in copies]

    def one_sentence(*args: object) -> str:
        done = installed.harness(*args, *paths)
        assert done.returncode == 1, done.stdout + done.stderr
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
        return lines[0]

    broken = one_sentence("domain", "check", "brokenpack")
    assert broken == (
        f"error: domain 'brokenpack' of the pack folder {tmp_path / 'broken'} fails to load: "
        "ModuleNotFoundError: No module named 'nowhere_at_all'"
    )
    clash = one_sentence("run", "--domain", NAME, "--agent", "oracle", "--user", "scripted")
    assert clash.startswith(f"error: domain '{NAME}' is declared by two packs")
    assert "the installed distribution deskpack-domain 0.1.0" in clash and "clash" in clash
    nodata = one_sentence(
        "run", "--domain", "nodatapack", "--agent", "oracle", "--user", "scripted"
    )
    assert (
        nodata == f"error: missing data file: {copies['nodata'] / 'data' / 'db.json'} (or db.toml)"
    )
    badjson = one_sentence(
        "run", "--domain", "badjsonpack", "--agent", "oracle", "--user", "scripted"
    )
    assert badjson.startswith(
        f"error: corrupt data file {copies['badjson'] / 'data' / 'tasks.json'}"
    )
    # Everything else keeps working beside them.
    listed = installed.harness("domains", "--format", "json", *paths)
    assert listed.returncode == 1  # the problems are said, and the listing is whole
    names = {row["name"] for row in json.loads(listed.stdout)["domains"]}
    assert {"mock", "brokenpack", "nodatapack", "badjsonpack"} <= names and NAME not in names
    ok = installed.harness(
        "run", "--domain", "mock", "--agent", "oracle", "--user", "scripted", "--num-tasks", "1",
        *paths,
    )  # fmt: skip
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert module.is_dir()
