"""A run's cassette: the folders its model calls are recorded to and replayed from.

The cassette itself (its format, keys and lanes) is `tau_mcp.conversation.cassette`, where model
calls are made; this module opens one for a run's `RunConfig`, with the harness's key redaction
applied to everything it writes, and names each simulation's lane. docs/replay.md describes
record, replay and the format.
"""

from __future__ import annotations

from typing import Any

from tau_mcp.conversation.cassette import Cassette, CassetteError
from tau_mcp.harness import redaction
from tau_mcp.harness.errors import ConfigError

__all__ = ["lane_id", "lane_meta", "needs_no_model", "open_cassette"]


def open_cassette(config: Any) -> Cassette | None:
    """The cassette a run with this `RunConfig` records to or replays from (None: neither).
    A folder that is not a cassette (or one of another version) is one sentence."""
    if config.record is None and config.replay is None:
        return None
    from tau_mcp.harness.leaderboard.submission import tau_mcp_version

    try:
        return Cassette(
            record=config.record,
            replay=config.replay,
            miss=config.replay_miss,
            redact=redaction.redact,
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


def lane_id(task_id: str, trial: int, seed: int) -> str:
    """A simulation's lane: its task, trial and seed (the same in the recorded run and in its
    replay, whichever process runs it)."""
    return f"{task_id}/trial-{trial}/seed-{seed}"


def lane_meta(task_id: str, trial: int, seed: int) -> dict[str, Any]:
    return {"task_id": task_id, "trial": trial, "seed": seed}


def needs_no_model(config: Any) -> bool:
    """A replay whose misses fail never reaches a model: no key is needed."""
    return config.replay is not None and config.replay_miss == "fail"
