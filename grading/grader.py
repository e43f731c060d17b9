"""Reward for one simulation, in the reference's reward_info layout.

DB: the finished episode's agent and user DB hashes against the gold ones (the task's initial
state plus its gold actions, applied once per task on a local engine episode the way the
reference's grader applies them: see `tau_mcp.grading.gold`). ENV_ASSERTION: the
task's assertions run server-side on the finished episode. ACTION, COMMUNICATE: from the
trajectory. NL_ASSERTION: an LLM judge. The reward is the product over the task's basis.
"""

from __future__ import annotations

import asyncio
from typing import Any, Protocol

from tau_mcp.conversation.messages import Message
from tau_mcp.conversation.reference_texts import reference_texts
from tau_mcp.grading.checks import (
    Component,
    check_actions,
    check_communication,
    passed,
    tool_calls_of,
)
from tau_mcp.grading.gold import GoldChanges, gold_changes_of, gold_episode
from tau_mcp.grading.judge import Judge
from tau_mcp.servers.engine.domain import Domain
from tau_mcp.servers.engine.episode import Episode
from tau_mcp.servers.engine.lru import LruCache
from tau_mcp.servers.engine.tasks import Task

GRADED_ENDINGS = {"agent_stop", "user_stop"}
GOLD_EPISODES_KEPT = 256
ENV_BASES = {"DB", "ENV_ASSERTION"}
KNOWN_BASES = ENV_BASES | {"ACTION", "COMMUNICATE", "NL_ASSERTION"}


class EpisodeStates(Protocol):
    """Where the grader reads a finished episode; `ref` is whatever handle the caller has on it
    (an `EpisodeRef` of the harness's backends, or the server's own `Episode`)."""

    async def hashes(self, ref: Any) -> dict[str, str | None]: ...

    async def assertions(self, ref: Any, assertions: list[dict]) -> list[dict]: ...


class EpisodeReplays(EpisodeStates, Protocol):
    """What re-grading a saved trajectory needs besides: fresh episodes and replayed calls."""

    async def create_episode(
        self, domain: str, task_id: str | None, options: Any = None
    ) -> Any: ...

    async def replay(
        self, ref: Any, calls: list[dict], only_mutating: bool
    ) -> list[dict | None]: ...


def empty_reward_info(reward: float, note: str, **fields: Any) -> dict[str, Any]:
    info = {
        "reward": reward,
        "db_check": None,
        "env_assertions": None,
        "action_checks": None,
        "nl_assertions": None,
        "communicate_checks": None,
        "reward_basis": None,
        "reward_breakdown": None,
        "info": {"note": note},
    }
    info.update(fields)
    return info


class Grader:
    def __init__(
        self,
        backend: EpisodeStates,
        domain: Domain,
        judge: Judge | None = None,
        options: Any = None,
        *,
        diagnose: bool = True,
    ) -> None:
        """`options`: how the run's episodes are set up (its retrieval config, as the backend
        takes it in `create_episode`), so the episodes that replay a trajectory for re-grading
        are set up the same way. `diagnose=False` leaves out why a failed simulation failed
        (a caller that only wants verdicts, many of them failures, skips its cost)."""
        self.backend = backend
        self.domain = domain
        self.options = options
        self.diagnose = diagnose
        if isinstance(judge, Judge):  # our judge speaks as the data folder's prompt set says
            judge = judge.for_texts(reference_texts(domain.data_dir))
        self.judge = judge
        self._gold: dict[str, asyncio.Future] = {}
        self._gold_changes: dict[str, GoldChanges] = {}
        # Gold episodes kept from computing the hashes, until a failed DB check of their task
        # asks for their changes (a few KiB each; rebuilding one costs ~0.5-1 ms).
        self._gold_episodes: LruCache[str, Episode] = LruCache(GOLD_EPISODES_KEPT)
        spec = domain.spec
        self.agent_tool_names = set(spec.agent_tools.specs)
        self.user_tool_names = set(spec.user_tools.specs) if spec.user_tools is not None else set()
        self.tool_kinds = {
            name: s.kind.value
            for toolkit in (spec.agent_tools, spec.user_tools)
            if toolkit is not None
            for name, s in toolkit.specs.items()
        }
        self.judge_cost = 0.0

    # --- gold state -------------------------------------------------------------------------
    async def gold_hashes(self, task: Task) -> dict[str, str | None]:
        """The DB hashes after the task's gold actions, computed once per task."""
        future = self._gold.get(task.id)
        if future is None:
            future = asyncio.ensure_future(self._compute_gold(task))
            self._gold[task.id] = future
        try:
            return await asyncio.shield(future)
        except Exception:
            self._gold.pop(task.id, None)
            raise

    async def _compute_gold(self, task: Task) -> dict[str, str | None]:
        episode = gold_episode(self.domain, task)
        if self.domain.spec.hash_view is None:  # a diagnosis may want its changes
            self._gold_episodes.put(task.id, episode)
        return episode.hashes()

    def gold_changes(self, task: Task) -> GoldChanges:
        """The gold state's changed records, computed once per task at its first failed DB
        check (the gold state does not depend on the grader's `options`)."""
        found = self._gold_changes.get(task.id)
        if found is None:
            episode = self._gold_episodes.get(task.id)
            found = gold_changes_of(self.domain, task, episode)
            self._gold_changes[task.id] = found
            self._gold_episodes.pop(task.id)
        return found

    # --- predicted state for re-grading ----------------------------------------------------
    async def rebuild(
        self, task: Task, messages: list[Message], history_length: int, solo: bool
    ) -> Any:
        """A fresh episode with the trajectory's state-changing calls replayed (the task's own
        history is already part of the episode's initial state), set up with the grader's
        `options`. Needs a backend that makes episodes (`EpisodeReplays`)."""
        backend: EpisodeReplays = self.backend  # type: ignore[assignment]
        ref = await backend.create_episode(self.domain.name, task.id, self.options)
        calls = []
        for call in tool_calls_of(messages[history_length:]):
            requestor = call.requestor
            if (
                solo
                and call.name in self.user_tool_names
                and call.name not in self.agent_tool_names
            ):
                requestor = "user"
            calls.append({"requestor": requestor, "name": call.name, "arguments": call.arguments})
        if calls:
            await backend.replay(ref, calls, only_mutating=True)
        return ref

    # --- grading ----------------------------------------------------------------------------
    async def grade(
        self, task: Task, messages: list[Message], termination: str, final: Any
    ) -> dict[str, Any]:
        """The reward_info; a failed simulation's carries its diagnosis in `info.diagnosis`."""
        reward_info = await self._score(task, messages, termination, final)
        if self.diagnose and not passed(reward_info["reward"]):
            # The diagnosis modules are imported at the first failure: a run that passes
            # everything never loads them.
            from tau_mcp.grading import diagnosis

            reward_info["info"]["diagnosis"] = diagnosis.diagnose(
                task,
                messages,
                termination,
                reward_info,
                self.tool_kinds,
                await self._db_diff(task, reward_info, final),
            )
        return reward_info

    async def _db_diff(
        self, task: Task, reward_info: dict[str, Any], final: Any
    ) -> tuple[list[dict[str, Any]], int] | None:
        """Where the final state differs from the gold one, only when the DB check failed (the
        hashes said so; the changed records, or else the snapshots, say where)."""
        check = reward_info.get("db_check") or {}
        if check.get("db_match") is not False:
            return None
        from tau_mcp.grading.db_diff import diff_changes, diff_states, limited

        # A grading-only backend may lack either read.
        read_changes = getattr(self.backend, "changed_records", None)
        if read_changes is not None and self.domain.spec.hash_view is None:
            changed = await read_changes(final)
            if changed is not None:
                gold_changes = self.gold_changes(task)
                rows = diff_changes(changed, gold_changes.records, gold_changes.bases)
                if rows is not None:
                    return limited(rows)
        read_state = getattr(self.backend, "state", None)
        if read_state is None:
            return None
        got = await read_state(final)
        gold = gold_episode(self.domain, task)
        view = self.domain.spec.hash_view
        expected = gold.snapshot()
        if view is not None:  # compare what the hash compares (telecom renames new bills)
            got, expected = view(gold, got), view(gold, expected)
        return diff_states(got, expected)

    async def _score(
        self, task: Task, messages: list[Message], termination: str, final: Any
    ) -> dict[str, Any]:
        if termination not in GRADED_ENDINGS:
            return empty_reward_info(
                0.0, f"Simulation ended early ({termination}), so it scores 0."
            )
        criteria = task.evaluation_criteria
        if criteria is None:
            return empty_reward_info(1.0, "The task has no evaluation criteria.")
        basis = list(criteria.reward_basis)
        unknown = set(basis) - KNOWN_BASES
        if unknown:
            raise ValueError(
                f"task '{task.id}' has an unknown reward basis: {', '.join(sorted(unknown))}"
            )

        env = await self._environment(task, final)
        action = check_actions(task, messages, self.tool_kinds)
        communicate = check_communication(task, messages, self.domain.spec.communicate_replies_only)
        nl = await self._nl(task, messages) if "NL_ASSERTION" in basis else None

        reward, breakdown = 1.0, {}
        parts = [
            (ENV_BASES, env),
            ({"ACTION"}, action),
            ({"NL_ASSERTION"}, nl),
            ({"COMMUNICATE"}, communicate),
        ]
        for bases, component in parts:
            if component is None or not (set(basis) & bases):
                continue
            breakdown.update(component.breakdown)
            reward *= component.reward
        return {
            "reward": reward,
            "db_check": env.info_db,
            "env_assertions": env.checks,
            "action_checks": action.checks,
            "nl_assertions": nl.checks if nl is not None else None,
            "communicate_checks": communicate.checks,
            "reward_basis": basis,
            "reward_breakdown": breakdown,
            "info": {
                "env": env.info,
                "nl": nl.info if nl is not None else None,
                "communicate": communicate.info,
                "action": action.info,
            },
        }

    async def _environment(self, task: Task, final: Any) -> _EnvComponent:
        criteria = task.evaluation_criteria
        assert criteria is not None
        if criteria.actions is None and criteria.env_assertions is None:
            return _EnvComponent(
                1.0,
                None,
                {},
                {"note": "the task lists no actions or env assertions"},
                {"db_match": True, "db_reward": 1.0},
            )
        gold, got = await asyncio.gather(self.gold_hashes(task), self.backend.hashes(final))
        db_match = gold.get("agent_db") == got.get("agent_db") and gold.get("user_db") == got.get(
            "user_db"
        )
        db_reward = 1.0 if db_match else 0.0
        raw = [a.model_dump(mode="json") for a in criteria.env_assertions or []]
        results = await self.backend.assertions(final, raw) if raw else []
        checks, assertion_reward, errors = [], 1.0, []
        for assertion, result in zip(raw, results, strict=True):
            met = result.get("met") is True
            if result.get("error"):
                errors.append(f"{assertion.get('func_name')}: {result['error']}")
            checks.append({"env_assertion": assertion, "met": met, "reward": 1.0 if met else 0.0})
            assertion_reward *= 1.0 if met else 0.0
        reward, breakdown = 1.0, {}
        if "DB" in criteria.reward_basis:
            breakdown["DB"] = db_reward
            reward *= db_reward
        if "ENV_ASSERTION" in criteria.reward_basis:
            breakdown["ENV_ASSERTION"] = assertion_reward
            reward *= assertion_reward
        # The hashes themselves, for diagnosis and for checks against recorded final states
        # (the reference's db_check carries only the verdict).
        info: dict[str, Any] = {"db_hashes": {"final": got, "gold": gold}}
        if errors:
            info["assertion_errors"] = errors
        return _EnvComponent(
            reward, checks, breakdown, info, {"db_match": db_match, "db_reward": db_reward}
        )

    async def _nl(self, task: Task, messages: list[Message]) -> Component:
        statements = (
            task.evaluation_criteria.nl_assertions if task.evaluation_criteria else None
        ) or []
        if not statements:
            return Component(
                1.0, [], {"NL_ASSERTION": 1.0}, {"note": "the task lists no NL assertions"}
            )
        if self.judge is None:
            # Judging is switched off: the component is left out of the reward and says so.
            return _Skipped(1.0, None, {}, {"note": "NL assertions not judged (judge disabled)"})
        checks, cost = await self.judge.judge(messages, statements)
        self.judge_cost += cost
        reward = 1.0 if all(c["met"] for c in checks) else 0.0
        return Component(
            reward, checks, {"NL_ASSERTION": reward}, {"judge": self.judge.model, "cost": cost}
        )


class _EnvComponent(Component):
    def __init__(self, reward, checks, breakdown, info, db_check) -> None:
        super().__init__(reward, checks, breakdown, info)
        self.info_db = db_check


class _Skipped(Component):
    pass
