"""Recording model calls to a cassette, and answering them from one.

A cassette is a folder. Every model call a simulation makes (the agent's, the user simulator's,
the NL judge's, the review's, a retrieval tool's reranker) is kept in that simulation's *lane*,
in the order it was made, under a canonical key: the kind of call, the model, the messages, the
tools and the arguments that shape the answer (never keys, endpoints, timeouts or retry counts).
Replaying a lane answers each request with the next recorded answer for the same key, so
concurrent simulations never take each other's answers and a request repeated within a
simulation gets its answers in the order they came. Embeddings are deterministic and shared by
every simulation (a query vector is remembered process-wide), so they are kept by key alone.

The layout (`FORMAT`, version `VERSION`; docs/replay.md):

    cassette.json               the format, its version, what wrote it
    lanes/<lane>.jsonl          one simulation: a header line, then one line per call
    shared/<key>.json           an embedding call, by key
    blobs/<ab>/<sha256>.json    a message, a tool list or embedding inputs, stored once by content

A lane is written whole, when its simulation's attempt has finished (a failed attempt leaves
nothing), so worker processes and Ray actors on one file system write a cassette together.

This module knows nothing of runs: the harness opens a `Cassette` for a run and makes a lane
current around each simulation attempt (`Cassette.lane`); `conversation.llm` asks `current()`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import tempfile
import threading
from collections import deque
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

FORMAT = "tau-mcp-cassette"
VERSION = 1
MANIFEST = "cassette.json"

#: Model arguments that only say how to reach or authenticate with the provider, or how often
#: to retry: never part of a request's key (a cassette replays against any endpoint).
TRANSPORT_ARGS = frozenset(
    {
        "api_key",
        "api_base",
        "base_url",
        "api_version",
        "organization",
        "timeout",
        "request_timeout",
        "num_retries",
        "max_retries",
        "extra_headers",
        "headers",
        "default_headers",
    }
)

#: Parts of a provider's answer that differ on every call and say nothing about the answer.
VOLATILE_RESPONSE_FIELDS = frozenset({"id", "object", "created", "system_fingerprint"})

Kind = Literal["chat", "embedding"]
MissPolicy = Literal["fail", "live"]
MISS_POLICIES: tuple[str, ...] = ("fail", "live")
_REF = "$blob"
_SAFE = re.compile(r"[^A-Za-z0-9_.-]+")


class CassetteError(ValueError):
    """A cassette folder that cannot be used (another format, unreadable)."""


class ReplayMiss(RuntimeError):
    """A request the cassette does not hold, under `--replay-miss fail`: the simulation fails."""


# --- requests and their keys ---------------------------------------------------------------


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def request_of(
    kind: Kind,
    model: str,
    *,
    messages: list[dict[str, Any]] | None = None,
    tools: list[dict[str, Any]] | None = None,
    tool_choice: Any = None,
    inputs: list[str] | None = None,
    args: dict[str, Any] | None = None,
    secret_name: Callable[[str], bool] | None = None,
) -> dict[str, Any]:
    """A request as the cassette keys it: what shapes the answer, nothing that reaches or
    authenticates the provider (`TRANSPORT_ARGS`, and any argument `secret_name` calls
    secret)."""
    kept = {
        name: value
        for name, value in (args or {}).items()
        if name not in TRANSPORT_ARGS and not (secret_name is not None and secret_name(name))
    }
    request: dict[str, Any] = {"kind": kind, "model": model, "args": kept}
    if tool_choice is not None:
        request["tool_choice"] = tool_choice
    if tools:
        request["tools"] = tools
    if messages is not None:
        request["messages"] = messages
    if inputs is not None:
        request["inputs"] = inputs
    return request


#: Text in a request that differs on every run and says nothing the model needs: the wall-clock
#: note banking_knowledge's search tools end their results with (as the reference's do). Keys
#: and comparisons read it as `[Timing]`, so a replayed search's own timing still matches.
VOLATILE_TEXT = re.compile(r"\[Timing: retrieval=\d+ms, reranking=\d+ms, total=\d+ms\]")


def _steady(text: str) -> str:
    return VOLATILE_TEXT.sub("[Timing]", text) if "[Timing: " in text else text


_PARTS = ("tools", "inputs")  # stored as one blob each; messages as one blob per message


@dataclass
class Prepared:
    """A request made ready for the cassette once: its key, its stored form (messages, tools
    and inputs as blob references) and those blobs' JSON texts by digest."""

    request: dict[str, Any]
    key: str
    stored: dict[str, Any]
    blobs: dict[str, str]

    @property
    def kind(self) -> str:
        return self.request["kind"]


class _Digests:
    """Each part's canonical JSON and digest, worked out once per request; a tool list (the
    same list object, turn after turn) once per list. Tool lists handed to a model call are
    never changed in place (a seat builds its list once), so the list object names its text."""

    def __init__(self) -> None:
        self._tools: dict[int, tuple[Any, str, str, str]] = {}
        self._lock = threading.Lock()

    def part(self, value: Any, blobs: dict[str, str]) -> tuple[str, str]:
        """(the digest a key uses, the blob's name) of one part; its text into `blobs`."""
        text = canonical_json(value)
        name = _sha(text)
        blobs[name] = text
        steady = _steady(text)
        return (name if steady is text else _sha(steady)), name

    def tools(self, tools: list[Any], blobs: dict[str, str]) -> tuple[str, str]:
        with self._lock:
            found = self._tools.get(id(tools))
        if found is not None and found[0] is tools:
            _, text, keyed, name = found
            blobs[name] = text
            return keyed, name
        keyed, name = self.part(tools, blobs)
        with self._lock:
            if len(self._tools) >= 256:
                self._tools.pop(next(iter(self._tools)))
            self._tools[id(tools)] = (tools, blobs[name], keyed, name)  # held: its id stays
        return keyed, name


def prepare(request: dict[str, Any], digests: _Digests | None = None) -> Prepared:
    """`request` (from `request_of`) with its key: the sha256 of the canonical JSON of the
    request in which each message, the tool list and the inputs are replaced by the sha256 of
    their own canonical JSON (a search tool's timing note read as `[Timing]`)."""
    digests = digests or _Digests()
    blobs: dict[str, str] = {}
    keyed, stored = dict(request), dict(request)
    if "messages" in request:
        pairs = [digests.part(m, blobs) for m in request["messages"]]
        keyed["messages"] = [k for k, _ in pairs]
        stored["messages"] = [{_REF: n} for _, n in pairs]
    for name in _PARTS:
        if name in request:
            make = digests.tools if name == "tools" else digests.part
            key_digest, blob = make(request[name], blobs)
            keyed[name], stored[name] = key_digest, {_REF: blob}
    return Prepared(request, _sha(canonical_json(keyed)), stored, blobs)


def key_of(request: dict[str, Any]) -> str:
    return prepare(request).key


# The order in which a request's fields are compared: the first difference named is the one a
# person looks at first (a changed model before a changed message).
_FIELD_ORDER = ("kind", "model", "tool_choice", "args", "tools", "messages", "inputs")


def _ordered_keys(value: dict[str, Any], top: bool) -> list[str]:
    if top:
        known = [k for k in _FIELD_ORDER if k in value]
        return known + sorted(k for k in value if k not in _FIELD_ORDER)
    return sorted(value)


def _leaves(value: Any, path: str = "", top: bool = True) -> Iterator[tuple[str, Any]]:
    if isinstance(value, dict):
        yield path + "{", len(value)
        for key in _ordered_keys(value, top):
            yield from _leaves(value[key], f"{path}.{key}" if path else key, False)
    elif isinstance(value, list):
        yield path + "[", len(value)
        for index, item in enumerate(value):
            yield from _leaves(item, f"{path}[{index}]", False)
    else:
        yield path, _steady(value) if isinstance(value, str) else value


def _first_difference(recorded: dict[str, Any], now: dict[str, Any]) -> tuple[int, str]:
    """How many leading fields two requests share, and the first field where they differ."""
    shared = 0
    old_leaves, new_leaves = _leaves(recorded), _leaves(now)
    for old, new in zip(old_leaves, new_leaves, strict=False):
        if old != new:
            return shared, _describe(recorded, now, old, new)
        shared += 1
    return shared, "(nothing: the request is the same)"


def _describe(recorded: Any, now: Any, old: tuple[str, Any], new: tuple[str, Any]) -> str:
    path = old[0] if old[0] == new[0] else _common_parent(old[0], new[0])
    if path.endswith("[") or path.endswith("{"):
        base = path[:-1] or "the request"
        what = "items" if path.endswith("[") else "fields"
        if old[0] == new[0]:
            return f"{base} ({old[1]} {what} recorded, {new[1]} now)"
        return base
    if old[0] != new[0]:
        return f"{path or 'the request'} (recorded {_short(old[0])}, now {_short(new[0])})"
    before, after = old[1], new[1]
    if isinstance(before, str) and isinstance(after, str):
        before, after = _around_difference(before, after)
    return f"{path}: recorded {_short(before)}, now {_short(after)}"


def _around_difference(a: str, b: str, before: int = 30) -> tuple[str, str]:
    """Two texts cut to where they start to differ (with a little of what precedes it)."""
    start = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), None)
    if start is None:
        start = min(len(a), len(b))
    if start <= before:
        return a, b
    return "..." + a[start - before :], "..." + b[start - before :]


def _common_parent(a: str, b: str) -> str:
    size = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        size += 1
    common = a[:size]
    cut = max(common.rfind("."), common.rfind("["))
    return common[:cut] if cut > 0 else common.rstrip(".[{")


def _short(value: Any, limit: int = 80) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# --- entries ------------------------------------------------------------------------------


@dataclass
class Entry:
    """One recorded call: its request (blobs resolved on demand), answer, cost and time."""

    n: int
    kind: str
    key: str
    response: dict[str, Any]
    cost: float = 0.0
    seconds: float = 0.0
    stored_request: dict[str, Any] = field(default_factory=dict, repr=False)

    def line(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "kind": self.kind,
            "key": self.key,
            "request": self.stored_request,
            "response": self.response,
            "cost": self.cost,
            "seconds": self.seconds,
        }

    @classmethod
    def from_line(cls, raw: dict[str, Any]) -> Entry:
        return cls(
            n=int(raw["n"]),
            kind=str(raw["kind"]),
            key=str(raw["key"]),
            response=raw["response"],
            cost=float(raw.get("cost") or 0.0),
            seconds=float(raw.get("seconds") or 0.0),
            stored_request=raw.get("request") or {},
        )


def _write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise


def lane_file_name(lane_id: str) -> str:
    """A lane's file: its id made safe as a file name, with a short hash when that changed it
    (two ids never share a file)."""
    safe = _SAFE.sub("_", lane_id).strip("._")[:80] or "lane"
    if safe != lane_id:
        safe = f"{safe}-{_sha(lane_id)[:10]}"
    return f"{safe}.jsonl"


# --- the cassette --------------------------------------------------------------------------


class Cassette:
    """A run's cassettes: where its calls are recorded (`record`), answered from (`replay`),
    or both (a replay whose misses go live, recorded whole into a new cassette). `redact`
    is applied to the JSON texts written, a batch at a time (the harness passes its key
    redaction, which finds the secrets in play once per batch);
    `secret_name` says which model arguments are secrets, left out of every key."""

    def __init__(
        self,
        *,
        record: Path | None = None,
        replay: Path | None = None,
        miss: MissPolicy = "fail",
        redact: Callable[[list[str]], list[str]] | None = None,
        secret_name: Callable[[str], bool] | None = None,
        written_by: str = "tau-mcp",
    ) -> None:
        if record is None and replay is None:
            raise ValueError("a cassette records, replays, or both")
        if miss not in MISS_POLICIES:
            raise CassetteError(f"--replay-miss takes fail or live, not '{miss}'")
        self.record_to = Path(record) if record is not None else None
        self.replay_from = Path(replay) if replay is not None else None
        self.miss = miss
        self.redact = redact or (lambda texts: texts)
        self.secret_name = secret_name
        self.written_by = written_by
        self._blobs: dict[str, Any] = {}
        self._written: set[str] = set()
        self._shared: dict[str, Entry | None] = {}
        self._lock = threading.Lock()
        self.digests = _Digests()
        if self.replay_from is not None:
            read_manifest(self.replay_from)
        if self.record_to is not None:
            self._start_recording()

    # --- what a results header says about it --------------------------------------------
    def describe(self) -> dict[str, Any]:
        """The results header's `cassette`: which folders, which way, what a miss does."""
        out: dict[str, Any] = {"format": FORMAT, "version": VERSION}
        if self.record_to is not None:
            out["record"] = str(self.record_to)
        if self.replay_from is not None:
            out["replay"] = str(self.replay_from)
            out["replay_miss"] = self.miss
        return out

    def _start_recording(self) -> None:
        assert self.record_to is not None
        manifest = self.record_to / MANIFEST
        if manifest.exists():
            read_manifest(self.record_to)  # another format is refused, ours is added to
            return
        if self.record_to.exists() and any(self.record_to.iterdir()):
            raise CassetteError(
                f"{self.record_to} is not empty and holds no cassette ({MANIFEST}); "
                "record into a new or empty folder"
            )
        body = {
            "format": FORMAT,
            "version": VERSION,
            "written_by": self.written_by,
            "layout": {
                "lanes": "lanes/<lane>.jsonl: a header line, then one call per line in order",
                "shared": "shared/<key>.json: an embedding call, kept by its key",
                "blobs": "blobs/<ab>/<sha256>.json: messages, tool lists, embedding inputs",
            },
        }
        (text,) = self.redact([json.dumps(body, indent=1)])
        _write_atomic(manifest, (text + "\n").encode())

    # --- lanes ----------------------------------------------------------------------------
    @contextlib.contextmanager
    def lane(self, lane_id: str, meta: dict[str, Any] | None = None) -> Iterator[Lane]:
        """Make this simulation's lane current for the block. The recorded lane is written
        when the block ends normally; a replay that missed fails the block (even if the miss
        was swallowed, say by a tool that drops a failed reranker call)."""
        lane = Lane(self, lane_id, meta or {})
        token = _current.set(lane)
        try:
            yield lane
        except Exception:
            # The miss is the cause, whatever the code in between made of it (a judge that
            # reports "the judge failed", a tool that answers with an error).
            if lane.failure is not None:
                raise lane.failure from None
            raise
        finally:
            _current.reset(token)
        if lane.failure is not None:
            raise lane.failure
        if self.record_to is not None:
            self._write_lane(lane)

    def _lane_path(self, folder: Path, lane_id: str) -> Path:
        return folder / "lanes" / lane_file_name(lane_id)

    def read_lane(self, lane_id: str) -> list[Entry]:
        """The recorded calls of a lane, in order (none when the cassette lacks the lane)."""
        assert self.replay_from is not None
        path = self._lane_path(self.replay_from, lane_id)
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise CassetteError(f"cannot read {path}: {exc.strerror}") from None
        entries = []
        for number, line in enumerate(lines[1:], start=2):
            if not line.strip():
                continue
            try:
                entries.append(Entry.from_line(json.loads(line)))
            except (ValueError, KeyError, TypeError):
                raise CassetteError(f"{path} line {number} is not a recorded call") from None
        return entries

    def _write_lane(self, lane: Lane) -> None:
        assert self.record_to is not None
        self.write_blobs(lane.blobs)  # before the lane that refers to them
        header = {"lane": lane.lane_id, **lane.meta, "calls": len(lane.recorded)}
        lines = [json.dumps(header, ensure_ascii=False)]
        for entry in sorted(lane.recorded, key=lambda e: e.n):
            lines.append(json.dumps(entry.line(), ensure_ascii=False))
        (text,) = self.redact(["\n".join(lines) + "\n"])  # JSON lines: no secret spans two
        data = text.encode("utf-8", "surrogatepass")
        _write_atomic(self._lane_path(self.record_to, lane.lane_id), data)

    # --- blobs ----------------------------------------------------------------------------
    def write_blobs(self, blobs: dict[str, str]) -> None:
        """Each blob not yet in the cassette, written once (named by its content's digest)."""
        assert self.record_to is not None
        with self._lock:
            new = [name for name in blobs if name not in self._written]
        if not new:
            return
        for name, text in zip(new, self.redact([blobs[n] for n in new]), strict=True):
            path = self.record_to / "blobs" / name[:2] / f"{name}.json"
            if not path.exists():
                _write_atomic(path, text.encode("utf-8", "surrogatepass"))
            with self._lock:
                self._written.add(name)

    def resolve(self, stored: dict[str, Any]) -> dict[str, Any]:
        """A stored request with its blobs read back."""
        out = dict(stored)
        if "messages" in out:
            out["messages"] = [self._read_blob(m) for m in out["messages"]]
        for name in ("tools", "inputs"):
            if name in out:
                out[name] = self._read_blob(out[name])
        return out

    def _read_blob(self, ref: Any) -> Any:
        if not (isinstance(ref, dict) and set(ref) == {_REF}):
            return ref
        digest = ref[_REF]
        if digest not in self._blobs:
            assert self.replay_from is not None
            path = self.replay_from / "blobs" / digest[:2] / f"{digest}.json"
            try:
                self._blobs[digest] = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                self._blobs[digest] = f"<blob {digest[:12]} missing from the cassette>"
        return self._blobs[digest]

    # --- shared calls (embeddings) --------------------------------------------------------
    def shared(self, key: str) -> Entry | None:
        """The recorded embedding call with this key, if the cassette replayed from has it."""
        if self.replay_from is None:
            return None
        with self._lock:
            if key not in self._shared:
                path = self.replay_from / "shared" / f"{key}.json"
                try:
                    self._shared[key] = Entry.from_line(json.loads(path.read_text("utf-8")))
                except FileNotFoundError:
                    self._shared[key] = None
                except (OSError, ValueError, KeyError, TypeError):
                    raise CassetteError(f"{path} is not a recorded call") from None
            return self._shared[key]

    def keep_shared(self, entry: Entry) -> None:
        assert self.record_to is not None
        path = self.record_to / "shared" / f"{entry.key}.json"
        if not path.exists():
            (text,) = self.redact([json.dumps(entry.line(), ensure_ascii=False)])
            _write_atomic(path, text.encode("utf-8", "surrogatepass"))


def read_manifest(folder: Path) -> dict[str, Any]:
    """A cassette folder's manifest, checked: our format, a version we read."""
    path = Path(folder) / MANIFEST
    try:
        body = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CassetteError(f"{folder} is not a cassette (it has no {MANIFEST})") from None
    except (OSError, ValueError) as exc:
        raise CassetteError(f"cannot read the cassette {path} ({exc})") from None
    if not isinstance(body, dict) or body.get("format") != FORMAT:
        raise CassetteError(f"{path} is not a {FORMAT} manifest")
    if body.get("version") != VERSION:
        raise CassetteError(
            f"{folder} is a cassette of version {body.get('version')}; this tau-mcp reads "
            f"version {VERSION}"
        )
    return body


class Lane:
    """One simulation attempt's calls: those recorded so far, and (replaying) the recorded
    ones not yet used, by key."""

    def __init__(self, cassette: Cassette, lane_id: str, meta: dict[str, Any]) -> None:
        self.cassette = cassette
        self.lane_id = lane_id
        self.meta = meta
        self.recorded: list[Entry] = []
        self.blobs: dict[str, str] = {}  # the recorded calls' blobs, written with the lane
        self.failure: ReplayMiss | None = None
        self._count = 0
        self._lock = threading.Lock()
        self._queues: dict[str, deque[Entry]] = {}
        self._entries: list[Entry] = []
        self._used: set[int] = set()
        if cassette.replay_from is not None:
            self._entries = cassette.read_lane(lane_id)
            for entry in self._entries:
                self._queues.setdefault(entry.key, deque()).append(entry)

    @property
    def replaying(self) -> bool:
        return self.cassette.replay_from is not None

    def prepare(self, kind: Kind, model: str, **parts: Any) -> Prepared:
        """A request as this lane keys and stores it (`request_of`'s parts)."""
        request = request_of(kind, model, secret_name=self.cassette.secret_name, **parts)
        return prepare(request, self.cassette.digests)

    def next_number(self) -> int:
        with self._lock:
            self._count += 1
            return self._count

    def answer(self, prepared: Prepared, number: int) -> Entry | None:
        """The recorded answer to this request, or None when it is to go to the model
        (`--replay-miss live`, or not replaying). A miss under `fail` raises ReplayMiss."""
        if self.failure is not None:
            raise self.failure
        if not self.replaying:
            return None
        if prepared.kind == "embedding":
            found = self.cassette.shared(prepared.key)
        else:
            with self._lock:
                queue = self._queues.get(prepared.key)
                found = queue.popleft() if queue else None
                if found is not None:
                    self._used.add(found.n)
        if found is not None or self.cassette.miss == "live":
            return found
        miss = ReplayMiss(self._miss_message(prepared.request, number))
        self.failure = miss
        raise miss

    def keep(
        self,
        prepared: Prepared,
        number: int,
        response: dict[str, Any],
        cost: float,
        seconds: float,
    ) -> None:
        """Record a call's answer (when recording): an embedding at once, a chat call with
        its lane (its blobs too, so a failed attempt leaves nothing)."""
        if self.cassette.record_to is None:
            return
        entry = Entry(
            number,
            prepared.kind,
            prepared.key,
            {k: v for k, v in response.items() if k not in VOLATILE_RESPONSE_FIELDS},
            cost,
            seconds,
            prepared.stored,
        )
        if prepared.kind == "embedding":
            self.cassette.write_blobs(prepared.blobs)
            self.cassette.keep_shared(entry)
            return
        with self._lock:
            self.recorded.append(entry)
            self.blobs.update(prepared.blobs)

    def _miss_message(self, request: dict[str, Any], number: int) -> str:
        where = f"simulation lane '{self.lane_id}'"
        head = (
            f"replay: request {number} of {where} ({request['kind']} call to "
            f"{request['model']}) is not in the cassette {self.cassette.replay_from}"
        )
        tail = "; pass --replay-miss live to send requests the cassette lacks to the model"
        if request["kind"] == "embedding":
            return (
                f"{head}: no embedding of these inputs was recorded (document vectors read from "
                "the embedding cache while recording are not in it: record with an empty "
                f"TAU_MCP_CACHE_DIR){tail}"
            )
        same_kind = [e for e in self._entries if e.kind == request["kind"]]
        if not same_kind:
            return f"{head}: the cassette holds no such call for this simulation{tail}"
        unused = [e for e in same_kind if e.n not in self._used] or same_kind
        best: tuple[int, int, str] | None = None
        for entry in unused:
            shared, difference = _first_difference(
                self.cassette.resolve(entry.stored_request), request
            )
            if best is None or shared > best[0]:
                best = (shared, entry.n, difference)
        assert best is not None
        return f"{head}; the nearest recorded request (#{best[1]}) differs at {best[2]}{tail}"


_current: ContextVar[Lane | None] = ContextVar("tau_mcp_cassette_lane", default=None)


def current() -> Lane | None:
    """The lane of the simulation whose code is running (None: no cassette)."""
    return _current.get()
