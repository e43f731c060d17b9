"""Seeded tool faults: the kinds, a run's fault plan, and what an agent sees when one hits.

A fault plan gives each kind a rate in [0, 1]. For every call of an agent tool the episode's
injector (`fault_injector.py`) draws, per kind, a number in [0, 1): the kind's own 8 bytes of
BLAKE2b of `seed|task|trial|call index`; a kind fires when its draw is below its rate. The draws use
no clock and no global random state, so one seed faults the same calls in every run, every
process and every replay. What each kind does is in docs/faults.md; the texts below are what
the agent reads, in the domain's own error style (`Error: <message>`, as `Episode.call` renders
a failing tool).

A plan is written three ways, all read by `parse_faults`: the option text
`transient=0.1,rate_limit=0.05,timeout_seconds=0.2`, a flat mapping of the same keys (a profile
file, a JSON body), or the plan's own JSON layout (`FaultPlan.body()`).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict

from tau_mcp.servers.engine.errors import EngineError


class FaultKind(StrEnum):
    TRANSIENT = "transient"
    PERMANENT = "permanent"
    TIMEOUT = "timeout"
    RATE_LIMIT = "rate_limit"
    STALE_READ = "stale_read"
    SLOW = "slow"


#: When several kinds are drawn for one call, the first of this order is the one that happens.
PRECEDENCE = (
    FaultKind.PERMANENT,
    FaultKind.RATE_LIMIT,
    FaultKind.TIMEOUT,
    FaultKind.TRANSIENT,
    FaultKind.STALE_READ,
    FaultKind.SLOW,
)
#: Kinds after which the same call, made again (once the rate-limit window has passed), succeeds.
RETRYABLE = frozenset({FaultKind.TRANSIENT, FaultKind.TIMEOUT, FaultKind.RATE_LIMIT})

#: Settings a plan may carry besides its rates: (type, lowest, highest).
SETTINGS: dict[str, tuple[type, float, float]] = {
    "timeout_seconds": (float, 0.0, 30.0),  # how long a timeout waits before it fails
    "slow_seconds": (float, 0.0, 30.0),  # how long a slow call waits before it runs
    "rate_limit_calls": (int, 1, 100),  # calls a rate limit refuses after the one it hit
    "seed": (int, -(2**63), 2**63 - 1),
    "trial": (int, 0, 10**9),
}
KINDS = tuple(kind.value for kind in FaultKind)
#: The fields of `POST /{domain}/episodes` (and of an Eval Protocol row's config) naming faults.
FAULTS_OPTION = "faults"
PROFILE_OPTION = "faults_profile"


class FaultError(EngineError):
    """A fault plan that cannot be read: an unknown kind, a rate outside [0, 1], a bad value."""

    status = 400


class FaultPlan(BaseModel):
    """Which faults a run injects, how often, and the settings of the timed ones. `seed` and
    `trial` key the draws of one episode (the harness gives each simulation its trial's)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    rates: dict[FaultKind, float]
    timeout_seconds: float = 1.0
    slow_seconds: float = 0.5
    rate_limit_calls: int = 1
    seed: int = 0
    trial: int = 0
    #: The profile the plan came from (`--faults-profile`), for the record.
    profile: str | None = None

    @property
    def active(self) -> bool:
        return any(rate > 0 for rate in self.rates.values())

    def rate(self, kind: FaultKind) -> float:
        return self.rates.get(kind, 0.0)

    def spec(self) -> str:
        """The plan as `--faults` text: its nonzero rates, then settings that differ from the
        defaults (seed and trial left out: they belong to an episode, not a run)."""
        parts = [f"{k.value}={_number(self.rates[k])}" for k in FaultKind if self.rates.get(k)]
        for name in ("timeout_seconds", "slow_seconds", "rate_limit_calls"):
            value = getattr(self, name)
            if value != type(self).model_fields[name].default:
                parts.append(f"{name}={_number(value)}")
        return ",".join(parts)

    def header(self) -> dict[str, Any]:
        """What a results header records about the run's faults."""
        out: dict[str, Any] = {
            "spec": self.spec(),
            "rates": {k.value: v for k, v in self.rates.items() if v},
            "timeout_seconds": self.timeout_seconds,
            "slow_seconds": self.slow_seconds,
            "rate_limit_calls": self.rate_limit_calls,
        }
        if self.profile is not None:
            out["profile"] = self.profile
        return out

    def for_episode(self, seed: int, trial: int) -> FaultPlan:
        return self.model_copy(update={"seed": seed, "trial": trial})

    def body(self) -> dict[str, Any]:
        """The plan as JSON (the `faults` field of `POST /{domain}/episodes`)."""
        return self.model_dump(mode="json", exclude_none=True)

    def draws(self, task_id: str | None, index: int) -> bytes:
        """The bytes every kind's draw for call `index` of an episode of `task_id` is read
        from: BLAKE2b (64 bytes) of the seed, task, trial and call index, one hash per call
        (Python's own BLAKE2b: several times cheaper than OpenSSL's sha512 objects)."""
        key = f"{self.seed}|{task_id or ''}|{self.trial}|{index}".encode()
        return hashlib.blake2b(key).digest()

    def draw(self, task_id: str | None, index: int, kind: FaultKind) -> float:
        """The number in [0, 1) that decides whether `kind` hits call `index` of an episode of
        `task_id`: the kind's own 8 bytes of `draws`."""
        return draw_of(self.draws(task_id, index), kind)


_SLOT = {kind: 8 * position for position, kind in enumerate(FaultKind)}


def draw_slot(kind: FaultKind) -> int:
    """Where `kind`'s 8 bytes start in a call's `FaultPlan.draws`."""
    return _SLOT[kind]


def draw_of(digest: bytes, kind: FaultKind) -> float:
    """`kind`'s number in [0, 1) from a call's `FaultPlan.draws`."""
    start = _SLOT[kind]
    return int.from_bytes(digest[start : start + 8], "big") / 2**64


def _number(value: float) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


# --- reading a plan -----------------------------------------------------------------------------
def parse_faults(value: Any, where: str = "--faults") -> FaultPlan | None:
    """A plan from option text, a flat mapping, the plan's JSON layout or a plan; None for
    nothing (None, "", {}). Anything unreadable is a FaultError in one sentence."""
    if value is None or isinstance(value, FaultPlan):
        return value
    if isinstance(value, str):
        items = _pairs(value, where)
    elif isinstance(value, Mapping):
        items = _flatten(value, where)
    else:
        raise FaultError(f"{where} must be text such as transient=0.1,rate_limit=0.05")
    if not items:
        return None
    return _plan(items, where)


def _pairs(text: str, where: str) -> dict[str, Any]:
    items: dict[str, Any] = {}
    for part in text.replace(" ", "").split(","):
        if not part:
            continue
        key, sep, raw = part.partition("=")
        if not sep or not key or not raw:
            raise FaultError(
                f"{where} takes kind=rate pairs such as transient=0.1,rate_limit=0.05, not {part!r}"
            )
        items[key] = raw
    return items


def _flatten(mapping: Mapping[str, Any], where: str) -> dict[str, Any]:
    """The plan's JSON layout (`rates` nested) or a flat mapping, as one flat mapping."""
    items = {str(k): v for k, v in mapping.items()}
    rates = items.pop("rates", None)
    if rates is not None:
        if not isinstance(rates, Mapping):
            raise FaultError(f"{where}: rates must be an object of kind: rate")
        for key, value in rates.items():
            items[str(key)] = value
    return items


def _plan(items: dict[str, Any], where: str) -> FaultPlan:
    rates: dict[FaultKind, float] = {}
    settings: dict[str, Any] = {}
    for key, raw in items.items():
        if key in KINDS:
            rates[FaultKind(key)] = _rate(key, raw, where)
        elif key in SETTINGS:
            settings[key] = _setting(key, raw, where)
        elif key == "profile":
            if raw is not None and not isinstance(raw, str):
                raise FaultError(f"{where}: profile must be a name")
            settings["profile"] = raw
        else:
            raise FaultError(
                f"unknown fault kind {key!r} in {where} (kinds: {', '.join(KINDS)}; settings: "
                f"{', '.join(s for s in SETTINGS if s not in ('seed', 'trial'))})"
            )
    return FaultPlan(rates=rates, **settings)


def _as_number(key: str, raw: Any, where: str) -> float:
    if isinstance(raw, bool):
        raise FaultError(f"{where}: {key} must be a number, not {raw!r}")
    try:
        value = float(raw)
    except (TypeError, ValueError):
        raise FaultError(f"{where}: {key} must be a number, not {raw!r}") from None
    if not math.isfinite(value):
        raise FaultError(f"{where}: {key} must be a finite number, not {raw!r}")
    return value


def _rate(key: str, raw: Any, where: str) -> float:
    value = _as_number(key, raw, where)
    if not 0.0 <= value <= 1.0:
        raise FaultError(f"{where}: the rate of {key} must be between 0 and 1, not {raw}")
    return value


def _setting(key: str, raw: Any, where: str) -> Any:
    kind, low, high = SETTINGS[key]
    value = _as_number(key, raw, where)
    if kind is int and value != int(value):
        raise FaultError(f"{where}: {key} must be a whole number, not {raw}")
    if not low <= value <= high:
        raise FaultError(f"{where}: {key} must be between {_number(low)} and {high:g}, not {raw}")
    return int(value) if kind is int else value


def merge_plans(base: FaultPlan | None, over: FaultPlan | None) -> FaultPlan | None:
    """`over`'s rates and the settings it was given, laid over `base` (a profile)."""
    if base is None or over is None:
        return over if base is None else base
    given = {name: getattr(over, name) for name in over.model_fields_set if name != "rates"}
    return base.model_copy(update={"rates": {**base.rates, **over.rates}, **given})


# --- what the agent sees ------------------------------------------------------------------------
TRANSIENT_TEXT = "Service temporarily unavailable (HTTP 503); please try again."
TIMEOUT_TEXT = "The request timed out after {seconds:g} seconds."
RATE_LIMIT_TEXT = (
    "Rate limit exceeded (HTTP 429): too many requests; the next {calls} request(s) will be "
    "refused, retry after that."
)
RATE_LIMIT_LAST_TEXT = "Rate limit exceeded (HTTP 429): too many requests; retry now."
PERMANENT_TEXT = "Service unavailable: the service behind {tool} is down."

#: How each retryable kind's text begins (what a retrying client looks for).
_RETRYABLE_STARTS = ("Service temporarily unavailable", "The request timed out", "Rate limit")


def error_text(message: str) -> str:
    """A fault's message as the domain's tools word a failure (`Episode.call`'s rendering)."""
    return f"Error: {message}"


def is_retryable_fault(text: str) -> bool:
    """Whether a tool result is a retryable injected fault (transient, timeout, rate limit):
    the same call, made again, will succeed (after a rate limit's window)."""
    message = text.removeprefix("Error: ")
    if message.startswith("{"):  # the Eval Protocol path's {"error": message}
        message = message.partition('"error": "')[2]
    return message.startswith(_RETRYABLE_STARTS)
