"""Calling chat models through litellm, and turning their replies into trajectory messages.

litellm is imported on first use (it is slow to import and, unless told otherwise, fetches a
price list from the network on import).
"""

from __future__ import annotations

import json
import os
import time
import warnings
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager, nullcontext
from dataclasses import dataclass
from typing import Any

from tau_mcp.conversation import cassette, collector, direct
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
    body, built by litellm once per call shape, without its per-call bookkeeping. Inside a
    simulation with a cassette (`tau_mcp.conversation.cassette`), the call is recorded, or
    answered from the recording without reaching the model."""
    wire = [to_openai(m) for m in messages]
    choice_arg = (tool_choice or "auto") if tools else None
    lane = cassette.current()
    if lane is None:
        data, cost, seconds = await _chat(model, wire, tools, choice_arg, llm_args)
        return _message(data, role, model, cost, seconds)
    prepared = lane.prepare(
        "chat", model, messages=wire, tools=tools, tool_choice=choice_arg, args=llm_args
    )
    data, cost, seconds = await _through(
        lane, prepared, lambda: _chat(model, wire, tools, choice_arg, llm_args)
    )
    return _message(data, role, model, cost, seconds)


Answer = tuple[dict[str, Any], float, float]  # the reply as JSON, its cost, seconds it took


async def _through(
    lane: cassette.Lane, prepared: cassette.Prepared, live: Callable[[], Awaitable[Answer]]
) -> Answer:
    """A call inside a cassette's lane: the recorded answer, or the model's (recorded)."""
    number = lane.next_number()
    found = lane.answer(prepared, number)
    if found is not None:
        answer: Answer = (found.response, found.cost, found.seconds)
    else:
        answer = await live()
    lane.keep(prepared, number, *answer)
    return answer


async def _chat(
    model: str,
    wire: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    choice_arg: str | None,
    llm_args: dict[str, Any],
) -> Answer:
    """A chat completion from the model: the reply as chat-completions JSON (volatile fields
    such as its id and creation time left out), its cost and the seconds it took."""
    litellm = litellm_module()
    kwargs = dict(llm_args)
    kwargs.setdefault("num_retries", 3)
    route = direct.route_for(litellm, model, kwargs, bool(tools), choice_arg)
    if route is not None:
        started = time.perf_counter()
        async with _gated(model):
            data = await direct.post(route, route.encode(wire, tools, choice_arg))
        elapsed = direct.elapsed_since(started)
        return data, direct.cost(litellm, route, data.get("usage")), elapsed
    if tools:
        kwargs["tools"] = tools
        kwargs["tool_choice"] = choice_arg
    started = time.perf_counter()
    async with _gated(model):
        response = await litellm.acompletion(model=model, messages=wire, **kwargs)
    elapsed = round(time.perf_counter() - started, 3)
    return completion_json(response, model), _cost(litellm, response), elapsed


def completion_json(response: Any, model: str) -> dict[str, Any]:
    """A litellm chat-completion response as the JSON the provider sent (what is read of it)."""
    choices = []
    for choice in getattr(response, "choices", None) or []:
        message = choice.message
        out: dict[str, Any] = {"role": getattr(message, "role", None) or "assistant"}
        out["content"] = getattr(message, "content", None)
        refusal = getattr(message, "refusal", None)
        if refusal:
            out["refusal"] = refusal
        calls = getattr(message, "tool_calls", None)
        if calls:
            out["tool_calls"] = [
                {
                    "id": tc.id,
                    "type": "function",
                    "function": {"name": tc.function.name, "arguments": tc.function.arguments},
                }
                for tc in calls
            ]
        choices.append({"message": out, "finish_reason": getattr(choice, "finish_reason", None)})
    data: dict[str, Any] = {"model": getattr(response, "model", None) or model, "choices": choices}
    usage = getattr(response, "usage", None)
    if usage is not None:
        data["usage"] = {
            "prompt_tokens": getattr(usage, "prompt_tokens", None),
            "completion_tokens": getattr(usage, "completion_tokens", None),
        }
    return data


def _message(
    data: dict[str, Any], role: str, model: str, cost: float, elapsed: float
) -> ChatMessage:
    """A chat-completions reply (plain JSON) as a trajectory message."""
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
        cost=cost,
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
    users do. The reply is read as plain JSON; inside a simulation with a cassette the call is
    recorded, or answered from the recording."""
    lane = cassette.current()
    if lane is None:
        data, cost, seconds = await _chat(model, messages, tools, None, llm_args)
    else:
        prepared = lane.prepare("chat", model, messages=messages, tools=tools, args=llm_args)
        data, cost, seconds = await _through(
            lane, prepared, lambda: _chat(model, messages, tools, None, llm_args)
        )
    try:
        message = data["choices"][0]["message"]
    except (KeyError, IndexError, TypeError):
        raise direct.ModelCallError(f"{model}: reply without choices: {str(data)[:200]}") from None
    return Completion(
        _plain_reply(message), cost, _usage(data.get("usage")), data.get("model") or model, seconds
    )


def _usage(usage: dict[str, Any] | None) -> dict[str, Any] | None:
    if not usage:
        return None
    return {
        "completion_tokens": usage.get("completion_tokens"),
        "prompt_tokens": usage.get("prompt_tokens"),
    }


async def complete_request(request: dict[str, Any]) -> tuple[dict[str, Any], float]:
    """A chat completion sent as litellm's `acompletion` keyword arguments are (a retrieval
    tool's reranker): the reply as chat-completions JSON and its cost, through the cassette
    when a simulation has one."""
    args = {k: v for k, v in request.items() if k not in ("model", "messages")}
    model, messages = request["model"], request["messages"]

    async def live() -> Answer:
        litellm = litellm_module()
        started = time.perf_counter()
        response = await litellm.acompletion(**request)
        elapsed = round(time.perf_counter() - started, 3)
        return completion_json(response, model), _cost(litellm, response), elapsed

    lane = cassette.current()
    if lane is None:
        data, cost, _ = await live()
    else:
        prepared = lane.prepare("chat", model, messages=messages, args=args)
        data, cost, _ = await _through(lane, prepared, live)
    return data, cost


async def embed(model: str, texts: list[str], **args: Any) -> tuple[dict[str, Any], float]:
    """Embeddings of `texts` (litellm's `aembedding`): `{"data": [{"index", "embedding"}],
    "usage", "model"}` and the cost, through the cassette when a simulation has one."""

    async def live() -> Answer:
        litellm = litellm_module()
        started = time.perf_counter()
        with warnings.catch_warnings():
            # litellm's response model declares floats; base64 strings make pydantic warn.
            warnings.filterwarnings("ignore", message="Pydantic serializer warnings")
            response = await litellm.aembedding(model=model, input=texts, **args)
        elapsed = round(time.perf_counter() - started, 3)
        return embedding_json(response, model), _cost(litellm, response), elapsed

    lane = cassette.current()
    if lane is None:
        data, cost, _ = await live()
    else:
        prepared = lane.prepare("embedding", model, inputs=list(texts), args=args)
        data, cost, _ = await _through(lane, prepared, live)
    return data, cost


def embedding_json(response: Any, model: str) -> dict[str, Any]:
    """A litellm embedding response as plain JSON."""
    raw = response["data"] if isinstance(response, dict) else getattr(response, "data", None)
    data = []
    for position, item in enumerate(raw or []):
        item = item if isinstance(item, dict) else dict(item)
        data.append({"index": item.get("index", position), "embedding": item.get("embedding")})
    usage = (
        response.get("usage") if isinstance(response, dict) else getattr(response, "usage", None)
    )
    if usage is not None and not isinstance(usage, dict):
        usage = {"prompt_tokens": getattr(usage, "prompt_tokens", None)}
    model_name = (
        response.get("model") if isinstance(response, dict) else getattr(response, "model", None)
    )
    return {"model": model_name or model, "data": data, "usage": usage}
