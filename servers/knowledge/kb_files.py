"""The knowledge base laid out as files, for the shell tool, built once per process.

The reference's shell tool works in a folder holding one file per document plus an index, all
written fresh into a new temp folder for every environment (and never removed). We write the
folder once per process and layout, share it read-only between every episode, and remove it when
the process exits; an episode that may write gets its own copy (`scratch_copy`).

Layout, as the reference writes it (`md`, the one its configs use; `txt` and `json` exist too):
file name = the document id with `/`, `\\` and `..` replaced by `_` and then every character
that is neither alphanumeric nor one of `._-` replaced by `_`, cut at 255 characters;
`md` content = `# {title}\\n\\n{content}`. The index (`INDEX.md`, or `INDEX.txt` for `txt`) lists
the documents sorted by id. Files are written in knowledge-base order, so when two ids map to one
file name the later document's file is the one that stays, as in the reference.

Every file gets one fixed modification time, so listings and `stat` do not depend on when the
folder was written.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import shutil
import stat
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

FORMATS = ("md", "txt", "json")
#: 2025-01-01T00:00:00Z: the modification time of every file we write.
FIXED_MTIME = 1735689600
_DIR_PREFIX = "tau-mcp-kb-"


class DocumentLike(Protocol):
    id: str
    title: str
    content: str


def file_stem(doc_id: str) -> str:
    """The file name (without extension) the reference gives a document id."""
    safe = doc_id.replace("/", "_").replace("\\", "_").replace("..", "_")
    safe = "".join(ch if ch.isalnum() or ch in "._-" else "_" for ch in safe)
    return safe[:255]


def document_file(doc: DocumentLike, fmt: str) -> tuple[str, str]:
    """(file name, text) of one document in the given layout."""
    stem = file_stem(doc.id)
    if fmt == "md":
        return f"{stem}.md", f"# {doc.title}\n\n{doc.content}"
    if fmt == "json":
        record = {"id": doc.id, "title": doc.title, "content": doc.content}
        return f"{stem}.json", json.dumps(record, indent=2)
    return f"{stem}.txt", f"Title: {doc.title}\n{'=' * 50}\n\n{doc.content}"


def index_file(docs: Sequence[DocumentLike], fmt: str) -> tuple[str, str]:
    """(file name, text) of the index listing every document, sorted by id."""
    ordered = sorted(docs, key=lambda d: d.id)
    if fmt == "txt":
        lines = [
            "KNOWLEDGE BASE INDEX\n",
            "=" * 50 + "\n\n",
            f"Total documents: {len(docs)}\n\n",
            "Documents:\n",
            "-" * 50 + "\n",
        ]
        for doc in ordered:
            lines.append(f"\n{file_stem(doc.id)}.txt\n  Title: {doc.title}\n")
        return "INDEX.txt", "".join(lines)
    lines = ["# Knowledge Base Index\n\n", f"**Total documents:** {len(docs)}\n\n"]
    lines.append("## Documents\n\n")
    for doc in ordered:
        lines.append(f"- **{file_stem(doc.id)}.md** - {doc.title}\n")
    return "INDEX.md", "".join(lines)


def _fingerprint(docs: Sequence[DocumentLike], fmt: str) -> str:
    digest = hashlib.sha256(fmt.encode())
    for doc in docs:
        for part in (doc.id, doc.title, doc.content):
            data = part.encode("utf-8", "surrogatepass")
            digest.update(len(data).to_bytes(8, "little"))
            digest.update(data)
    return digest.hexdigest()[:16]


def _write(folder: Path, docs: Sequence[DocumentLike], fmt: str) -> None:
    folder.mkdir(mode=0o755)
    names = []
    for doc in docs:
        name, text = document_file(doc, fmt)
        (folder / name).write_text(text, encoding="utf-8")
        names.append(name)
    name, text = index_file(docs, fmt)
    (folder / name).write_text(text, encoding="utf-8")
    names.append(name)
    for name in set(names):
        path = folder / name
        os.chmod(path, 0o644)
        os.utime(path, (FIXED_MTIME, FIXED_MTIME))
    os.utime(folder, (FIXED_MTIME, FIXED_MTIME))


def _unlock(path: Path) -> None:
    """Give the owner full rights on every folder under `path` (symlinks are not followed)."""
    stack = [os.fspath(path)]
    while stack:
        current = stack.pop()
        try:
            if not stat.S_ISDIR(os.lstat(current).st_mode):
                continue
            os.chmod(current, stat.S_IRWXU)
            with os.scandir(current) as entries:
                stack.extend(e.path for e in entries if e.is_dir(follow_symlinks=False))
        except OSError:
            continue


def remove_tree(path: Path) -> None:
    """Remove a folder whatever its contents did to their own permissions (a shell that may
    write can `chmod 000` a folder it made); never follows symlinks."""
    if not os.path.lexists(path):
        return
    if os.path.islink(path) or not os.path.isdir(path):
        os.unlink(path)
        return
    try:
        shutil.rmtree(path)
    except OSError:
        _unlock(path)
        shutil.rmtree(path, ignore_errors=True)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _open_to_others(path: Path) -> bool:
    """Whether every folder from `/` down to `path` lets other users through."""
    try:
        current = path.resolve()
        for folder in (current, *current.parents):
            if not os.stat(folder).st_mode & stat.S_IXOTH:
                return False
    except OSError:
        return False
    return True


def default_parent() -> Path:
    """Where a process keeps its knowledge-base files: the temp folder, unless we are root and
    it is private (the sandbox then runs as `nobody`, who must reach the files): then the first
    of /tmp, /var/tmp, /dev/shm that others can reach."""
    parent = Path(tempfile.gettempdir())
    if os.geteuid() != 0 or _open_to_others(parent):
        return parent
    for fallback in ("/tmp", "/var/tmp", "/dev/shm"):
        if _open_to_others(Path(fallback)):
            return Path(fallback)
    return parent


class ProcessFolders:
    """This process's folder for knowledge-base files (`<tmp>/tau-mcp-kb-<pid>-<random>`),
    removed at exit. Folders left by processes that died without cleaning up are removed when
    the next process starts its own."""

    def __init__(self, parent: Path | None = None) -> None:
        self.parent = Path(parent) if parent is not None else default_parent()
        self._root: Path | None = None
        self._lock = threading.RLock()
        self._built: dict[tuple[str, str], Path] = {}

    @property
    def root(self) -> Path:
        if self._root is None:
            with self._lock:
                if self._root is None:
                    self._sweep_stale()
                    root = Path(
                        tempfile.mkdtemp(prefix=f"{_DIR_PREFIX}{os.getpid()}-", dir=self.parent)
                    )
                    # Readable by the unprivileged user the sandbox runs as when we are root.
                    os.chmod(root, 0o755)
                    atexit.register(self.cleanup)
                    self._root = root
        return self._root

    def _sweep_stale(self) -> None:
        try:
            entries = list(self.parent.iterdir())
        except OSError:
            return
        for entry in entries:
            name = entry.name
            if not name.startswith(_DIR_PREFIX):
                continue
            pid_text = name[len(_DIR_PREFIX) :].split("-", 1)[0]
            if not pid_text.isdigit() or int(pid_text) == os.getpid():
                continue
            if not _pid_alive(int(pid_text)):
                try:
                    if (
                        entry.is_dir()
                        and not entry.is_symlink()
                        and entry.stat().st_uid == os.getuid()
                    ):
                        remove_tree(entry)
                except OSError:
                    pass

    def shared(self, docs: Sequence[DocumentLike], fmt: str = "md") -> Path:
        """The read-only folder of `docs` in layout `fmt`, written on first use."""
        if fmt not in FORMATS:
            raise ValueError(
                f"unknown knowledge-base file format {fmt!r} (have: {', '.join(FORMATS)})"
            )
        key = (_fingerprint(docs, fmt), fmt)
        folder = self._built.get(key)
        if folder is None:
            with self._lock:
                folder = self._built.get(key)
                if folder is None:
                    folder = self.root / f"kb-{key[0]}-{fmt}"
                    staging = self.root / f".staging-{key[0]}-{fmt}"
                    remove_tree(staging)
                    _write(staging, docs, fmt)
                    staging.rename(folder)
                    self._built[key] = folder
        return folder

    def scratch_copy(self, source: Path, owner: tuple[int, int] | None = None) -> Path:
        """A private writable copy of a shared folder (for a shell that may write); the caller
        removes it with `remove_tree` when its episode ends."""
        holder = Path(tempfile.mkdtemp(prefix="scratch-", dir=self.root))
        os.chmod(holder, 0o755)
        target = holder / "knowledge_base"
        target.mkdir(mode=0o755)
        paths = [holder, target]
        with os.scandir(source) as entries:
            for entry in entries:
                path = target / entry.name
                with open(entry.path, "rb") as src:
                    path.write_bytes(src.read())
                os.chmod(path, 0o644)
                os.utime(path, (FIXED_MTIME, FIXED_MTIME))
                paths.append(path)
        os.utime(target, (FIXED_MTIME, FIXED_MTIME))
        if owner is not None:
            for path in paths[1:]:
                os.chown(path, *owner, follow_symlinks=False)
        return target

    def cleanup(self) -> None:
        root, self._root = self._root, None
        self._built.clear()
        if root is not None:
            remove_tree(root)


#: The folders of this process (one per process; tests may make their own).
FOLDERS = ProcessFolders()
