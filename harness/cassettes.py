"""A run's cassette: the folders its model calls are recorded to and replayed from.

The cassette itself (its format, keys and lanes) is `tau_mcp.conversation.cassette`, where model
calls are made; this module opens one for a run's `RunConfig`, with the harness's key redaction
applied to everything it writes, and names each simulation's lane. docs/replay.md describes
record, replay and the format.
"""

from __future__ import annotations

import contextlib
import functools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tau_mcp.conversation.cassette import MISS_POLICIES, Cassette, CassetteError
from tau_mcp.harness import redaction
from tau_mcp.harness.errors import ConfigError

__all__ = ["lane_id", "lane_meta", "needs_no_model", "open_cassette", "saved_simulation_lane"]


@functools.lru_cache(maxsize=64)
def _written_forms(secret: str) -> tuple[str, ...]:
    """The ways a secret can appear in a JSON text: escaped once (a string value) or twice (a
    JSON text inside a string, such as a tool call's arguments), non-ASCII kept or escaped."""
    once = {json.dumps(secret, ensure_ascii=escape)[1:-1] for escape in (False, True)}
    twice = {
        json.dumps(form, ensure_ascii=escape)[1:-1] for form in once for escape in (False, True)
    }
    return tuple(sorted(once | twice, key=len, reverse=True))


def redact_json_texts(texts: list[str]) -> list[str]:
    """JSON texts with every secret in play replaced by `[redacted]` in whichever escaped form
    it was written (`_written_forms`): cassettes redact the texts they write, not the values,
    a batch at a time (finding the secrets in play reads the environment)."""
    forms = [form for secret in redaction.secrets_in_play() for form in _written_forms(secret)]
    return [_replaced(text, forms) for text in texts] if forms else texts


def _replaced(text: str, forms: list[str]) -> str:
    for written in forms:
        if written in text:
            text = text.replace(written, redaction.REDACTED)
    return text


def tau_mcp_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("tau-mcp")
    except PackageNotFoundError:  # pragma: no cover - an uninstalled tree
        return "unknown"


def cassette_options_problem(replay: Path | None, miss: str) -> str | None:
    """What is wrong with `--replay` / `--replay-miss` together, in one sentence (or None)."""
    if miss not in MISS_POLICIES:
        return f"--replay-miss takes fail or live, not '{miss}'"
    if miss != "fail" and replay is None:
        return "--replay-miss goes with --replay DIR"
    return None


def open_cassette(
    record: Path | None = None, replay: Path | None = None, miss: str = "fail"
) -> Cassette | None:
    """The cassette a run (or a re-grading, a review) records to or replays from (None:
    neither). A folder that is not a cassette (or one of another version) is one sentence."""
    problem = cassette_options_problem(replay, miss)
    if problem is not None:
        raise ConfigError(problem)
    if record is None and replay is None:
        return None
    try:
        return Cassette(
            record=record,
            replay=replay,
            miss=miss,  # type: ignore[arg-type]
            redact=redact_json_texts,
            secret_name=lambda name: (
                redaction.is_secret_name(name) or name in redaction.HEADER_ARGS
            ),
            written_by=f"tau-mcp {tau_mcp_version()}",
        )
    except CassetteError as exc:
        raise ConfigError(str(exc)) from None
    except OSError as exc:
        raise ConfigError(
            f"cannot use the cassette folder ({exc.strerror}: {exc.filename})"
        ) from None


@contextlib.contextmanager
def saved_simulation_lane(cassette: Cassette | None, sim: dict[str, Any]) -> Iterator[None]:
    """Around the model calls made for a saved simulation (re-grading's judge, a review): its
    lane, named as the run that made it named it."""
    if cassette is None:
        yield
        return
    task_id, trial, seed = str(sim.get("task_id")), int(sim.get("trial") or 0), sim.get("seed")
    seed = int(seed) if isinstance(seed, int) else 0
    with cassette.lane(lane_id(task_id, trial, seed), lane_meta(task_id, trial, seed)):
        yield


def lane_id(task_id: str, trial: int, seed: int) -> str:
    """A simulation's lane: its task, trial and seed (the same in the recorded run and in its
    replay, whichever process runs it)."""
    return f"{task_id}/trial-{trial}/seed-{seed}"


def lane_meta(task_id: str, trial: int, seed: int) -> dict[str, Any]:
    return {"task_id": task_id, "trial": trial, "seed": seed}


def needs_no_model(config: Any) -> bool:
    """A replay whose misses fail never reaches a model: no key is needed."""
    return config.replay is not None and config.replay_miss == "fail"
