"""stdio: a line that is not a valid JSON-RPC message gets a JSON-RPC error, not silence.

The MCP library's stdio transport drops lines it cannot read (it hands the parse exception to
the session, which ignores it) and reads a request with an object `id` as a notification, so a
client that sent a 5,000-digit number, 100,000-deep nesting or a malformed id waits forever.
Here every line is checked first, with the same rules as the HTTP surfaces
(`tau_mcp.servers.limits`: depth, number length, lone surrogates; then the JSON-RPC shape): a bad one is answered with a JSON-RPC error carrying the request's id
when it can be read (else `id: null`, as JSON-RPC 2.0 prescribes), written through the
transport's own writer so output lines never interleave.
"""

from __future__ import annotations

import json
import sys
from collections import deque
from contextlib import asynccontextmanager
from io import TextIOWrapper

import anyio
import mcp_types as types
from mcp.shared.message import SessionMessage

from tau_mcp.servers import compat
from tau_mcp.servers.guards import JSONRPC_INVALID_REQUEST, JSONRPC_PARSE_ERROR, jsonrpc_problem
from tau_mcp.servers.limits import MAX_NUMBER_CHARS, json_text_problem


class _TooLong:
    """Stands for a number literal too long to convert."""


def _bounded_int(text: str) -> int | _TooLong:
    return _TooLong() if len(text) > MAX_NUMBER_CHARS else int(text)


def check_line(line: str) -> types.JSONRPCError | None:
    """The JSON-RPC error answering `line`, or None when it may go to the MCP session."""
    if not line.strip():
        return None
    raw = line.encode("utf-8", "replace")
    problem = json_text_problem(raw)
    ident = None
    if problem is not None and "deeper" in problem:
        return _error(None, JSONRPC_PARSE_ERROR, problem)
    try:
        value = json.loads(line, parse_int=_bounded_int)
    except ValueError as exc:
        return _error(None, JSONRPC_PARSE_ERROR, f"invalid JSON: {exc}")
    if isinstance(value, dict):
        candidate = value.get("id")
        if isinstance(candidate, str) or (
            isinstance(candidate, int) and not isinstance(candidate, bool)
        ):
            ident = candidate
    if problem is not None:
        return _error(ident, JSONRPC_INVALID_REQUEST, problem)
    problem = jsonrpc_problem(value)
    if problem is not None:
        return _error(ident, JSONRPC_INVALID_REQUEST, problem)
    return None


def _error(ident: str | int | None, code: int, message: str) -> types.JSONRPCError:
    return types.JSONRPCError(
        jsonrpc="2.0", id=ident, error=types.ErrorData(code=code, message=message[:300])
    )


class _CheckedLines:
    """Async line source for the transport: bad lines are replaced by an empty JSON object (which
    the transport fails to read as a message) and their answers queued, in order."""

    def __init__(self, source, answers: deque) -> None:
        self.source = source
        self.answers = answers

    def __aiter__(self):
        return self._lines()

    async def _lines(self):
        async for line in self.source:
            error = check_line(line)
            if error is None:
                yield line
            else:
                self.answers.append(error)
                yield "{}\n"


def guard_stdio_server(original):
    """Wrap an `mcp.server.stdio.stdio_server`-like context manager (see module docstring)."""

    @asynccontextmanager
    async def guarded(stdin=None, stdout=None):
        answers: deque[types.JSONRPCError] = deque()
        if stdin is None:
            text = TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace")
            stdin = anyio.wrap_file(text)
        lines = _CheckedLines(stdin, answers)
        async with original(lines, stdout) as (read_stream, write_stream):
            forward, filtered = compat.context_streams(0)

            async def pump() -> None:
                async with forward:
                    while True:
                        try:
                            item = await read_stream.receive()
                        except (anyio.EndOfStream, anyio.ClosedResourceError):
                            return
                        if isinstance(item, Exception):
                            error = answers.popleft() if answers else _unreadable(item)
                            await write_stream.send(SessionMessage(error))
                            continue
                        await forward.send(item)

            async with anyio.create_task_group() as tasks:
                tasks.start_soon(pump)
                try:
                    yield filtered, write_stream
                finally:
                    tasks.cancel_scope.cancel()

    return guarded


def _unreadable(exc: Exception) -> types.JSONRPCError:
    return _error(None, JSONRPC_INVALID_REQUEST, f"not a valid JSON-RPC message ({exc})")
