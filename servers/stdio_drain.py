"""Answer every request already read before a stdio server exits.

MCP's stdio loop stops as soon as stdin reaches end of file and cancels the handlers still
running, so a client that pipes its requests and closes stdin (`... | tau-server stdio`, or a
harness that closes the pipe after its last write) loses the answers to whatever was in
flight. Here the server reads from a relay instead: the relay passes every message on, notes
the id of each request, crosses it off when the response (or error) for that id is written,
and closes the server's input only when nothing is left in flight, or after a time limit.
"""

from __future__ import annotations

import math
from typing import Any

import anyio

DRAIN_TIMEOUT_S = 60.0


def _request_id(item: Any) -> Any:
    """The id of a request (something that expects an answer), else None."""
    message = getattr(item, "message", None)
    if getattr(message, "method", None) is None:
        return None
    return getattr(message, "id", None)


def _response_id(item: Any) -> Any:
    message = getattr(item, "message", None)
    if message is None or getattr(message, "method", None) is not None:
        return None
    return getattr(message, "id", None)


class InFlight:
    """Ids of requests read but not yet answered."""

    def __init__(self) -> None:
        self.ids: set[Any] = set()
        self._idle = anyio.Event()
        self._idle.set()

    def start(self, request_id: Any) -> None:
        if not self.ids:
            self._idle = anyio.Event()
        self.ids.add(request_id)

    def finish(self, request_id: Any) -> None:
        self.ids.discard(request_id)
        if not self.ids:
            self._idle.set()

    async def wait_idle(self) -> None:
        await self._idle.wait()


async def serve_until_answered(
    low_level_server: Any,
    read_stream: Any,
    write_stream: Any,
    init_options: Any,
    drain_timeout: float = DRAIN_TIMEOUT_S,
) -> None:
    """Run an MCP low-level server on these streams; at end of input, first wait (up to
    `drain_timeout` seconds) until every request read has been answered."""
    to_server, server_input = anyio.create_memory_object_stream[Any](math.inf)
    server_output, from_server = anyio.create_memory_object_stream[Any](math.inf)
    in_flight = InFlight()

    async def relay_in() -> None:
        async with to_server:
            async for item in read_stream:
                request_id = _request_id(item)
                if request_id is not None:
                    in_flight.start(request_id)
                await to_server.send(item)
            with anyio.move_on_after(drain_timeout):
                await in_flight.wait_idle()

    async def relay_out() -> None:
        async with from_server, write_stream:  # closing it lets the stdio transport finish
            async for item in from_server:
                await write_stream.send(item)
                response_id = _response_id(item)
                if response_id is not None:
                    in_flight.finish(response_id)

    async with anyio.create_task_group() as group:
        group.start_soon(relay_in)
        group.start_soon(relay_out)
        async with server_output:
            await low_level_server.run(server_input, server_output, init_options)
        group.cancel_scope.cancel()  # the server is done; stop reading stdin if it still is
