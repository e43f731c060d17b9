"""Running many coroutines so that the first failure stops the rest.

With asyncio.gather, when one simulation fails for good (the results file cannot be written),
the others keep running while the run shuts its backend down under them, and the server logs
their broken requests. A task group cancels them first; the caller sees the first error itself,
not an exception group.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Iterable
from typing import Any


async def gather_or_cancel(*awaitables: Awaitable[Any]) -> list[Any]:
    """Await all and return their results in order; on the first exception cancel the
    others, wait for them, and raise it."""
    try:
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(_awaited(awaitable)) for awaitable in awaitables]
    except BaseExceptionGroup as failed:
        raise _first(failed.exceptions) from None
    return [task.result() for task in tasks]


async def _awaited(awaitable: Awaitable[Any]) -> Any:
    return await awaitable


def _first(errors: Iterable[BaseException]) -> BaseException:
    for error in errors:
        if isinstance(error, BaseExceptionGroup):
            return _first(error.exceptions)
        return error
    raise AssertionError("an exception group is never empty")
