"""May a run resume into an existing results file? Only if nothing that shapes a result changed.

Resuming keeps the file's finished simulations and runs only the missing ones, under the new
run's header. That is sound only when the kept simulations would have come out of the new run
too: same domain data and tasks, agent, user, models and their arguments, judge, seed, trials
and limits. Settings that cannot change a recorded result are not compared: the results path,
`--max-concurrency`, `--max-retries` (infrastructure failures are re-run anyway), the server
URL and token, and the transport-only model arguments in TRANSPORT_ARGS. A setting the file
does not record (an older file, or one written by the reference) is not compared either.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

# Model arguments that only say how to reach or authenticate with the provider.
TRANSPORT_ARGS = frozenset(
    {"api_key", "timeout", "request_timeout", "num_retries", "max_retries", "extra_headers"}
)


class ResumeConflict(ValueError):
    """The results file was written by a run with other settings; the message names them."""


def _get(info: dict[str, Any], *keys: str) -> Any:
    value: Any = info
    for key in keys:
        if not isinstance(value, dict) or key not in value:
            return _MISSING
        value = value[key]
    return value


_MISSING = object()


def _model_args(value: Any) -> Any:
    if value is _MISSING:
        return value
    return {k: v for k, v in (value or {}).items() if k not in TRANSPORT_ARGS}


# (label, path in the `info` header, normaliser, show values?)
_SETTINGS: list[tuple[str, tuple[str, ...], Any, bool]] = [
    ("domain", ("environment_info", "domain_name"), None, True),
    ("task set", ("task_set_name",), None, True),
    ("agent", ("agent_info", "implementation"), None, True),
    ("agent model", ("agent_info", "llm"), None, True),
    ("agent model args", ("agent_info", "llm_args"), _model_args, True),
    ("user", ("user_info", "implementation"), None, True),
    ("user model", ("user_info", "llm"), None, True),
    ("user model args", ("user_info", "llm_args"), _model_args, True),
    ("judge model", ("judge_llm",), None, True),
    ("judge model args", ("judge_llm_args",), _model_args, True),
    ("seed", ("seed",), None, True),
    ("trials", ("num_trials",), None, True),
    ("max steps", ("max_steps",), None, True),
    ("max errors", ("max_errors",), None, True),
    ("timeout", ("timeout",), None, True),
    ("communication protocol", ("enforce_communication_protocol",), None, True),
    ("retrieval config", ("retrieval_config",), None, True),
    ("retrieval config kwargs", ("retrieval_config_kwargs",), None, True),
    ("domain policy", ("environment_info", "policy"), None, False),
    ("user guidelines", ("user_info", "global_simulation_guidelines"), None, False),
]


def _show(value: Any) -> str:
    if value is None:
        return "none"
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def _task_difference(old_tasks: Any, new_tasks: list[dict[str, Any]]) -> str | None:
    if not isinstance(old_tasks, list) or not old_tasks:
        return None  # a file without its task list (e.g. a bare list of simulations)
    if not new_tasks:
        return None  # no fixed selection: `tau-harness serve` adds tasks as they are played
    old_ids = [str(t.get("id")) for t in old_tasks if isinstance(t, dict)]
    new_ids = [str(t.get("id")) for t in new_tasks]
    if old_ids != new_ids:
        return f"tasks ({len(old_ids)} in the file, {len(new_ids)} selected now)"
    if old_tasks != new_tasks:
        return "task definitions (the data differ)"
    return None


def differences(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """Each setting that shapes a result and differs between two results headers
    (documents with `info` and `tasks`), in words."""
    old_info, new_info = old.get("info") or {}, new.get("info") or {}
    found = []
    for label, keys, normalise, show in _SETTINGS:
        before, after = _get(old_info, *keys), _get(new_info, *keys)
        if before is _MISSING or after is _MISSING:
            continue
        if normalise is not None:
            before, after = normalise(before), normalise(after)
        if before != after:
            found.append(f"{label} {_show(before)} (now {_show(after)})" if show else label)
    tasks = _task_difference(old.get("tasks"), new.get("tasks") or [])
    if tasks:
        found.append(tasks)
    return found


def check_no_orphan_journal(path: Path | None) -> None:
    """A journal whose results file is gone belongs to no run we can resume (a run writes its
    file before its first journal line); appending to it would mix two runs' simulations."""
    if path is None:
        return
    journal = Path(path).with_name(Path(path).name + ".journal.jsonl")
    if journal.exists() and not Path(path).exists():
        raise ResumeConflict(
            f"{journal} is left over from a run whose results file {path} is gone; "
            "move or delete it, or choose another --save-to"
        )


def check_resumable(path: Path, previous: dict[str, Any], header: dict[str, Any]) -> None:
    """Raise ResumeConflict naming every differing setting; return when resuming is sound."""
    if not isinstance(previous.get("info"), dict):
        raise ResumeConflict(
            f"{path} is not a results file written by a run (it has no run header), so a run "
            "cannot resume into it; choose another --save-to"
        )
    found = differences(previous, header)
    if found:
        raise ResumeConflict(
            f"{path} holds a run with other settings: {'; '.join(found)}; rerun with the "
            "file's settings to resume it, or choose another --save-to"
        )
