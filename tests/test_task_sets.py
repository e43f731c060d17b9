"""Named task sets and telecom-workflow: the reference registers telecom_small and telecom_full
(its runner crashes on both), named after the data folder and the file they read."""

from __future__ import annotations

import json

import pytest

from tau_mcp.servers.domains.registry import domain_names, domain_spec, has_data, load_domains
from tau_mcp.servers.engine.errors import UnknownTaskSet
from tests.support import conformance as conf

TELECOM = conf.DATA_DIR / "tau2" / "domains" / "telecom"
WORKFLOW_TEXTS = conf.DATA_DIR / "tau2" / "reference_texts" / "telecom-workflow.json"

pytestmark = pytest.mark.needs_data("telecom")


def _split(name: str) -> list[str]:
    return json.loads((TELECOM / "split_tasks.json").read_text())[name]


@pytest.mark.parametrize("domain", ["telecom", "telecom-workflow"])
def test_telecom_task_sets_are_its_task_files(domain: str) -> None:
    sets = load_domains([domain], conf.DATA_DIR)[domain].task_sets()
    assert sets == {
        domain: None,
        "telecom": None,
        "telecom_full": "tasks_full.json",
        "telecom_small": "tasks_small.json",
    }
    for name, split in (("telecom_small", "small"), ("telecom_full", "full")):
        bound = load_domains([domain], conf.DATA_DIR, task_set=name)[domain]
        # The reference's loaders of these sets give the tasks of the same split.
        assert bound.task_ids("base") == _split(split)
        assert bound.task_set == name and list(bound.splits) == ["base"]


def test_a_task_set_serves_its_own_task_objects() -> None:
    own = load_domains(["telecom"], conf.DATA_DIR)["telecom"]
    small = load_domains(["telecom"], conf.DATA_DIR, task_set="telecom_small")["telecom"]
    task_id = small.task_ids("base")[0]
    assert small.task(task_id) is not own.task(task_id)
    assert "user_tools" not in (small.task(task_id).model_extra or {})  # tasks_small.json's
    assert len(own.task_ids("base")) == 114


def test_the_domain_name_as_task_set_is_its_own_tasks() -> None:
    domain = load_domains(["telecom-workflow"], conf.DATA_DIR, task_set="telecom-workflow")
    assert domain["telecom-workflow"].task_set is None


def test_an_unknown_task_set_is_refused_in_one_sentence() -> None:
    with pytest.raises(UnknownTaskSet, match=r"unknown task set 'airline_small' for domain"):
        load_domains(["telecom"], conf.DATA_DIR, task_set="airline_small")


def test_telecom_workflow_is_telecom_under_the_workflow_policy() -> None:
    workflow = domain_spec("telecom-workflow")
    telecom = domain_spec("telecom")
    assert workflow.folder_name == "telecom" and has_data("telecom-workflow", conf.DATA_DIR)
    assert workflow.agent_tools is telecom.agent_tools and workflow.user_tools is telecom.user_tools
    assert "telecom-workflow" in domain_names()
    domain = load_domains(["telecom-workflow"], conf.DATA_DIR)["telecom-workflow"]
    policy = domain.policy()
    workflow_text = (TELECOM / "tech_support_workflow.md").read_text()
    assert policy.startswith("<main_policy>\n") and workflow_text in policy
    if WORKFLOW_TEXTS.is_file():
        composition = json.loads(WORKFLOW_TEXTS.read_text())["policy_composition"]
        assert len(policy) == composition["normal"]["length"]
        assert len(domain.policy(solo=True)) == composition["solo"]["length"]
