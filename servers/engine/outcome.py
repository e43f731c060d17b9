"""What one tool call returns to whoever made it: its text, whether it failed, what it cost."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    text: str
    error: bool
    cost: float = 0.0  # dollars the call's own model calls cost (retrieval embeddings, rerankers)
    # An injected fault this call met (`servers/engine/faults.py`): its kind and call index.
    fault: dict[str, Any] | None = None
