"""Which prompt set a run uses, and the default models and llm arguments that go with it.

With reference texts in the data folder (`tau2/reference_texts/`) a run speaks to models as
tau2-bench does and takes its defaults from `defaults.json`; without them (our demo data) it
uses our own prompts and defaults. Either way `--agent-llm-args` / `--user-llm-args` replace
the default arguments rather than merge into them, as the reference's CLI does: passing
`{"api_base": ...}` alone sends no temperature.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tau_mcp.conversation.llm import DEFAULT_LLM
from tau_mcp.conversation.reference_prompts import user_tool_filter
from tau_mcp.conversation.reference_texts import ReferenceTexts, reference_texts
from tau_mcp.conversation.tools import ToolInfo
from tau_mcp.servers.engine.tasks import Task

if TYPE_CHECKING:
    from tau_mcp.harness.config import RunConfig

OWN_SET = "tau-mcp"
REFERENCE_SET = "reference"
OWN_LLM_ARGS: dict[str, Any] = {"temperature": 0.0}
#: Agents that take no model.
MODEL_FREE_AGENTS = {"oracle", "oracle-retry"}


@dataclass(frozen=True)
class LLMDefaults:
    agent_llm: str
    agent_llm_args: dict[str, Any]
    user_llm: str
    user_llm_args: dict[str, Any]
    source: str


def llm_defaults(texts: ReferenceTexts | None) -> LLMDefaults:
    if texts is None:
        return LLMDefaults(
            DEFAULT_LLM, dict(OWN_LLM_ARGS), DEFAULT_LLM, dict(OWN_LLM_ARGS), OWN_SET
        )
    d = texts.defaults
    return LLMDefaults(
        agent_llm=d.get("agent_llm") or DEFAULT_LLM,
        agent_llm_args=dict(d.get("agent_llm_args") or {}),
        user_llm=d.get("user_llm") or DEFAULT_LLM,
        user_llm_args=dict(d.get("user_llm_args") or {}),
        source=f"reference texts ({texts.version})",
    )


def with_llm_defaults(config: RunConfig, texts: ReferenceTexts | None) -> RunConfig:
    """The run's settings with unset models and llm arguments given their defaults. Arguments
    that were given replace the defaults whole."""
    d = llm_defaults(texts)
    changes: dict[str, Any] = {}
    if config.agent not in MODEL_FREE_AGENTS:
        if not config.agent_llm:
            changes["agent_llm"] = d.agent_llm
        if config.agent_llm_args is None:
            changes["agent_llm_args"] = d.agent_llm_args
    if config.user == "llm":
        if not config.user_llm:
            changes["user_llm"] = d.user_llm
        if config.user_llm_args is None:
            changes["user_llm_args"] = d.user_llm_args
    return config.replace(**changes) if changes else config


def prompt_set_info(texts: ReferenceTexts | None) -> dict[str, Any]:
    """What a results file records about the prompts its models were shown."""
    if texts is None:
        return {"name": OWN_SET}
    return {"name": REFERENCE_SET, "source": texts.version, "folder": str(texts.folder)}


def first_agent_message(texts: ReferenceTexts | None, own: str) -> str:
    """The agent's opening line (the texts' when present)."""
    first = (texts.prompts.get("first_agent_message") or {}) if texts is not None else {}
    return first.get("content") or own


def user_tools_for(
    task: Task, tools: list[ToolInfo], texts: ReferenceTexts | None
) -> list[ToolInfo]:
    """The user tools offered to the user model. With reference texts, as the reference does:
    only the task's `user_tools` when it lists them, none when it names a tool the domain
    lacks, all otherwise."""
    if texts is None:
        return tools
    allowed = user_tool_filter(task)
    if allowed is None:
        return tools
    if set(allowed) - {t.name for t in tools}:
        return []
    return [t for t in tools if t.name in allowed]


def help_defaults() -> LLMDefaults:
    """The defaults for `--help`: those of the data folder a run would use by default."""
    try:
        from tau_mcp.servers.engine.data import resolve_data_dir

        texts = reference_texts(resolve_data_dir(None))
    except Exception:  # noqa: BLE001 - help must show even with a broken data folder
        texts = None
    return llm_defaults(texts)
