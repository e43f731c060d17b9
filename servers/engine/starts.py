"""Cached task starts: an episode's state right after its task's initialization.

Setting a telecom task up replays its initialization actions (about 0.7 ms a task). The state
they reach depends on the task alone (minted ids come from the task and a counter, the telecom
clock is fixed), so each task is set up once per process and its state kept pickled; a new
episode of the task loads its own copy from that (about 0.25 ms; `copy.deepcopy` costs as much
as the replay).

Unpickling rebuilds the object graph, so references shared inside one state stay shared in its
copy (the telecom phone and the phone's toolkit hold one VPN profile object) while copies share
nothing with each other. Objects an episode only refers to (the domain, the task, the loaded
base databases) are written as names and resolved back to the very same objects.
"""

from __future__ import annotations

import io
import pickle
from typing import Any

from servers.engine.lru import LruCache
from servers.engine.tasks import Task

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
    """`state` pickled, with the `shared` objects written as their names; None when something
    in it cannot be pickled (then the caller just sets each episode up from scratch)."""
    names = {id(obj): name for name, obj in shared.items() if obj is not None}
    buffer = io.BytesIO()
    pickler = pickle.Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL)
    pickler.persistent_id = lambda obj: names.get(id(obj))  # type: ignore[method-assign]
    try:
        pickler.dump(state)
    except Exception:  # noqa: BLE001 - any failure only means "no cached start"
        return None
    return buffer.getvalue()


def thaw(start: bytes, shared: dict[str, Any]) -> dict[str, Any]:
    """A fresh copy of a frozen state, its shared objects resolved through `shared`."""
    unpickler = pickle.Unpickler(io.BytesIO(start))
    unpickler.persistent_load = shared.__getitem__  # type: ignore[method-assign]
    return unpickler.load()
