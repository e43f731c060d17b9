"""Run presets: a named run shape (`tau-harness run --preset NAME`) from a small TOML file.

A preset file is `<name>.toml` with a `description` and an `[options]` table whose keys are
`tau-harness run` options in their Python spelling (`num_trials`, `user_llm_args`, ...). The
built-in ones ship in this folder; users add or shadow presets with files in `$TAU_PRESETS_DIR`,
else `$XDG_CONFIG_HOME/tau-mcp/presets` (`~/.config/tau-mcp/presets`). Options given on the
command line win over the preset's; the run records the preset's name, file and every value it
set in its results header (`info.preset`).
"""

from __future__ import annotations

import json
import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BUILTIN_DIR = Path(__file__).resolve().parent
ENV_VAR = "TAU_PRESETS_DIR"


class PresetError(ValueError):
    pass


@dataclass(frozen=True)
class Preset:
    name: str
    description: str
    options: dict[str, Any]
    path: Path

    @property
    def builtin(self) -> bool:
        return self.path.parent == BUILTIN_DIR


def user_dir() -> Path:
    explicit = os.environ.get(ENV_VAR)
    if explicit:
        return Path(explicit).expanduser()
    config = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(config) / "tau-mcp" / "presets"


def _files() -> dict[str, Path]:
    """Preset name -> file; a user's file shadows a built-in one of the same name."""
    found = {p.stem: p for p in sorted(BUILTIN_DIR.glob("*.toml"))}
    folder = user_dir()
    if folder.is_dir():
        found.update({p.stem: p for p in sorted(folder.glob("*.toml"))})
    return found


def _read(name: str, path: Path) -> Preset:
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise PresetError(f"cannot read preset {name} ({path}: {exc})") from None
    options = raw.get("options")
    unknown = sorted(set(raw) - {"description", "options"})
    if not isinstance(options, dict) or unknown:
        raise PresetError(
            f"preset file {path} needs an [options] table (and may have a description only)"
        )
    return Preset(name, str(raw.get("description", "")), options, path)


def available() -> list[Preset]:
    return [_read(name, path) for name, path in sorted(_files().items())]


def load(name: str) -> Preset:
    files = _files()
    if name not in files:
        known = ", ".join(sorted(files)) or "none"
        raise PresetError(f"no preset named {name!r} (known: {known}; add one in {user_dir()})")
    return _read(name, files[name])


def cli_value(value: Any) -> Any:
    """A preset value as its command-line option takes it (model arguments as JSON text)."""
    if isinstance(value, dict):
        return json.dumps(value)
    return value


def option_flag(name: str, flags: dict[str, str] | None = None) -> str:
    """The `tau-harness run` flag of the option a preset names by its Python name: the command's
    own (`flags`: name -> first flag, as `run_flags` reads them; `retrieval_kwargs` is typed
    `--retrieval-config-kwargs`), else the name spelled with dashes."""
    return (flags or {}).get(name) or "--" + name.replace("_", "-")


def run_flags(params: Any) -> dict[str, str]:
    """Each option's first flag, from a click command's `params`."""
    return {p.name: p.opts[0] for p in params if p.opts and p.opts[0].startswith("--")}


def record(preset: Preset, applied: dict[str, Any], overridden: list[str]) -> dict[str, Any]:
    """What the results header keeps about the preset."""
    return {
        "name": preset.name,
        "file": "built-in" if preset.builtin else str(preset.path),
        "set": applied,
        "overridden": overridden,
    }


def describe(preset: Preset, flags: dict[str, str] | None = None) -> list[tuple[str, str, str]]:
    """(name, flag, value) rows, flag and value as a user would type them."""
    rows = []
    for key, value in preset.options.items():
        shown = cli_value(value)
        text = shown if isinstance(shown, str) else json.dumps(shown)
        rows.append((key, option_flag(key, flags), text))
    return rows


def apply(ctx: Any, preset: Preset) -> tuple[dict[str, Any], dict[str, Any]]:
    """The command's parameters with the preset's values where none was given on the command
    line (or in the environment), and the record of what it set. `ctx` is the click context of
    `tau-harness run`; each value goes through its option's own type and range checks."""
    params = {p.name: p for p in ctx.command.params}
    flags = run_flags(ctx.command.params)
    missing = [key for key in preset.options if key not in params]
    if missing:
        names = ", ".join(option_flag(k) for k in missing)
        raise PresetError(
            f"preset {preset.name} sets {names}, which this tau-harness run does not have yet"
        )
    values = dict(ctx.params)
    applied: dict[str, Any] = {}
    overridden: list[str] = []
    for key, raw in preset.options.items():
        # by name: typer ships its own copy of click, with its own ParameterSource enum
        source = ctx.get_parameter_source(key)
        if source is not None and source.name not in ("DEFAULT", "DEFAULT_MAP"):
            overridden.append(key)
            continue
        try:
            values[key] = params[key].process_value(ctx, cli_value(raw))
        except Exception as exc:  # noqa: BLE001 - click's BadParameter, from typer's click copy
            reason = getattr(exc, "message", None) or str(exc)
            raise PresetError(
                f"preset {preset.name}: {option_flag(key, flags)} {raw!r} is not valid ({reason})"
            ) from None
        applied[key] = raw
    return values, record(preset, applied, overridden)
