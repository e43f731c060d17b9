"""Finding and reading the benchmark data folder (the reference's `data/` layout)."""

from __future__ import annotations

import json
import os
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from importlib.resources import files
from pathlib import Path
from typing import Any

from tau_mcp.servers.engine.errors import DataError

ENV_VAR = "TAU2_DATA_DIR"


def bundled(name: str) -> Path:
    """A file or folder of tau-mcp's own `data/` folder (the pin list, the demo set). It is
    installed as the package `tau_mcp.data`, so it is found the same way from a wheel in
    site-packages, an editable install or a checkout; a checkout used without installing
    (modules on `sys.path` only) falls back to the folder beside the packages."""
    try:
        root = Path(str(files("tau_mcp.data")))
    except ModuleNotFoundError:
        root = Path(__file__).resolve().parents[2] / "data"
    return root.resolve() / name


DEMO_DIR = bundled("demo")
PINS_FILE = bundled("reference_pins.json")


def load_pins(path: Path = PINS_FILE) -> dict[str, Any]:
    """The pin list of the reference release (`tau_mcp.servers.engine.pins` checks a folder against it)."""
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise DataError(f"cannot read the pin list {path}: {exc}") from None


def default_cache_dir(pins: dict[str, Any] | None = None) -> Path:
    """Where `tau-harness data fetch` puts the pinned release (one folder per pinned commit)."""
    pins = pins or load_pins()
    base = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    return base / "tau-mcp" / f"tau2-data-{pins['commit'][:12]}"


def resolve_data_dir(explicit: str | os.PathLike | None = None) -> Path:
    """The data folder: the explicit one, else $TAU2_DATA_DIR, else the reference data that
    `tau-harness data fetch` downloaded, else our bundled demo set (mock domain only)."""
    raw = explicit if explicit not in (None, "") else os.environ.get(ENV_VAR)
    if raw in (None, ""):
        fetched = default_cache_dir()
        return fetched if (fetched / "tau2" / "domains").is_dir() else DEMO_DIR
    path = Path(raw).expanduser().resolve()
    if not path.is_dir():
        raise DataError(f"data folder {path} does not exist (set --data-dir or {ENV_VAR})")
    return path


def is_demo(data_dir: Path) -> bool:
    return data_dir.resolve() == DEMO_DIR


def demo_domains() -> list[str]:
    """The domain folders of the bundled demo set (what runs with no data folder set)."""
    folder = domain_dir(DEMO_DIR, "")
    return sorted(p.name for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []


@dataclass(frozen=True)
class DataLocation:
    """Where a domain's data folder is: `layout` (a relative path; `{folder}` is the domain's
    folder name) under a root folder: the folder `env_var` names when it is set, else
    `default_root` (say, a folder shipped with a domain pack's code), else the data folder the
    domains are loaded with (tau2's: `--data-dir`, $TAU2_DATA_DIR, ...). A location with an
    `env_var` and no `default_root` needs the variable set."""

    layout: str = "tau2/domains/{folder}"
    env_var: str | None = None
    default_root: Path | None = None

    def root(self, data_dir: Path) -> Path:
        raw = os.environ.get(self.env_var) if self.env_var is not None else None
        if raw:
            path = Path(raw).expanduser().resolve()
            if not path.is_dir():
                raise DataError(f"data folder {path} does not exist (set {self.env_var})")
            return path
        if self.default_root is not None:
            return self.default_root
        if self.env_var is None:
            return data_dir
        raise DataError(
            f"no data folder: set {self.env_var} to the folder holding "
            f"{self.layout.format(folder='<domain>')}"
        )

    def folder(self, data_dir: Path, folder_name: str) -> Path:
        """The domain's data folder (DataError when its root is not set)."""
        return self.root(data_dir) / self.layout.format(folder=folder_name)

    @classmethod
    def beside(
        cls, module_file: str | os.PathLike, folder: str = "data", env_var: str | None = None
    ) -> DataLocation:
        """A domain pack's data shipped with its code: the folder `folder` next to the module
        whose `__file__` is given, unless `env_var` is set, naming another data folder."""
        root = Path(module_file).resolve().parent / folder
        return cls(layout=".", env_var=env_var, default_root=root)


# tau2's layout: `tau2/domains/<folder>` of the data folder the domains are loaded with.
TAU2_LOCATION = DataLocation()


def domain_dir(data_dir: Path, domain: str) -> Path:
    """A domain's folder in tau2's layout."""
    return TAU2_LOCATION.folder(data_dir, domain)


def load_structured(path: Path) -> Any:
    """Read a JSON or TOML file; any failure names the file."""
    if not path.is_file():
        raise DataError(f"missing data file: {path}")
    try:
        if path.suffix == ".toml":
            with path.open("rb") as fh:
                return tomllib.load(fh)
        with path.open("r", encoding="utf-8") as fh:
            return json.load(fh)
    except (json.JSONDecodeError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise DataError(f"corrupt data file {path}: {exc}") from None
    except OSError as exc:
        raise DataError(f"cannot read data file {path}: {exc.strerror}") from None


def find_db_file(folder: Path, stem: str) -> Path | None:
    """`db.json` or `db.toml` (the reference uses both), or None when neither exists."""
    for suffix in (".json", ".toml"):
        candidate = folder / f"{stem}{suffix}"
        if candidate.is_file():
            return candidate
    return None


def read_text(path: Path) -> str:
    if not path.is_file():
        raise DataError(f"missing data file: {path}")
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"cannot read data file {path}: {exc}") from None


@lru_cache(maxsize=8)
def user_guidelines(data_dir: Path, with_tools: bool) -> str:
    """The user-simulator guidelines shipped with the data."""
    name = "simulation_guidelines_tools.md" if with_tools else "simulation_guidelines.md"
    return read_text(data_dir / "tau2" / "user_simulator" / name)
