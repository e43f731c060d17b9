"""Finding and reading the reference's model-facing texts in a data folder.

`tau2/reference_texts/` holds what tau2-bench shows a model (prompt templates and rules in
`prompts.json`, default models and llm arguments in `defaults.json`, tool schemas under
`tools/`). They are data, like the policies: read at run time, never copied into code. A data
folder without them (our demo set) runs on our own prompts.

Loading is cached per folder, so every simulation of a run shares one parsed copy.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from tau_mcp.servers.engine.data import load_structured, read_text
from tau_mcp.servers.engine.errors import DataError

FOLDER = Path("tau2") / "reference_texts"
PROMPTS_FILE = "prompts.json"
DEFAULTS_FILE = "defaults.json"


@dataclass(frozen=True)
class ReferenceTexts:
    """The parsed texts of one data folder."""

    data_dir: Path
    prompts: dict[str, Any]
    defaults: dict[str, Any]
    _files: dict[str, str] = field(default_factory=dict, repr=False, compare=False)

    @property
    def folder(self) -> Path:
        return self.data_dir / FOLDER

    @property
    def version(self) -> str:
        source = self.prompts.get("source") or {}
        return f"{source.get('package', 'tau2')} {source.get('version', '?')}"

    def section(self, name: str) -> dict[str, Any]:
        """A section of prompts.json; a missing one is a data error naming it."""
        value = self.prompts.get(name)
        if not isinstance(value, dict):
            raise DataError(f"{self.folder / PROMPTS_FILE} has no '{name}' section")
        return value

    def data_file(self, relative: str) -> str:
        """A text file of the data folder named by the texts (guidelines, policies), exactly as
        stored (no stripping)."""
        if relative not in self._files:
            self._files[relative] = read_text(self.data_dir / relative)
        return self._files[relative]

    def tools(self, domain: str) -> dict[str, Any] | None:
        """`tools/<domain>.json` (the reference's tool schemas), or None when absent."""
        return _tools(self.folder / "tools" / f"{domain}.json")


def reference_texts(data_dir: str | os.PathLike | None) -> ReferenceTexts | None:
    """The data folder's reference texts, or None when it has none (e.g. the demo data)."""
    if data_dir is None:
        return None
    folder = Path(data_dir) / FOLDER
    if not folder.is_dir():
        return None
    return _load(folder.resolve())


@lru_cache(maxsize=8)
def _load(folder: Path) -> ReferenceTexts:
    prompts = load_structured(folder / PROMPTS_FILE)
    defaults = load_structured(folder / DEFAULTS_FILE)
    for path, value in ((PROMPTS_FILE, prompts), (DEFAULTS_FILE, defaults)):
        if not isinstance(value, dict):
            raise DataError(f"{folder / path} is not a JSON object")
    return ReferenceTexts(folder.parent.parent, prompts, defaults)


@lru_cache(maxsize=16)
def _tools(path: Path) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    value = load_structured(path)
    if not isinstance(value, dict):
        raise DataError(f"{path} is not a JSON object")
    return value
