"""The original τ-bench's recorded runs, replayed on our `tau-bench-retail` and
`tau-bench-airline` domains: every gold task of every split and every fuzz episode must give the
original's observations, data hash after each step, ending and reward with its reward_info."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tau_mcp.grading.grader import Grader
from tau_mcp.servers.domains.tau_bench.reward import original_reward_info
from tau_mcp.servers.engine.domain import Domain
from tests.support import taubench as tb
from tests.support.engine_backend import EngineBackend

pytestmark = pytest.mark.needs_data("taubench")


class Replay:
    """One domain's episodes on the engine, graded by our grader."""

    def __init__(self, domain: Domain) -> None:
        self.domain = domain
        self.backend = EngineBackend({domain.name: domain})
        self.grader = Grader(self.backend, domain)
        self.terminate = set(domain.spec.terminate_tools)

    async def check(self, case: str, task_id: str, steps: list[dict], final: dict | None) -> list:
        """Problems replaying `steps` on a fresh episode of the task and, when `final` (the
        recorded ending) is given, grading the episode as it ended."""
        ref = await self.backend.create_episode(self.domain.name, task_id)
        episode = self.backend.store.get(ref.domain, ref.episode_id)
        problems, done_steps = [], []
        for index, step in enumerate(steps):
            action = step["action"]
            text = episode.call("agent", action["name"], action["kwargs"]).text
            done = action["name"] in self.terminate
            where = f"{case} step {index} {action['name']}"
            if text != step["observation"]:
                problems.append(f"{where}: {text[:200]!r} != {step['observation'][:200]!r}")
            if done != step["done"]:
                problems.append(f"{where}: done={done}, recorded {step['done']}")
            want = step.get("data_hash_after")
            if want is not None and episode.hashes()["agent_db"] != want:
                problems.append(f"{where}: data hash differs")
            done_steps.append((action, text))
            if problems or done:
                break
        if final is not None and not problems:
            problems += await self._grade(case, ref, task_id, done_steps, final)
        await self.backend.delete_episode(ref)
        return problems

    async def _grade(self, case, ref, task_id, steps, final: dict) -> list[str]:
        reply = final.get("content")
        termination = "agent_stop" if reply is None else "user_stop"
        task = self.domain.task(task_id)
        messages = tb.trajectory(steps, reply)
        reward_info = await self.grader.grade(task, messages, termination, ref)
        got = original_reward_info(task, reward_info)
        if got != final["reward_info"] or reward_info["reward"] != final["reward"]:
            return [f"{case}: reward_info {got} != recorded {final['reward_info']}"]
        return []


def _ending(record: dict[str, Any], final_key: str = "final") -> dict[str, Any]:
    """The recorded ending of a gold task: the reply it ended with (none when a terminate tool
    ended it), the reward and the reward_info."""
    final = record[final_key]
    ending = {"reward": final["reward"], "reward_info": final["reward_info"]}
    if final["ended_by"] == "respond":
        ending["content"] = record["final_respond"]["content"]
    return ending


@pytest.mark.parametrize("fixture", tb.GOLD_FILES)
async def test_gold_replay_and_reward(fixture: str) -> None:
    recorded = tb.gold(fixture)
    domain = tb.domains()[tb.DOMAIN_OF[recorded["domain"]]]
    replay = Replay(domain)
    assert domain.base.canonical.base_hash == recorded["initial_data_hash"]
    assert len(recorded["tasks"]) == len(domain.task_ids(recorded["split"]))
    problems: list[str] = []
    for record in recorded["tasks"]:
        task_id = f"{recorded['split']}_{record['task_index']}"
        ending = _ending(record)
        problems += await replay.check(task_id, task_id, record["steps"], ending)
        if "final_without_outputs" in record:
            # The same episode ending on a reply that names none of the outputs scores 0.
            without = _ending(record, "final_without_outputs")
            without["content"] = "Thank you for your patience; your request is complete."
            problems += await replay.check(
                f"{task_id} (no outputs)", task_id, record["steps"], without
            )
    assert not problems, f"{len(problems)} problems:\n" + "\n".join(problems[:10])


def test_every_fixture_ending_is_graded() -> None:
    """Every gold task ends by a reply or by the terminate tool, as the fixtures say, and the
    fuzz episodes' endings are one of the two as well."""
    for fixture in tb.GOLD_FILES:
        for record in tb.gold(fixture)["tasks"]:
            ended_by = record["final"]["ended_by"]
            assert ended_by in ("respond", "transfer_to_human_agents")
            assert (ended_by == "respond") == ("final_respond" in record)
    for episode in tb.fuzz()["episodes"]:
        ended = [step for step in episode["steps"] if step["done"]]
        assert ("final_respond" in episode) == (not ended)


async def test_fuzz_episodes() -> None:
    recorded = tb.fuzz()
    replays = {name: Replay(domain) for name, domain in tb.domains().items()}
    before = {name: _base_dump(domain) for name, domain in tb.domains().items()}
    problems: list[str] = []
    for episode in recorded["episodes"]:
        replay = replays[tb.DOMAIN_OF[episode["domain"]]]
        task_id = f"{episode['split']}_{episode['task_index']}"
        steps = episode["steps"]
        ended = next((step for step in steps if step["done"]), None)
        if ended is not None:
            final = {"reward": ended["reward"], "reward_info": ended["reward_info"]}
        else:
            respond = episode["final_respond"]
            final = {
                "content": respond["content"],
                "reward": respond["reward"],
                "reward_info": respond["reward_info"],
            }
        problems += await replay.check(f"fuzz {episode['episode']}", task_id, steps, final)
    assert not problems, f"{len(problems)} problems:\n" + "\n".join(problems[:10])
    after = {name: _base_dump(domain) for name, domain in tb.domains().items()}
    assert after == before, "an episode changed the shared base data"


def _base_dump(domain: Domain) -> str:
    return json.dumps(domain.base.model.model_dump(mode="json"))


@pytest.mark.parametrize("folder", ["retail", "airline"])
def test_state_is_the_original_data_and_hashes_as_it(folder: str) -> None:
    """A fresh episode's state is the data files as `json.load` reads them, in their key order
    and JSON types, and its hash is the original's hash of that data."""
    domain = tb.domains()[tb.DOMAIN_OF[folder]]
    ref_store = EngineBackend({domain.name: domain}).store
    episode = ref_store.create(domain.name, domain.task_ids("test")[0])
    state = episode.snapshot()
    raw = tb.raw_data(folder)
    assert state["user_db"] is None
    assert json.dumps(state["agent_db"]) == json.dumps(raw)
    assert episode.hashes() == {"agent_db": tb.original_hash(raw), "user_db": None}
