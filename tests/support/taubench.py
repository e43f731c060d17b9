"""The original τ-bench's recorded fixtures (`conformance/taubench`) and its two domains, for the
tests that check our τ-bench domains against it: on the engine, through the grader, and through
tau-server's HTTP and MCP endpoints.

The domains are built from their specs (they are not in the registry's list of domains).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import lru_cache
from typing import Any

from tau_mcp.conversation.messages import ChatMessage, Message, ToolCall, ToolMessage
from tau_mcp.servers.app import ServerSettings, create_app
from tau_mcp.servers.domains.tau_bench_airline import SPEC as AIRLINE
from tau_mcp.servers.domains.tau_bench_retail import SPEC as RETAIL
from tau_mcp.servers.engine.domain import Domain
from tau_mcp.servers.guards import LOOPBACK_HOSTS
from tests.support.data import CONFORMANCE_DIR, DEMO_DIR, TAUBENCH_DIR
from tests.support.server import InProcess

FIXTURES = CONFORMANCE_DIR / "taubench"
DOMAIN_OF = {"retail": RETAIL.name, "airline": AIRLINE.name}
GOLD_FILES = ("retail_test", "retail_train", "retail_dev", "airline_test")
TABLES = {
    "retail": ("orders", "products", "users"),
    "airline": ("flights", "reservations", "users"),
}
# The stub user of the recorded runs ends the conversation with this reply.
USER_STOP = "###STOP###"


def build_domains() -> dict[str, Domain]:
    """Both τ-bench domains, fresh (their data comes from $TAUBENCH_DATA_DIR; the tau2 data
    folder they are given is only where tau2's own texts would be)."""
    return {spec.name: Domain(spec, DEMO_DIR) for spec in (RETAIL, AIRLINE)}


@lru_cache(maxsize=1)
def domains() -> dict[str, Domain]:
    """Both τ-bench domains, loaded once per test process."""
    return build_domains()


@lru_cache(maxsize=8)
def gold(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / "gold" / f"{name}.json").read_text())


@lru_cache(maxsize=1)
def fuzz() -> dict[str, Any]:
    return json.loads((FIXTURES / "fuzz" / "episodes.json").read_text())


def raw_data(folder: str) -> dict[str, Any]:
    """The original's `env.data`: the data files as `json.load` reads them."""
    where = TAUBENCH_DIR / "taubench" / "domains" / folder
    return {name: json.loads((where / f"{name}.json").read_text()) for name in TABLES[folder]}


def _hashable(value: Any) -> Any:
    if isinstance(value, dict):
        return tuple((key, _hashable(item)) for key, item in sorted(value.items()))
    if isinstance(value, list):
        return tuple(_hashable(item) for item in value)
    return value


def original_hash(data: dict[str, Any]) -> str:
    """The original's data hash of a whole database in its JSON form, computed in full (the
    engine's hash reuses spans of a base text; this is the slow, obviously right way)."""
    return hashlib.sha256(str(_hashable(data)).encode("utf-8")).hexdigest()


def trajectory(steps: list[tuple[dict[str, Any], str]], reply: str | None) -> list[Message]:
    """Messages of an episode that ran these (action, observation) steps, one tool call per
    agent message, then (with `reply`) answered the user and got the stub user's stop."""
    messages: list[Message] = [ChatMessage(role="user", content="Hi, I need help.")]
    for index, (action, observation) in enumerate(steps):
        call = ToolCall(id=f"call_{index}", name=action["name"], arguments=action["kwargs"])
        messages.append(ChatMessage(role="assistant", tool_calls=[call]))
        messages.append(ToolMessage(id=call.id, content=observation))
    if reply is not None:
        messages.append(ChatMessage(role="assistant", content=reply))
        messages.append(ChatMessage(role="user", content=USER_STOP))
    return messages


@asynccontextmanager
async def serving(**settings: Any) -> AsyncIterator[InProcess]:
    """tau-server in-process, serving both τ-bench domains."""
    settings.setdefault("allowed_hosts", (*LOOPBACK_HOSTS, "testserver"))
    app = create_app(build_domains(), settings=ServerSettings(**settings))
    async with app.router.lifespan_context(app):
        yield InProcess(app)
