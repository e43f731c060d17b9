"""Model calls (embeddings, rerankers) made from inside tool calls, and what they cost.

Tool calls are synchronous and may run on a server's event-loop thread, while litellm's calls
are coroutines. Model calls therefore run on one event loop of their own, in a daemon thread,
and the calling thread waits for the result: that works from any thread, loop or not, and keeps
litellm's HTTP clients on one loop for the life of the process.

Every call's price (litellm's, when its price list knows the model) is charged to the tool call
it serves (`servers/engine/call_context.py`), so retrieval costs are counted with the run's
others.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import TypeVar

from tau_mcp.servers.engine import call_context

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
    what it raises). Its model calls are charged to the caller's tool call."""
    charges = call_context.current_charges()

    async def call() -> T:
        if charges is None:
            return await factory()
        with call_context.charging(charges):
            return await factory()

    return asyncio.run_coroutine_threadsafe(call(), _background_loop()).result(timeout)


def charge(cost: float | None) -> None:
    """Add a model call's cost to the running tool call (if any)."""
    call_context.charge(cost)
