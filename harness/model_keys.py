"""Which environment variables a model's provider reads its key from, known without importing
litellm (seconds of CPU), so that a run missing a key says so before it loads anything.

The provider is the model's prefix (`anthropic/claude-...`) or, for a bare OpenAI or Anthropic
name (`gpt-4.1`), the provider litellm's own model table gives it: the JSON file litellm ships,
read as data (tens of milliseconds), from which litellm builds the lists it resolves bare names
with. The variables are those litellm's `validate_environment` asks for, for the providers whose
key is all they need (tests/test_model_keys.py checks the table against litellm). A model of any
other provider, or a bare name the table does not hold, is `None` here and left to litellm.
"""

from __future__ import annotations

import importlib.util
from functools import lru_cache
from pathlib import Path

import orjson

#: Provider -> the variables any one of which holds its key.
PROVIDER_KEYS: dict[str, tuple[str, ...]] = {
    "openai": ("OPENAI_API_KEY",),
    "anthropic": ("ANTHROPIC_API_KEY",),
    "gemini": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    "mistral": ("MISTRAL_API_KEY",),
    "groq": ("GROQ_API_KEY",),
    "deepseek": ("DEEPSEEK_API_KEY",),
    "xai": ("XAI_API_KEY",),
    "openrouter": ("OPENROUTER_API_KEY",),
    "together_ai": ("TOGETHERAI_API_KEY",),
    "fireworks_ai": ("FIREWORKS_AI_API_KEY",),
    "perplexity": ("PERPLEXITYAI_API_KEY",),
    "cerebras": ("CEREBRAS_API_KEY",),
    "deepinfra": ("DEEPINFRA_API_KEY",),
}
#: The providers litellm resolves a bare model name to from its model table.
BARE_NAME_PROVIDERS = frozenset({"openai", "anthropic"})
MODEL_TABLE = "model_prices_and_context_window_backup.json"


def provider_keys(model: str) -> tuple[str, tuple[str, ...]] | None:
    """(provider, its key variables) for `model`, or None when that takes litellm to tell."""
    prefix, slash, _ = model.partition("/")
    if slash:
        keys = PROVIDER_KEYS.get(prefix)
        return (prefix, keys) if keys else None
    provider = _bare_model_providers().get(model)
    return (provider, PROVIDER_KEYS[provider]) if provider else None


@lru_cache(maxsize=1)
def _bare_model_providers() -> dict[str, str]:
    """Bare model name -> provider, for the providers of BARE_NAME_PROVIDERS, from litellm's
    model table (empty when litellm or its table cannot be found: litellm then decides)."""
    spec = importlib.util.find_spec("litellm")
    if spec is None or spec.origin is None:
        return {}
    try:
        table = orjson.loads((Path(spec.origin).parent / MODEL_TABLE).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {}
    return {
        name: entry["litellm_provider"]
        for name, entry in table.items()
        if isinstance(entry, dict)
        and entry.get("litellm_provider") in BARE_NAME_PROVIDERS
        and "/" not in name
        and ":" not in name  # fine-tuned ids (ft:...): litellm resolves those its own way
    }
