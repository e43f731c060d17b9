"""Per-provider limits on model requests in flight (`--provider-limit openai=40,anthropic=20`).

The limit is per litellm provider (the part of the model string litellm routes by), held for the
duration of each request. In one process the gate is a set of semaphores; with local worker
processes those semaphores live in the driver, which grants permits over each worker's socket
(`tau_mcp.harness.distributed.process_pool`); on a Ray cluster it is one actor every worker asks
(`tau_mcp.harness.distributed.ray_pool`).
"""

from __future__ import annotations

import asyncio
from contextlib import asynccontextmanager
from typing import Any


def provider_of(model: str) -> str:
    """The provider litellm would send this model to (e.g. `gpt-4.1` -> openai)."""
    from tau_mcp.conversation.llm import litellm_module

    try:
        return str(litellm_module().get_llm_provider(model)[1]).lower()
    except Exception:  # noqa: BLE001 - an unknown model has no provider limit to honour
        return model.split("/", 1)[0].lower() if "/" in model else "unknown"


class LocalProviderLimits:
    """Semaphores per provider, for a run in one process (or a driver granting its workers)."""

    def __init__(self, limits: dict[str, int]) -> None:
        self.limits = dict(limits)
        self._semaphores: dict[str, asyncio.Semaphore] = {}
        self.in_flight: dict[str, int] = {}
        self.peak: dict[str, int] = {}

    def _semaphore(self, provider: str) -> asyncio.Semaphore | None:
        if provider not in self.limits:
            return None
        if provider not in self._semaphores:
            self._semaphores[provider] = asyncio.Semaphore(self.limits[provider])
        return self._semaphores[provider]

    async def acquire(self, provider: str) -> bool:
        """Take a permit for `provider`; False (and nothing to release) if it has no limit."""
        semaphore = self._semaphore(provider)
        if semaphore is None:
            return False
        await semaphore.acquire()
        self.in_flight[provider] = self.in_flight.get(provider, 0) + 1
        self.peak[provider] = max(self.peak.get(provider, 0), self.in_flight[provider])
        return True

    def release(self, provider: str) -> None:
        self.in_flight[provider] -= 1
        self._semaphores[provider].release()

    @asynccontextmanager
    async def gate(self, model: str) -> Any:
        provider = provider_of(model)
        if not await self.acquire(provider):
            yield
            return
        try:
            yield
        finally:
            self.release(provider)
