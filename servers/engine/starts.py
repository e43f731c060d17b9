"""Cached task starts: an episode's state right after its task's initialization.

Setting a telecom task up copies the databases and replays its initialization actions with a
sync after each. The state they reach depends on the task alone (minted ids come from the task
and a counter, the telecom clock is fixed), so each task is set up once per process and its
state kept pickled; a new episode of the task loads its own copy from that, about half the cost
of a setup (`copy.deepcopy` of the state costs as much as a setup).

Unpickling rebuilds the object graph, so references shared inside one state stay shared in its
copy (the telecom phone and the phone's toolkit hold one VPN profile object) while copies share
nothing with each other. Objects an episode only refers to (the domain, the task, the loaded
base databases and their tables) are written as names and resolved back to the very same objects.
"""

from __future__ import annotations

import copyreg
import io
import pickle
from contextvars import ContextVar
from typing import Any

from tau_mcp.servers.engine.cow import CowDict
from tau_mcp.servers.engine.lru import LruCache
from tau_mcp.servers.engine.tasks import Task

# A pickled telecom start is about 10 KB.
START_CACHE_ENTRIES = 1024


class StartCache:
    """Per domain: pickled starts by task, least recently used dropped past the capacity."""

    def __init__(self, capacity: int = START_CACHE_ENTRIES) -> None:
        self._entries: LruCache[str, tuple[Task, bytes]] = LruCache(capacity)

    def get(self, task: Task) -> bytes | None:
        entry = self._entries.get(task.id)
        # Keyed by id, but only the very task object that was set up counts: another Task
        # with the same id (a caller's own tasks file) may set up differently.
        return entry[1] if entry is not None and entry[0] is task else None

    def put(self, task: Task, start: bytes) -> None:
        self._entries.put(task.id, (task, start))

    def __len__(self) -> int:
        return len(self._entries)


def freeze(state: dict[str, Any], shared: dict[str, Any]) -> bytes | None:
    """`state` pickled, with the `shared` objects (and table views over shared tables) written
    as their names; None when something in it cannot be pickled (then every episode of the task
    is just set up from scratch)."""
    names = {id(obj): name for name, obj in shared.items() if obj is not None}

    def by_name(obj: Any) -> tuple:
        return (_shared, (names[id(obj)],))

    def view_by_table_name(view: CowDict) -> Any:
        table = names.get(id(view._base))
        if table is None:
            return view.__reduce__()
        return (_view_of_shared, (table,), (view._own, view._gone))

    # Reducers by type run in C for every other object, so only these few cost a Python call.
    reducers: dict[type, Any] = dict(copyreg.dispatch_table)
    for obj in shared.values():
        if obj is not None and type(obj) not in (dict, list):
            reducers[type(obj)] = by_name
    reducers[CowDict] = view_by_table_name
    buffer = io.BytesIO()
    pickler = pickle.Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL)
    pickler.dispatch_table = reducers
    try:
        pickler.dump(state)
    except Exception:  # noqa: BLE001 - any failure only means "no cached start"
        return None
    return buffer.getvalue()


def thaw(start: bytes, shared: dict[str, Any]) -> dict[str, Any]:
    """A fresh copy of a frozen state, its shared objects resolved through `shared`."""
    token = _resolving.set(shared)
    try:
        return pickle.loads(start)
    finally:
        _resolving.reset(token)


# The shared objects of the thaw in progress (per thread and task, so thaws may overlap).
_resolving: ContextVar[dict[str, Any]] = ContextVar("tau_start_shared")


def _shared(name: str) -> Any:
    """Unpickling hook: the shared object named `name`."""
    return _resolving.get()[name]


def _view_of_shared(name: str) -> CowDict:
    """Unpickling hook: a fresh view over the shared table named `name` (state follows)."""
    return CowDict(_resolving.get()[name])
