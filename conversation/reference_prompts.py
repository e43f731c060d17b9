"""Building model requests from the reference texts (see `tau_mcp.conversation.reference_texts`).

Every sentence a model sees comes from the data folder; this module only applies the rules the
texts describe: filling templates, laying out the user scenario, numbering resolution steps,
choosing the user's guidelines file, flipping roles for the user model, converting messages to
the chat-completions layout, and reading the NL judge's verdicts.
"""

from __future__ import annotations

import json
import re
import textwrap
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import TypeAdapter

from tau_mcp.conversation.messages import ChatMessage, Message, ToolMessage
from tau_mcp.conversation.reference_texts import ReferenceTexts
from tau_mcp.servers.engine.tasks import Action, Task

_PLACEHOLDER = re.compile(r"\{(\w+)\}")
_INDENTED_PLACEHOLDER = re.compile(r"(\s+)\{(\w+)\}")
_BOOL = TypeAdapter(bool)


def fill(template: str, values: Mapping[str, Any]) -> str:
    """Put values into a template's `{name}` slots in one pass (a value's own braces are
    left alone); unknown slots stay as written."""

    def value(match: re.Match) -> str:
        name = match.group(1)
        return str(values[name]) if name in values else match.group(0)

    return _PLACEHOLDER.sub(value, template)


def fill_block(template: str, values: Mapping[str, Any], optional: Iterable[str] = ()) -> str:
    """Fill a multi-line template whose values may span lines.

    A slot alone on an indented line takes the whole value, indented with that line's leading
    whitespace on every line that is not blank (textwrap.indent). An optional slot whose value
    is None is left out together with its label, the line right above it.
    """
    optional = set(optional)
    out: list[str] = []
    for line in template.split("\n"):
        match = _INDENTED_PLACEHOLDER.fullmatch(line)
        if match:
            prefix, name = match.groups()
            value = values.get(name)
            if value is None and name in optional:
                if out:
                    out.pop()
                continue
            out.append(textwrap.indent(str(value), prefix))
            continue
        names = _PLACEHOLDER.findall(line)
        if any(n in optional and values.get(n) is None for n in names):
            continue
        out.append(fill(line, values))
    return "\n".join(out)


# --- the user's scenario --------------------------------------------------------------------


def _plain(value: Any) -> Any:
    return value.model_dump() if hasattr(value, "model_dump") else value


def render_scenario(texts: ReferenceTexts, user_scenario: Any) -> str:
    """The task's user scenario as the reference writes it into the user's prompt."""
    rules = texts.section("scenario_format")
    optional = set(rules.get("optional_parts") or {})
    scenario = _plain(user_scenario)
    if isinstance(scenario, str):
        return scenario
    scenario = dict(scenario or {})
    instructions = _plain(scenario.get("instructions"))
    if isinstance(instructions, dict):
        instructions = fill_block(
            rules["structured_instructions_template_all_parts"], instructions, optional
        )
    persona = scenario.get("persona")
    key = (
        "user_scenario_template_with_persona"
        if persona is not None
        else "user_scenario_template_without_persona"
    )
    return fill_block(rules[key], {"persona": persona, "instructions": instructions}, optional)


# --- policies and agent prompts --------------------------------------------------------------


def compose_policy(texts: ReferenceTexts, domain: str, solo: bool) -> str | None:
    """The domain policy as the reference composes it for the mode, or None when the texts do
    not describe this domain or mode."""
    composition = (texts.prompts.get("policy_composition") or {}).get(domain)
    if not isinstance(composition, dict):
        return None
    entry = composition.get("solo" if solo else "normal")
    if not isinstance(entry, dict):
        return None
    files = {name: texts.data_file(path) for name, path in entry["files"].items()}
    return fill(entry["template"], files)


def agent_system_prompt(texts: ReferenceTexts, policy: str) -> str:
    rules = texts.section("agent")
    return fill(
        rules["system_prompt_template"],
        {"agent_instruction": rules["instruction"], "domain_policy": policy},
    )


def resolution_steps(
    texts: ReferenceTexts, actions: list[Action], with_arguments: bool | None = None
) -> str:
    """The numbered steps the ground-truth agent is given, one per gold action."""
    rules = texts.section("gt_agent")["resolution_steps"]
    if with_arguments is None:
        with_arguments = bool(rules.get("provide_function_args_default", True))
    fmt = rules["func_format"]
    lines = []
    for number, action in enumerate(actions, start=1):
        if with_arguments:
            arguments = fmt["args_joiner"].join(
                fill(fmt["arg_template"], {"key": key, "value": value})
                for key, value in action.arguments.items()
            )
            call = fill(fmt["template"], {"name": action.name, "args": arguments})
            step = fill(rules["step_templates"][action.requestor], {"func_format": call})
        else:
            step = fill(
                rules["step_templates_without_function_args"][action.requestor],
                {"name": action.name},
            )
        lines.append(fill(rules["line_template"], {"n": number, "step": step}))
    return rules["line_joiner"].join(lines)


def gt_system_prompt(texts: ReferenceTexts, policy: str, actions: list[Action]) -> str:
    rules = texts.section("gt_agent")
    return fill(
        rules["system_prompt_template"],
        {
            "agent_instruction": rules["instruction"],
            "domain_policy": policy,
            "resolution_steps": resolution_steps(texts, actions),
        },
    )


def solo_system_prompt(texts: ReferenceTexts, policy: str, task: Task) -> str:
    rules = texts.section("solo_agent")
    instruction = fill(
        rules["instruction_template"],
        {"stop_function_name": rules["stop_function_name"], "stop_token": rules["stop_token"]},
    )
    return fill(
        rules["system_prompt_template"],
        {"agent_instruction": instruction, "domain_policy": policy, "ticket": str(task.ticket)},
    )


def solo_done_tool(texts: ReferenceTexts, domain: str) -> dict[str, Any] | None:
    """The schema of the solo agent's stop tool, as the reference offers it."""
    tools = texts.tools(domain) or {}
    solo = tools.get("solo") if isinstance(tools.get("solo"), dict) else {}
    done = solo.get("done_tool")
    return done if isinstance(done, dict) else None


# --- the user simulator ----------------------------------------------------------------------


def user_guidelines_path(texts: ReferenceTexts, has_tools: bool) -> str:
    files = texts.section("user_simulator")["guidelines_files"]
    return files["with_tools" if has_tools else "without_tools"]


def guidelines_with_persona(
    texts: ReferenceTexts, guidelines: str, persona_guidelines: str | None = None
) -> str:
    """The guidelines with the persona slot filled: the default persona config fills it with
    the texts' default replacement; runtime persona guidelines go in between blank lines."""
    rules = texts.section("user_simulator")
    replacement = (
        f"\n\n{persona_guidelines}\n"
        if persona_guidelines
        else rules.get("persona_replacement_default", "")
    )
    return guidelines.replace(rules["persona_placeholder"], replacement)


def user_system_prompt(
    texts: ReferenceTexts, guidelines: str, scenario: str, persona_guidelines: str | None = None
) -> str:
    rules = texts.section("user_simulator")
    return fill(
        rules["system_prompt_template"],
        {
            "global_user_sim_guidelines_with_persona": guidelines_with_persona(
                texts, guidelines, persona_guidelines
            ),
            "instructions": scenario,
        },
    )


def user_tool_filter(task: Task) -> list[str] | None:
    """The task's `user_tools` (names the user may use), or None for all of them."""
    names = (task.model_extra or {}).get("user_tools")
    return list(names) if isinstance(names, list) else None


# --- messages on the wire --------------------------------------------------------------------


def _tool_call(call) -> dict[str, Any]:
    return {
        "id": call.id,
        "name": call.name,
        "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
        "type": "function",
    }


def wire_message(message: Message | dict[str, Any]) -> dict[str, Any]:
    """A message in the layout the reference hands to litellm, with None-valued keys left out
    as they are on the wire."""
    if isinstance(message, dict):
        out = dict(message)
    elif isinstance(message, ToolMessage):
        out = {"role": "tool", "content": message.content, "tool_call_id": message.id}
    elif message.role == "assistant":
        calls = [_tool_call(c) for c in message.tool_calls] if message.tool_calls else None
        out = {"role": "assistant", "content": message.content, "tool_calls": calls}
    else:
        out = {"role": message.role, "content": message.content}
    return {key: value for key, value in out.items() if value is not None}


def flip_for_user(message: Message) -> dict[str, Any] | None:
    """What the user model sees of a message: its own turns as the assistant's (tool calls
    kept), the agent's text turns as the user's, its own tool results as tool results; the
    agent's tool calls and results are not shown (None)."""
    if isinstance(message, ToolMessage):
        return wire_message(message) if message.requestor == "user" else None
    if message.role == "user":
        return wire_message(
            ChatMessage(role="assistant", content=message.content, tool_calls=message.tool_calls)
        )
    if message.role == "assistant" and not message.is_tool_call():
        return wire_message({"role": "user", "content": message.content})
    return None


# --- the NL-assertion judge ------------------------------------------------------------------


def judge_messages(
    texts: ReferenceTexts, trajectory: list[Message], statements: list[str]
) -> list[dict[str, Any]]:
    """The judge's two messages: its instructions, then the conversation and the outcomes."""
    rules = texts.section("nl_assertions_judge")
    conversation = "\n".join(f"{m.role}: {m.content}" for m in trajectory)
    user = fill(
        rules["user_prompt_template"],
        {"trajectory": conversation, "nl_assertions": repr(list(statements))},
    )
    return [
        {"role": "system", "content": rules["system_prompt"]},
        {"role": "user", "content": user},
    ]


def parse_judge_reply(content: str | None) -> list[dict[str, Any]]:
    """The judge's verdicts as NL-assertion checks: the reply must be one JSON object whose
    `results` list gives, per outcome, `expectedOutcome`, `metExpectation` and `reasoning`."""
    data = json.loads(content or "")
    if not isinstance(data, dict):
        raise ValueError("the judge's reply is not a JSON object")
    checks = []
    for result in data.get("results", []):
        checks.append(
            {
                "nl_assertion": str(result["expectedOutcome"]),
                "met": _BOOL.validate_python(result["metExpectation"]),
                "justification": str(result["reasoning"]),
            }
        )
    return checks
