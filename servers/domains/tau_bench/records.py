"""Records of the original τ-bench's data: typed when the data is loaded, plain JSON afterwards.

The original keeps its database as the dicts `json.load` returns, and its tools change them in
place with whatever the caller passed (nothing is validated). Our records are pydantic models,
checked against the data's types when it is loaded; after that they behave like those dicts:

- `record[key]` reads a field or a key a tool added, and raises what a dict raises (KeyError for
  a missing key, TypeError for an unhashable one); `record[key] = value` writes one, a new key
  going after the others, as in a dict;
- nothing validates what a tool writes, and a record dumps exactly what it holds, in its key
  order (pydantic's own serializer would, say, dump an int written into a float field as a
  float, and the data hash would differ from the original's).

Records have no `keys()`/`items()` methods (retail orders have a field named `items`); tools use
`fields_of` instead. A record deep-copies (what an episode does when it takes one) by walking its
JSON values, several times faster than pydantic's generic deep copy.
"""

from __future__ import annotations

import copy
import json
import weakref
from typing import Any

from pydantic import BaseModel, ConfigDict, model_serializer
from pydantic_core import to_jsonable_python


class Record(BaseModel):
    model_config = ConfigDict(extra="allow")

    @model_serializer(mode="plain")
    def _as_stored(self) -> dict[str, Any]:
        extra = self.__pydantic_extra__
        return {**self.__dict__, **extra} if extra else dict(self.__dict__)

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            fields = self.__dict__
            if key in fields:
                return fields[key]
            extra = self.__pydantic_extra__
            if extra is not None and key in extra:
                return extra[key]
        else:
            hash(key)  # an unhashable key fails as it fails on a dict
        raise KeyError(key)

    def __setitem__(self, key: str, value: Any) -> None:
        setattr(self, key, value)

    def __deepcopy__(self, memo: dict | None = None) -> Record:
        # What pydantic's own __deepcopy__ sets, with the values copied as JSON.
        new = self.__class__.__new__(self.__class__)
        setter = object.__setattr__
        setter(new, "__dict__", {key: _copied(value) for key, value in self.__dict__.items()})
        extra = self.__pydantic_extra__
        setter(new, "__pydantic_extra__", None if extra is None else _copied(extra))
        setter(new, "__pydantic_fields_set__", set(self.__pydantic_fields_set__))
        setter(new, "__pydantic_private__", None)
        return new


_IMMUTABLE = (str, int, float, bool, type(None))


def _copied(value: Any) -> Any:
    kind = type(value)
    if kind in _IMMUTABLE:
        return value
    if kind is dict:
        return {key: _copied(item) for key, item in value.items()}
    if kind is list:
        return [_copied(item) for item in value]
    if isinstance(value, Record):
        return value.__deepcopy__()
    return copy.deepcopy(value)


def fields_of(value: Any) -> dict[str, Any]:
    """A record's (or a plain dict's) keys and values in order, as a new dict."""
    if isinstance(value, Record):
        extra = value.__pydantic_extra__
        return {**value.__dict__, **extra} if extra else dict(value.__dict__)
    return dict(value)


def _as_json(value: Any) -> Any:
    if isinstance(value, Record):
        return fields_of(value)
    return to_jsonable_python(value)


def dumps(value: Any) -> str:
    """`json.dumps` of a record (or of JSON holding records) as the original dumps its dicts."""
    return json.dumps(value, default=_as_json)


# The texts of the shared base records tools have read, per loaded database.
_BASE_TEXTS: weakref.WeakKeyDictionary[Any, dict[tuple[str, Any], str]] = (
    weakref.WeakKeyDictionary()
)


def lookup_text(data: Any, table: str, key: Any, missing: str) -> str:
    """A read tool's answer: the record `data.<table>[key]` as text, or `missing` (the original's
    error text) when there is no such record."""
    return record_text(data, table, key) if key in getattr(data, table) else missing


def record_text(data: Any, table: str, key: Any) -> str:
    """`dumps` of a record a tool only reads, `data.<table>[key]` (which must exist). A record
    the episode has not taken is the shared base record, whose text is kept once read."""
    records = getattr(data, table)
    if records.owns(key):
        return dumps(records.peek(key))
    base = data.base
    texts = _BASE_TEXTS.get(base)
    if texts is None:
        texts = _BASE_TEXTS.setdefault(base, {})
    text = texts.get((table, key))
    if text is None:
        text = texts[(table, key)] = json.dumps(base.field_json(table)[key])
    return text


class Name(Record):
    first_name: str
    last_name: str


class Address(Record):
    """An address as the data holds it (tools that change one write a dict with `state`
    before `country`, kept as written)."""

    address1: str
    address2: str
    city: str
    country: str
    state: str
    zip: str
