"""Shared by the knowledge-base retrieval tests: the banking documents and the recorded cases."""

from __future__ import annotations

import json
import platform
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

from tests.support.data import CONFORMANCE_DIR, DATA_DIR

DOCUMENTS_DIR = DATA_DIR / "tau2" / "domains" / "banking_knowledge" / "documents"
RETRIEVAL_DIR = CONFORMANCE_DIR / "retrieval"

needs_documents = pytest.mark.needs_data("banking_knowledge")
needs_retrieval_fixtures = pytest.mark.needs_data("banking_knowledge", "conformance")


@dataclass(frozen=True)
class Doc:
    id: str
    title: str
    content: str


@cache
def banking_documents() -> tuple[Doc, ...]:
    """The 698 documents in sorted file-name order (the order every fixture was recorded in)."""
    files = sorted(DOCUMENTS_DIR.glob("*.json"), key=lambda p: p.name)
    docs = []
    for path in files:
        raw = json.loads(path.read_text(encoding="utf-8"))
        docs.append(Doc(raw["id"], raw["title"], raw["content"]))
    return tuple(docs)


@cache
def retrieval_cases(tool: str) -> tuple[tuple[dict, dict], ...]:
    """(query, recorded answer) pairs of one tool."""
    queries = json.loads((RETRIEVAL_DIR / "queries.json").read_text())
    reference = json.loads((RETRIEVAL_DIR / "reference.json").read_text())
    return tuple((q, reference[q["id"]]) for q in queries if q["tool"] == tool)


@cache
def embedding_requests() -> dict:
    return json.loads((RETRIEVAL_DIR / "embedding_requests.json").read_text())


# Shell outputs that depend on the host (docs/knowledge-sandbox.md): the order of a folder's
# entries (grep -r walks the folder unsorted), and messages worded by the host's coreutils and
# bash, recorded on Debian 12 (coreutils 9.1, bash 5.2).
DIRECTORY_ORDER = {"visible-shell-006"}
HOST_WORDING = {"visible-shell-015", "visible-shell-020", "visible-shell-021"}


def debian_12() -> bool:
    try:
        release = platform.freedesktop_os_release()
    except OSError:
        return False
    return release.get("ID") == "debian" and release.get("VERSION_ID") == "12"


def shell_case_differs(case_id: str, command: str, got: str, want: str, folder: Path) -> bool:
    """Whether a shell output differs from the recorded one in what does not depend on the
    host (a directory-order case is checked for genuine matches instead)."""
    if case_id in DIRECTORY_ORDER:
        assert "grep -ri 'overdraft' ." in command
        lines = got.splitlines()
        assert len(lines) == len(want.splitlines()) == 3
        for line in lines:
            name, text = line.removeprefix("./").split(":", 1)
            assert "overdraft" in text.lower()
            assert text in (folder / name).read_text().splitlines()
        return False
    if case_id in HOST_WORDING and not debian_12():
        return not (got.startswith("Error (exit code 1): ") and want.split(": ")[-1] in got)
    return got != want


# --- the texts the network backends send a model, read off the recorded requests -------------


def recorded_reranker_prompt() -> str:
    """The reranker's prompt template (two `{}`: query, document), read off one recorded
    request of the reference (test data, never our code)."""
    step = embedding_requests()["configs"]["bm25_reranker"]["per_query"][0]
    query = step["query"]
    chat = next(r for r in step["requests"] if r["path"] == "/v1/chat/completions")
    content = chat["body"]["messages"][0]["content"]
    passage = max((d.content for d in banking_documents() if d.content in content), key=len)
    at_query, at_passage = content.index(query), content.rindex(passage)
    return (
        content[:at_query].replace("{", "{{").replace("}", "}}")
        + "{}"
        + content[at_query + len(query) : at_passage].replace("{", "{{").replace("}", "}}")
        + "{}"
        + content[at_passage + len(passage) :].replace("{", "{{").replace("}", "}}")
    )


def recorded_query_prefix(config: str = "qwen_embeddings") -> str:
    """What the reference put before each query of a dense config, read off its recorded
    request (test data)."""
    first = embedding_requests()["configs"][config]["per_query"][0]
    sent = first["requests"][0]["body"]["input"][0]
    return sent[: len(sent) - len(first["query"])]


def data_with_model_texts(folder: Path, model_texts: dict | None) -> Path:
    """A data folder like the reference data (linked, not copied) whose banking_knowledge
    reference texts carry `retrieval_model_texts` (None: without the section), as the texts
    `tau-harness data fetch` writes."""
    texts = Path("tau2") / "reference_texts"
    for entry in DATA_DIR.iterdir():
        if entry.name != "tau2":
            (folder / entry.name).parent.mkdir(parents=True, exist_ok=True)
            (folder / entry.name).symlink_to(entry)
    for entry in (DATA_DIR / "tau2").iterdir():
        if entry.name != "reference_texts":
            (folder / "tau2").mkdir(parents=True, exist_ok=True)
            (folder / "tau2" / entry.name).symlink_to(entry)
    (folder / texts).mkdir(parents=True)
    for entry in (DATA_DIR / texts).iterdir():
        if entry.name != "banking_knowledge.json":
            (folder / texts / entry.name).symlink_to(entry)
    document = json.loads((DATA_DIR / texts / "banking_knowledge.json").read_text())
    document.pop("retrieval_model_texts", None)
    if model_texts is not None:
        document["retrieval_model_texts"] = model_texts
    (folder / texts / "banking_knowledge.json").write_text(json.dumps(document), encoding="utf-8")
    return folder
