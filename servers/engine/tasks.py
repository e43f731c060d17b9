"""Task files in the reference layout, read into typed models (unknown fields kept)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Requestor = Literal["assistant", "user"]


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class ToolCallRecord(_Open):
    id: str = ""
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    requestor: Requestor = "assistant"


class MessageRecord(_Open):
    role: str
    content: str | None = None
    tool_calls: list[ToolCallRecord] | None = None
    id: str | None = None
    requestor: Requestor | None = None
    error: bool = False


class Action(_Open):
    action_id: str = ""
    requestor: Requestor = "assistant"
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    info: str | None = None
    compare_args: list[str] | None = None

    def matches(self, name: str, arguments: dict[str, Any]) -> bool:
        """Does a tool call satisfy this action? Compares `compare_args`, or all the call's
        arguments when that is unset."""
        if name != self.name:
            return False
        keys = list(arguments) if self.compare_args is None else self.compare_args
        if not keys:
            return True
        want = {k: v for k, v in self.arguments.items() if k in keys}
        got = {k: v for k, v in arguments.items() if k in keys}
        return want == got


class EnvFunctionCall(_Open):
    env_type: Requestor
    func_name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class EnvAssertion(EnvFunctionCall):
    assert_value: bool = True
    message: str | None = None


class InitializationData(_Open):
    agent_data: dict[str, Any] | None = None
    user_data: dict[str, Any] | None = None


class InitialState(_Open):
    initialization_data: InitializationData | None = None
    initialization_actions: list[EnvFunctionCall] | None = None
    message_history: list[MessageRecord] | None = None


class EvaluationCriteria(_Open):
    actions: list[Action] | None = None
    env_assertions: list[EnvAssertion] | None = None
    communicate_info: list[str] | None = None
    nl_assertions: list[str] | None = None
    reward_basis: list[str] = Field(default_factory=lambda: ["DB", "COMMUNICATE"])


class Task(_Open):
    id: str
    description: Any = None
    user_scenario: Any = None
    ticket: str | None = None
    initial_state: InitialState | None = None
    evaluation_criteria: EvaluationCriteria | None = None
