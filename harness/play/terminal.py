"""The person's side of a played simulation: an `Agent` or a `UserSimulator` whose turns are
typed at the terminal. Tool calls are typed function-style or as JSON; `/tools` lists them."""

from __future__ import annotations

import ast
import asyncio
import difflib
import itertools
import re
from collections.abc import Collection
from typing import Any

from rich.console import Console
from rich.markup import escape

from tau_mcp.conversation.actions import ActionError, parse_tool_call
from tau_mcp.conversation.messages import STOP, ChatMessage, ToolCall, ToolMessage
from tau_mcp.conversation.tools import ToolInfo
from tau_mcp.harness.agents.base import Agent, AgentContext, Incoming
from tau_mcp.harness.errors import ConfigError
from tau_mcp.servers.engine.domain import Domain
from tau_mcp.servers.surfaces import ShownTool, View, as_shown, register_surface
from tau_mcp.simulator.base import UserContext, UserSimulator
from tau_mcp.simulator.scenario import scenario_text


class PlayAbandoned(ConfigError):
    """The person left (end of input or Ctrl-C); like a configuration error it is not retried."""


def signature(tool: ToolInfo) -> str:
    """`name(param: type, optional?: type)`, then the first line of the description."""
    schema = tool.input_schema or {}
    required = set(schema.get("required") or [])
    params = []
    for pname, spec in (schema.get("properties") or {}).items():
        kind = spec.get("type") or ("enum" if "enum" in spec else "any")
        if "enum" in spec:
            kind = " | ".join(repr(v) for v in spec["enum"])
        params.append(f"{pname}{'' if pname in required else '?'}: {kind}")
    first_line = (tool.description or "").strip().splitlines()[0:1]
    return f"{tool.name}({', '.join(params)})" + (f" - {first_line[0]}" if first_line else "")


class Terminal:
    """Reading lines off the terminal without blocking the event loop."""

    def __init__(self, console: Console) -> None:
        self.console = console

    async def read(self, prompt: str) -> str:
        try:
            return await asyncio.to_thread(self.console.input, prompt)
        except (EOFError, KeyboardInterrupt):
            raise PlayAbandoned("play abandoned: no simulation was graded") from None

    def show(self, who: str, style: str, text: str) -> None:
        self.console.print(f"[{style}]{who}:[/] {escape(text)}")

    def show_results(self, results: list[ToolMessage]) -> None:
        for result in results:
            flag = " (error)" if result.error else ""
            self.show(f"result{flag}", "yellow", result.content or "")

    def show_tools(self, tools: list[ToolInfo]) -> None:
        if not tools:
            self.console.print("[dim]no tools on this side[/]")
        for tool in tools:
            self.console.print(f"  [bold]{escape(signature(tool))}[/]")


HELP = (
    "Type a message, or a tool call: name(arg='x', n=2) or "
    '{"name": "...", "arguments": {...}}. /tools lists tools, /say TEXT sends TEXT as a message '
    "even if it looks like a call, /stop ends the conversation, /help shows this."
)

# A line that starts like a call: a name, then an opening parenthesis.
_CALL_START = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)(\s*)\(")


def meant_as_call(line: str, names: Collection[str]) -> bool:
    """Whether the person meant `line` as a tool call: JSON, or `name(...` where the name is a
    tool's, close to one or written like one (`snake_case`), or touches its parenthesis in a
    line that ends with `)`. "Hello (again)" stays a message."""
    if line.lstrip().startswith("{"):
        return True
    match = _CALL_START.match(line)
    if match is None:
        return False
    name, gap = match.group(1), match.group(2)
    if name in names or "_" in name or close_names(name, names):
        return True
    return not gap and line.rstrip().endswith(")")


def unreadable_call(line: str) -> str:
    """Why a line that starts like a call is not one."""
    try:
        ast.parse(line.strip(), mode="eval")
    except SyntaxError as exc:
        return f"cannot read the call: {exc.msg}"
    return "cannot read the call: write it as name(arg='value', n=2)"


def close_names(name: str, names: Collection[str]) -> list[str]:
    return difflib.get_close_matches(name, list(names), n=1, cutoff=0.75)


def call_problem(name: str, arguments: dict[str, Any], tools: list[ToolInfo]) -> str | None:
    """Why this typed call cannot be sent (no such tool, an argument it does not take, one it
    needs missing), or None. A value of the wrong type goes through: the tool itself answers."""
    tool = next((t for t in tools if t.name == name), None)
    if tool is None:
        hint = close_names(name, [t.name for t in tools])
        guess = f"; did you mean {hint[0]}?" if hint else ""
        return f"no tool named '{name}' on your side{guess} (/tools lists them)"
    schema = tool.input_schema or {}
    known = schema.get("properties") or {}
    unknown = [a for a in arguments if a not in known]
    if unknown and schema.get("additionalProperties") is not True:
        takes = ", ".join(known) or "no arguments"
        return f"{name} takes no argument '{unknown[0]}' (it takes: {takes})"
    missing = [a for a in schema.get("required") or [] if a not in arguments]
    if missing:
        return f"{name} needs {', '.join(repr(a) for a in missing)}: {signature(tool)}"
    return None


async def typed_turn(
    terminal: Terminal,
    prompt: str,
    role: str,
    tools: list[ToolInfo],
    ids: itertools.count,
    extra: dict[str, str] | None = None,
) -> ChatMessage:
    """One turn typed by the person: a message, a tool call, or /stop. A call that cannot be
    sent is refused with the reason and the person types again: it never goes out as a
    message."""
    names = {t.name for t in tools}
    while True:
        line = (await terminal.read(prompt)).strip()
        if not line:
            continue
        if line in ("/help", "/?"):
            terminal.console.print(HELP)
            continue
        if line == "/tools":
            terminal.show_tools(tools)
            continue
        if extra and line in extra:
            terminal.console.print(escape(extra[line]))
            continue
        if line == "/stop":
            return ChatMessage(role=role, content=STOP, cost=0.0)  # type: ignore[arg-type]
        if line.startswith("/say "):
            return ChatMessage(role=role, content=line[5:].strip(), cost=0.0)  # type: ignore[arg-type]
        if line.startswith("/"):
            terminal.console.print(f"[red]unknown command {escape(line.split()[0])} (/help)[/]")
            continue
        if not meant_as_call(line, names):
            return ChatMessage(role=role, content=line, cost=0.0)  # type: ignore[arg-type]
        try:
            call = parse_tool_call(line)
        except ActionError as exc:
            terminal.console.print(f"[red]not sent: {escape(str(exc))}[/]")
            continue
        if call is None:  # the start of a call, but not a whole one
            terminal.console.print(f"[red]not sent: {escape(unreadable_call(line))}[/]")
            continue
        name, arguments = call
        problem = call_problem(name, arguments, tools)
        if problem:
            terminal.console.print(f"[red]not sent: {escape(problem)}[/]")
            continue
        requestor: Any = "user" if role == "user" else "assistant"
        tool_call = ToolCall(
            id=f"human_{next(ids)}", name=name, arguments=arguments, requestor=requestor
        )
        return ChatMessage(role=role, content=None, tool_calls=[tool_call], cost=0.0)  # type: ignore[arg-type]


class HumanAgent(Agent):
    """The person is the customer-service agent."""

    implementation = "human"
    terminal: Terminal | None = None  # set by the play command

    def __init__(self, context: AgentContext) -> None:
        super().__init__(context)
        self._ids = itertools.count(1)

    def start(self, history) -> None:
        super().start(history)
        assert self.terminal is not None
        self.terminal.console.rule("You are the agent")
        self.terminal.console.print(HELP + " /policy shows the policy.")
        self.terminal.show_tools(self.context.tools)
        for message in self.history:
            if isinstance(message, ChatMessage) and message.content:
                self.terminal.show(message.role, "cyan", message.content)

    async def respond(self, incoming: Incoming) -> ChatMessage:
        assert self.terminal is not None
        self.record(incoming)
        if isinstance(incoming, list):
            self.terminal.show_results(incoming)
        elif incoming is not None:
            self.terminal.show("customer", "green", incoming.content or "")
        message = await typed_turn(
            self.terminal,
            "agent> ",
            "assistant",
            self.context.tools,
            self._ids,
            {"/policy": self.context.policy},
        )
        self.history.append(message)
        return message

    def is_stop(self, message: ChatMessage) -> bool:
        return message.content is not None and STOP in message.content


class HumanUser(UserSimulator):
    """The person is the customer, following the task's scenario."""

    implementation = "human"
    terminal: Terminal | None = None

    def __init__(self, context: UserContext) -> None:
        super().__init__(context)
        self._ids = itertools.count(1)

    def scenario(self) -> str:
        """The scenario as the simulated user would be shown it."""
        return scenario_text(self.context.task.user_scenario)

    def start(self, history) -> None:
        super().start(history)
        assert self.terminal is not None
        self.terminal.console.rule("You are the customer")
        self.terminal.console.print("Your scenario (/scenario shows it again):")
        self.terminal.console.print(escape(self.scenario()))
        self.terminal.console.print(HELP)
        self.terminal.show_tools(self.context.tools)

    async def respond(self, incoming: ChatMessage | list[ToolMessage]) -> ChatMessage:
        assert self.terminal is not None
        self.record(incoming)
        if isinstance(incoming, list):
            self.terminal.show_results(incoming)
        else:
            self.terminal.show("agent", "cyan", incoming.content or "")
        message = await typed_turn(
            self.terminal,
            "you> ",
            "user",
            self.context.tools,
            self._ids,
            {"/scenario": self.scenario()},
        )
        self.history.append(message)
        return message


async def _shown_to_player(domain: Domain, view: View, variant: str | None) -> list[ShownTool]:
    """The tools `/tools` lists to the person on that side (printed to a discarded console)."""
    import io

    from tau_mcp.harness.surface_probes import captured_participant

    human = HumanAgent if view == "agent" else HumanUser
    seat = type(human.__name__, (human,), {"terminal": Terminal(Console(file=io.StringIO()))})
    player = await captured_participant(domain, view, seat, variant=variant)  # type: ignore[arg-type]
    return [as_shown(t.name, t.description, t.input_schema) for t in player.context.tools]


#: `tau-harness play`: the tools the person is shown on either side (as the customer, the task's
#: `user_tools`, as the reference narrows the user's tools).
PLAY = register_surface(
    "tau-harness play (/tools)", ("agent", "user"), _shown_to_player, narrows_user_tools=True
)
