"""Tasks name only what exists: each gold action, message-history call and listed user tool a
tool of its side; each env assertion an assertion function of its side; each initialization
action a function of its side; each `compare_args` entry a parameter of the action's tool; and
nothing on the user's side of a domain whose user has no tools."""

from __future__ import annotations

import inspect
from typing import Any

from tau_mcp.harness.domain_check.findings import Finding, error
from tau_mcp.servers.engine.domain import Domain
from tau_mcp.servers.engine.tasks import Task
from tau_mcp.servers.engine.toolkit import Toolkit

_SIDE = {"assistant": "agent", "agent": "agent", "user": "user"}


class _Sides:
    """What each side of the domain can run: its toolkit class and every tool name it has
    (listed, hidden, and those a retrieval config adds to the agent)."""

    def __init__(self, domain: Domain) -> None:
        spec = domain.spec
        self.toolkits: dict[str, type[Toolkit] | None] = {
            "agent": spec.agent_tools,
            "user": spec.user_tools,
        }
        self.tools: dict[str, set[str]] = {
            side: set(kit.specs) | set(kit.hidden_specs) if kit is not None else set()
            for side, kit in self.toolkits.items()
        }
        if domain.variants is not None:
            for variant in domain.variants.names:
                self.tools["agent"] |= set(domain.variants.added_specs(variant))

    def missing_side(self, requestor: str) -> str | None:
        side = _SIDE.get(requestor, "agent")
        return side if self.toolkits[side] is None else None


def check_task_refs(domain: Domain) -> list[Finding]:
    sides = _Sides(domain)
    findings: list[Finding] = []
    for task in domain.tasks.values():
        findings += _gold_actions(task, sides)
        findings += _env_functions(task, sides)
        findings += _history_calls(task, sides)
        findings += _user_tools(task, sides)
    return findings


def _no_side(task: Task, what: str, side: str, tool: str) -> Finding:
    return error(
        "task-refs",
        f"{what} is on the {side}'s side, but the domain's {side} has no tools",
        task=task.id,
        tool=tool,
    )


def _gold_actions(task: Task, sides: _Sides) -> list[Finding]:
    criteria = task.evaluation_criteria
    findings = []
    for index, action in enumerate((criteria.actions if criteria else None) or []):
        side = _SIDE.get(action.requestor, "agent")
        what = f"gold action {index}"
        if sides.missing_side(action.requestor):
            findings.append(_no_side(task, what, side, action.name))
            continue
        if action.name not in sides.tools[side]:
            findings.append(
                error(
                    "task-refs",
                    f"{what} calls a tool the {side} does not have",
                    task=task.id,
                    tool=action.name,
                )
            )
            continue
        method = getattr(sides.toolkits[side], action.name, None)
        parameters = _parameters(method)
        for name in action.compare_args or []:
            if parameters is not None and name not in parameters:
                findings.append(
                    error(
                        "task-refs",
                        f"{what} compares argument '{name}', which the tool does not take",
                        task=task.id,
                        tool=action.name,
                    )
                )
    return findings


def _parameters(method: Any) -> set[str] | None:
    """The parameter names a tool method takes (None: any, or not a method of the toolkit)."""
    if not callable(method):
        return None
    params = list(inspect.signature(method).parameters.values())[1:]
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return None
    return {p.name for p in params}


def _env_functions(task: Task, sides: _Sides) -> list[Finding]:
    findings = []
    criteria = task.evaluation_criteria
    for assertion in (criteria.env_assertions if criteria else None) or []:
        side = _SIDE[assertion.env_type]
        toolkit = sides.toolkits[side]
        if toolkit is None:
            findings.append(_no_side(task, "an env assertion", side, assertion.func_name))
        elif assertion.func_name not in toolkit.assertions:
            findings.append(
                error(
                    "task-refs",
                    f"the env assertion names no assertion function of the {side}'s tools "
                    "(marked @assertion), so it can never be met",
                    task=task.id,
                    tool=assertion.func_name,
                )
            )
    state = task.initial_state
    for action in (state.initialization_actions if state else None) or []:
        side = _SIDE[action.env_type]
        toolkit = sides.toolkits[side]
        if toolkit is None:
            findings.append(_no_side(task, "an initialization action", side, action.func_name))
        elif not callable(getattr(toolkit, action.func_name, None)):
            findings.append(
                error(
                    "task-refs",
                    f"an initialization action names no function of the {side}'s tools",
                    task=task.id,
                    tool=action.func_name,
                )
            )
    return findings


def _history_calls(task: Task, sides: _Sides) -> list[Finding]:
    state = task.initial_state
    findings = []
    for message in (state.message_history if state else None) or []:
        for call in message.tool_calls or []:
            side = _SIDE.get(call.requestor, "agent")
            if sides.missing_side(call.requestor):
                findings.append(_no_side(task, "a call in the message history", side, call.name))
            elif call.name not in sides.tools[side]:
                findings.append(
                    error(
                        "task-refs",
                        f"the message history calls a tool the {side} does not have",
                        task=task.id,
                        tool=call.name,
                    )
                )
    return findings


def _user_tools(task: Task, sides: _Sides) -> list[Finding]:
    """A task's own `user_tools` (the user's tools it allows), where it lists them."""
    listed = getattr(task, "user_tools", None)
    if not isinstance(listed, list):
        return []
    return [
        error(
            "task-refs",
            "the task's user_tools names a tool the user does not have",
            task=task.id,
            tool=str(name),
        )
        for name in listed
        if str(name) not in sides.tools["user"]
    ]
