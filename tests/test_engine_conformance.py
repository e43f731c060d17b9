"""Every gold task and every fuzz episode, replayed on the engine, must match the reference."""

from __future__ import annotations

import pytest

from tau_mcp.servers.domains.registry import load_domains
from tau_mcp.servers.engine.canonical import canonical_hash
from tau_mcp.servers.engine.episode import EpisodeStore
from tests.support import conformance as conf

pytestmark = pytest.mark.needs_data("conformance")

DOMAINS = ("mock", "airline", "retail", "telecom", "telecom-workflow", "banking_knowledge")
# telecom-workflow has telecom's tools, databases and tasks (only its policy differs), so it is
# held to telecom's fixtures.
FIXTURES_OF = {"telecom-workflow": "telecom"}


_STORES: dict[str, EpisodeStore] = {}


def store_for(domain: str) -> EpisodeStore:
    if domain not in _STORES:
        _STORES[domain] = EpisodeStore(load_domains([domain], conf.DATA_DIR))
    return _STORES[domain]


def replay_gold(store: EpisodeStore, domain: str, task_id: str) -> conf.Mismatch:
    record = conf.gold(FIXTURES_OF.get(domain, domain))[task_id]
    episode = store.create(domain, task_id)
    steps = [{k: s[k] for k in ("requestor", "name", "arguments")} for s in record["steps"]]
    result = conf.compare_steps(
        task_id, lambda side, name, args: _call(episode, side, name, args), steps, record["steps"]
    )
    conf.compare_hashes(result, episode.hashes(), record["final_sha"])
    for item in record["env_assertions"]:
        from tau_mcp.servers.engine.tasks import EnvAssertion

        met = episode.check_assertion(EnvAssertion.model_validate(item["assertion"]))
        if met != item["met"]:
            result.problems.append(
                f"env assertion {item['assertion']['func_name']}: {met} != {item['met']}"
            )
    return result


def _call(episode, side, name, args):
    outcome = episode.call(side, name, args)
    return outcome.text, outcome.error


@pytest.mark.parametrize("domain", DOMAINS)
def test_gold_replay(domain: str) -> None:
    store = store_for(domain)
    tasks = conf.gold(FIXTURES_OF.get(domain, domain))
    failures = [m for m in (replay_gold(store, domain, t) for t in tasks) if m]
    assert not failures, "\n".join(f"{m.case}: {p}" for m in failures[:10] for p in m.problems[:3])


def base_hashes(store: EpisodeStore, domain: str) -> tuple[str, str | None]:
    """Hashes of the shared base data, from a fresh dump (not the caches)."""
    dom = store.domain(domain)
    user = dom.user_base
    return (
        canonical_hash(dom.base.model.model_dump(mode="json")),
        canonical_hash(user.model.model_dump(mode="json")) if user is not None else None,
    )


@pytest.mark.parametrize("domain", DOMAINS)
def test_fuzz_replay(domain: str) -> None:
    store = store_for(domain)
    before = base_hashes(store, domain)
    fixtures = FIXTURES_OF.get(domain, domain)
    reference = conf.fuzz_reference(fixtures)
    failures = []
    for ep in conf.fuzz_episodes(fixtures):
        episode = store.create(domain, ep.get("task_id"))
        want = reference[ep["id"]]
        result = conf.compare_steps(
            ep["id"], lambda s, n, a, e=episode: _call(e, s, n, a), ep["calls"], want["outputs"]
        )
        conf.compare_hashes(result, episode.hashes(), want["final_sha"])
        if result:
            failures.append(result)
    assert base_hashes(store, domain) == before, "an episode mutated the shared base data"
    assert not failures, f"{len(failures)} episodes differ:\n" + "\n".join(
        f"{m.case}: {p}" for m in failures[:10] for p in m.problems[:3]
    )
