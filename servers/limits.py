"""Every bound on what a client may send, checked before any work, in one place.

Used by every server of the project: tau-server's routes and MCP endpoints and `tau-harness
serve`'s (through the HTTP guard stack, `tau_mcp.servers.http_stack`), and `tau-server stdio` (each
line, `tau_mcp.servers.stdio_guard`). Two kinds of check:

- the raw JSON text (`json_text_problem`): nesting depth, number length, and lone UTF-16
  surrogates (`"\\ud800"` is valid JSON but not Unicode: a string holding one cannot be encoded
  as UTF-8, so any state or reply holding it would become unreadable; such a body is refused,
  never stored). It runs in linear time on hostile input (an unterminated string of escaped
  quotes, 1 MiB of brackets) with no Python loop over the bytes;
- request fields (`id_field`, `trial_field`, `text_field`, `name_field`, `options_field`):
  type, length, range and (for an options object such as `retrieval_kwargs`) size and nesting,
  each failure one sentence (`FieldError`, answered 400).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from itertools import accumulate, chain
from operator import sub
from typing import Any

import orjson

from tau_mcp.servers.engine.errors import EngineError

MAX_JSON_DEPTH = 64  # the deepest real body (a replayed booking) is about 8 levels
MAX_NUMBER_CHARS = 100  # Python refuses ints past 4,300 digits; nothing real is past 20
MAX_ID_CHARS = 256  # task, episode and simulation ids (the longest real task id is ~60)
MAX_TRIAL = 99_999  # trial numbers run 0..MAX_TRIAL; a trial's seed costs O(trial) to derive
MAX_MESSAGE_CHARS = 100_000  # one text message from an outside agent
MAX_NAME_CHARS = 128  # a named option's value, e.g. a retrieval config (the longest is ~32)
MAX_OPTIONS = 32  # keys of an options object (`retrieval_kwargs`: the reference reads 4)
MAX_OPTIONS_DEPTH = 4  # levels of an options object, itself included (real ones have 1)
MAX_OPTIONS_CHARS = 4_096  # an options object as compact JSON


class FieldError(EngineError):
    """A request field of the wrong type, size or range."""

    status = 400


# --- the raw JSON text -----------------------------------------------------------------------
_NOT_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")
_ONE_KIND = bytes.maketrans(b"{}", b"[]")
_NUMBER_MASK = bytes(0x31 if chr(b) in "-+0123456789.eE" else 0x20 for b in range(256))
_OPEN_RUNS = re.compile(rb"\[+")
_CLOSE_RUNS = re.compile(rb"\]+")
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
_LONE_SURROGATE = re.compile(
    rb"\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F][0-9a-fA-F]{2})"
    rb"|(?<!\\u[dD][89abAB][0-9a-fA-F]{2})\\u[dD][c-fC-F][0-9a-fA-F]{2}"
)
_LEAF_ROUNDS = 8
_FEW_RUNS = 1 << 16


def json_text_problem(
    body: bytes, max_depth: int = MAX_JSON_DEPTH, max_number: int = MAX_NUMBER_CHARS
) -> str | None:
    """Why `body` must not reach a JSON parser, or None. Strings are set aside first, so
    brackets and digits inside them do not count; text that is not JSON at all is left to the
    parser, except for brackets that cannot close within `max_depth` levels."""
    if b"\\" in body:
        # An escaped backslash becomes two plain bytes, so every backslash left starts an
        # escape: `\"` no longer ends a string, and a `\u` escape is a real one.
        body = body.replace(b"\\\\", b"__")
        if _SURROGATE_ESCAPE.search(body) and _LONE_SURROGATE.search(body):
            return (
                "a JSON string holds a lone UTF-16 surrogate (\\ud800-\\udfff), which is not text"
            )
        body = body.replace(b'\\"', b"__")
    # Most bodies pass both checks even counting what is inside strings: no need to set the
    # strings aside then.
    long_run = b"1" * (max_number + 1)
    number_ok = long_run not in body.translate(_NUMBER_MASK)
    depth_ok = body.count(b"[") + body.count(b"{") <= max_depth
    if number_ok and depth_ok:
        return None
    # Outside strings: every other piece between quotes (an unterminated string runs to the end).
    outside = b"".join(body.split(b'"')[::2]) if b'"' in body else body
    if not number_ok and long_run in outside.translate(_NUMBER_MASK):
        return f"a JSON number is longer than {max_number} characters"
    if not depth_ok and _deeper_than(outside.translate(None, _NOT_BRACKET), max_depth):
        return f"JSON nested deeper than {max_depth} levels"
    return None


def _deeper_than(brackets: bytes, limit: int) -> bool:
    """Whether the running count of open brackets ever exceeds `limit` (closing brackets of
    either kind count against opening ones of either kind; the parser checks the pairing)."""
    if len(brackets) <= limit:
        return False
    brackets = brackets.translate(_ONE_KIND)
    # Each round takes away every innermost pair, lowering the deepest point by at most one;
    # rounds run only while the text alternates a lot, so the run lengths below stay few.
    rounds = 0
    while rounds < _LEAF_ROUNDS and brackets.count(b"][") > _FEW_RUNS:
        brackets = brackets.replace(b"[]", b"")
        rounds += 1
    limit -= rounds
    if len(brackets) <= limit:
        return False
    # Runs of openers and closers alternate; the depth peaks at the end of each run of openers.
    opened = accumulate(map(len, _OPEN_RUNS.findall(brackets)))
    closed: Any = accumulate(map(len, _CLOSE_RUNS.findall(brackets)))
    if brackets[:1] == b"[":
        closed = chain((0,), closed)
    return max(map(sub, opened, closed), default=0) > limit


# A run of 19 digits, found as 19 nines once every digit reads as a nine (~7x faster than the
# regular expression `[0-9]{19}`, which tries every position).
_DIGITS_AS_NINES = bytes.maketrans(b"012345678", b"999999999")
_LONG_DIGITS = b"9" * 19


def parse_json(body: bytes) -> Any:
    """`json.loads(body)`, value and errors alike, through orjson when that gives the same
    (~4x faster). orjson reads integers past 64 bits as floats (so a run of 19 digits goes to
    json) and refuses what json accepts (NaN, 1e400, a byte-order mark, UTF-16): json decides."""
    if _LONG_DIGITS not in body.translate(_DIGITS_AS_NINES):
        try:
            return orjson.loads(body)
        except orjson.JSONDecodeError:
            pass
    return json.loads(body)


# --- request fields --------------------------------------------------------------------------
def _has_lone_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def text_field(
    body: Mapping[str, Any],
    key: str,
    *,
    required: bool = False,
    max_chars: int = MAX_MESSAGE_CHARS,
    what: str = "a string",
) -> str | None:
    """A string field of at most `max_chars` characters (None when absent and not required)."""
    value = body.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or (required and not value):
        raise FieldError(f"'{key}' must be {what}")
    if len(value) > max_chars:
        raise FieldError(f"'{key}' is longer than {max_chars} characters")
    if _has_lone_surrogate(value):
        raise FieldError(f"'{key}' holds a lone UTF-16 surrogate, which is not text")
    return value


def id_field(body: Mapping[str, Any], key: str, *, required: bool = False) -> str | None:
    """A task, episode or simulation id: a non-empty string of at most `MAX_ID_CHARS`."""
    what = "a non-empty string" if required else "a string or null"
    return text_field(body, key, required=required, max_chars=MAX_ID_CHARS, what=what)


def name_field(body: Mapping[str, Any], key: str) -> str | None:
    """The name of an option (a retrieval config): a non-empty string of at most
    `MAX_NAME_CHARS`, or None when absent. Whether the name exists is the engine's to say."""
    what = "a non-empty string or null"
    value = text_field(body, key, max_chars=MAX_NAME_CHARS, what=what)
    if value == "":
        raise FieldError(f"'{key}' must be {what}")
    return value


def options_field(body: Mapping[str, Any], key: str) -> dict[str, Any] | None:
    """An object of options (`retrieval_kwargs`), or None when absent: at most `MAX_OPTIONS`
    keys, `MAX_OPTIONS_DEPTH` levels and `MAX_OPTIONS_CHARS` characters as JSON. Which keys
    and values are right is the engine's to say."""
    value = body.get(key)
    if value is None:
        return None
    if not isinstance(value, dict):
        raise FieldError(f"'{key}' must be an object or null")
    if len(value) > MAX_OPTIONS:
        raise FieldError(f"'{key}' has more than {MAX_OPTIONS} keys")
    if _deeper(value, MAX_OPTIONS_DEPTH):
        raise FieldError(f"'{key}' is nested deeper than {MAX_OPTIONS_DEPTH} levels")
    if len(json_utf8(value)) > MAX_OPTIONS_CHARS:
        raise FieldError(f"'{key}' is longer than {MAX_OPTIONS_CHARS} characters as JSON")
    for inner in _strings(value):
        if _has_lone_surrogate(inner):
            raise FieldError(f"'{key}' holds a lone UTF-16 surrogate, which is not text")
    return value


def spec_field(body: Mapping[str, Any], key: str) -> str | dict[str, Any] | None:
    """An option given as text or as an object (a fault plan): bounded like `options_field`
    either way; None when absent. What it says is the engine's to check."""
    value = body.get(key)
    if isinstance(value, str):
        return text_field(body, key, max_chars=MAX_OPTIONS_CHARS)
    if value is not None and not isinstance(value, dict):
        raise FieldError(f"'{key}' must be text, an object or null")
    return options_field(body, key)


def _deeper(value: Any, levels: int) -> bool:
    """Whether `value` has more than `levels` levels of objects and lists."""
    layer = [value]
    for _ in range(levels):
        layer = [
            inner
            for item in layer
            for inner in (item.values() if isinstance(item, dict) else item)
            if isinstance(inner, dict | list)
        ]
        if not layer:
            return False
    return True


def _strings(value: Any):
    """Every key and string inside a (bounded) options object."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, inner in value.items():
            yield key
            yield from _strings(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from _strings(inner)


def trial_field(body: Mapping[str, Any], key: str = "trial") -> int:
    """A trial number: a whole number from 0 to `MAX_TRIAL` (0 when absent)."""
    value = body.get(key, 0)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_TRIAL:
        raise FieldError(f"'{key}' must be a whole number from 0 to {MAX_TRIAL}")
    return value


# --- text going out ---------------------------------------------------------------------------
def json_utf8(value: Any, default: Any = None) -> bytes:
    """`value` as compact JSON in UTF-8. A lone surrogate can still come from inside (a model's
    output on the harness's own in-process path, which no client reaches): it is then written
    as a `\\u` escape, so a reply or a state is never unreadable."""
    try:
        return json.dumps(
            value, ensure_ascii=False, separators=(",", ":"), default=default
        ).encode()
    except UnicodeEncodeError:
        return json.dumps(value, separators=(",", ":"), default=default).encode()


def json_utf8_floatless(value: Any) -> bytes:
    """`json_utf8(value)`, byte for byte, for a value that holds no float, through orjson (~5x
    faster): orjson writes floats' exponents (`1e-5`) and non-finite numbers its own way, so a
    value with floats goes to `json_utf8`. What orjson refuses (integers past 64 bits, keys that
    are not strings, lone surrogates) goes there too."""
    try:
        return orjson.dumps(value)
    except TypeError:
        return json_utf8(value)
