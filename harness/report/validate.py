"""Checking that a loaded results document has what the views need, so a hand-edited or foreign
file gives one sentence instead of a traceback."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.results import ResultsError


def check_simulations(path: Path, document: dict[str, Any]) -> None:
    for index, sim in enumerate(document.get("simulations") or []):
        if not isinstance(sim, dict):
            raise ResultsError(f"{path}: simulation #{index} is not a JSON object")
        if sim.get("task_id") is None:
            raise ResultsError(f"{path}: simulation #{index} has no task_id")
        info = sim.get("reward_info")
        if info is not None and not isinstance(info, dict):
            raise ResultsError(
                f"{path}: simulation #{index} has a reward_info that is not an object"
            )
        if not isinstance(sim.get("messages") or [], list):
            raise ResultsError(f"{path}: simulation #{index} has messages that are not a list")
