"""What a client is shown of a domain side's tools: names, descriptions, argument schemas, order.

A model must see the tools exactly as the reference benchmark shows them, or a score stops meaning
what a tau2-bench score means. So when the data folder carries the reference's tool texts
(`tau2/reference_texts/tools/<domain>.json`, read at run time like the policies), every listing
uses their descriptions, input schemas and order. Without them (our demo data) the listing is
our toolkits' own docstrings and signatures. Either way the engine's tool kinds ride along, so MCP
annotations (read-only, destructive) stay derived from the engine.

Listings are computed once per domain and side and then shared by every endpoint and session.

A domain whose data carries its reference tool listing in its own folder (`DomainSpec.tools_file`,
the original τ-bench's `tools.json`: a JSON list of the agent's function schemas) is listed from
that file instead; it lists no user tools.

Where the reference's tool set depends on a run option (banking_knowledge's retrieval config),
its file lists tool names per variant (`{"agent": {variant: [names]}, "schemas": {name:
schema}}`, user tools as `"user": [names]` with `"user_schemas": [schemas]`). A domain's own
listing uses `DomainSpec.tool_variant`; a listing of a toolkit with tools added per episode
(`Toolkit.add_tools`) is `listing_for(domain, side, specs, variant)`.
"""

from __future__ import annotations

import dataclasses
import logging
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from tau_mcp.servers.engine import data as datafiles
from tau_mcp.servers.engine.domain import Domain
from tau_mcp.servers.engine.errors import DataError
from tau_mcp.servers.engine.toolkit import Side, ToolSpec

log = logging.getLogger("tau.engine")

TextSource = Literal["reference", "own"]


@dataclasses.dataclass(frozen=True)
class ToolListing:
    """One side's tools in the order clients see them, and where their texts came from."""

    tools: tuple[ToolSpec, ...]
    source: TextSource

    def schemas(self) -> dict[str, dict[str, Any]]:
        return {spec.name: spec.input_schema for spec in self.tools}


def reference_tools_file(data_dir: Path, domain: str) -> Path:
    return data_dir / "tau2" / "reference_texts" / "tools" / f"{domain}.json"


def reference_tools_path(domain: Domain) -> Path:
    """Where a domain's reference tool texts are: its own file, else tau2's reference texts."""
    if domain.spec.tools_file is not None:
        return domain.folder / domain.spec.tools_file
    return reference_tools_file(domain.data_dir, domain.name)


def _own_specs(domain: Domain, side: Side) -> dict[str, ToolSpec]:
    toolkit = domain.spec.agent_tools if side == "agent" else domain.spec.user_tools
    return dict(toolkit.specs) if toolkit is not None else {}


def _named_schemas(raw: dict[str, Any], side: Side) -> dict[str, Any]:
    """Schemas a file lists by tool name: its `schemas` map and its `<side>_schemas` list."""
    named = dict(raw.get("schemas") or {}) if isinstance(raw.get("schemas"), dict) else {}
    listed = raw.get(f"{side}_schemas")
    for entry in listed if isinstance(listed, list) else []:
        function = entry.get("function") if isinstance(entry, dict) else None
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            named[function["name"]] = entry
    return named


def _reference_entries(
    path: Path, side: Side, variant: str | None = None
) -> list[tuple[str, str, dict[str, Any]]]:
    """(name, description, parameters) of each tool the reference lists for `side` (and the
    `variant`, in a file that lists tools per variant), in order."""
    raw = datafiles.load_structured(path)
    if isinstance(raw, list):  # a bare list: the agent's tools
        raw = {"agent": raw, "user": []}
    entries = raw.get(side) if isinstance(raw, dict) else None
    if isinstance(entries, dict):
        if variant not in entries:
            raise DataError(f"data file {path} lists no '{side}' tools for '{variant}'")
        entries = entries[variant]
    if not isinstance(entries, list):
        raise DataError(f"data file {path} has no '{side}' list of tool schemas")
    if any(isinstance(entry, str) for entry in entries):
        named = _named_schemas(raw, side)
        missing = [entry for entry in entries if isinstance(entry, str) and entry not in named]
        if missing:
            raise DataError(f"data file {path} has no schema for tool '{missing[0]}'")
        entries = [named[entry] if isinstance(entry, str) else entry for entry in entries]
    out = []
    for index, entry in enumerate(entries):
        function = entry.get("function") if isinstance(entry, dict) else None
        name = function.get("name") if isinstance(function, dict) else None
        params = function.get("parameters", {}) if isinstance(function, dict) else None
        if not isinstance(name, str) or not isinstance(params, dict):
            raise DataError(f"tool #{index} of '{side}' in {path} is not an OpenAI function schema")
        out.append((name, function.get("description") or "", params))
    return out


def _named_schema(raw: dict[str, Any], path: Path, side: Side, name: str) -> dict[str, Any]:
    schemas = raw.get("schemas")
    if isinstance(schemas, dict) and name in schemas:
        return schemas[name]
    for entry in raw.get(f"{side}_schemas") or []:
        if isinstance(entry, dict) and (entry.get("function") or {}).get("name") == name:
            return entry
    raise DataError(f"data file {path} names tool '{name}' but has no schema for it")


def _merge(
    own: dict[str, ToolSpec], reference: list[tuple[str, str, dict[str, Any]]], where: str
) -> tuple[ToolSpec, ...]:
    """The reference's tools, in its order, with its texts; a tool only we have keeps our texts
    and goes last; a tool only the reference has is left out (nothing could run it)."""
    listed: list[ToolSpec] = []
    for name, description, params in reference:
        spec = own.get(name)
        if spec is None:
            log.warning("%s lists tool '%s', which this engine does not have", where, name)
            continue
        listed.append(dataclasses.replace(spec, description=description, input_schema=params))
    named = {name for name, _, _ in reference}
    extra = [spec for name, spec in own.items() if name not in named]
    if extra:
        log.warning(
            "%s does not describe %s; listing our own descriptions for them",
            where,
            ", ".join(spec.name for spec in extra),
        )
    return (*listed, *extra)


@lru_cache(maxsize=256)
def tool_listing(domain: Domain, side: Side, variant: str | None = None) -> ToolListing:
    """The tools of one side of a domain as every endpoint lists them (cached per domain, side
    and variant). For a domain with variants (banking_knowledge's retrieval configs) the agent
    side lists a variant's tools, those it adds included; without one, the variant the
    domain's own toolkit is (`DomainSpec.tool_variant`)."""
    own = _own_specs(domain, side)
    if side != "agent":
        return listing_for(domain, side, own)
    variant = variant or domain.spec.tool_variant
    catalog = domain.variants
    if catalog is not None and variant is not None:
        own = own | catalog.added_specs(variant)
    return listing_for(domain, side, own, variant)


def listing_for(
    domain: Domain, side: Side, own: dict[str, ToolSpec], variant: str | None = None
) -> ToolListing:
    """`own` (a toolkit's specs, tools added per episode included) as the reference lists
    them for `variant`; not cached: callers keep what they list often."""
    path = reference_tools_path(domain)
    if not path.is_file():
        if domain.spec.tools_file is not None:  # the domain's data must carry it
            raise DataError(f"missing data file: {path}")
        return ToolListing(tuple(own.values()), "own")
    where = f"{path} ({side}{', ' + variant if variant else ''})"
    reference = _reference_entries(path, side, variant)
    return ToolListing(_merge(own, reference, where), "reference")


@lru_cache(maxsize=64)
def reference_stop_tool(domain: Domain) -> tuple[str, str, dict[str, Any]] | None:
    """(name, description, parameters) of the tool a solo agent calls to finish, as the
    reference declares it; None without reference texts or solo mode for this domain."""
    path = reference_tools_path(domain)
    if not path.is_file():
        return None
    raw = datafiles.load_structured(path)
    solo = raw.get("solo") if isinstance(raw, dict) else None
    done = solo.get("done_tool") if isinstance(solo, dict) else None
    function = done.get("function") if isinstance(done, dict) else None
    if not isinstance(function, dict) or not isinstance(function.get("name"), str):
        return None
    return function["name"], function.get("description") or "", function.get("parameters", {})
