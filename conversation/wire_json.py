"""JSON for model requests and replies, and request bodies built from a per-tool-list template.

An agent's request body is mostly its tool schemas and sampling parameters, which are the same on
every turn; only the messages change. So the body's text is encoded once per tool list with a
placeholder where the messages go, and each call encodes just the messages and splices them in.

orjson encodes and decodes several times faster than the standard library. Its output differs in
form only (compact separators, non-ASCII as UTF-8 rather than `\\u` escapes, shortest float
repr), never in JSON value (NaN and infinities, which JSON lacks, become null where `json` wrote
bare `NaN`); anything it refuses (lone surrogates, non-string keys, integers past 64 bits) goes
through `json` instead, as before.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

try:
    import orjson
except ImportError:  # pragma: no cover - orjson is a dependency; stay usable without it
    orjson = None  # type: ignore[assignment]

# Stands in for the messages while a template is encoded; no real body holds this string.
_PLACEHOLDER = "\x00tau-mcp:messages\x00"


def dumps(value: Any) -> bytes:
    """`value` as UTF-8 JSON bytes."""
    if orjson is not None:
        try:
            return orjson.dumps(value)
        except TypeError:  # orjson.JSONEncodeError subclasses TypeError
            pass
    return json.dumps(value).encode()


def loads(raw: bytes) -> Any:
    """Parse JSON bytes; raises ValueError on anything that is not JSON. What orjson refuses
    but JSON allows (the escape of a lone UTF-16 surrogate, `\\ud800`, which a model's output
    can hold) is read by `json`, as litellm's client reads it."""
    if orjson is not None:
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:  # subclasses ValueError
            pass
    return json.loads(raw)


@dataclass(frozen=True)
class BodyTemplate:
    """A request body's text around its `messages` value (or, should the placeholder be found
    elsewhere in the body too, the body itself, encoded whole per call)."""

    prefix: bytes
    suffix: bytes
    whole: dict[str, Any] | None = None

    def render(self, messages: list[dict[str, Any]]) -> bytes:
        if self.whole is not None:
            return dumps({**self.whole, "messages": messages})
        return b"".join((self.prefix, dumps(messages), self.suffix))


def template(body: dict[str, Any]) -> BodyTemplate:
    """The template of a body whose `messages` key holds the messages (its value is ignored).

    Key order is the body's own, so a rendered body has the same layout as the dict encoded."""
    text = dumps({**body, "messages": _PLACEHOLDER})
    marker = dumps(_PLACEHOLDER)
    if text.count(marker) != 1:
        return BodyTemplate(b"", b"", whole=dict(body))
    prefix, suffix = text.split(marker)
    return BodyTemplate(prefix, suffix)
