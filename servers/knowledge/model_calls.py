"""Model calls (embeddings, rerankers) made from inside tool calls, and what they cost.

Tool calls are synchronous and may run on a server's event-loop thread, while litellm's calls
are coroutines. Model calls therefore run on one event loop of their own, in a daemon thread,
and the calling thread waits for the result: that works from any thread, loop or not, and keeps
litellm's HTTP clients on one loop for the life of the process.

Every call adds its price (litellm's, when its price list knows the model) to the cost sink of
the tool call it serves (`cost_sink`), so retrieval costs are counted with the run's others.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import threading
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, TypeVar

T = TypeVar("T")

_loop: asyncio.AbstractEventLoop | None = None
_loop_lock = threading.Lock()


def _background_loop() -> asyncio.AbstractEventLoop:
    global _loop
    if _loop is None:
        with _loop_lock:
            if _loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(
                    target=loop.run_forever, name="tau-mcp-model-calls", daemon=True
                )
                thread.start()
                _loop = loop
    return _loop


def run(factory: Callable[[], Awaitable[T]], timeout: float | None = None) -> T:
    """Run the coroutine `factory()` on the model-call loop and wait for its result (raising
    what it raises). Its model calls are charged to the caller's cost sink."""
    sink = _sink.get()

    async def call() -> T:
        _sink.set(sink)  # the task runs in a copy of the loop's context: this stays in it
        return await factory()

    return asyncio.run_coroutine_threadsafe(call(), _background_loop()).result(timeout)


class CostSink:
    """Adds up what the model calls of one tool call (or one episode) cost, in dollars."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.total = 0.0
        self.calls = 0

    def add(self, cost: float | None) -> None:
        with self._lock:
            self.calls += 1
            self.total += float(cost or 0.0)


_sink: contextvars.ContextVar[CostSink | None] = contextvars.ContextVar(
    "tau_mcp_cost_sink", default=None
)


@contextlib.contextmanager
def cost_sink(sink: CostSink) -> Iterator[CostSink]:
    """Charge the model calls made inside the block to `sink`."""
    token = _sink.set(sink)
    try:
        yield sink
    finally:
        _sink.reset(token)


def charge(cost: float | None) -> None:
    """Add a model call's cost to the current sink (if any)."""
    sink = _sink.get()
    if sink is not None:
        sink.add(cost)


def litellm_cost(litellm: Any, response: Any) -> float:
    """What litellm says a response cost (0 for models its price list does not know)."""
    hidden = getattr(response, "_hidden_params", None) or {}
    if hidden.get("response_cost") is not None:
        return float(hidden["response_cost"])
    try:
        return float(litellm.completion_cost(completion_response=response) or 0.0)
    except Exception:  # noqa: BLE001 - an unknown model's cost is simply not known
        return 0.0
