"""What every `tau-harness` command shares: its console, failing with one sentence, reading
JSON options, and the set-up of domain, backend (`tau_mcp.harness.wiring`) and judge."""

from __future__ import annotations

import json
from typing import Any, NoReturn

import typer
from rich.console import Console

from tau_mcp.conversation.llm import DEFAULT_LLM
from tau_mcp.grading import Judge
from tau_mcp.harness import redaction
from tau_mcp.harness.config import build_judge, split_ids
from tau_mcp.harness.wiring import load_domain, open_backend

#: `--domain`'s help. The names are not listed here: finding them reads every installed
#: distribution's metadata, which a command that shows help or reads results needs not pay.
DOMAIN_HELP = (
    "A domain's name: one of tau-mcp's, or an installed or --domain-path pack's "
    "(`tau-harness domains` lists them)."
)

__all__ = [
    "JUDGE_HELP",
    "RETRIEVAL_HELP",
    "RETRIEVAL_KWARGS_HELP",
    "REVIEW_LLM_HELP",
    "TASK_SET_HELP",
    "console",
    "fail",
    "json_arg",
    "judge_option",
    "llm_args_option",
    "load_domain",
    "open_backend",
    "retrieval_kwargs_option",
    "split_ids",
]

console = Console()

JUDGE_HELP = (
    "Model judging NL assertions; 'none' skips them (default: the reference texts' judge "
    f"model, else {DEFAULT_LLM})."
)

RETRIEVAL_HELP = (
    "For a domain with retrieval configs: how the agent reaches the knowledge base (default: "
    "the domain's own; `tau-harness domain NAME` lists its configs, and a config that needs a "
    "key or a sandbox says so when chosen)."
)
REVIEW_LLM_HELP = (
    "litellm model for the review (default: the reference's, from the data folder's "
    "review.json: claude-opus-4-5, which needs ANTHROPIC_API_KEY)."
)
TASK_SET_HELP = (
    "A named task set of the domain's data (FOLDER_NAME: tasks_NAME.json of the domain's "
    "folder; `tau-harness domain NAME` lists them); default: the domain's own tasks."
)
RETRIEVAL_KWARGS_HELP = (
    "JSON options of the retrieval config, e.g. '{\"top_k\": 5}' (top_k, grep_top_k, "
    "case_sensitive, reranker_min_score)."
)


def fail(message: str) -> NoReturn:
    """End the command with `error: MESSAGE` on stderr and exit code 1."""
    typer.echo(f"error: {redaction.redact_text(message)}", err=True)
    raise typer.Exit(1)


def json_arg(name: str, raw: str | None) -> dict[str, Any]:
    """A JSON-object option (`{}` when not given); anything else fails with one sentence."""
    if not raw:
        return {}
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        fail(f"{name} is not valid JSON ({exc.msg} at position {exc.pos})")
    if not isinstance(value, dict):
        fail(f"{name} must be a JSON object")
    redaction.remember_args(value)  # model arguments: their keys never reach a file or screen
    return value


def llm_args_option(name: str, raw: str | None) -> dict[str, Any] | None:
    """Model arguments: None when not given (the defaults apply); given ones replace them."""
    return None if raw is None else json_arg(name, raw)


def retrieval_kwargs_option(raw: str | None) -> dict[str, Any] | None:
    """`--retrieval-config-kwargs`: None when not given; anything but a JSON object of known
    options fails with one sentence."""
    from tau_mcp.servers.engine.variants import VariantError, parse_kwargs

    try:
        return parse_kwargs(raw)
    except VariantError as exc:
        fail(str(exc))


def judge_option(model: str | None, raw_args: str | None) -> Judge | None:
    """`--judge-llm` / `--judge-llm-args`: None when judging is switched off."""
    return build_judge(model, json_arg("--judge-llm-args", raw_args))
