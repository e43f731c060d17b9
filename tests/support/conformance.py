"""Replaying the reference's recorded conformance fixtures against any way of calling tools.

Shared by the engine tests and the HTTP-server test, so both check exactly the same things.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache

from tau_mcp.servers.engine.render import parse_output
from tests.support.data import CONFORMANCE_DIR, DATA_DIR, ROOT, missing

__all__ = ["CONFORMANCE_DIR", "DATA_DIR", "ROOT"]

# (side, tool name, arguments) -> (text, is_error)
Caller = Callable[[str, str, dict], tuple[str, bool]]


def fixtures_present() -> bool:
    return missing("conformance") is None


@lru_cache(maxsize=8)
def gold(domain: str) -> dict:
    return json.loads((CONFORMANCE_DIR / "gold" / f"{domain}.json").read_text())


@lru_cache(maxsize=1)
def fuzz() -> tuple[list, dict]:
    episodes = json.loads((CONFORMANCE_DIR / "fuzz" / "episodes.json").read_text())
    reference = json.loads((CONFORMANCE_DIR / "fuzz" / "reference.json").read_text())
    return episodes, reference


@lru_cache(maxsize=1)
def banking_fuzz() -> tuple[list, dict]:
    """The banking_knowledge fuzz episodes and the reference's results (kept in files of their
    own, same formats)."""
    folder = CONFORMANCE_DIR / "fuzz"
    episodes = json.loads((folder / "banking_episodes.json").read_text())
    reference = json.loads((folder / "banking_reference.json").read_text())
    return episodes, reference


def fuzz_episodes(domain: str) -> list[dict]:
    if domain == "banking_knowledge":
        return banking_fuzz()[0]
    return [e for e in fuzz()[0] if e["domain"] == domain]


def fuzz_reference(domain: str) -> dict:
    return banking_fuzz()[1] if domain == "banking_knowledge" else fuzz()[1]


def side_of(requestor: str) -> str:
    return "user" if requestor == "user" else "agent"


@dataclass
class Mismatch:
    case: str
    problems: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.problems)


def compare_steps(case: str, caller: Caller, steps: list[dict], expected: list[dict]) -> Mismatch:
    result = Mismatch(case)
    for index, (step, want) in enumerate(zip(steps, expected, strict=True)):
        text, error = caller(side_of(step["requestor"]), step["name"], step["arguments"])
        if error != want["error"]:
            result.problems.append(
                f"step {index} {step['name']}: error={error}, reference {want['error']}: {text[:200]!r} vs {want['output'][:200]!r}"
            )
        elif text != want["output"] and parse_output(text) != parse_output(want["output"]):
            result.problems.append(
                f"step {index} {step['name']}: output {text[:300]!r} != reference {want['output'][:300]!r}"
            )
    return result


def compare_hashes(result: Mismatch, got: dict, want: dict) -> Mismatch:
    for side in ("agent_db", "user_db"):
        if want.get(side) is not None and got.get(side) != want[side]:
            result.problems.append(f"final {side} hash differs")
    return result
