"""Every place that shows a domain's tools to a model or a client (a *surface*), and the one door
to the listing they all show.

The listing is computed in one function, `tau_mcp.servers.engine.tool_listing.tool_listing`: names,
descriptions, input schemas and order are the reference's when the data folder carries its tool
texts (`tau2/reference_texts/tools/<domain>.json`), else our toolkits' own. No module but this
one reads that function (tests/test_tool_listing.py checks the imports), so a surface obtains its
tools through `Surface.tools`, which answers only a surface registered here.

A surface registers itself in the module that builds it, with `shown`: how to obtain, for one
loaded domain and one view, the tools it really shows, through its own code path (an MCP
`tools/list` on its endpoint, the `tools` a model request would carry, a Gymnasium `info`). The
enumeration test runs `shown` of every registered surface for every domain and view and compares
it with the reference's file (or, on data without reference texts, with our own listing), so a
surface is checked from the moment it exists.

Views: `agent` and `user` are one side's tools; `solo` is what a solo agent is offered (agent
tools, then user tools, then the finishing tool). Tools a surface adds of its own (serve's
`send_message_to_user`, the Gymnasium agent seat's `done`) are declared in `extra_tools` and come
after the listing. A surface that must hand tools to a framework in the framework's own schema
type (Inspect's `ToolParams`) declares that conversion as `rendering`; the test then expects the
reference's tools through that conversion. A surface that shows the user only the task's own
`user_tools`, as the reference narrows its user simulator's tools, says so with
`narrows_user_tools`.

Variants: where a domain's agent tools depend on a run option (banking_knowledge's retrieval
config, an engine variant: `servers/engine/variants.py`), a listing is per (domain, side,
variant): `Surface.tools(domain, side, variant)`, the variant's name (None: the variant the
domain's own toolkit is, or no variant at all). `shown` is run with the variant the surface is
started with (`--retrieval-config`, an episode's `retrieval_config`), so the enumeration covers
every config a surface can run here.
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

from tau_mcp.servers.engine import tool_listing as _listing
from tau_mcp.servers.engine.domain import Domain
from tau_mcp.servers.engine.episode import Episode
from tau_mcp.servers.engine.tool_listing import ToolListing
from tau_mcp.servers.engine.toolkit import Side
from tau_mcp.servers.engine.variants import Variant

View = Literal["agent", "user", "solo"]
#: One shown tool in the OpenAI function layout the reference's file uses:
#: {"name": ..., "description": ..., "parameters": {...}}.
ShownTool = dict[str, Any]
#: What a surface shows for (domain, view, variant), obtained through its real code path run with
#: that variant (a retrieval config's name; None for a domain without variants); None when the
#: surface does not offer that view for this domain (solo mode on airline, say).
Shown = Callable[[Domain, View, str | None], Awaitable[list[ShownTool] | None]]


class UnregisteredSurface(LookupError):
    """A listing was asked for by a surface that is not in the registry."""


class ListingMismatch(RuntimeError):
    """Two paths of one surface (two URLs, two protocol revisions) list different tools."""


@dataclass(frozen=True, eq=False)
class Surface:
    """One place that shows tools. `views`: what it shows (see the module docstring)."""

    name: str
    views: tuple[View, ...]
    shown: Shown
    extra_tools: tuple[str, ...] = ()
    rendering: Callable[[ShownTool], ShownTool] | None = None
    narrows_user_tools: bool = False

    def tools(self, domain: Domain, side: Side, variant: str | None = None) -> ToolListing:
        """The one listing of `side`'s tools, as every surface shows it; `variant` names the
        retrieval config (engine variant) whose agent tools are listed."""
        if _REGISTRY.get(self.name) is not self:
            raise UnregisteredSurface(f"surface '{self.name}' is not registered")
        return _listing.tool_listing(domain, side, variant)

    def episode_tools(self, episode: Episode, side: Side) -> ToolListing:
        """The listing of `side`'s tools of one episode (its variant's, when it has one)."""
        return self.tools(episode.domain, side, variant_name(episode.variant))


_REGISTRY: dict[str, Surface] = {}
_LOCK = threading.Lock()


def register_surface(
    name: str,
    views: tuple[View, ...],
    shown: Shown,
    extra_tools: tuple[str, ...] = (),
    rendering: Callable[[ShownTool], ShownTool] | None = None,
    narrows_user_tools: bool = False,
) -> Surface:
    """Add a surface to the registry (by name: registering a name again replaces it)."""
    surface = Surface(name, tuple(views), shown, tuple(extra_tools), rendering, narrows_user_tools)
    with _LOCK:
        _REGISTRY[name] = surface
    return surface


def surfaces() -> list[Surface]:
    """Every registered surface, in registration order."""
    with _LOCK:
        return list(_REGISTRY.values())


def solo_stop_tool(domain: Domain) -> tuple[str, str, dict[str, Any]] | None:
    """The finishing tool a solo agent is offered after its tools, as the reference declares it
    (name, description, parameters); None without reference texts or solo mode."""
    return _listing.reference_stop_tool(domain)


def variant_name(variant: Variant | None) -> str | None:
    """The name a listing is asked for with (None: no variant)."""
    return variant.name if variant is not None else None


def as_shown(name: str, description: str, parameters: dict[str, Any] | None) -> ShownTool:
    return {"name": name, "description": description, "parameters": dict(parameters or {})}


def listing_as_shown(listing: ToolListing) -> list[ShownTool]:
    return [as_shown(s.name, s.description, s.input_schema) for s in listing.tools]


def from_openai(schemas: list[dict[str, Any]]) -> list[ShownTool]:
    """Shown tools from the `tools` of a chat-completions request."""
    out = []
    for schema in schemas:
        function = schema.get("function", schema)
        out.append(
            as_shown(
                function["name"], function.get("description") or "", function.get("parameters")
            )
        )
    return out
