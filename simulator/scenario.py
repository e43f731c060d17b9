"""Reading a task's user scenario (persona and instructions) as text for a simulated user."""

from __future__ import annotations

from typing import Any

_INSTRUCTION_PARTS = (
    ("domain", "Domain"),
    ("reason_for_call", "Why you are calling"),
    ("known_info", "What you know"),
    ("unknown_info", "What you do not know"),
    ("task_instructions", "How to behave"),
)


def _as_dict(value: Any) -> Any:
    return value.model_dump() if hasattr(value, "model_dump") else value


def scenario_text(user_scenario: Any) -> str:
    """The whole scenario as headed sections."""
    scenario = _as_dict(user_scenario)
    if scenario is None:
        return ""
    if isinstance(scenario, str):
        return scenario
    sections: list[str] = []
    if scenario.get("persona"):
        sections.append(f"## Who you are\n{scenario['persona']}")
    instructions = _as_dict(scenario.get("instructions"))
    if isinstance(instructions, dict):
        for key, title in _INSTRUCTION_PARTS:
            if instructions.get(key):
                sections.append(f"## {title}\n{instructions[key]}")
    elif instructions:
        sections.append(f"## Your situation\n{instructions}")
    return "\n\n".join(sections)


def reason_for_call(user_scenario: Any) -> str:
    """One opening line for a scripted user: the scenario's reason for calling."""
    scenario = _as_dict(user_scenario)
    instructions = (
        _as_dict(scenario.get("instructions")) if isinstance(scenario, dict) else scenario
    )
    if isinstance(instructions, dict) and instructions.get("reason_for_call"):
        return str(instructions["reason_for_call"]).strip()
    if isinstance(instructions, str) and instructions.strip():
        return instructions.strip().splitlines()[0]
    return "Hi, I need some help with my account."
