"""Named fault plans (`--faults-profile NAME`): small TOML files of kind rates and settings.

A profile file holds a `description` and the keys `--faults` takes (`transient = 0.1`,
`timeout_seconds = 0.5`, ...). The shipped ones are `data/fault_profiles/*.toml` (package
`tau_mcp.data`); users add or shadow profiles with files in `$TAU_FAULT_PROFILES_DIR`, and
any path to a `.toml` file names that file.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tau_mcp.servers.engine.data import bundled
from tau_mcp.servers.engine.faults import FaultError, FaultPlan, merge_plans, parse_faults

BUILTIN_DIR = bundled("fault_profiles")
ENV_VAR = "TAU_FAULT_PROFILES_DIR"


@dataclass(frozen=True)
class FaultProfile:
    name: str
    description: str
    plan: FaultPlan
    path: Path


def _files() -> dict[str, Path]:
    """Profile name -> file; a user's file shadows a shipped one of the same name."""
    found = {p.stem: p for p in sorted(BUILTIN_DIR.glob("*.toml"))}
    folder = os.environ.get(ENV_VAR)
    if folder and Path(folder).expanduser().is_dir():
        found.update({p.stem: p for p in sorted(Path(folder).expanduser().glob("*.toml"))})
    return found


def _read(name: str, path: Path) -> FaultProfile:
    try:
        raw: dict[str, Any] = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise FaultError(f"cannot read fault profile file {path} ({exc})") from None
    except tomllib.TOMLDecodeError as exc:
        raise FaultError(f"fault profile file {path} does not parse as TOML ({exc})") from None
    description = str(raw.pop("description", ""))
    plan = parse_faults(raw, f"fault profile {path}")
    if plan is None or not plan.active:
        raise FaultError(f"fault profile file {path} gives no fault kind a rate above 0")
    return FaultProfile(name, description, plan.model_copy(update={"profile": name}), path)


def available() -> list[FaultProfile]:
    """Every profile by name (shipped and the user's)."""
    return [_read(name, path) for name, path in sorted(_files().items())]


def load_profile(name: str, paths: bool = True) -> FaultProfile:
    """A profile by name, or (with `paths`) the TOML file a path names; one sentence when there
    is none. A server answering clients passes `paths=False`: a request names a profile, never
    a file of the server's."""
    candidate = Path(name).expanduser()
    if paths and (name.endswith(".toml") or candidate.is_file()):
        if not candidate.is_file():
            raise FaultError(f"no fault profile file {candidate}")
        return _read(candidate.stem, candidate)
    files = _files()
    if name not in files:
        known = ", ".join(sorted(files)) or "none"
        raise FaultError(
            f"unknown fault profile {name!r} (shipped: {known}; or give a path to a .toml file)"
        )
    return _read(name, files[name])


def resolve_faults(
    spec: Any, profile: str | None, where: str = "--faults", paths: bool = True
) -> FaultPlan | None:
    """The plan a run or an episode asks for: the profile's, with `spec` (text, mapping or
    plan) laid over it; None when neither asks for any fault."""
    over = parse_faults(spec, where)
    if profile is None or (isinstance(profile, str) and not profile.strip()):
        return over if over is None or over.active else None
    if not isinstance(profile, str):
        raise FaultError("a fault profile is named by text")
    if over is not None and over.profile == profile:
        return over  # already laid over that profile (a plan read back from its own JSON)
    plan = merge_plans(load_profile(profile.strip(), paths).plan, over)
    return plan if plan is not None and plan.active else None
