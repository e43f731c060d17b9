"""Declaring domain tools: a decorator for tool methods and a base class that collects them.

Tool methods are plain Python methods with the reference's names and parameters, called with the
caller's keyword arguments as given, so bad arguments fail the way they fail in the reference.
Methods without the decorator are helpers that only tasks' initialization actions and
environment assertions may call.

A tool is listed (shown to clients) unless marked `listed=False`: such hidden tools are still
called by name, as the reference lets a caller use any tool of a toolkit, listed or not (the
banking domain's discoverable tools). An episode can add tools of other objects to one toolkit
instance (`Toolkit.add_tools`), e.g. the retrieval tools a banking retrieval config gives the
agent; the toolkit then lists, describes and dispatches them like its own.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, ClassVar, Literal, Protocol, get_type_hints

from pydantic import TypeAdapter

#: The two toolkits of a domain: the customer-service agent's and the simulated user's.
Side = Literal["agent", "user"]


class EpisodeServices(Protocol):
    """What a toolkit may ask of the episode it works in. Toolkits name only this, so the
    module needs nothing from episode.py (which builds toolkits)."""

    # The task the episode runs (None: a bare episode on the domain's database).
    task: Any

    @property
    def data_dir(self) -> Any:
        """The data folder the episode's domain was loaded from."""
        ...

    def mint_id(self, purpose: str) -> str: ...


class ToolKind(StrEnum):
    READ = "read"
    WRITE = "write"
    THINK = "think"
    GENERIC = "generic"


_SPEC_ATTR = "__tau_tool__"
_ASSERTION_ATTR = "__tau_assertion__"


def tool(kind: ToolKind = ToolKind.READ, *, mutates: bool | None = None, listed: bool = True):
    """Mark a method as a tool. `mutates` defaults to True for WRITE tools: only mutating tools
    are replayed when a state is rebuilt from a message history. A tool with `listed=False` is
    never shown to clients but can still be called by name."""

    def mark(func):
        mutating = kind == ToolKind.WRITE if mutates is None else mutates
        setattr(func, _SPEC_ATTR, (kind, mutating, listed))
        return func

    return mark


def assertion(func):
    """Mark a method as an environment assertion: a read-only check that returns a bool. Only
    marked methods may run as a task's `env_assertions` (and on the server's assertions route);
    they must not change the database."""
    setattr(func, _ASSERTION_ATTR, True)
    return func


@dataclass(frozen=True)
class ToolSpec:
    """What a client needs to know about a tool: name, kind, description, argument schema."""

    name: str
    kind: ToolKind
    mutates: bool
    description: str
    input_schema: dict[str, Any] = field(hash=False)

    @property
    def read_only(self) -> bool:
        return self.kind in (ToolKind.READ, ToolKind.THINK)


_ARG_LINE = re.compile(r"^\s{2,}(\w+)(?:\s*\(.*?\))?:\s*(.*)$")


def _parse_doc(doc: str | None) -> tuple[str, dict[str, str]]:
    """Description (text before the first section) and per-argument descriptions."""
    if not doc:
        return "", {}
    lines = inspect.cleandoc(doc).splitlines()
    desc: list[str] = []
    args: dict[str, str] = {}
    section = None
    current = None
    for line in lines:
        stripped = line.strip()
        if stripped.endswith(":") and stripped[:-1] in ("Args", "Returns", "Raises", "Example"):
            section = stripped[:-1]
            continue
        if section is None:
            desc.append(line)
        elif section == "Args":
            m = _ARG_LINE.match("  " + line if not line.startswith(" ") else line)
            if m and not line.startswith("      "):
                current = m.group(1)
                args[current] = m.group(2).strip()
            elif current and stripped:
                args[current] += " " + stripped
    return "\n".join(desc).strip(), args


def _input_schema(func) -> dict[str, Any]:
    sig = inspect.signature(func)
    hints = get_type_hints(func)
    _, arg_docs = _parse_doc(func.__doc__)
    props: dict[str, Any] = {}
    required: list[str] = []
    defs: dict[str, Any] = {}
    for name, param in sig.parameters.items():
        if name == "self":
            continue
        schema = TypeAdapter(hints.get(name, Any)).json_schema(ref_template="#/$defs/{model}")
        defs.update(schema.pop("$defs", {}))
        if name in arg_docs:
            schema["description"] = arg_docs[name]
        if param.default is inspect.Parameter.empty:
            required.append(name)
        elif param.default is not None:
            schema["default"] = param.default
        props[name] = schema
    out: dict[str, Any] = {"type": "object", "properties": props, "required": required}
    if defs:
        out["$defs"] = defs
    return out


class Toolkit:
    """Base of a domain side's tools. Subclasses take the reference's class names, because
    Python's own messages for bad arguments (part of the tool output) name the class."""

    # The class's listed tools (what clients are shown), and its hidden ones.
    specs: ClassVar[dict[str, ToolSpec]] = {}
    hidden_specs: ClassVar[dict[str, ToolSpec]] = {}
    assertions: ClassVar[frozenset[str]] = frozenset()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        specs: dict[str, ToolSpec] = {}
        hidden: dict[str, ToolSpec] = {}
        assertions: set[str] = set()
        for klass in reversed(cls.__mro__):
            for name, member in vars(klass).items():
                if getattr(member, _ASSERTION_ATTR, False):
                    assertions.add(name)
                mark = getattr(member, _SPEC_ATTR, None)
                if mark is None:
                    continue
                kind, mutates, listed = mark
                description, _ = _parse_doc(member.__doc__)
                spec = ToolSpec(name, kind, mutates, description, _input_schema(member))
                (specs if listed else hidden)[name] = spec
        cls.specs = specs
        cls.hidden_specs = hidden
        cls.assertions = frozenset(assertions)

    def __init__(self, db: Any, episode: EpisodeServices | None = None) -> None:
        self.db = db
        self.episode = episode
        # Tools added to this instance: name -> (spec, the object whose method runs it).
        self._added: dict[str, tuple[ToolSpec, Any]] = {}

    # --- tools added per instance -----------------------------------------------------------
    def add_tools(self, provider: Toolkit) -> None:
        """Give this toolkit instance the listed tools of `provider` (another Toolkit, built
        with whatever it needs), described by the provider's specs and run as its bound
        methods, so Python's messages for bad arguments name the provider's class. Listings
        put them where the reference lists them (see tool_listing.py). A name this toolkit
        already has is refused."""
        for name, spec in provider.specs.items():
            if self.has_tool(name):
                raise ValueError(f"tool '{name}' is already defined in {type(self).__name__}")
            self._added[name] = (spec, provider)

    @property
    def added_specs(self) -> dict[str, ToolSpec]:
        return {name: spec for name, (spec, _) in self._added.items()}

    # --- lookup -----------------------------------------------------------------------------
    def has_tool(self, name: str) -> bool:
        """Can a caller call `name`? Listed, hidden and added tools all count."""
        return name in self.specs or name in self.hidden_specs or name in self._added

    def spec_of(self, name: str) -> ToolSpec | None:
        spec = self.specs.get(name) or self.hidden_specs.get(name)
        if spec is None and name in self._added:
            spec = self._added[name][0]
        return spec

    def blocks(self, name: str) -> bool:
        """Whether tool `name` waits on a subprocess or the network (a shell command, a model
        call), so a server runs it off its event loop. An added tool asks its provider."""
        added = self._added.get(name)
        if added is not None and added[1] is not self:
            return bool(added[1].blocks(name))
        return False

    def unknown_tool_result(self, name: str) -> str | None:
        """What a call of a tool this side does not have returns, for a domain whose reference
        answers it as a plain result (the original τ-bench: `Unknown action <name>`); None: the
        call fails with the engine's error."""
        return None

    def bound(self, name: str) -> Callable[..., Any]:
        """The callable that runs tool `name` (which must exist: see `has_tool`)."""
        added = self._added.get(name)
        if added is not None:
            return getattr(added[1], name)
        return getattr(self, name)
