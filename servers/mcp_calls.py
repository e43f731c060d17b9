"""A tool call on an episode as every MCP path answers it, FastMCP or not.

The FastMCP servers (`tau_mcp.servers.mcp_tools`) and the short path for sessionless calls
(`tau_mcp.servers.fast_calls`) run a call the same way: on the episode, slow tools off the
event loop, and always a result, never an exception. The Eval Protocol path reshapes the
result into a JSON object. Nothing here imports FastMCP.
"""

from __future__ import annotations

import json
import logging
import os
from typing import Any

from tau_mcp.conversation.tools import COST_META, FAULT_META
from tau_mcp.servers.engine.episode import Episode, ToolOutcome
from tau_mcp.servers.engine.errors import EngineError
from tau_mcp.servers.engine.toolkit import Side

log = logging.getLogger("tau.server")

# Eval Protocol path: wrap array/scalar/plain-text results as {"result": ...} (on by default).
EP_WRAP_ENV = "TAU_EP_WRAP_RESULTS"


def failure(exc: EngineError) -> ToolOutcome:
    """An engine error as the failed call's result, as the reference words it."""
    return ToolOutcome(f"Error: {exc}", True)


async def call_on_episode(
    episode: Episode, side: Side, name: str, arguments: dict[str, Any]
) -> ToolOutcome:
    """One tool call on an episode, as a result (never an exception); slow tools run off the
    event loop (`Episode.call_async`). An episode created with faults runs the call through
    its fault injector (`tau_mcp.servers.engine.fault_injector`), on every MCP path alike."""
    try:
        faults = episode.faults
        if faults is not None:
            return await faults.call(episode, side, name, arguments)
        return await episode.call_async(side, name, arguments)
    except EngineError as exc:
        return failure(exc)
    except Exception as exc:  # noqa: BLE001 - a client must get a result, never a crash
        log.exception("tool %s failed outside the engine", name)
        return ToolOutcome(f"Error: internal server error ({type(exc).__name__})", True)


def result_meta(outcome: ToolOutcome) -> dict[str, Any] | None:
    """A result's `_meta`: what the call's own model calls cost, and the injected fault it met
    (for harnesses: a model is shown the text); None when neither applies."""
    if not outcome.cost and outcome.fault is None:
        return None
    meta: dict[str, Any] = {}
    if outcome.cost:
        meta[COST_META] = outcome.cost
    if outcome.fault is not None:
        meta[FAULT_META] = outcome.fault
    return meta


def ep_wrap_default() -> bool:
    return os.environ.get(EP_WRAP_ENV, "1").strip().lower() not in ("0", "false", "no", "off")


def as_json_object(outcome: ToolOutcome, wrap: bool = True) -> ToolOutcome:
    """The Eval Protocol shape: the text is always a JSON object when `wrap` (failures become
    {"error": message}); without `wrap` only failures are reshaped."""
    if outcome.error:
        message = outcome.text.removeprefix("Error: ")
        return ToolOutcome(json.dumps({"error": message}), True, outcome.cost, outcome.fault)
    if not wrap:
        return outcome
    try:
        value = json.loads(outcome.text)
    except (json.JSONDecodeError, TypeError):
        value = outcome.text
    if isinstance(value, dict):
        return outcome
    return ToolOutcome(json.dumps({"result": value}), False, outcome.cost, outcome.fault)
