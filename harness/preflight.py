"""Can every model a run will call be reached with the keys that are set?

Without this, a missing key shows up only after every simulation has spent its retries (half a
minute of backoff each), as a table of infrastructure errors. litellm knows which environment
variables each provider needs; we ask it for the models this run will really call. litellm is
slow to import (seconds), so the common providers' keys are known without it
(`tau_mcp.harness.model_keys`): a run checks those before it loads anything (`check_known`), in
well under a second. For any other model a local run asks litellm when its first model request
is about to go out (`first_request_check`): start-up stays short, and a missing key still stops
the run before any request is sent or any simulation recorded. A model given an `api_base` (in its arguments, or
through the provider's base-URL variable) is a local or self-hosted server that may need no key
at all, so a missing key is not held against it.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import Any

from tau_mcp.harness.errors import ConfigError
from tau_mcp.harness.model_keys import provider_keys
from tau_mcp.servers.engine.tasks import Task

AGENTS_WITH_MODEL = {"llm", "solo", "gt", "tool-calling", "act", "react", "few-shot"}
USERS_WITH_MODEL = {"llm", "react", "verify", "reflection"}


class MissingModelKey(ConfigError):
    """A model the run will call cannot be reached; the message says what to set."""


@dataclass(frozen=True)
class ModelUse:
    role: str  # "agent", "user", "judge": for the message
    model: str
    llm_args: dict[str, Any]
    hint: str = ""  # what else the user could do, e.g. "or pass --judge-llm none"


def needs_judge(tasks: Iterable[Task]) -> bool:
    """Whether grading any of these tasks asks the NL-assertion judge."""
    for task in tasks:
        criteria = task.evaluation_criteria
        if criteria and "NL_ASSERTION" in criteria.reward_basis and criteria.nl_assertions:
            return True
    return False


def models_called(
    config: Any, tasks: list[Task], judge: Any = None, reviewer: Any = None
) -> list[ModelUse]:
    """The models a run with this RunConfig will call (plug-in agents are left to themselves).
    `judge`, when given, is the grader's judge with its model settled; `reviewer` the run's
    `--auto-review` reviewer."""
    uses = []
    if config.agent in AGENTS_WITH_MODEL and config.agent_llm:
        uses.append(ModelUse("agent", config.agent_llm, dict(config.agent_llm_args or {})))
    if config.user in USERS_WITH_MODEL and config.user_llm:
        uses.append(ModelUse("user", config.user_llm, dict(config.user_llm_args or {})))
    judge = judge if judge is not None else config.judge
    if judge is not None and needs_judge(tasks):
        uses.append(judge_use(judge))
    if reviewer is not None:
        uses.append(reviewer.model_use())
    return uses


def judge_use(judge: Any) -> ModelUse:
    return ModelUse(
        "NL-assertion judge",
        getattr(judge, "resolved_model", None) or judge.model,
        dict(
            judge.resolved_llm_args()
            if hasattr(judge, "resolved_llm_args")
            else judge.llm_args or {}
        ),
        "; or pass --judge-llm none to leave NL assertions out of the reward",
    )


def _base_url_set(provider: str | None, llm_args: dict[str, Any]) -> bool:
    if llm_args.get("api_base") or llm_args.get("base_url"):
        return True
    if not provider:
        return False
    prefix = provider.upper().replace("-", "_")
    return any(os.environ.get(f"{prefix}_{name}") for name in ("API_BASE", "BASE_URL"))


def known_problem(use: ModelUse) -> tuple[bool, str | None]:
    """(whether it is known without litellm, the one sentence saying why `use` cannot be
    called or None when it can)."""
    known = provider_keys(use.model)
    if known is None:
        return False, None
    provider, keys = known
    args = use.llm_args
    if args.get("api_key") or _base_url_set(provider, args) or any(os.environ.get(k) for k in keys):
        return True, None
    return True, (
        f"the {use.role} model '{use.model}' needs {' or '.join(keys)} set in the "
        f"environment (or an api_key in its llm args){use.hint}"
    )


def check_known(uses: list[ModelUse]) -> list[ModelUse]:
    """Raise MissingModelKey for the first model whose key is known missing without litellm;
    return the uses that take litellm to tell."""
    left = []
    for use in uses:
        known, reason = known_problem(use)
        if reason:
            raise MissingModelKey(reason)
        if not known:
            left.append(use)
    return left


def problem(use: ModelUse) -> str | None:
    """One sentence saying why `use` cannot be called, or None when it can."""
    known, reason = known_problem(use)
    if known:
        return reason
    from tau_mcp.conversation.llm import litellm_module

    litellm = litellm_module()
    args = use.llm_args
    try:
        _, provider, _, _ = litellm.get_llm_provider(model=use.model, api_base=args.get("api_base"))
    except Exception:  # noqa: BLE001 - litellm raises its own BadRequestError here
        return (
            f"litellm does not know the {use.role} model '{use.model}'; name it with its "
            f"provider, e.g. openai/{use.model} or anthropic/{use.model}{use.hint}"
        )
    if args.get("api_key") or _base_url_set(provider, args):
        return None
    try:
        found = litellm.validate_environment(model=use.model, api_base=args.get("api_base"))
    except Exception:  # noqa: BLE001 - if litellm cannot tell, let the call itself decide
        return None
    missing = [k for k in found.get("missing_keys") or [] if not os.environ.get(k)]
    if found.get("keys_in_environment") or not missing:
        return None
    return (
        f"the {use.role} model '{use.model}' needs {' and '.join(missing)} set in the "
        f"environment (or an api_key in its llm args){use.hint}"
    )


def check_models(uses: list[ModelUse]) -> None:
    """Raise MissingModelKey for the first model that cannot be called; import litellm only
    for a model whose provider's keys are not known without it."""
    for use in uses:
        reason = problem(use)
        if reason:
            raise MissingModelKey(reason)


RequestGate = Callable[[str], AbstractAsyncContextManager[Any]]


def first_request_check(uses: list[ModelUse], inner: RequestGate | None = None) -> RequestGate:
    """A request gate (see `tau_mcp.conversation.llm.set_request_gate`) that checks `uses` once, as the
    run's first model request is about to be sent, and then lets requests through `inner`.
    Every request after a failed check raises the same MissingModelKey, which stops the run."""
    outcome: list[MissingModelKey | None] = []

    @asynccontextmanager
    async def gate(model: str) -> AsyncIterator[None]:
        if not outcome:
            try:
                check_models(uses)
                outcome.append(None)
            except MissingModelKey as exc:
                outcome.append(exc)
        if outcome[0] is not None:
            raise outcome[0]
        if inner is None:
            yield
        else:
            async with inner(model):
                yield

    return gate
