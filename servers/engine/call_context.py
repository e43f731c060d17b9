"""What a tool call knows about the episode it runs in, beyond its own toolkit.

Some tools are shared by every episode of a variant (a retrieval configuration's search tools,
built once) yet need something of the episode that calls them: a writable shell workspace of its
own, or somewhere to charge the money their model calls cost. `Episode.call` makes the episode
and a fresh charge counter current for the duration of the call (context variables, so threads
and coroutines each see their own); such tools ask for them here.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Any, Protocol, TypeVar

T = TypeVar("T")


class Resource(Protocol):
    """Something an episode keeps for its tools and releases when it ends."""

    def close(self) -> None: ...


class Resources:
    """An episode's resources by name, made on first use and closed with the episode."""

    def __init__(self) -> None:
        self._items: dict[str, Resource] = {}
        self._lock = threading.Lock()

    def get(self, name: str, make: Callable[[], T]) -> T:
        with self._lock:
            found = self._items.get(name)
            if found is None:
                found = self._items[name] = make()  # type: ignore[assignment]
            return found  # type: ignore[return-value]

    def close(self) -> None:
        """Close every resource (a failing close does not stop the others)."""
        with self._lock:
            items, self._items = list(self._items.values()), {}
        for item in items:
            try:
                item.close()
            except Exception:  # noqa: BLE001, S110 - closing is best effort, never fatal
                pass


class Charges:
    """Money (dollars) the model calls of one tool call cost."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.total = 0.0
        self.calls = 0

    def add(self, amount: float | None) -> None:
        with self._lock:
            self.calls += 1
            self.total += float(amount or 0.0)


_episode: ContextVar[Any] = ContextVar("tau_mcp_episode", default=None)
_charges: ContextVar[Charges | None] = ContextVar("tau_mcp_charges", default=None)


def current_episode() -> Any:
    """The episode whose tool call is running (None outside a call)."""
    return _episode.get()


def current_charges() -> Charges | None:
    return _charges.get()


def charge(amount: float | None) -> None:
    """Charge a model call's cost to the running tool call (nothing outside a call)."""
    charges = _charges.get()
    if charges is not None:
        charges.add(amount)


class _ToolCall:
    """`tool_call`'s block (a class: a third of a generator-based context manager's cost, on
    every tool call)."""

    __slots__ = ("episode", "charges", "tokens")

    def __init__(self, episode: Any, charges: Charges) -> None:
        self.episode, self.charges = episode, charges

    def __enter__(self) -> Charges:
        self.tokens = (_episode.set(self.episode), _charges.set(self.charges))
        return self.charges

    def __exit__(self, *exc: object) -> None:
        episode_token, charges_token = self.tokens
        _charges.reset(charges_token)
        _episode.reset(episode_token)


def tool_call(episode: Any, charges: Charges) -> _ToolCall:
    """Make `episode` and `charges` current for the block."""
    return _ToolCall(episode, charges)


@contextlib.contextmanager
def charging(charges: Charges) -> Iterator[Charges]:
    """Charge the model calls made inside the block to `charges` (outside any episode)."""
    token = _charges.set(charges)
    try:
        yield charges
    finally:
        _charges.reset(token)
