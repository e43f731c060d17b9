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
`fields_of` instead.
"""

from __future__ import annotations

import json
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


def fields_of(value: Any) -> dict[str, Any]:
    """A record's (or a plain dict's) keys and values in order, as a new dict."""
    if isinstance(value, Record):
        extra = value.__pydantic_extra__
        return {**value.__dict__, **extra} if extra else dict(value.__dict__)
    return dict(value)


def dumps(value: Any) -> str:
    """`json.dumps` of a record (or of JSON holding records) as the original dumps its dicts."""
    return json.dumps(to_jsonable_python(value))


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
