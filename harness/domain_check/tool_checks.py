"""Tool declarations and what clients are shown of them.

Every tool (listed or hidden, on either side) has a description and typed parameters; every
listing a surface shows (for each retrieval config of a domain that has them) is valid JSON
Schema for an object whose required parameters it describes; and no name is on both sides
(a solo agent is offered both sides' tools at once). The listing is read, as every surface
reads it, through a registered surface: this check's own.
"""

from __future__ import annotations

import inspect
import json
from functools import lru_cache
from typing import Any

import jsonschema

from tau_mcp.harness.domain_check.findings import Finding, error
from tau_mcp.servers.engine.domain import Domain
from tau_mcp.servers.engine.toolkit import Toolkit, ToolSpec
from tau_mcp.servers.surfaces import ShownTool, View, listing_as_shown, register_surface

#: The keywords by which a JSON Schema gives a value a type.
TYPING_KEYWORDS = ("type", "$ref", "anyOf", "oneOf", "allOf", "enum", "const")


async def _shown_by_domain_check(
    domain: Domain, view: View, variant: str | None
) -> list[ShownTool] | None:
    if view == "solo":
        return None
    return listing_as_shown(DOMAIN_CHECK.tools(domain, view, variant))


#: `tau-harness domain check`: validates each side's listing as every surface shows it.
DOMAIN_CHECK = register_surface(
    "tau-harness domain check", ("agent", "user"), _shown_by_domain_check
)


def check_tools(domain: Domain) -> tuple[list[Finding], int]:
    """The tool findings, and how many tools were checked."""
    findings: list[Finding] = []
    toolkits = _toolkits(domain)
    for side, toolkit in toolkits.items():
        for spec in (*toolkit.specs.values(), *toolkit.hidden_specs.values()):
            findings += _declaration(side, toolkit, spec, domain.spec.tools_file is not None)
    variants = domain.variants.names if domain.variants is not None else [None]
    for variant in variants:
        for side in toolkits:
            for tool in listing_as_shown(DOMAIN_CHECK.tools(domain, side, variant)):  # type: ignore[arg-type]
                findings += _listed(side, tool, toolkits[side], variant)
    findings += _names_on_both_sides(domain, toolkits)
    checked = sum(len(t.specs) + len(t.hidden_specs) for t in toolkits.values())
    return list(dict.fromkeys(findings)), checked


def _toolkits(domain: Domain) -> dict[str, type[Toolkit]]:
    sides: dict[str, type[Toolkit]] = {"agent": domain.spec.agent_tools}
    if domain.spec.user_tools is not None:
        sides["user"] = domain.spec.user_tools
    return sides


def _declaration(
    side: str, toolkit: type[Toolkit], spec: ToolSpec, listed_from_file: bool = False
) -> list[Finding]:
    """A tool as its toolkit declares it: docstring and annotations (a domain that lists its
    tools from a file of its data, as the original τ-bench calls them without validating, types
    its parameters there: the listing's check covers them)."""
    findings = []
    if not spec.description.strip():
        findings.append(
            error(
                "tool-description",
                f"the {side} tool has no description (its method's docstring is empty)",
                tool=spec.name,
            )
        )
    for name, schema in (spec.input_schema.get("properties") or {}).items():
        if not listed_from_file and not _typed(schema):
            findings.append(
                error(
                    "tool-parameters",
                    f"parameter '{name}' of the {side} tool has no type annotation",
                    tool=spec.name,
                )
            )
    return findings


def _listed(
    side: str, tool: ShownTool, toolkit: type[Toolkit], variant: str | None
) -> list[Finding]:
    """A tool as a surface lists it."""
    name = tool["name"]
    where = f"the {side} listing" + (f" of '{variant}'" if variant else "")
    findings = []
    if not (tool.get("description") or "").strip():
        findings.append(
            error("tool-description", f"{where} shows it with no description", tool=name)
        )
    schema = tool.get("parameters") or {}
    problem = _schema_problem(json.dumps(schema, sort_keys=True))
    if problem is not None:
        findings.append(
            error("tool-schema", f"{where} shows an invalid JSON Schema: {problem}", tool=name)
        )
        return findings
    if schema.get("type") != "object" or not isinstance(schema.get("properties", {}), dict):
        findings.append(
            error("tool-schema", f"{where} shows a schema that is not an object's", tool=name)
        )
        return findings
    properties = schema.get("properties") or {}
    for parameter, sub in properties.items():
        if not _typed(sub):
            findings.append(
                error(
                    "tool-parameters",
                    f"{where} shows parameter '{parameter}' with no type",
                    tool=name,
                )
            )
    for parameter in schema.get("required") or []:
        if parameter not in properties:
            findings.append(
                error(
                    "tool-schema",
                    f"{where} requires parameter '{parameter}' but does not describe it",
                    tool=name,
                )
            )
    method = getattr(toolkit, name, None)
    if callable(method):
        for parameter in _required_parameters(method):
            if parameter not in properties:
                findings.append(
                    error(
                        "tool-schema",
                        f"{where} does not offer parameter '{parameter}', which the tool requires",
                        tool=name,
                    )
                )
    return findings


@lru_cache(maxsize=1024)
def _schema_problem(text: str) -> str | None:
    """What makes a schema (as JSON text: the retrieval configs list most tools alike) invalid
    against its JSON Schema dialect's meta-schema, or None."""
    schema = json.loads(text)
    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.SchemaError as exc:
        return exc.message
    return None


def _required_parameters(method: Any) -> list[str]:
    return [
        p.name
        for p in list(inspect.signature(method).parameters.values())[1:]  # after self
        if p.default is inspect.Parameter.empty
        and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    ]


def _typed(schema: Any) -> bool:
    return isinstance(schema, dict) and any(key in schema for key in TYPING_KEYWORDS)


def _names_on_both_sides(domain: Domain, toolkits: dict[str, type[Toolkit]]) -> list[Finding]:
    if "user" not in toolkits:
        return []
    agent = set(toolkits["agent"].specs) | set(toolkits["agent"].hidden_specs)
    if domain.variants is not None:
        for variant in domain.variants.names:
            agent |= set(domain.variants.added_specs(variant))
    user = set(toolkits["user"].specs) | set(toolkits["user"].hidden_specs)
    return [
        error(
            "tool-names",
            "both the agent and the user have a tool of this name, so a solo agent, offered "
            "both sides at once, cannot tell them apart",
            tool=name,
        )
        for name in sorted(agent & user)
    ]
