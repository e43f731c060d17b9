"""Calling chat models through litellm, and turning their replies into trajectory messages.

litellm is imported on first use (it is slow to import and, unless told otherwise, fetches a
price list from the network on import).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager, nullcontext
from dataclasses import dataclass
from typing import Any

from tau_mcp.conversation import collector, direct
from tau_mcp.conversation.messages import ChatMessage, Message, ToolCall, ToolMessage

DEFAULT_LLM = "gpt-4.1-2025-04-14"
_litellm = None

#: Optional gate every model request passes through: a callable taking the model name and
#: returning an async context manager held for the duration of the request. The harness installs
#: one to honour per-provider limits on requests in flight (`--provider-limit`).
RequestGate = Callable[[str], AbstractAsyncContextManager[Any]]
_request_gate: RequestGate | None = None


def set_request_gate(gate: RequestGate | None) -> None:
    global _request_gate
    _request_gate = gate


def _gated(model: str) -> AbstractAsyncContextManager[Any]:
    return _request_gate(model) if _request_gate is not None else nullcontext()


def litellm_module():
    global _litellm
    if _litellm is None:
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        with collector.paused():  # ~435,000 objects that live as long as the process
            import litellm

        litellm.suppress_debug_info = True
        litellm.drop_params = True
        _litellm = litellm
    return _litellm


def to_openai(message: Message | dict[str, Any]) -> dict[str, Any]:
    """A trajectory message in the chat-completions wire format."""
    if isinstance(message, dict):
        return message
    if isinstance(message, ToolMessage):
        return {"role": "tool", "tool_call_id": message.id, "content": message.content or ""}
    out: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        out["tool_calls"] = [
            {
                "id": tc.id,
                "type": "function",
                "function": {"name": tc.name, "arguments": json.dumps(tc.arguments)},
            }
            for tc in message.tool_calls
        ]
    return out


class MalformedToolCall(RuntimeError):
    """The model's tool-call arguments are not a JSON object. The reference fails the attempt
    (and retries the simulation) in this case rather than showing the model an error, so do we."""


def _parse_arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    if not raw:
        return {}
    try:
        value = json.loads(raw)
    except (TypeError, json.JSONDecodeError):
        raise MalformedToolCall(
            f"tool-call arguments are not valid JSON: {str(raw)[:200]!r}"
        ) from None
    if not isinstance(value, dict):
        raise MalformedToolCall(f"tool-call arguments are not a JSON object: {str(raw)[:200]!r}")
    return value


def _cost(litellm, response: Any) -> float:
    hidden = getattr(response, "_hidden_params", None) or {}
    if hidden.get("response_cost") is not None:  # litellm priced it already during the call
        return float(hidden["response_cost"])
    try:
        return float(litellm.completion_cost(completion_response=response) or 0.0)
    except Exception:  # noqa: BLE001 - unknown models simply cost nothing we can compute
        return 0.0


async def generate(
    model: str,
    messages: list[Message | dict[str, Any]],
    *,
    tools: list[dict[str, Any]] | None = None,
    tool_choice: str | None = None,
    role: str = "assistant",
    **llm_args: Any,
) -> ChatMessage:
    """One model reply as a message with the given role, carrying cost and token usage.

    OpenAI-compatible models take litellm's cheap route (`tau_mcp.conversation.direct`): the same request
    body, built by litellm once per call shape, without its per-call bookkeeping."""
    litellm = litellm_module()
    kwargs = dict(llm_args)
    kwargs.setdefault("num_retries", 3)
    wire = [to_openai(m) for m in messages]
    choice_arg = (tool_choice or "auto") if tools else None
    route = direct.route_for(litellm, model, kwargs, bool(tools), choice_arg)
    if route is not None:
        started = time.perf_counter()
        async with _gated(model):
            data = await direct.post(route, route.encode(wire, tools, choice_arg))
        return _from_json(data, role, model, direct.elapsed_since(started), litellm, route)
    if tools:
        kwargs["tools"] = tools
        kwargs["tool_choice"] = choice_arg
    started = time.perf_counter()
    async with _gated(model):
        response = await litellm.acompletion(model=model, messages=wire, **kwargs)
    elapsed = time.perf_counter() - started
    choice = response.choices[0].message
    tool_calls = [
        ToolCall(
            id=tc.id or f"call_{i}",
            name=tc.function.name,
            arguments=_parse_arguments(tc.function.arguments),
        )
        for i, tc in enumerate(getattr(choice, "tool_calls", None) or [])
    ]
    usage = getattr(response, "usage", None)
    return ChatMessage(
        role=role,  # type: ignore[arg-type]
        content=choice.content,
        tool_calls=tool_calls or None,
        cost=_cost(litellm, response),
        usage=(
            {"completion_tokens": usage.completion_tokens, "prompt_tokens": usage.prompt_tokens}
            if usage is not None
            else None
        ),
        raw_data={
            "model": getattr(response, "model", model),
            "generation_seconds": round(elapsed, 3),
        },
    )


def _from_json(
    data: dict[str, Any], role: str, model: str, elapsed: float, litellm: Any, route: Any
) -> ChatMessage:
    """A chat-completions reply (plain JSON) as a message, as the litellm path would make it."""
    try:
        choice = data["choices"][0]["message"]
    except (KeyError, IndexError, TypeError):
        raise direct.ModelCallError(f"{model}: reply without choices: {str(data)[:200]}") from None
    tool_calls = [
        ToolCall(
            id=tc.get("id") or f"call_{i}",
            name=(tc.get("function") or {}).get("name") or "",
            arguments=_parse_arguments((tc.get("function") or {}).get("arguments")),
        )
        for i, tc in enumerate(choice.get("tool_calls") or [])
    ]
    usage = data.get("usage")
    return ChatMessage(
        role=role,  # type: ignore[arg-type]
        content=choice.get("content"),
        tool_calls=tool_calls or None,
        cost=direct.cost(litellm, route, usage),
        usage=(
            {
                "completion_tokens": usage.get("completion_tokens"),
                "prompt_tokens": usage.get("prompt_tokens"),
            }
            if usage
            else None
        ),
        raw_data={"model": data.get("model") or model, "generation_seconds": elapsed},
    )


#: The keys of a reply message a conversation sends back to the model (those that are set).
REPLY_KEYS = ("content", "role", "tool_calls", "function_call")


@dataclass(frozen=True)
class Completion:
    """A model's reply as the chat-completions API gave it: the message as a plain dict (its
    set keys of `REPLY_KEYS`, tool-call arguments as the model wrote them), with its cost."""

    message: dict[str, Any]
    cost: float
    usage: dict[str, Any] | None
    model: str
    seconds: float

    @property
    def content(self) -> str | None:
        return self.message.get("content")


def _plain_reply(message: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in REPLY_KEYS:
        value = message.get(key)
        if value is None:
            continue
        if key == "tool_calls":
            value = [
                {
                    "function": {
                        "arguments": (tc.get("function") or {}).get("arguments"),
                        "name": (tc.get("function") or {}).get("name"),
                    },
                    "id": tc.get("id"),
                    "type": tc.get("type") or "function",
                }
                for tc in value
            ]
        out[key] = value
    return out


async def complete(
    model: str,
    messages: list[dict[str, Any]],
    *,
    tools: list[dict[str, Any]] | None = None,
    **llm_args: Any,
) -> Completion:
    """One model call with exactly these messages, tools and arguments (no tool choice is
    sent), for callers that keep their own wire history, as the original τ-bench's agents and
    users do. The reply is read as plain JSON."""
    litellm = litellm_module()
    kwargs = dict(llm_args)
    kwargs.setdefault("num_retries", 3)
    route = direct.route_for(litellm, model, kwargs, bool(tools), None)
    started = time.perf_counter()
    if route is not None:
        async with _gated(model):
            data = await direct.post(route, route.encode(messages, tools, None))
        try:
            message = data["choices"][0]["message"]
        except (KeyError, IndexError, TypeError):
            raise direct.ModelCallError(
                f"{model}: reply without choices: {str(data)[:200]}"
            ) from None
        usage = data.get("usage")
        return Completion(
            _plain_reply(message),
            direct.cost(litellm, route, usage),
            _usage(usage),
            data.get("model") or model,
            direct.elapsed_since(started),
        )
    if tools:
        kwargs["tools"] = tools
    async with _gated(model):
        response = await litellm.acompletion(model=model, messages=messages, **kwargs)
    usage = getattr(response, "usage", None)
    return Completion(
        _plain_reply(response.choices[0].message.model_dump()),
        _cost(litellm, response),
        _usage(usage.model_dump() if usage is not None else None),
        getattr(response, "model", model),
        round(time.perf_counter() - started, 3),
    )


def _usage(usage: dict[str, Any] | None) -> dict[str, Any] | None:
    if not usage:
        return None
    return {
        "completion_tokens": usage.get("completion_tokens"),
        "prompt_tokens": usage.get("prompt_tokens"),
    }
