"""The front process of `tau-server serve --workers N`: one address, N server processes
behind it, every request of an episode sent to the process that holds it.

It is a byte splicer, not a second HTTP server: it reads a request's line and headers, picks
the worker with `tau_mcp.servers.routing` (the path, the `mcp-session-id` header; for the two
requests that name their episode only in the body, the body, at most `--max-body` bytes), and
then copies bytes both ways over a pooled keep-alive connection to that worker, reading the
response's head only to know where it ends. Everything an HTTP server checks (Host, Origin,
token, body size and deadline, JSON shape) is checked by the worker, with the same guard stack
as a single process; the front keeps what is about connections: the connection cap (503 JSON),
the request-head deadline (408 JSON) and the keep-alive timeout.

What it learns and keeps: which worker handed out an Eval Protocol transport id (the
`Mcp-Session-Id` of an `initialize` answer), and which episodes each worker created, so that
when a worker dies its episodes answer one sentence saying so (`tau_mcp.servers.workers`
replaces the process; the others are untouched). Every answer names the worker that gave it
in a `tau-worker` header. `GET /health` asks every worker and reports them all.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import signal
import socket
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from tau_mcp.servers import routing
from tau_mcp.servers.http_server import ConnectionPolicy

MAX_HEAD = 64 * 1024
POOL_IDLE_S = 30.0  # below the workers' keep-alive (65 s), so a worker never closes one first
MAX_LEARNED = 100_000
HEALTH_TIMEOUT_S = 5.0
WORKER_HEADER = b"tau-worker"

_REASONS = {
    404: "Not Found",
    408: "Request Timeout",
    431: "Request Header Fields Too Large",
    400: "Bad Request",
    502: "Bad Gateway",
    503: "Service Unavailable",
    200: "OK",
}


def json_answer(
    status: int, value: Any, *, close: bool = False, worker: int | None = None
) -> bytes:
    body = json.dumps(value).encode()
    head = (
        f"HTTP/1.1 {status} {_REASONS.get(status, 'Error')}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\n"
    )
    if worker is not None:
        head += f"tau-worker: {worker}\r\n"
    if close:
        head += "connection: close\r\n"
    return (head + "\r\n").encode() + body


def error_answer(status: int, message: str, *, close: bool = False) -> bytes:
    return json_answer(status, {"error": message}, close=close)


class BadFraming(Exception):
    """A chunked body whose framing cannot be read."""


class ChunkedEnd:
    """Finds where a chunked body ends in a stream of bytes, without copying it."""

    def __init__(self) -> None:
        self.skip = 0  # chunk bytes (and their CRLF) still to pass
        self.line = b""
        self.trailer = False

    def feed(self, data: bytes | bytearray, start: int = 0) -> int | None:
        """The index just past the body's end in `data` (from `start`), or None: not yet."""
        index, size = start, len(data)
        while index < size:
            if self.skip:
                step = min(self.skip, size - index)
                self.skip -= step
                index += step
                continue
            newline = data.find(b"\n", index)
            if newline == -1:
                self.line += bytes(data[index:])
                if len(self.line) > 4096:
                    raise BadFraming("chunk size line too long")
                return None
            line = (self.line + bytes(data[index:newline])).rstrip(b"\r")
            self.line = b""
            index = newline + 1
            if self.trailer:
                if not line:
                    return index
                continue
            try:
                length = int(line.split(b";", 1)[0].strip() or b"x", 16)
            except ValueError:
                raise BadFraming("bad chunk size") from None
            if length == 0:
                self.trailer = True
            else:
                self.skip = length + 2
        return None


def dechunk(raw: bytes) -> bytes:
    """The payload of a complete chunked body (the framing ChunkedEnd found)."""
    out, index = [], 0
    while True:
        newline = raw.index(b"\n", index)
        size = int(raw[index:newline].split(b";", 1)[0].strip(), 16)
        index = newline + 1
        if size == 0:
            return b"".join(out)
        out.append(raw[index : index + size])
        index += size + 2


@dataclass
class Head:
    """What the front reads of a request or response head."""

    first: bytes
    length: int | None = None  # content-length
    chunked: bool = False
    close: bool = False
    session: bytes | None = None  # mcp-session-id
    location: bytes | None = None
    expect_continue: bool = False


def read_head(raw: bytes) -> Head:
    lines = raw.split(b"\r\n")
    head = Head(lines[0])
    for line in lines[1:]:
        if not line:
            continue
        name, _, value = line.partition(b":")
        name = name.strip().lower()
        if name == b"content-length":
            head.length = int(value.strip())
        elif name == b"transfer-encoding":
            head.chunked = b"chunked" in value.lower()
        elif name == b"connection":
            head.close = b"close" in value.lower()
        elif name == routing.SESSION_HEADER:
            head.session = value.strip()
        elif name == b"location":
            head.location = value.strip()
        elif name == b"expect":
            head.expect_continue = value.strip().lower() == b"100-continue"
    return head


@dataclass
class Lost:
    worker: int
    pid: int
    at: float

    def sentence(self, key: str) -> str:
        when = time.strftime("%H:%M:%S UTC", time.gmtime(self.at))
        return (
            f"episode '{key}' was lost: the server process holding it (worker {self.worker}, "
            f"pid {self.pid}) stopped at {when} and was replaced; start a new episode"
        )


@dataclass
class WorkerState:
    index: int
    address: tuple[str, int]
    pid: int = 0
    restarts: int = 0
    generation: int = 0
    idle: list[Upstream] = field(default_factory=list)
    # Episodes this worker created (bounded like its store), to name them when it dies.
    known: OrderedDict[str, None] = field(default_factory=OrderedDict)


class Router:
    """The front's shared state: the workers, their pools, what was learned."""

    def __init__(
        self,
        addresses: list[tuple[str, int]],
        policy: ConnectionPolicy,
        capacity: int,
        max_body: int,
        body_timeout: float,
    ) -> None:
        self.workers = [WorkerState(i, address) for i, address in enumerate(addresses)]
        self.count = len(addresses)
        self.policy = policy
        self.capacity = capacity  # per worker
        self.max_body = max_body
        self.body_timeout = body_timeout  # for the bodies the front reads to route
        self.open = 0
        self.exchanges = 0  # requests in flight
        # Eval Protocol transport ids -> (worker, episode)
        self.transports: OrderedDict[str, tuple[int, str]] = OrderedDict()
        self.lost: OrderedDict[str, Lost] = OrderedDict()
        self.lost_transports: OrderedDict[str, tuple[Lost, str]] = OrderedDict()
        self.turn = itertools.cycle(range(self.count))
        self.loop = asyncio.get_running_loop()

    # --- what the front learns ---------------------------------------------------------------
    def created(self, worker: int, key: str) -> None:
        known = self.workers[worker].known
        known[key] = None
        known.move_to_end(key)
        if len(known) > self.capacity:
            known.popitem(last=False)
        self.lost.pop(key, None)

    def deleted(self, worker: int, key: str) -> None:
        self.workers[worker].known.pop(key, None)

    def handed_out(self, worker: int, transport: str, key: str) -> None:
        self.transports[transport] = (worker, key)
        if len(self.transports) > MAX_LEARNED:
            self.transports.popitem(last=False)

    def worker_died(self, index: int, pid: int, at: float) -> None:
        state = self.workers[index]
        state.generation += 1
        state.restarts += 1
        for upstream in state.idle:
            upstream.close()
        state.idle.clear()
        lost = Lost(index, pid, at)
        for key in state.known:
            self.lost[key] = lost
        state.known.clear()
        for transport, (worker, key) in list(self.transports.items()):
            if worker == index:
                del self.transports[transport]
                self.lost_transports[transport] = (lost, key)
        for table in (self.lost, self.lost_transports):
            while len(table) > MAX_LEARNED:
                table.popitem(last=False)

    def worker_started(self, index: int, pid: int) -> None:
        self.workers[index].pid = pid

    # --- upstream connections ----------------------------------------------------------------
    def pooled(self, index: int) -> Upstream | None:
        state = self.workers[index]
        now = self.loop.time()
        while state.idle:
            upstream = state.idle.pop()
            if upstream.usable and now - upstream.idle_since < POOL_IDLE_S:
                return upstream
            upstream.close()
        return None

    async def connect(self, index: int) -> Upstream:
        state = self.workers[index]
        _, upstream = await self.loop.create_connection(Upstream, *state.address)
        upstream.worker = index
        upstream.generation = state.generation
        return upstream  # type: ignore[return-value]

    def release(self, upstream: Upstream) -> None:
        state = self.workers[upstream.worker]
        if upstream.usable and upstream.generation == state.generation:
            upstream.idle_since = self.loop.time()
            upstream.client = None
            state.idle.append(upstream)
        else:
            upstream.close()

    # --- /health -------------------------------------------------------------------------------
    async def health(self, head_lines: list[bytes]) -> bytes:
        forwarded = b"\r\n".join(
            [b"GET /health HTTP/1.1"]
            + [line for line in head_lines if not line.lower().startswith(b"connection:")]
            + [b"connection: close", b"", b""]
        )
        answers = await asyncio.gather(*(self._ask(state, forwarded) for state in self.workers))
        workers = []
        domains: list[str] = []
        for state, (status, raw) in zip(self.workers, answers, strict=True):
            if status not in (200, None):
                return raw  # a guard's answer (401, 421, ...): the same for every worker
            body = _json_or_none(raw) if status == 200 else None
            own = (body or {}).get("worker") or {}
            domains = (body or {}).get("domains", domains)
            workers.append(
                {
                    "index": state.index,
                    "status": "ok" if body is not None else "down",
                    "pid": own.get("pid", state.pid),
                    "episodes": own.get("episodes"),
                    "restarts": state.restarts,
                }
            )
        healthy = all(w["status"] == "ok" for w in workers)
        answer = {
            "status": "ok" if healthy else "degraded",
            "domains": domains,
            "workers": workers,
            "episodes": sum(w["episodes"] or 0 for w in workers),
            "connections": self.open,
            "max_connections": self.policy.max_connections,
        }
        return json_answer(200 if healthy else 503, answer)

    async def _ask(self, state: WorkerState, request: bytes) -> tuple[int | None, bytes]:
        try:
            async with asyncio.timeout(HEALTH_TIMEOUT_S):
                reader, writer = await asyncio.open_connection(*state.address)
                writer.write(request)
                raw = await reader.read()
                writer.close()
        except (OSError, TimeoutError):
            return None, b""
        try:
            status = int(raw.split(b" ", 2)[1])
        except (IndexError, ValueError):
            return None, b""
        return status, raw


def _json_or_none(raw: bytes) -> dict | None:
    _, _, body = raw.partition(b"\r\n\r\n")
    try:
        value = json.loads(body)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


class Upstream(asyncio.Protocol):
    """One keep-alive connection to a worker, lent to one client request at a time."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.client: Downstream | None = None
        self.usable = False
        self.worker = 0
        self.generation = 0
        self.idle_since = 0.0

    def connection_made(self, transport) -> None:  # type: ignore[override]
        self.transport = transport
        sock = transport.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.usable = True

    def data_received(self, data: bytes) -> None:
        if self.client is None:  # nothing asked: a worker closing an idle connection says so
            self.close()
            return
        self.client.response_data(data)

    def connection_lost(self, exc) -> None:
        self.usable = False
        client, self.client = self.client, None
        if client is not None:
            client.upstream_lost()

    def pause_writing(self) -> None:
        if self.client is not None and self.client.transport is not None:
            self.client.transport.pause_reading()

    def resume_writing(self) -> None:
        if self.client is not None and self.client.transport is not None:
            self.client.transport.resume_reading()

    def send(self, data: bytes | bytearray) -> None:
        if self.transport is not None:
            self.transport.write(data)

    def close(self) -> None:
        self.usable = False
        if self.transport is not None:
            self.transport.close()


class Downstream(asyncio.Protocol):
    """One client connection: requests in, each spliced to its episode's worker."""

    HEAD, BUFFER, BODY, WAIT, CLOSED = range(5)

    def __init__(self, router: Router) -> None:
        self.router = router
        self.transport: asyncio.Transport | None = None
        self.state = self.HEAD
        self.inbox = bytearray()
        self.timer: asyncio.TimerHandle | None = None
        self.upstream: Upstream | None = None
        # the request in flight
        self.request: Head | None = None
        self.method = ""
        self.target = ""
        self.key: str | None = None
        self.kind: str | None = None
        self.worker = 0
        self.remaining = 0  # request body bytes still to pass (content-length)
        self.chunks: ChunkedEnd | None = None
        self.scanned = 0  # bytes of a buffered chunked body already scanned
        self.lost: Lost | None = None
        # the response
        self.rbuf = bytearray()
        self.rhead: Head | None = None
        self.rremaining = 0
        self.rchunks: ChunkedEnd | None = None
        self.rstate = 0  # 0 head, 1 body by length, 2 chunked, 3 until close
        self.answered = False  # response bytes already sent
        self.close_after = False
        self.counted = False

    # --- connection -----------------------------------------------------------------------
    def connection_made(self, transport) -> None:  # type: ignore[override]
        self.transport = transport
        router = self.router
        if router.open >= router.policy.max_connections:
            transport.write(
                error_answer(
                    503,
                    f"server at its connection limit ({router.policy.max_connections}); retry later",
                    close=True,
                )
            )
            transport.close()
            self.state = self.CLOSED
            return
        router.open += 1
        self.counted = True
        sock = transport.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._arm(router.policy.header_timeout, self._head_timed_out)

    def connection_lost(self, exc) -> None:
        if self.counted:
            self.router.open -= 1
            self.counted = False
        self._disarm()
        self.state = self.CLOSED
        if (
            self.upstream is not None
        ):  # the client left mid-exchange: the connection cannot be reused
            if self.router.exchanges:
                self.router.exchanges -= 1
            upstream, self.upstream = self.upstream, None
            upstream.client = None
            upstream.close()

    def pause_writing(self) -> None:
        if self.upstream is not None and self.upstream.transport is not None:
            self.upstream.transport.pause_reading()

    def resume_writing(self) -> None:
        if self.upstream is not None and self.upstream.transport is not None:
            self.upstream.transport.resume_reading()

    def _arm(self, seconds: float, callback) -> None:
        self._disarm()
        self.timer = self.router.loop.call_later(seconds, callback)

    def _disarm(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def _head_timed_out(self) -> None:
        if self.state == self.HEAD and self.transport is not None:
            if self.inbox:
                timeout = self.router.policy.header_timeout
                self.transport.write(
                    error_answer(
                        408, f"request headers not received within {timeout:g} s", close=True
                    )
                )
            self.transport.close()

    def _body_timed_out(self) -> None:
        if self.state == self.BUFFER:
            timeout = self.router.body_timeout
            self._refuse(408, f"request body not received within {timeout:g} s")

    def _idle_timed_out(self) -> None:
        if self.state == self.HEAD and not self.inbox and self.transport is not None:
            self.transport.close()

    def _refuse(self, status: int, message: str) -> None:
        if self.transport is not None:
            self.transport.write(error_answer(status, message, close=True))
            self.transport.close()
        self.state = self.CLOSED

    # --- requests -------------------------------------------------------------------------
    def data_received(self, data: bytes) -> None:
        state = self.state
        if state == self.BODY:
            self._pass_body(data)
        elif state == self.HEAD:
            if not self.inbox and self.timer is not None:
                self._arm(self.router.policy.header_timeout, self._head_timed_out)
            self.inbox += data
            self._next_request()
        elif state == self.BUFFER:
            self.inbox += data
            self._buffered()
        elif state == self.WAIT:
            self.inbox += data  # a pipelined request: read once this response is done
            if self.transport is not None:
                self.transport.pause_reading()

    def _next_request(self) -> None:
        end = self.inbox.find(b"\r\n\r\n")
        limit = self.router.policy.max_head_bytes  # the workers' own bound, answered as they do
        if (len(self.inbox) if end == -1 else end + 4) > limit:
            self._refuse(431, f"request head larger than {limit} bytes")
            return
        if end == -1:
            return
        raw = bytes(self.inbox[: end + 4])
        del self.inbox[: end + 4]
        self._disarm()
        try:
            head = read_head(raw)
            method, target, _ = head.first.decode("latin-1").split(" ", 2)
        except ValueError:
            self._refuse(400, "malformed request head")
            return
        self.request, self.method, self.target = head, method, target
        self.raw_head = raw
        self.lost = None
        session = head.session.decode("latin-1") if head.session is not None else None
        key, kind = routing.request_key(method, target, session)
        self.kind = kind
        router = self.router
        if method == "GET" and target == "/health":
            self._health(raw)
            return
        if session is not None and key == session:
            learned = router.transports.get(session)
            if learned is not None:
                self._route(learned[0], learned[1])
                return
            gone = router.lost_transports.get(session)
            if gone is not None:  # the worker that handed it out died: no episode to act on
                self._refuse(404, gone[0].sentence(gone[1]))
                return
        if kind is not None and (head.chunked or (head.length or 0) <= router.max_body):
            if head.expect_continue and self.transport is not None:
                self.transport.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            self.remaining = head.length or 0
            self.chunks = ChunkedEnd() if head.chunked else None
            self.scanned = 0
            self.state = self.BUFFER
            self._arm(router.body_timeout, self._body_timed_out)
            self._buffered()
            return
        self._route_key(key)

    def _buffered(self) -> None:
        if self.chunks is not None:  # a chunked body: find its end, read it whole
            try:
                end = self.chunks.feed(self.inbox, self.scanned)
            except BadFraming as exc:
                self._refuse(400, f"malformed chunked body: {exc}")
                return
            self.scanned = len(self.inbox)
            if end is None:
                if len(self.inbox) > self.router.max_body * 2 + MAX_HEAD:
                    self._disarm()
                    self._route_key(None)  # too large to read: the worker answers 413
                return
            self._disarm()
            body = dechunk(bytes(self.inbox[:end]))
            self._route_key(routing.body_key(self.kind, body) if self.kind else None)
            return
        if len(self.inbox) < self.remaining:
            return
        self._disarm()
        body = bytes(self.inbox[: self.remaining])
        key = routing.body_key(self.kind, body) if self.kind is not None else None
        self._route_key(key)

    def _route_key(self, key: str | None) -> None:
        router = self.router
        if key is None:
            self._route(next(router.turn), None)
            return
        if self.kind is None:  # not a request that starts the episode afresh
            self.lost = router.lost.get(key)
        self._route(routing.owner(key, router.count), key)

    def _route(self, worker: int, key: str | None) -> None:
        self.worker, self.key = worker, key
        self.state = self.WAIT  # until sent, whatever else arrives waits in the inbox
        if self.transport is not None:
            self.transport.pause_reading()
        upstream = self.router.pooled(worker)
        if upstream is not None:
            self._send(upstream)
        else:
            self.router.loop.create_task(self._connect_and_send(worker))

    async def _connect_and_send(self, worker: int) -> None:
        try:
            upstream = await self.router.connect(worker)
        except OSError:
            self._refuse(502, f"server process {worker} cannot be reached; retry shortly")
            return
        if self.state == self.CLOSED:
            upstream.close()
            return
        self._send(upstream)

    def _send(self, upstream: Upstream) -> None:
        head = self.request
        assert head is not None
        self.upstream = upstream
        upstream.client = self
        self.router.exchanges += 1
        self.rbuf.clear()
        self.rstate = 0
        self.answered = False
        self.close_after = head.close
        upstream.send(self.raw_head)
        if head.chunked:
            self.chunks = ChunkedEnd()
            self.remaining = -1
        else:
            self.chunks = None
            self.remaining = head.length or 0
        self.state = self.BODY
        pending = bytes(self.inbox)
        self.inbox.clear()
        self._pass_body(pending)
        if self.state == self.BODY and self.transport is not None:
            self.transport.resume_reading()

    def _pass_body(self, data: bytes) -> None:
        upstream = self.upstream
        if upstream is None:
            return
        if self.chunks is not None:
            try:
                end = self.chunks.feed(data)
            except BadFraming as exc:
                self._refuse(400, f"malformed chunked body: {exc}")
                return
            if end is None:
                upstream.send(data)
                return
        else:
            end = min(self.remaining, len(data))
            self.remaining -= end
            if self.remaining > 0:
                if data:
                    upstream.send(data)
                return
        if end:
            upstream.send(data[:end])
        self.inbox += data[end:]
        self.state = self.WAIT
        if self.inbox and self.transport is not None:
            self.transport.pause_reading()

    def _health(self, raw: bytes) -> None:
        self.state = self.WAIT
        if self.transport is not None:
            self.transport.pause_reading()
        lines = raw.split(b"\r\n")[1:]

        async def answer() -> None:
            reply = await self.router.health([line for line in lines if line])
            if self.state == self.CLOSED or self.transport is None:
                return
            self.transport.write(reply)
            self._done(close=self.request is not None and self.request.close)

        self.router.loop.create_task(answer())

    # --- responses ------------------------------------------------------------------------
    def response_data(self, data: bytes) -> None:
        transport = self.transport
        if transport is None or self.state == self.CLOSED:
            return
        if self.rstate == 0:
            self.rbuf += data
            while self.rstate == 0:
                end = self.rbuf.find(b"\r\n\r\n")
                if end == -1:
                    return
                raw = bytes(self.rbuf[: end + 4])
                del self.rbuf[: end + 4]
                if not self._response_head(raw):
                    return
            data = bytes(self.rbuf)
            self.rbuf.clear()
            if not data:
                return
        self._response_body(data)

    def _response_head(self, raw: bytes) -> bool:
        """Handle one response head; False when the response is being replaced or is done."""
        try:
            head = read_head(raw)
            status = int(head.first.split(b" ", 2)[1])
        except (ValueError, IndexError):
            self._upstream_failed("answered with a malformed response")
            return False
        transport = self.transport
        assert transport is not None
        if 100 <= status < 200 and status != 101:  # interim: pass on, a final head follows
            transport.write(raw)
            return True
        self.rhead = head
        self._learn(status, head)
        if self.lost is not None and status == 404:  # the worker's "unknown episode", said better
            self.rstate = 4
            message = {"error": self.lost.sentence(self.key or "")}
            self._replace(json_answer(404, message, worker=self.worker))
            return False
        self.answered = True
        transport.write(raw[:-2] + b"tau-worker: %d\r\n\r\n" % self.worker)
        if self.method == "HEAD" or status in (204, 304):
            self.rstate = 1
            self.rremaining = 0
        elif head.chunked:
            self.rstate = 2
            self.rchunks = ChunkedEnd()
        elif head.length is not None:
            self.rstate = 1
            self.rremaining = head.length
        else:
            self.rstate = 3
            self.close_after = True
        if head.close:
            self.close_after = True
        if self.rstate == 1 and self.rremaining == 0 and not self.rbuf:
            self._response_done()
            return False
        return True

    def _replace(self, answer: bytes) -> None:
        """Answer with `answer` instead of the worker's response, whose body is then read and
        dropped (the upstream connection stays usable)."""
        head = self.rhead
        assert head is not None and self.transport is not None
        self.transport.write(answer)
        self.answered = True
        self.rremaining = head.length or 0
        self.rchunks = ChunkedEnd() if head.chunked else None
        if head.close or (head.length is None and not head.chunked):
            self.close_after = True
        data = bytes(self.rbuf)
        self.rbuf.clear()
        self._drop_body(data)

    def _drop_body(self, data: bytes) -> None:
        if self.rchunks is not None:
            try:
                end = self.rchunks.feed(data)
            except BadFraming:
                end = len(data)
            if end is not None:
                self._response_done()
            return
        self.rremaining -= min(self.rremaining, len(data))
        if self.rremaining == 0:
            self._response_done()

    def _response_body(self, data: bytes) -> None:
        transport = self.transport
        assert transport is not None
        rstate = self.rstate
        if rstate == 4:
            self._drop_body(data)
        elif rstate == 1:
            take = min(self.rremaining, len(data))
            self.rremaining -= take
            transport.write(data[:take] if take < len(data) else data)
            if self.rremaining == 0:
                self._response_done()
        elif rstate == 2:
            assert self.rchunks is not None
            try:
                end = self.rchunks.feed(data)
            except BadFraming:
                self._upstream_failed("answered with a malformed chunked body")
                return
            transport.write(data if end is None else data[:end])
            if end is not None:
                self._response_done()
        else:
            transport.write(data)

    def _learn(self, status: int, head: Head) -> None:
        router, kind, key = self.router, self.kind, self.key
        if kind == routing.CREATE and status == 201:
            created = key
            if created is None and head.location:
                created = head.location.decode("latin-1").rstrip("/").rsplit("/", 1)[-1]
            if created:
                router.created(self.worker, created)
        elif kind == routing.EP_INITIALIZE and 200 <= status < 300:
            if key and key != routing.DEFAULT_EPISODE:
                router.created(self.worker, key)
            if head.session and key:
                router.handed_out(self.worker, head.session.decode("latin-1"), key)
        elif self.method == "DELETE" and status == 204 and key:
            parts = self.target.split("?", 1)[0].strip("/").split("/")
            if len(parts) == 3 and parts[1] == "episodes":
                router.deleted(self.worker, key)

    def _response_done(self) -> None:
        upstream, self.upstream = self.upstream, None
        if self.router.exchanges:
            self.router.exchanges -= 1
        if upstream is not None:
            if self.rstate == 3 or (self.rhead is not None and self.rhead.close):
                upstream.close()  # the worker closes it after this answer: never lend it again
            else:
                upstream.client = None
                self.router.release(upstream)
        self._done(close=self.close_after)

    def _done(self, close: bool) -> None:
        self.rstate = 0
        self.request = None
        if close or self.state == self.CLOSED:
            if self.transport is not None:
                self.transport.close()
            self.state = self.CLOSED
            return
        self.state = self.HEAD
        self._arm(self.router.policy.keep_alive, self._idle_timed_out)
        if self.transport is not None:
            self.transport.resume_reading()
        if self.inbox:
            self._arm(self.router.policy.header_timeout, self._head_timed_out)
            self._next_request()

    def upstream_lost(self) -> None:
        """The worker's connection closed before the response ended."""
        self.upstream = None
        if self.router.exchanges:
            self.router.exchanges -= 1
        if self.rstate == 3:  # a body that ends with the connection: it has ended
            self._done(close=True)
            return
        self._upstream_failed("stopped while answering")

    def _upstream_failed(self, what: str) -> None:
        if self.upstream is not None:
            self.upstream.client = None
            self.upstream.close()
            self.upstream = None
        if self.transport is None or self.state == self.CLOSED:
            return
        if not self.answered:
            episode = f" episode '{self.key}'" if self.key else " this request"
            self.transport.write(
                error_answer(
                    502,
                    f"the server process holding{episode} (worker {self.worker}) {what}; "
                    "if it held the episode, the episode is lost",
                    close=True,
                )
            )
        self.transport.close()
        self.state = self.CLOSED


def serve_front(
    sock: socket.socket,
    addresses: list[tuple[str, int]],
    notices: int,
    policy: ConnectionPolicy,
    capacity: int,
    max_body: int,
    body_timeout: float,
) -> None:
    """Run the front on the listening `sock` until SIGTERM or SIGINT. `notices` is the read end
    of the supervisor's pipe: lines `started INDEX PID` and `died INDEX PID TIME`."""

    async def main() -> None:
        loop = asyncio.get_running_loop()
        router = Router(addresses, policy, capacity, max_body, body_timeout)
        stop = asyncio.Event()
        for number in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(number, stop.set)
        pending = bytearray()

        def on_notice() -> None:
            try:
                chunk = os.read(notices, 65536)
            except BlockingIOError:
                return
            if not chunk:
                loop.remove_reader(notices)
                stop.set()  # the supervisor is gone
                return
            pending.extend(chunk)
            while b"\n" in pending:
                line, _, rest = bytes(pending).partition(b"\n")
                pending[:] = rest
                words = line.decode().split()
                if words[:1] == ["started"]:
                    router.worker_started(int(words[1]), int(words[2]))
                elif words[:1] == ["died"]:
                    router.worker_died(int(words[1]), int(words[2]), float(words[3]))

        os.set_blocking(notices, False)
        loop.add_reader(notices, on_notice)
        server = await loop.create_server(
            lambda: Downstream(router), sock=sock, backlog=policy.backlog
        )
        await stop.wait()
        server.close()
        deadline = loop.time() + 10
        while router.exchanges and loop.time() < deadline:
            await asyncio.sleep(0.05)

    try:  # uvloop, where installed (the servers' own loop on the scale-cpu line): a cheaper splice
        import uvloop
    except ImportError:
        asyncio.run(main())
    else:
        uvloop.run(main())
