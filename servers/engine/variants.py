"""Variants: one domain, several ways to set an episode up.

Some domains run the same tasks under set-ups that change what the agent is shown:
banking_knowledge's retrieval configs (`--retrieval-config bm25_grep`, `full_kb`, ...) decide
which agent tools exist (KB_search, grep, shell, ...), what backs them, and the agent's policy.
A domain with variants declares `DomainSpec.variants`, a function that builds its catalog from
the loaded domain. An episode is created with a variant name and options (None: the catalog's
default); the resolved variant then adds its tools to that episode's agent toolkit and decides
which agent tools are listed, in which order, and the policy. Every surface (HTTP, MCP, the harness, the integrations)
passes the name and options through to here, so there is one place that knows them.

A bad name or option, or a variant this machine cannot run (a missing API key, no sandbox), is a
`VariantError`: a 400 with one sentence.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Protocol

from tau_mcp.servers.engine.errors import EngineError
from tau_mcp.servers.engine.tasks import Task
from tau_mcp.servers.engine.toolkit import Toolkit, ToolSpec

# What surfaces call a variant's name and options (the reference's flags, banking_knowledge's
# `--retrieval-config` and `--retrieval-config-kwargs`, and the HTTP contract's body fields).
NAME_OPTION = "retrieval_config"
KWARGS_OPTION = "retrieval_kwargs"


class VariantError(EngineError):
    """An unknown variant, bad options, or a variant whose requirements are not met here."""

    status = 400


class Variant(Protocol):
    """One resolved set-up of a domain's episodes."""

    name: str  # canonical name
    kwargs: Mapping[str, Any]  # the options applied (for results files)
    agent_tools: tuple[str, ...]  # the agent tools an episode lists, in order
    # Tools the variant adds to each episode's agent toolkit (`Toolkit.add_tools`), shared by
    # every episode of the variant; None: none.
    tools: Toolkit | None
    # Whether `policy` depends on the task (banking's golden_retrieval inlines its documents).
    policy_per_task: bool

    def policy(self, task: Task | None) -> str:
        """The agent's policy for an episode of `task` (None: no task)."""
        ...


class VariantCatalog(Protocol):
    """All variants of one loaded domain."""

    default: str
    names: list[str]  # every name a caller may pass (sorted; aliases not included)

    def resolve(self, name: str | None, kwargs: Mapping[str, Any] | None) -> Variant:
        """The variant `name` (None: the default) with options applied; `VariantError` when
        the name or options are wrong or the variant cannot run on this machine."""
        ...

    def agent_tools(self, name: str) -> tuple[str, ...]:
        """The agent tools of `name`, whether or not it can run here (for listings)."""
        ...

    def added_specs(self, name: str) -> dict[str, ToolSpec]:
        """The specs of the tools variant `name` adds to the agent toolkit (for listings)."""
        ...


def parse_kwargs(
    text: str | None, flag: str = "--retrieval-config-kwargs"
) -> dict[str, Any] | None:
    """A command line's JSON object of variant options (None when not given)."""
    if text is None:
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise VariantError(f"{flag} is not valid JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(value, dict):
        raise VariantError(f"{flag} must be a JSON object such as '{{\"top_k\": 5}}'")
    return value
