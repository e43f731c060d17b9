"""A kind of retrieval backend (how to build it, what it needs from the machine) and the table
of registered kinds, with the backends built from them.

`tau_mcp.servers.knowledge.registry` registers the offline kinds and imports `tau_mcp.servers.knowledge.kinds`
(network and shell), so whoever resolves a configuration imports the registry and finds every kind.
Backends are built once per (kind, parameters, knowledge base) and shared by every episode.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from tau_mcp.servers.knowledge.documents import KnowledgeBase

Role = Literal["retriever", "postprocessor", "tool"]


@dataclass(frozen=True)
class Requirement:
    """Something a backend needs from the machine; `met()` says whether it is there now."""

    description: str  # e.g. "OPENAI_API_KEY (embeddings)"; shown in the refusal
    met: Callable[[], bool] = field(compare=False)


def env_var(name: str, purpose: str) -> Requirement:
    """An environment variable that must be set and non-empty (an API key)."""
    return Requirement(f"{name} ({purpose})", lambda: bool(os.environ.get(name)))


@dataclass(frozen=True)
class BackendKind:
    """How to build one kind of backend from a configuration's parameters.

    `build(base, params)` returns the backend: a `Retriever` (role "retriever"), a
    `Postprocessor` ("postprocessor") or any object a tool calls ("tool", e.g. a shell sandbox).
    `requirements(params)` lists what it needs; `params` are the configuration's spec fields.
    """

    name: str
    role: Role
    build: Callable[[KnowledgeBase, Mapping[str, Any]], Any]
    requirements: Callable[[Mapping[str, Any]], list[Requirement]] = lambda params: []


_KINDS: dict[str, BackendKind] = {}
_BUILT: dict[tuple, Any] = {}
_LOCK = threading.Lock()


def register(kind: BackendKind) -> None:
    """Add or replace a backend kind (network and sandbox modules call this on import)."""
    _KINDS[kind.name] = kind
    with _LOCK:
        for key in [k for k in _BUILT if k[0] == kind.name]:
            del _BUILT[key]


def kind(name: str) -> BackendKind | None:
    return _KINDS.get(name)


def missing(name: str, params: Mapping[str, Any]) -> list[str]:
    """Why a backend of kind `name` cannot be built now (empty when it can)."""
    found = _KINDS.get(name)
    if found is None:
        return [f"the '{name}' backend, which this build does not include"]
    return [r.description for r in found.requirements(params) if not r.met()]


def _frozen(value: Any) -> Hashable:
    if isinstance(value, Mapping):
        return tuple(sorted((k, _frozen(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return tuple(_frozen(v) for v in value)
    return value


def backend(name: str, base: KnowledgeBase, params: Mapping[str, Any]) -> Any:
    """The shared backend of kind `name` for these parameters over `base`, built on first use."""
    key = (name, id(base), _frozen(params))
    built = _BUILT.get(key)
    if built is None:
        with _LOCK:
            built = _BUILT.get(key)
            if built is None:
                found = _KINDS.get(name)
                if found is None:
                    raise LookupError(f"no retrieval backend of kind '{name}' is registered")
                built = _BUILT[key] = found.build(base, params)
    return built
