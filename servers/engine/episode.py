"""Episodes: one task run's own state, and the store that keeps many of them."""

from __future__ import annotations

import hashlib
import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from tau_mcp.servers.engine import call_context
from tau_mcp.servers.engine.canonical import canonical_hash
from tau_mcp.servers.engine.cow import CowDB
from tau_mcp.servers.engine.domain import Domain
from tau_mcp.servers.engine.errors import (
    EpisodeExists,
    InitialStateError,
    UnknownDomain,
    UnknownEpisode,
)
from tau_mcp.servers.engine.fault_injector import FaultInjector
from tau_mcp.servers.engine.faults import FaultPlan
from tau_mcp.servers.engine.ids import check_episode_id
from tau_mcp.servers.engine.outcome import ToolOutcome
from tau_mcp.servers.engine.render import parse_output, render_error, render_result
from tau_mcp.servers.engine.starts import freeze, thaw
from tau_mcp.servers.engine.tasks import EnvAssertion, EnvFunctionCall, Task, ToolCallRecord
from tau_mcp.servers.engine.toolkit import Side, Toolkit
from tau_mcp.servers.engine.variants import Variant

# Attributes that say which episode this is rather than what state it is in.
_IDENTITY = frozenset(
    {"domain", "id", "task", "lock", "variant", "resources", "tool_cost", "faults"}
)
_SIDE_OF_REQUESTOR = {"assistant": "agent", "agent": "agent", "user": "user"}


__all__ = ["Episode", "EpisodeStore", "ToolOutcome"]


class Episode:
    """A task run's databases and the toolkits bound to them.

    Tool calls are not thread-safe on their own; the store serializes calls per episode.
    """

    def __init__(
        self,
        domain: Domain,
        episode_id: str,
        task: Task | None,
        *,
        use_start_cache: bool = True,
        variant: Variant | None = None,
    ) -> None:
        self.domain = domain
        self.id = episode_id
        self.task = task
        self.lock = threading.Lock()
        # The variant (e.g. a retrieval config) adds its tools to this episode's agent toolkit
        # and chooses the policy. It is not part of the state: a task's cached start is the
        # same for every variant, and its tools are added after the start is set up or loaded.
        self.variant = variant
        # What the episode's tools keep for it (a writable shell workspace) and what their model
        # calls cost so far; neither is state (see call_context.py).
        self.resources = call_context.Resources()
        self.tool_cost = 0.0
        # The faults injected into the agent's calls (None: none); not part of the state.
        self.faults: FaultInjector | None = None
        cacheable = use_start_cache and task is not None and task.initial_state is not None
        if not (cacheable and self._load_start()):
            self._set_up()
            if cacheable:
                self._save_start()
        if variant is not None and variant.tools is not None:
            self.agent_tools.add_tools(variant.tools)

    def _set_up(self) -> None:
        """Fresh databases and toolkits, then the task's initial state."""
        self._minted = 0
        spec = self.domain.spec
        self.agent_db = CowDB(self.domain.base)
        self.user_db = CowDB(self.domain.user_base) if self.domain.user_base is not None else None
        self.agent_tools: Toolkit = spec.agent_tools(self.agent_db, self)
        # With `shared_db`, the user's tools act on the agent's database (there is no user DB).
        user_side_db = self.agent_db if spec.shared_db else self.user_db
        self.user_tools: Toolkit | None = (
            spec.user_tools(user_side_db, self) if spec.user_tools is not None else None
        )
        self.calls = 0
        self._sync()
        if self.task is not None and self.task.initial_state is not None:
            self._set_initial_state(self.task)

    # --- cached starts (see starts.py) ------------------------------------------------------
    def _load_start(self) -> bool:
        assert self.task is not None
        start = self.domain.starts.get(self.task)
        if start is None:
            return False
        self.__dict__.update(thaw(start, self._shared_objects()))
        return True

    def _save_start(self) -> None:
        assert self.task is not None
        start = freeze(self._state(), self._shared_objects())
        if start is not None:
            self.domain.starts.put(self.task, start)

    def _state(self) -> dict[str, Any]:
        """Everything that makes up the episode's state, as opposed to its identity."""
        return {name: value for name, value in self.__dict__.items() if name not in _IDENTITY}

    def _shared_objects(self) -> dict[str, Any]:
        """What the state refers to without owning it; copies refer to the same objects, and
        the toolkits of a copy to the copy itself."""
        shared: dict[str, Any] = {"episode": self, "domain": self.domain, "task": self.task}
        for side, base in (("agent", self.domain.base), ("user", self.domain.user_base)):
            if base is not None:
                for name, part in base.shared_parts().items():
                    shared[f"{side}:{name}"] = part
        return shared

    @property
    def data_dir(self) -> Path:
        return self.domain.data_dir

    def policy(self) -> str:
        """The agent's policy for this episode: its variant's (which may depend on the task),
        else the domain's."""
        if self.variant is not None:
            return self.variant.policy(self.task)
        return self.domain.policy()

    # --- ids --------------------------------------------------------------------------------
    def mint_id(self, purpose: str) -> str:
        """A fresh id that depends only on the domain, task and how many were minted before, so
        replaying the same calls on a fresh episode mints the same ids (the reference uses
        uuid4 here, which no grader could reproduce)."""
        self._minted += 1
        seed = f"{self.domain.name}|{self.task.id if self.task else ''}|{purpose}|{self._minted}"
        return uuid.UUID(bytes=hashlib.sha256(seed.encode()).digest()[:16]).hex

    # --- calls ------------------------------------------------------------------------------
    def toolkit(self, side: Side) -> Toolkit | None:
        return self.agent_tools if side == "agent" else self.user_tools

    def blocks(self, side: Side, name: str) -> bool:
        """Whether a call of `name` waits on a subprocess or the network (see Toolkit.blocks)."""
        toolkit = self.toolkit(side)
        return toolkit is not None and toolkit.has_tool(name) and toolkit.blocks(name)

    def locked_call(self, side: Side, name: str, arguments: dict[str, Any] | None) -> ToolOutcome:
        """`call`, holding the episode's lock (calls on one episode run one at a time)."""
        with self.lock:
            return self.call(side, name, arguments)

    async def call_async(
        self, side: Side, name: str, arguments: dict[str, Any] | None
    ) -> ToolOutcome:
        """`locked_call` for a server's event loop: a tool that waits on a subprocess or the
        network (a shell command, a model call) runs in a worker thread, so the loop keeps
        serving other episodes meanwhile."""
        if self.blocks(side, name):
            import anyio.to_thread

            return await anyio.to_thread.run_sync(self.locked_call, side, name, arguments)
        return self.locked_call(side, name, arguments)

    def call(self, side: Side, name: str, arguments: dict[str, Any] | None = None) -> ToolOutcome:
        """Run one tool call as the agent or the user, as the reference would: any failure is a
        result whose text starts with `Error: `, and the state keeps whatever the call did."""
        self.calls += 1
        charges = call_context.Charges()
        with call_context.tool_call(self, charges):
            try:
                toolkit = self.toolkit(side)
                if toolkit is None:
                    raise ValueError("User tools not available")
                if toolkit.has_tool(name):
                    result = toolkit.bound(name)(**(arguments or {}))
                else:
                    result = toolkit.unknown_tool_result(name)
                    if result is None:
                        raise ValueError(f"Tool '{name}' not found.")
                self._sync()
                outcome = ToolOutcome(self._render(result), False)
            except Exception as exc:  # noqa: BLE001 - every failure is reported as the tool result
                self._sync_after_failure()
                outcome = ToolOutcome(render_error(exc), True)
        if charges.calls:
            self.tool_cost += charges.total
            outcome = ToolOutcome(outcome.text, outcome.error, charges.total)
        return outcome

    def _render(self, result: Any) -> str:
        """A result's text; a shared base record's is made once per server (`record_text`)."""
        if isinstance(result, BaseModel):
            for base in (self.domain.base, self.domain.user_base):
                text = base.record_text(result, render_result) if base is not None else None
                if text is not None:
                    return text
        return render_result(result)

    # --- past states (stale reads) -----------------------------------------------------------
    def frozen_state(self) -> bytes | None:
        """The episode's state as it is now, pickled as a cached start is (None when it cannot
        be): what `call_on_frozen` reads later."""
        return freeze(self._state(), self._old_state_shared())

    def call_on_frozen(
        self, frozen: bytes, side: Side, name: str, arguments: dict[str, Any] | None
    ) -> ToolOutcome:
        """A call run on a copy of a frozen state; this episode stays as it is."""
        copy = Episode.__new__(Episode)
        copy.__dict__.update({k: v for k, v in self.__dict__.items() if k in _IDENTITY})
        copy.faults = None
        copy.__dict__.update(thaw(frozen, copy._old_state_shared()))
        return copy.call(side, name, arguments)

    def _old_state_shared(self) -> dict[str, Any]:
        """What a frozen state refers to without owning it: a cached start's shared objects and
        the variant's tools (a retrieval config's index is never copied)."""
        shared = self._shared_objects()
        if self.variant is not None and self.variant.tools is not None:
            shared["variant:tools"] = self.variant.tools
        return shared

    def close(self) -> None:
        """Release what the episode's tools kept for it (e.g. a shell workspace's files)."""
        self.resources.close()

    def _sync_after_failure(self) -> None:
        """The reference's orchestrator re-syncs the two sides after every step, failed calls
        included, so a call that changed state before failing is synced too. The call's own
        error is what the caller must see, so a failure of the sync itself is not reported."""
        try:
            self._sync()
        except Exception:  # noqa: BLE001, S110
            pass

    def run_function(self, call: EnvFunctionCall) -> Any:
        """Run a non-tool helper (initialization action or assertion) on either side."""
        toolkit = self.toolkit(_SIDE_OF_REQUESTOR[call.env_type])
        func = getattr(toolkit, call.func_name, None) if toolkit is not None else None
        if func is None:
            raise ValueError(f"Function {call.func_name} not found in {call.env_type} tools")
        result = func(**call.arguments)
        self._sync()
        return result

    def check_assertion(self, assertion: EnvAssertion) -> bool:
        """Run one of the side's declared assertion functions (read-only checks); any other
        name is refused, so an assertion list can never run a tool or a setup helper."""
        toolkit = self.toolkit(_SIDE_OF_REQUESTOR[assertion.env_type])
        if toolkit is None or assertion.func_name not in toolkit.assertions:
            raise ValueError(
                f"{assertion.func_name} is not an assertion function of the "
                f"{assertion.env_type} tools"
            )
        result = self.run_function(assertion)
        if not isinstance(result, bool):
            raise ValueError(
                f"Function {assertion.func_name} returned {type(result)} instead of bool"
            )
        return result == assertion.assert_value

    def check_assertions(self, assertions: list[Any]) -> list[dict[str, Any]]:
        """Each raw assertion's verdict, `{"met": bool, "error": None}`, or `{"met": None,
        "error": text}` when it cannot be checked (the reference counts that as unmet). Holds
        the episode's lock: callers must not."""
        results: list[dict[str, Any]] = []
        with self.lock:
            for raw in assertions:
                try:
                    met = self.check_assertion(EnvAssertion.model_validate(raw))
                    results.append({"met": met, "error": None})
                except ValidationError as exc:
                    error = f"malformed assertion: {exc.errors()[0]['msg']}"
                    results.append({"met": None, "error": error})
                except Exception as exc:  # noqa: BLE001 - a failing check is an unmet one
                    results.append({"met": None, "error": f"{type(exc).__name__}: {exc}"})
        return results

    def replay(
        self, calls: list[tuple[str, str, dict[str, Any]]], only_mutating: bool
    ) -> list[dict[str, Any] | None]:
        """Run recorded `(requestor, name, arguments)` calls in order; with `only_mutating`,
        reads are skipped (None in their place, see `replay_call`). Each output is
        `{"output": text, "error": bool}`. Holds the episode's lock: callers must not."""
        outputs: list[dict[str, Any] | None] = []
        with self.lock:
            for requestor, name, arguments in calls:
                if only_mutating:
                    outcome = self.replay_call(requestor, name, arguments)
                else:
                    side: Side = "user" if requestor == "user" else "agent"
                    outcome = self.call(side, name, arguments)
                outputs.append(
                    None if outcome is None else {"output": outcome.text, "error": outcome.error}
                )
        return outputs

    def _sync(self) -> None:
        sync = self.domain.spec.sync
        if sync is not None:
            sync(self)

    # --- initial state ----------------------------------------------------------------------
    def _set_initial_state(self, task: Task) -> None:
        state = task.initial_state
        assert state is not None
        try:
            init = state.initialization_data
            if init is not None:
                # The reference leaves both toolkits on one shared database after applying
                # either side's initialization data; scores depend on it, so we do the same.
                if init.agent_data is not None:
                    self.agent_db.apply_update(init.agent_data)
                    if self.user_tools is not None and self.user_db is not None:
                        self.user_db = self.user_tools.db = self.agent_db
                if init.user_data is not None and self.domain.spec.shared_db:
                    self.agent_db.apply_update(init.user_data)
                elif init.user_data is not None:
                    if self.user_db is None or self.user_tools is None:
                        raise ValueError("the domain has no user database")
                    self.user_db.apply_update(init.user_data)
                    self.agent_db = self.agent_tools.db = self.user_db
            for action in state.initialization_actions or []:
                self.run_function(action)
            self._replay_history(state.message_history or [])
            self._sync()
        except InitialStateError:
            raise
        except Exception as exc:  # noqa: BLE001
            raise InitialStateError(f"task '{task.id}': initial state failed: {exc}") from None

    def _replay_history(self, messages: list) -> None:
        pending: dict[str, ToolCallRecord] = {}
        for message in messages:
            if message.role in ("assistant", "user") and message.tool_calls:
                for tc in message.tool_calls:
                    pending[tc.id] = tc
            elif message.role == "tool":
                tc = pending.pop(message.id or "", None)
                if tc is None:
                    raise InitialStateError("tool message without a matching tool call")
                self.replay_call(tc.requestor, tc.name, tc.arguments, expected=message.content)

    def replay_call(
        self, requestor: str, name: str, arguments: dict[str, Any], expected: str | None = None
    ) -> ToolOutcome | None:
        """Re-run a recorded call when it can change state (reads are skipped, as the reference
        skips them); with `expected`, a different result is an error."""
        side: Side = _SIDE_OF_REQUESTOR.get(requestor, "agent")  # type: ignore[assignment]
        toolkit = self.toolkit(side)
        spec = toolkit.spec_of(name) if toolkit is not None else None
        if spec is None or not spec.mutates:
            return None
        outcome = self.call(side, name, arguments)
        if expected is not None and parse_output(outcome.text) != parse_output(expected):
            raise InitialStateError(
                f"replayed call {name} returned {outcome.text!r}, recorded {expected!r}"
            )
        return outcome

    # --- snapshots --------------------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        return {
            "agent_db": self.agent_db.snapshot(),
            "user_db": self.user_db.snapshot() if self.user_db is not None else None,
        }

    def changed_records(self) -> dict[str, Any]:
        """How each database differs from its base, record by record (`CowDB.changed_records`):
        `{"agent_db": {"tables": ..., "fields": ...}, "user_db": ... | null}`. Two episodes of
        one domain differ at most where either differs from the base, so this is what the
        diagnosis of a failed DB check compares instead of two whole snapshots. It is the raw
        state, not a domain's `hash_view`."""
        agent = self.agent_db.changed_records()
        user = None
        if self.user_db is not None:
            user = agent if self.user_db is self.agent_db else self.user_db.changed_records()
        return {"agent_db": agent, "user_db": user}

    def hashes(self) -> dict[str, str | None]:
        view = self.domain.spec.hash_view
        if view is not None:
            snap = view(self, self.snapshot())
            return {side: None if db is None else canonical_hash(db) for side, db in snap.items()}
        return {
            "agent_db": self.agent_db.canonical_hash(),
            "user_db": self.user_db.canonical_hash() if self.user_db is not None else None,
        }


#: The field of `POST /{domain}/episodes` naming the task set an episode's task comes from.
TASK_SET_OPTION = "task_set"


class EpisodeStore:
    """Episodes keyed by (domain, episode id), least recently used evicted past `capacity`."""

    def __init__(
        self,
        domains: dict[str, Domain],
        capacity: int = 20_000,
        new_id: Callable[[], str] | None = None,
    ) -> None:
        """`new_id` makes the ids of episodes created without one (default: uuid4 hex); a
        server process among several draws ids it owns (`tau_mcp.servers.routing`)."""
        self.domains = domains
        self.capacity = capacity
        self._new_id = new_id or (lambda: uuid.uuid4().hex)
        self._episodes: OrderedDict[tuple[str, str], Episode] = OrderedDict()
        self._lock = threading.Lock()

    def domain(self, name: str) -> Domain:
        domain = self.domains.get(name)
        if domain is None:
            raise UnknownDomain(
                f"unknown domain '{name}' (serving: {', '.join(sorted(self.domains)) or 'none'})"
            )
        return domain

    def create(
        self,
        domain_name: str,
        task_id: str | None = None,
        episode_id: str | None = None,
        *,
        replace: bool = False,
        variant: Variant | None = None,
        task_set: str | None = None,
        faults: FaultPlan | None = None,
    ) -> Episode:
        """A new episode; `variant` is a resolved `Domain.resolve_variant(...)` (None: no
        variant, every agent tool); `task_set` names the task set of the domain's data the
        task comes from (None: the domain's own tasks); `faults` the faults its agent calls
        meet (None or a plan with no rate: none)."""
        domain = self.domain(domain_name)
        task = domain.task(task_id, task_set) if task_id is not None else None
        episode_id = self._new_id() if episode_id is None else check_episode_id(episode_id)
        key = (domain_name, episode_id)
        if not replace and key in self._episodes:
            raise EpisodeExists(f"episode '{episode_id}' already exists in '{domain_name}'")
        episode = Episode(domain, episode_id, task, variant=variant)
        if faults is not None and faults.active:
            episode.faults = FaultInjector(faults, task.id if task is not None else None)
        ended = []
        with self._lock:
            previous = self._episodes.get(key)
            if previous is not None:
                ended.append(previous)
            self._episodes[key] = episode
            self._episodes.move_to_end(key)
            while len(self._episodes) > self.capacity:
                ended.append(self._episodes.popitem(last=False)[1])
        for old in ended:
            old.close()
        return episode

    def get(self, domain_name: str, episode_id: str) -> Episode:
        self.domain(domain_name)
        key = (domain_name, episode_id)
        episode = self._episodes.get(key)
        if episode is None:
            raise UnknownEpisode(f"unknown episode '{episode_id}' in domain '{domain_name}'")
        with self._lock:
            if key in self._episodes:
                self._episodes.move_to_end(key)
        return episode

    def find(self, domain_name: str, episode_id: str) -> Episode | None:
        return self._episodes.get((domain_name, episode_id))

    def delete(self, domain_name: str, episode_id: str) -> None:
        self.domain(domain_name)
        with self._lock:
            episode = self._episodes.pop((domain_name, episode_id), None)
        if episode is None:
            raise UnknownEpisode(f"unknown episode '{episode_id}' in domain '{domain_name}'")
        episode.close()

    def call(
        self, domain_name: str, episode_id: str, side: Side, name: str, arguments: dict | None
    ) -> ToolOutcome:
        episode = self.get(domain_name, episode_id)
        with episode.lock:
            return episode.call(side, name, arguments)

    def __len__(self) -> int:
        return len(self._episodes)
