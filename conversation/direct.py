"""The cheap way to call OpenAI-compatible chat models through litellm.

`litellm.acompletion` spends several milliseconds of CPU per call on things a benchmark harness
does not need per call: the OpenAI SDK's recursive request transform, logging objects and
success handlers, cost bookkeeping (slow for models missing from its price list, e.g. a local
vLLM model), and response objects. For providers litellm serves through its OpenAI chat config,
this module keeps litellm for what users depend on (model strings, provider resolution,
parameter mapping and dropping, and the request body: litellm's own `transform_request` builds
it) but does that resolution once per call shape, builds and encodes the part of the body that
does not change (parameters, tool schemas) once per tool list (`tau_mcp.conversation.wire_json`), posts
the body on one kept-alive HTTP client, reads the reply as plain JSON and prices it from
litellm's price list only for models it knows.

Anything unusual (another provider, an argument outside the plain sampling set, a model litellm
routes to the Responses API, custom headers) returns no route, and the caller uses
`litellm.acompletion` as before.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from dataclasses import dataclass
from typing import Any

from tau_mcp.conversation import wire_json

DIRECT_PROVIDERS = frozenset({"openai"})
# Sampling arguments litellm maps through `get_optional_params`; anything else takes litellm's
# full path, so no argument is ever silently dropped or passed differently.
SAMPLING_ARGS = frozenset(
    {
        "temperature",
        "top_p",
        "seed",
        "max_tokens",
        "max_completion_tokens",
        "stop",
        "presence_penalty",
        "frequency_penalty",
        "logit_bias",
        "user",
        "parallel_tool_calls",
        "reasoning_effort",
    }
)
CONNECTION_ARGS = frozenset({"api_base", "base_url", "api_key", "num_retries", "timeout"})
RETRY_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})
DEFAULT_TIMEOUT_S = 600.0
OPENAI_DEFAULT_BASE = "https://api.openai.com/v1"
TOOL_CACHE_SIZE = 1024
# Open connections per model endpoint. Without a cap, hundreds of simulations starting together
# open hundreds of connections in the same instant, and a server with a short accept backlog
# drops the excess SYNs: those requests then stall for seconds of TCP retransmission.
MAX_CONNECTIONS_PER_HOST = 32


class ModelCallError(RuntimeError):
    """The model endpoint refused or failed the request (after retries where retrying helps)."""


@dataclass
class Route:
    """Everything about a call that does not change from one turn to the next."""

    model: str  # the provider's model name (`openai/fake` -> `fake`)
    provider: str
    url: str
    headers: dict[str, str]
    params: dict[str, Any]  # mapped sampling params, tools excluded
    config: Any  # litellm's provider chat config (builds the body)
    fix_messages: Any  # litellm's message clean-up (drops None fields), run before the config
    litellm_params: dict[str, Any]
    retries: int
    timeout: float
    priced: bool  # litellm's price list knows the model

    def __post_init__(self) -> None:
        self._by_list: dict[int, tuple[list | None, wire_json.BodyTemplate]] = {}
        self._by_text: dict[bytes, wire_json.BodyTemplate] = {}

    def encode(self, messages: list[dict[str, Any]], tools: list | None, tool_choice: Any) -> bytes:
        """The request body as litellm's OpenAI path sends it, encoded.

        litellm still transforms the messages on every call; the rest of the body (sampling
        parameters and the tool schemas, which litellm rewrites per call, walking every schema
        for patterns a validator would reject) is transformed and encoded once per tool list."""
        part = self._transform(self.fix_messages(messages), None, None)["messages"]
        return self._template(tools or None, tool_choice).render(part)

    def _transform(self, messages: list, tools: list | None, tool_choice: Any) -> dict[str, Any]:
        params = dict(self.params)
        if tools:
            params["tools"] = tools
            if tool_choice is not None:  # the original τ-bench sends tools without a choice
                params["tool_choice"] = tool_choice
        return self.config.transform_request(
            self.model, messages, params, self.litellm_params, self.headers
        )

    def _template(self, tools: list | None, tool_choice: Any) -> wire_json.BodyTemplate:
        """The body around its messages, by tool list: the same list object hits at once; a new
        list with the same content (every simulation builds its own) costs one encoding."""
        cached = self._by_list.get(id(tools))
        if cached is not None and cached[0] is tools:
            return cached[1]
        content = wire_json.dumps(tools) if tools else b""
        template = self._by_text.get(content)
        if template is None:
            template = wire_json.template(self._without_messages(tools, tool_choice))
            _bounded_put(self._by_text, content, template)
        _bounded_put(self._by_list, id(tools), (tools, template))  # holding it keeps its id unique
        return template

    def _without_messages(self, tools: list | None, tool_choice: Any) -> dict[str, Any]:
        data = self._transform([], tools, tool_choice)
        # The OpenAI SDK merges `extra_body` into the body and leaves `stream` out unless set.
        extra = data.pop("extra_body", None) or {}
        if not data.get("stream"):
            data.pop("stream", None)
        return {**data, **extra}


def _bounded_put(cache: dict, key: Any, value: Any) -> None:
    if len(cache) >= TOOL_CACHE_SIZE:
        cache.pop(next(iter(cache)))
    cache[key] = value


_routes: dict[tuple, Route | None] = {}
_clients: dict[int, tuple[asyncio.AbstractEventLoop, Any, Any]] = {}
_priced: dict[str, bool] = {}


# Settings a route reads from the environment; part of the cache key, so changing one (a test
# pointing at another fake server, a rotated key) builds a new route.
ROUTE_ENV = ("OPENAI_BASE_URL", "OPENAI_API_BASE", "OPENAI_API_KEY", "OPENAI_ORGANIZATION")


def _key(model: str, args: dict[str, Any], has_tools: bool, tool_choice: Any) -> tuple:
    """The call shape, looked up on every call: plain values key as themselves, with their type
    (1, 1.0 and True are equal keys but not the same body); unhashable ones (a `stop` list, a
    dict tool choice) by their JSON."""
    env = tuple(map(os.environ.get, ROUTE_ENV))
    try:
        items = tuple(sorted((k, type(v), v) for k, v in args.items()))
        key = (model, items, has_tools, type(tool_choice), tool_choice, env)
        hash(key)
        return key
    except TypeError:
        items = tuple(
            sorted((k, json.dumps(v, sort_keys=True, default=str)) for k, v in args.items())
        )
        return ("json", model, items, has_tools, json.dumps(tool_choice, default=str), env)


def route_for(
    litellm: Any, model: str, args: dict[str, Any], has_tools: bool, tool_choice: Any
) -> Route | None:
    """The direct route for this call shape, or None when litellm's full path must handle it."""
    if os.environ.get("TAU_LITELLM_FULL_PATH"):
        return None
    key = _key(model, args, has_tools, tool_choice)
    if key not in _routes:
        try:
            _routes[key] = _build_route(litellm, model, args, has_tools, tool_choice)
        except Exception:  # noqa: BLE001 - anything litellm cannot resolve goes its full path
            _routes[key] = None
    return _routes[key]


def _build_route(
    litellm: Any, model: str, args: dict[str, Any], has_tools: bool, tool_choice: Any
) -> Route | None:
    if set(args) - SAMPLING_ARGS - CONNECTION_ARGS:
        return None
    if litellm.headers or litellm.organization or os.environ.get("OPENAI_ORGANIZATION"):
        return None
    if litellm.callbacks or litellm.success_callback or litellm.input_callback:
        return None  # the user wants litellm's logging: give them the full path
    api_base_arg = args.get("api_base") or args.get("base_url")
    name, provider, dynamic_key, _ = litellm.get_llm_provider(model, api_base=api_base_arg)
    if provider not in DIRECT_PROVIDERS:
        return None
    info = litellm.model_cost.get(name) or litellm.model_cost.get(model) or {}
    if info.get("mode") not in (None, "chat"):
        return None  # e.g. models litellm bridges to the Responses API
    from litellm.types.utils import LlmProviders
    from litellm.utils import ProviderConfigManager

    config = ProviderConfigManager.get_provider_chat_config(
        model=name, provider=LlmProviders(provider)
    )
    if config is None or not hasattr(config, "transform_request"):
        return None
    sampling = {k: v for k, v in args.items() if k in SAMPLING_ARGS}
    probe_tools = [{"type": "function", "function": {"name": "probe", "parameters": {}}}]
    params = litellm.get_optional_params(
        model=name,
        custom_llm_provider=provider,
        tools=probe_tools if has_tools else None,
        tool_choice=tool_choice if has_tools else None,
        **sampling,
    )
    params.pop("tools", None)
    params.pop("tool_choice", None)
    api_base = (
        api_base_arg
        or litellm.api_base
        or os.environ.get("OPENAI_BASE_URL")
        or os.environ.get("OPENAI_API_BASE")
        or OPENAI_DEFAULT_BASE
    )
    api_key = (
        args.get("api_key")
        or dynamic_key
        or litellm.api_key
        or litellm.openai_key
        or os.environ.get("OPENAI_API_KEY")
    )
    headers = {"Content-Type": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    from litellm.utils import validate_and_fix_openai_messages

    return Route(
        model=name,
        provider=provider,
        url=api_base.rstrip("/") + "/chat/completions",
        headers=headers,
        params=params,
        config=config,
        fix_messages=validate_and_fix_openai_messages,
        litellm_params={"custom_llm_provider": provider, "api_base": api_base_arg},
        retries=int(args.get("num_retries", 0) or 0),
        timeout=float(args.get("timeout") or DEFAULT_TIMEOUT_S),
        priced=_is_priced(litellm, name, provider),
    )


def _is_priced(litellm: Any, name: str, provider: str) -> bool:
    if name not in _priced:
        try:
            litellm.get_model_info(name, custom_llm_provider=provider)
            _priced[name] = True
        except Exception:  # noqa: BLE001 - not in the price list: costs nothing we can compute
            _priced[name] = False
    return _priced[name]


def cost(litellm: Any, route: Route, usage: dict[str, Any] | None) -> float:
    """litellm's per-token price for a model it knows; 0.0 otherwise (as before: litellm's own
    cost calculation fails for unknown models and we recorded nothing)."""
    if not route.priced or not usage:
        return 0.0
    cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
    try:
        prompt, completion = litellm.cost_per_token(
            model=route.model,
            custom_llm_provider=route.provider,
            prompt_tokens=usage.get("prompt_tokens") or 0,
            completion_tokens=usage.get("completion_tokens") or 0,
            cache_read_input_tokens=cached,
        )
    except Exception:  # noqa: BLE001
        return 0.0
    return float(prompt + completion)


def _session() -> Any:
    """One kept-alive aiohttp session per event loop (tests run several loops in a process).

    aiohttp rather than httpx: a chat-completions round trip costs about a third of the CPU.
    The session closes when the loop shuts its async generators down (`asyncio.run` does)."""
    import aiohttp

    loop = asyncio.get_running_loop()
    entry = _clients.get(id(loop))
    if entry is not None and entry[0] is loop and not entry[1].closed:
        return entry[1]
    connector = aiohttp.TCPConnector(
        limit=0, limit_per_host=MAX_CONNECTIONS_PER_HOST, keepalive_timeout=30
    )
    session = aiohttp.ClientSession(connector=connector)
    keeper = _close_at_shutdown(session)
    loop.create_task(keeper.__anext__())
    _clients[id(loop)] = (loop, session, keeper)
    return session


async def _close_at_shutdown(session: Any):
    try:
        yield
    finally:
        await session.close()


async def post(route: Route, content: bytes) -> dict[str, Any]:
    """POST the encoded body; retry what retrying can fix (connection errors, 408/409/429/5xx)."""
    import aiohttp

    session = _session()
    timeout = aiohttp.ClientTimeout(total=route.timeout)
    for attempt in range(route.retries + 1):
        last = attempt == route.retries
        try:
            async with session.post(
                route.url, data=content, headers=route.headers, timeout=timeout
            ) as response:
                status, raw = response.status, await response.read()
                retry_after = response.headers.get("retry-after") if status >= 400 else None
        except (TimeoutError, aiohttp.ClientError) as exc:
            if last:
                raise ModelCallError(
                    f"{route.provider}/{route.model}: cannot reach {route.url} ({type(exc).__name__}: {exc})"
                ) from exc
            await asyncio.sleep(_backoff(attempt, None))
            continue
        if status < 400:
            try:
                return wire_json.loads(raw)
            except ValueError as exc:
                raise ModelCallError(
                    f"{route.provider}/{route.model} answered with a body that is not JSON "
                    f"({exc}): {raw[:200]!r}"
                ) from exc
        if status in RETRY_STATUS and not last:
            await asyncio.sleep(_backoff(attempt, retry_after))
            continue
        text = raw[:300].decode(errors="replace")
        raise ModelCallError(f"{route.provider}/{route.model} answered {status}: {text}")
    raise AssertionError("unreachable")


def _backoff(attempt: int, retry_after: str | None) -> float:
    try:
        if retry_after is not None:
            return min(float(retry_after), 60.0)
    except ValueError:
        pass
    return min(0.5 * 2**attempt, 8.0)


def elapsed_since(started: float) -> float:
    return round(time.perf_counter() - started, 3)
