"""`tau-harness domain check`: each kind of broken domain it must catch, built small (the demo
mock domain with a toolkit subclass or edited tasks), the clean demo passing, the built-in
domains' known defects, and the command's output and errors."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import random
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tau_mcp.harness.cli import app
from tau_mcp.harness.domain_check.checker import check_domain
from tau_mcp.harness.domain_check.findings import Report
from tau_mcp.servers.domains import registry
from tau_mcp.servers.domains.mock import SPEC as MOCK
from tau_mcp.servers.domains.mock.agent_tools import MockTools
from tau_mcp.servers.domains.mock.models import Task, TaskStatus
from tau_mcp.servers.engine.domain import Domain, DomainSpec
from tau_mcp.servers.engine.toolkit import ToolKind, tool
from tests.support.data import DATA_DIR, DEMO_DIR

cli = CliRunner()
DEMO_TASKS = json.loads((DEMO_DIR / "tau2" / "domains" / "mock" / "tasks.json").read_text())


# --- broken toolkits ----------------------------------------------------------------------------
class RaisingTools(MockTools):
    @tool(ToolKind.WRITE)
    def update_task_status(self, task_id: str, status: TaskStatus) -> Task:
        """Set a task's status (this one is broken: it always raises)."""
        raise RuntimeError("the ledger is locked")


class WrongStatusTools(MockTools):
    @tool(ToolKind.WRITE)
    def update_task_status(self, task_id: str, status: TaskStatus) -> Task:
        """Set a task's status (this one is broken: it ignores the status asked for)."""
        record = self.db.tasks[task_id]
        record.status = "pending"
        return record


class RandomIdTools(MockTools):
    @tool(ToolKind.WRITE)
    def create_task(self, user_id: str, title: str, description: str | None = None) -> Task:
        """Create a task under a random id (this one is broken: not reproducible)."""
        new_id = f"task_{random.randrange(10**12)}"
        self.db.tasks[new_id] = Task(task_id=new_id, title=title, status="pending")
        self.db.users[user_id].tasks.append(new_id)
        return self.db.tasks[new_id]


class UndocumentedTools(MockTools):
    @tool(ToolKind.READ)
    def count_tasks(self) -> int:
        return len(self.db.tasks)

    @tool(ToolKind.READ)
    def find_task(self, query) -> str:  # noqa: ANN001 - the missing annotation is the point
        """Find a task by its title."""
        return str(query)


def broken_domain(
    tmp_path: Path, tools: type = MockTools, tasks: list[dict[str, Any]] | None = None
) -> Domain:
    """The demo mock domain under the name `broken`, with `tools` as its agent toolkit and,
    given `tasks`, those tasks (and one split of all of them)."""
    folder = tmp_path / "tau2" / "domains" / "mock"
    shutil.copytree(DEMO_DIR / "tau2" / "domains" / "mock", folder)
    if tasks is not None:
        (folder / "tasks.json").write_text(json.dumps(tasks))
        (folder / "split_tasks.json").unlink()
    return Domain(broken_spec(tools), tmp_path)


def broken_spec(tools: type, **changes: Any) -> DomainSpec:
    return dataclasses.replace(
        MOCK, name="broken", data_folder="mock", agent_tools=tools, **changes
    )


def stamp_completed(episode: Any) -> None:
    """A domain sync that marks completed tasks: it runs after live calls, never after the
    reference's gold actions, so the gold state lacks its marks."""
    tasks = episode.agent_tools.db.tasks
    for key, record in list(tasks.items()):
        if record.status == "completed" and record.description != "seen":
            tasks[key].description = "seen"


def demo_tasks(**changes: Any) -> list[dict[str, Any]]:
    """The demo tasks, each task id in `changes` replaced by what `changes` maps it to (a
    function of the task)."""
    tasks = json.loads(json.dumps(DEMO_TASKS))
    return [changes[t["id"]](t) if t["id"] in changes else t for t in tasks]


def check(domain: Domain) -> Report:
    return asyncio.run(check_domain(domain))


def found(report: Report, check_name: str, task: str | None = None, tool: str | None = None):
    return [
        f
        for f in report.errors
        if f.check == check_name
        and (task is None or f.task == task)
        and (tool is None or f.tool == tool)
    ]


# --- what it catches ------------------------------------------------------------------------------
def test_a_gold_action_that_raises(tmp_path):
    report = check(broken_domain(tmp_path, RaisingTools))
    failing = found(report, "gold-action", "demo_complete", "update_task_status")
    assert failing and "the ledger is locked" in failing[0].message
    assert report.exit_code == 1


def test_a_gold_plan_that_leaves_the_db_wrong(tmp_path):
    report = check(broken_domain(tmp_path, WrongStatusTools))
    unmet = found(report, "gold-assertions", "demo_complete", "assert_task_status")
    assert unmet and "expected_status='completed'" in unmet[0].message
    assert found(report, "oracle", "demo_complete")
    assert report.exit_code == 1


def test_an_oracle_run_that_does_not_reach_the_gold_state(tmp_path):
    broken_domain(tmp_path)
    domain = Domain(broken_spec(MockTools, sync=stamp_completed), tmp_path)
    report = check(domain)
    missed = found(report, "oracle", "demo_complete")
    assert missed and "DB 0: the final database differs from the gold state" in missed[0].message
    assert report.exit_code == 1


def test_a_nondeterministic_tool(tmp_path):
    report = check(broken_domain(tmp_path, RandomIdTools))
    parted = found(report, "determinism", "demo_create", "create_task")
    assert parted and "after action 0" in parted[0].message
    assert report.exit_code == 1


def test_an_unknown_tool_in_gold(tmp_path):
    def rename(task):
        task["evaluation_criteria"]["actions"][0]["name"] = "create_item"
        return task

    report = check(broken_domain(tmp_path, tasks=demo_tasks(demo_create=rename)))
    assert found(report, "task-refs", "demo_create", "create_item")
    assert "not found" in found(report, "gold-action", "demo_create", "create_item")[0].message
    assert report.exit_code == 1


def test_a_missing_tool_description(tmp_path):
    report = check(broken_domain(tmp_path, UndocumentedTools))
    assert found(report, "tool-description", tool="count_tasks")
    assert report.exit_code == 1


def test_an_untyped_tool_parameter(tmp_path):
    report = check(broken_domain(tmp_path, UndocumentedTools))
    untyped = found(report, "tool-parameters", tool="find_task")
    assert untyped and "'query'" in untyped[0].message


def test_a_task_met_by_doing_nothing(tmp_path):
    def read_only(task):
        task["evaluation_criteria"] = {
            "actions": [{"action_id": "a1", "name": "get_users", "arguments": {}}],
            "reward_basis": ["DB"],
        }
        return task

    report = check(broken_domain(tmp_path, tasks=demo_tasks(demo_create=read_only)))
    assert [f.task for f in found(report, "inaction")] == ["demo_create"]


def test_a_gold_id_no_record_holds(tmp_path):
    def ghost(task):
        task["evaluation_criteria"]["actions"][0]["arguments"]["task_id"] = "task_99"
        return task

    report = check(broken_domain(tmp_path, tasks=demo_tasks(demo_complete=ghost)))
    assert "task_id='task_99'" in found(report, "id-refs", "demo_complete")[0].message


def test_tasks_that_are_not_json_are_the_finding(tmp_path):
    domain = broken_domain(tmp_path)
    (domain.folder / "tasks.json").write_text("[{not json")
    report = check(domain)
    assert [f.check for f in report.errors] == ["data"]
    assert "tasks does not load: corrupt data file" in report.errors[0].message
    assert report.skipped["oracle"] == "the databases or tasks do not load"


def test_the_demo_domain_passes():
    report = check(registry.load_domains(["mock"], DEMO_DIR)["mock"])
    assert report.ok, [f.message for f in report.errors]
    assert report.warnings == []  # our own demo names every tool in its policy
    assert report.counts == {
        "tasks": 5,
        "tools": 6,
        "gold actions": 7,
        "oracle simulations": 5,
    }


# --- the built-in domains' known defects (the reference's, see docs/domain-check.md) ---------------
def _builtin(name: str) -> Report:
    return check(registry.load_domains([name], DATA_DIR)[name])


@pytest.mark.needs_data("mock")
def test_mock_gold_plans_miss_their_own_assertions():
    report = _builtin("mock")
    broken = {"update_task_with_history_and_env_assertions", "update_task_with_user_tools"}
    assert {f.task for f in found(report, "gold-assertions")} == broken
    assert {f.task for f in found(report, "oracle")} == broken
    assert {f.task for f in found(report, "inaction")} == {"create_task_1_nl_eval"}
    assert {f.check for f in report.errors} == {"gold-assertions", "oracle", "inaction"}


@pytest.mark.needs_data("banking_knowledge")
def test_banking_task_083_gold_omits_a_required_argument():
    report = _builtin("banking_knowledge")
    failing = found(report, "gold-action", "task_083")
    assert len(failing) == 4
    assert all("customer_max_liability_amount" in f.message for f in failing)
    assert [f.task for f in found(report, "gold-action")] == ["task_051"] + ["task_083"] * 4
    assert {f.check for f in report.errors} == {"gold-action"}


@pytest.mark.needs_data("retail")
def test_retail_gold_actions_that_fail_as_tau2_499_counts():
    report = _builtin("retail")
    failing = found(report, "gold-action")
    assert (len(failing), len({f.task for f in failing})) == (18, 15)
    assert not found(report, "oracle") and not found(report, "determinism")


# --- the command ---------------------------------------------------------------------------------
def _invoke(*args: str):
    return cli.invoke(app, list(args), env={"COLUMNS": "200"})


def test_json_output_parses():
    result = _invoke("domain", "check", "mock", "--data-dir", str(DEMO_DIR), "--format", "json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["domain"] == "mock" and report["ok"] is True and report["errors"] == 0
    assert report["findings"] == []
    assert set(report["timings"]) >= {"data", "tools", "gold replay", "oracle", "inaction"}


def test_table_output_and_exit_status_of_a_broken_domain(tmp_path, monkeypatch):
    broken_domain(tmp_path, RaisingTools)
    real = registry.domain_spec
    monkeypatch.setattr(
        registry, "domain_spec", lambda n: broken_spec(RaisingTools) if n == "broken" else real(n)
    )
    result = _invoke("domain", "check", "broken", "--data-dir", str(tmp_path))
    assert result.exit_code == 1, result.output
    assert "gold-action" in result.output and "the ledger is locked" in result.output
    assert "broken: FAILED" in result.output


def test_the_table_prints_task_ids_with_brackets_as_they_are(tmp_path, monkeypatch):
    def bracketed(task):
        task["id"] = "[service_issue]demo_create"
        task["evaluation_criteria"]["actions"][0]["name"] = "create_item"
        return task

    broken_domain(tmp_path, tasks=demo_tasks(demo_create=bracketed))
    real = registry.domain_spec
    monkeypatch.setattr(
        registry, "domain_spec", lambda n: broken_spec(MockTools) if n == "broken" else real(n)
    )
    result = _invoke("domain", "check", "broken", "--data-dir", str(tmp_path))
    assert result.exit_code == 1
    assert "[service_issue]demo_create" in result.output


def test_an_unknown_domain_is_one_sentence():
    result = _invoke("domain", "check", "nosuch", "--data-dir", str(DEMO_DIR))
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [
        f"error: unknown domain 'nosuch' (known: {', '.join(registry.domain_names())}; a pack "
        "that is not installed is found with --domain-path DIR or $TAU_DOMAIN_PATH)"
    ]


def test_a_bad_format_is_one_sentence():
    result = _invoke("domain", "check", "mock", "--data-dir", str(DEMO_DIR), "--format", "xml")
    assert result.exit_code == 1
    assert result.output.strip() == "error: unknown format 'xml' (table or json)"


def test_domain_still_shows_a_domain_and_help_names_the_actions():
    for args in (("domain", "mock"), ("domain", "show", "mock")):
        shown = _invoke(*args, "--data-dir", str(DEMO_DIR), "--no-policy")
        assert shown.exit_code == 0, shown.output
        assert "create_task(user_id: string" in shown.output
    helped = _invoke("domain", "--help")
    assert helped.exit_code == 0
    assert "domain NAME" in helped.output and "domain check NAME" in helped.output
    missing = _invoke("domain", "nosuch", "--data-dir", str(DEMO_DIR))
    assert missing.exit_code == 1 and "unknown domain 'nosuch'" in missing.output
