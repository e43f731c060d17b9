"""What every `tau-harness` command shares: its console, failing with one sentence, reading
JSON options, and the set-up of domain, backend (`tau_mcp.harness.wiring`) and judge."""

from __future__ import annotations

import json
from pathlib import Path
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
    "FAULTS_HELP",
    "FAULTS_PROFILE_HELP",
    "JUDGE_HELP",
    "RECORD_HELP",
    "REPLAY_HELP",
    "REPLAY_MISS_HELP",
    "RETRIEVAL_HELP",
    "RETRIEVAL_KWARGS_HELP",
    "REVIEW_LLM_HELP",
    "SERVER_TOKEN_FILE_HELP",
    "SERVER_TOKEN_HELP",
    "TASK_SET_HELP",
    "console",
    "fail",
    "json_arg",
    "judge_option",
    "llm_args_option",
    "load_domain",
    "open_backend",
    "retrieval_kwargs_option",
    "server_token_option",
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
RECORD_HELP = (
    "Record every model call (agent, user, judge, review, retrieval) to the cassette folder "
    "DIR, to replay the run later (docs/replay.md)."
)
REPLAY_HELP = (
    "Answer every model call from the cassette folder DIR (recorded with --record), with no "
    "network and no key; a request it lacks fails its simulation (see --replay-miss)."
)
REPLAY_MISS_HELP = (
    "With --replay: what a request the cassette lacks does: fail (its simulation fails, "
    "naming the first field that differs from the nearest recorded request) or live (it "
    "goes to the model)."
)
FAULTS_HELP = (
    "A robustness run: inject seeded faults into the agent's tool calls, kind=rate pairs such "
    "as transient=0.1,rate_limit=0.05 (kinds: transient, permanent, timeout, rate_limit, "
    "stale_read, slow; settings: timeout_seconds, slow_seconds, rate_limit_calls). "
    "See docs/faults.md."
)
FAULTS_PROFILE_HELP = (
    "A named fault plan (shipped: flaky, retryable, degraded, outage, chaos) or a .toml file; "
    "--faults is laid over it."
)
RETRIEVAL_KWARGS_HELP = (
    "JSON options of the retrieval config, e.g. '{\"top_k\": 5}' (top_k, grep_top_k, "
    "case_sensitive, reranker_min_score)."
)


def fail(message: str) -> NoReturn:
    """End the command with `error: MESSAGE` on stderr and exit code 1."""
    typer.echo(f"error: {redaction.redact_text(message)}", err=True)
    raise typer.Exit(1)


#: `--server-token`: the bearer token of a `--server` (also $TAU_SERVER_TOKEN, or a file).
SERVER_TOKEN_HELP = (
    "Bearer token of --server (or $TAU_SERVER_TOKEN, or --server-token-file: a command line "
    "is visible to every local user in ps)."
)
SERVER_TOKEN_FILE_HELP = "Read --server's bearer token from this file."


def server_token_option(given: str | None, file: Path | None) -> str | None:
    """`--server-token` / `--server-token-file` / $TAU_SERVER_TOKEN (a token on the command
    line is warned about); one sentence for a file that cannot be read."""
    from tau_mcp.servers.auth import TOKEN_ENV
    from tau_mcp.servers.http_options import secret_option

    try:
        return secret_option(given, file, option="--server-token", env=TOKEN_ENV)
    except ValueError as exc:
        fail(str(exc))


def json_arg(name: str, raw: str | None) -> dict[str, Any]:
    """A JSON-object option (`{}` when not given), or `@FILE`: the JSON object in that file
    (keys then stay off the command line, which every local user sees in `ps`: a key given
    inline works but is warned about). Anything else fails with one sentence."""
    if not raw:
        return {}
    inline = not raw.startswith("@")
    if not inline:
        path = Path(raw[1:]).expanduser()
        try:
            raw = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            fail(f"cannot read {name} from {path} ({getattr(exc, 'strerror', None) or exc})")
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        fail(f"{name} is not valid JSON ({exc.msg} at position {exc.pos})")
    if not isinstance(value, dict):
        fail(f"{name} must be a JSON object")
    redaction.remember_args(value)  # model arguments: their keys never reach a file or screen
    named = redaction.literal_secret_names(value) if inline else []
    if named:
        typer.echo(
            f"warning: {name} holds {', '.join(named)} on the command line, visible to every "
            'local user (ps); set the provider\'s key variable, write "os.environ/NAME" as '
            f"the value, or pass the JSON as {name} @FILE",
            err=True,
        )
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
