"""A knowledge base: a folder of JSON documents, loaded once per process.

Each file holds one `{id, title, content}` record. The reference loads the folder with
`Path.glob("*.json")`, whose order is the file system's (a hash order on ext4 that differs
between machines and copies); the order decides ties between equal retrieval scores and the
layout of a prompt that inlines the whole base. We load in sorted file-name order, so every
machine agrees: our one intended divergence from the reference (docs/banking-retrieval.md).
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from tau_mcp.servers.engine.errors import DataError


@dataclass(frozen=True, slots=True)
class Document:
    id: str
    title: str
    content: str


def _read_document(path: Path) -> Document:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataError(f"cannot read knowledge-base document {path}: {exc}") from None
    fields = ("id", "title", "content")
    if not isinstance(raw, dict) or not all(isinstance(raw.get(f), str) for f in fields):
        raise DataError(f"knowledge-base document {path} is not an {{id, title, content}} record")
    return Document(raw["id"], raw["title"], raw["content"])


class KnowledgeBase:
    """The documents of one folder in sorted file-name order, with lookups by id and title.

    Indexes built over it (BM25, grep) hang off the instance, so every episode that uses the
    same folder shares one copy of each.
    """

    def __init__(self, folder: Path, documents: list[Document]) -> None:
        self.folder = folder
        # Keyed by id like the reference: a repeated id keeps its first place, last record.
        by_id: dict[str, Document] = {}
        for doc in documents:
            by_id[doc.id] = doc
        self.by_id = by_id
        self.documents: tuple[Document, ...] = tuple(by_id.values())
        self._lock = threading.Lock()
        self._indexes: dict[str, object] = {}

    def __len__(self) -> int:
        return len(self.documents)

    @cached_property
    def by_title(self) -> dict[str, Document]:
        """Title to document; with repeated titles the last in load order wins."""
        return {doc.title: doc for doc in self.documents}

    def lookup(self, reference: str) -> Document | None:
        """A document named by title first, then by id (how task files name documents)."""
        return self.by_title.get(reference) or self.by_id.get(reference)

    def index(self, name: str, build):
        """The index `name` over this base, built by `build(self)` on first use and then shared
        by every caller (one build per process even when episodes start concurrently)."""
        index = self._indexes.get(name)
        if index is None:
            with self._lock:
                index = self._indexes.get(name)
                if index is None:
                    index = self._indexes[name] = build(self)
        return index


_BASES: dict[Path, KnowledgeBase] = {}
_BASES_LOCK = threading.Lock()


def load_knowledge_base(folder: Path) -> KnowledgeBase:
    """The knowledge base of `folder`, read once per process."""
    key = folder.resolve()
    base = _BASES.get(key)
    if base is None:
        with _BASES_LOCK:
            base = _BASES.get(key)
            if base is None:
                if not key.is_dir():
                    raise DataError(f"knowledge-base folder missing: {key}")
                files = sorted((p for p in key.glob("*.json") if p.is_file()), key=lambda p: p.name)
                if not files:
                    raise DataError(f"knowledge-base folder {key} holds no .json documents")
                base = _BASES[key] = KnowledgeBase(key, [_read_document(p) for p in files])
    return base
