"""The reference's (`tau2 run`) spellings that `tau-harness run` takes as they are, so a tau2
user's command line works unchanged (docs/from-tau2.md has the whole map).

Names of agents and users map to ours. The reference's voice (full-duplex) options change
nothing in a text run there (they are read only with `--audio-native`), so they are accepted
and left unused here too, with a note; `--audio-native` itself, and the voice agent and user,
are refused in one sentence: tau-mcp has no voice mode.
"""

from __future__ import annotations

import difflib
import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field

from tau_mcp.harness.agents import REFERENCE_AGENT_NAMES
from tau_mcp.simulator.registry import REFERENCE_USER_NAMES

AGENT_NAMES = REFERENCE_AGENT_NAMES
USER_NAMES = REFERENCE_USER_NAMES
VOICE_AGENTS = {"discrete_time_audio_native_agent"}
VOICE_USERS = {"voice_streaming_user_simulator"}
NO_VOICE = "tau-mcp has no voice (full-duplex) mode"

#: Options of `tau2 run` that only shape voice runs or the reference's own log files: option ->
#: whether it takes a value. The reference reads the voice ones only with --audio-native.
REFERENCE_ONLY: dict[str, bool] = {
    "--audio-native-provider": True,
    "--cascaded-config": True,
    "--audio-native-model": True,
    "--reasoning-effort": True,
    "--tick-duration": True,
    "--max-steps-seconds": True,
    "--speech-complexity": True,
    "--pcm-sample-rate": True,
    "--telephony-rate": True,
    "--wait-to-respond-other": True,
    "--wait-to-respond-self": True,
    "--yield-when-interrupted": True,
    "--yield-when-interrupting": True,
    "--interruption-check-interval": True,
    "--integration-duration": True,
    "--silence-annotation-threshold": True,
    "--hallucination-retries": True,
    "--xml-prompt": False,
    "--no-xml-prompt": False,
    "--audio-debug": False,
    "--audio-taps": False,
    "--verbose-logs": False,
    "--llm-log-mode": True,
}
LOG_ONLY = {"--verbose-logs", "--llm-log-mode"}
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


class Tau2OptionError(ValueError):
    """A reference option tau-mcp cannot honour, or an unknown option; one sentence."""


@dataclass
class ExtraArgs:
    """What `run` found after its own options: more task ids (`--task-ids a b c`) and notes
    about the reference options it accepted without using."""

    task_ids: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def read_extra_args(args: Iterable[str], known: Iterable[str]) -> ExtraArgs:
    """Sort `run`'s leftover arguments: plain words are task ids, reference-only options are
    noted (their values skipped), `--audio-native` and unknown options are refused."""
    out = ExtraArgs()
    words = list(args)
    ignored: list[str] = []
    index = 0
    while index < len(words):
        word = words[index]
        index += 1
        if not word.startswith("-"):
            out.task_ids.append(word)
            continue
        name, has_value = word.split("=", 1)[0], "=" in word
        if name == "--audio-native":
            raise Tau2OptionError(f"{NO_VOICE}; drop --audio-native (docs/from-tau2.md)")
        if name not in REFERENCE_ONLY:
            close = difflib.get_close_matches(name, [*known, *REFERENCE_ONLY], n=1, cutoff=0.75)
            hint = f"; did you mean {close[0]}?" if close else " (tau-harness run --help)"
            raise Tau2OptionError(f"no such option: {name}{hint}")
        if REFERENCE_ONLY[name] and not has_value:
            if index >= len(words):
                raise Tau2OptionError(f"{name} needs a value")
            index += 1
        ignored.append(name)
    logs = [n for n in ignored if n in LOG_ONLY]
    voice = [n for n in ignored if n not in LOG_ONLY]
    if logs:
        out.notes.append(
            f"note: {', '.join(logs)} ignored: tau-mcp writes no per-call model logs; every "
            "message, with its cost and token usage, is in the results file"
        )
    if voice:
        out.notes.append(
            f"note: {', '.join(voice)} ignored: a voice-run setting, which the reference "
            f"reads only with --audio-native, and {NO_VOICE}"
        )
    return out


def agent_name(name: str) -> str:
    if name in VOICE_AGENTS:
        raise Tau2OptionError(f"{NO_VOICE}: no {name}")
    return AGENT_NAMES.get(name, name)


def user_name(name: str) -> str:
    if name in VOICE_USERS:
        raise Tau2OptionError(f"{NO_VOICE}: no {name}")
    return USER_NAMES.get(name, name)


def check_persona(raw: str | None) -> None:
    """`--user-persona`: read as the reference reads it (a JSON object) and, as there, unused."""
    if raw is None:
        return
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise Tau2OptionError(f"--user-persona is not valid JSON: {exc.msg}") from None
    if not isinstance(value, dict):
        raise Tau2OptionError("--user-persona must be a JSON object")


def apply_log_level(level: str | None) -> None:
    """`--log-level`: the level of tau-mcp's own loggers (`tau.*`) and litellm's."""
    if level is None:
        return
    name = level.upper()
    if name not in LOG_LEVELS:
        raise Tau2OptionError(f"--log-level is one of {', '.join(LOG_LEVELS)}, not '{level}'")
    logging.basicConfig(format="%(levelname)s %(name)s: %(message)s")
    for logger in ("tau", "LiteLLM"):
        logging.getLogger(logger).setLevel(name)
