"""Dense retrieval: documents and queries embedded through litellm, ranked by cosine similarity.

Any embedding model litellm serves works (`Embedder.model` is a litellm model name; the
reference's two are OpenAI's `text-embedding-3-large` and OpenRouter's `qwen3-embedding-8b`).
What the reference does, and we keep:

- documents are embedded by their content alone, all in one request, in knowledge-base order;
  a query is embedded on its own, with the model's query prefix when it has one (Qwen's
  instruction); a repeated query is not sent again (one process-wide memo);
- a blank query is an error (`Empty or missing input for key 'query': cannot generate embedding
  from blank text.`);
- scores are cosine similarities (a zero vector scores 0), the top `top_k` taken as
  `argsort(scores)[::-1][:top_k]` (so ties fall as numpy's sort leaves them, as there).

Document vectors are cached on disk, one file per (model, provider, endpoint, encoding) and
document text, named by the text's sha256: any episode, worker process or later run with the same
documents reads them instead of asking again. Files are written whole and renamed into place, and
a file lock makes concurrent cold starts send one request between them.
"""

from __future__ import annotations

import base64
import fcntl
import hashlib
import json
import os
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tau_mcp.servers.knowledge import model_calls

BLANK_QUERY = "Empty or missing input for key 'query': cannot generate embedding from blank text."
_QUERY_MEMO_SIZE = 4096


def cache_root() -> Path:
    """Where document vectors are kept: `$TAU_MCP_CACHE_DIR/embeddings`, else
    `$XDG_CACHE_HOME/tau-mcp/embeddings` (`~/.cache/tau-mcp/embeddings`)."""
    explicit = os.environ.get("TAU_MCP_CACHE_DIR")
    if explicit:
        return Path(explicit) / "embeddings"
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "tau-mcp" / "embeddings"


@dataclass(frozen=True)
class Embedder:
    """One embedding model as litellm reaches it."""

    model: str  # litellm's model name, e.g. "text-embedding-3-large"
    provider: str  # who serves it, e.g. "openai", "openrouter" (part of the cache key)
    encoding_format: str | None = None  # what the request asks for ("base64", "float")
    query_prefix: str = ""  # put before every query (never before documents)
    api_base: str | None = None
    api_key: str | None = field(default=None, repr=False, compare=False)
    timeout: float = 600.0
    num_retries: int = 2

    def identity(self) -> dict[str, Any]:
        """What decides a document's vector (the key of the disk cache)."""
        return {
            "provider": self.provider,
            "model": self.model,
            "api_base": self.api_base,
            "encoding_format": self.encoding_format,
        }

    async def aembed(self, texts: list[str]) -> np.ndarray:
        """One request for `texts`; rows in the same order, as float64."""
        from tau_mcp.conversation import llm
        from tau_mcp.conversation.cassette import ReplayMiss

        kwargs: dict[str, Any] = {"timeout": self.timeout, "num_retries": self.num_retries}
        if self.encoding_format:
            kwargs["encoding_format"] = self.encoding_format
        if self.api_base:
            kwargs["api_base"] = self.api_base
        if self.api_key:
            kwargs["api_key"] = self.api_key
        try:
            response, cost = await llm.embed(self.model, texts, **kwargs)
        except ReplayMiss:
            raise
        except Exception as exc:  # noqa: BLE001 - reported in one sentence
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            raise EmbeddingError(
                f"the embedding request to {self.model} failed: {type(exc).__name__}"
                + (f": {first[:300]}" if first else "")
            ) from None
        model_calls.charge(cost)
        return _matrix(response, len(texts), self.model)


class EmbeddingError(RuntimeError):
    """An embedding request failed or returned something unusable."""


# OpenRouter's names for the reference's short model names (others are passed as given).
_OPENROUTER_NAMES = {
    "qwen3-embedding-4b": "qwen/qwen3-embedding-4b",
    "qwen3-embedding-8b": "qwen/qwen3-embedding-8b",
    "gemini-embedding-001": "google/gemini-embedding-001",
}
#: The environment variable each of the reference's embedder types takes its key from.
KEY_ENV = {"openai": "OPENAI_API_KEY", "openrouter": "OPENROUTER_API_KEY"}
_BASE_ENV = {
    "openai": ("OPENAI_API_BASE", "OPENAI_BASE_URL"),
    "openrouter": ("OPENROUTER_API_BASE",),
}


def needs_query_prefix(embedder_type: str, model: str) -> bool:
    """Whether the reference prefixes queries for this model (Qwen models on OpenRouter)."""
    return embedder_type == "openrouter" and "qwen" in _OPENROUTER_NAMES.get(model, model).lower()


def reference_embedder(
    embedder_type: str,
    model: str,
    *,
    query_prefix: str = "",
    api_base: str | None = None,
    api_key: str | None = None,
) -> Embedder:
    """How the reference's embedder types reach their models, through litellm: `openai` asks
    OpenAI for base64 vectors; `openrouter` asks OpenRouter for float vectors, with the query
    prefix for Qwen models. The endpoint comes from the environment as the reference's client
    reads it when not given."""
    if embedder_type not in KEY_ENV:
        raise ValueError(
            f"unknown embedder type '{embedder_type}' (have: {', '.join(sorted(KEY_ENV))})"
        )
    base = api_base or next(
        (os.environ[name] for name in _BASE_ENV[embedder_type] if os.environ.get(name)), None
    )
    if embedder_type == "openai":
        return Embedder(model, "openai", "base64", api_base=base, api_key=api_key)
    name = _OPENROUTER_NAMES.get(model, model)
    prefix = query_prefix if needs_query_prefix(embedder_type, model) else ""
    return Embedder(f"openrouter/{name}", "openrouter", "float", prefix, base, api_key)


def _matrix(response: Any, expected: int, model: str) -> np.ndarray:
    data = response["data"] if isinstance(response, dict) else response.data
    rows: list[np.ndarray] = [None] * expected  # type: ignore[list-item]
    for position, item in enumerate(data):
        item = item if isinstance(item, dict) else dict(item)
        index = item.get("index", position)
        vector = item.get("embedding")
        if isinstance(vector, str):
            # base64: little-endian float32, as the OpenAI API sends it
            row = np.frombuffer(base64.b64decode(vector), dtype="<f4").astype(np.float64)
        else:
            row = np.asarray(vector, dtype=np.float64)
        if not 0 <= index < expected:
            raise EmbeddingError(f"{model} returned an embedding for input #{index} of {expected}")
        rows[index] = row
    if any(row is None for row in rows) or len({row.shape for row in rows}) > 1:
        raise EmbeddingError(f"{model} returned {len(data)} embeddings for {expected} inputs")
    return np.vstack(rows) if rows else np.zeros((0, 0))


def _text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class EmbeddingCache:
    """Document vectors on disk, one immutable file per model identity and text."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = root or cache_root()

    def folder(self, embedder: Embedder) -> Path:
        identity = json.dumps(embedder.identity(), sort_keys=True)
        folder = self.root / hashlib.sha256(identity.encode()).hexdigest()[:32]
        if not folder.is_dir():
            folder.mkdir(parents=True, exist_ok=True)
            _write_atomic(folder / "identity.json", identity.encode())
        return folder

    @contextmanager
    def lock(self, embedder: Embedder) -> Iterator[None]:
        """Held while one process fills the cache; others wait, then read what it wrote."""
        with open(self.folder(embedder) / ".lock", "a+b") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def load(self, embedder: Embedder, texts: Sequence[str]) -> list[np.ndarray | None]:
        folder = self.folder(embedder)
        out: list[np.ndarray | None] = []
        for text in texts:
            path = folder / f"{_text_key(text)}.npy"
            try:
                out.append(np.load(path, allow_pickle=False))
            except (OSError, ValueError):
                out.append(None)
        return out

    def store(self, embedder: Embedder, texts: Sequence[str], vectors: np.ndarray) -> None:
        folder = self.folder(embedder)
        for text, vector in zip(texts, vectors, strict=True):
            path = folder / f"{_text_key(text)}.npy"
            if not path.exists():
                buffer = _npy_bytes(np.asarray(vector, dtype=np.float64))
                _write_atomic(path, buffer)


def _npy_bytes(array: np.ndarray) -> bytes:
    import io

    out = io.BytesIO()
    np.save(out, array, allow_pickle=False)
    return out.getvalue()


def _write_atomic(path: Path, data: bytes) -> None:
    fd, temp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(temp, path)
    except BaseException:
        try:
            os.unlink(temp)
        except FileNotFoundError:
            pass
        raise


class DenseIndex:
    """The unit vectors of a knowledge base's documents under one embedder, built on first use
    (from the disk cache where it can) and then shared by every episode."""

    def __init__(
        self,
        doc_ids: Sequence[str],
        texts: Sequence[str],
        embedder: Embedder,
        cache: EmbeddingCache | None = None,
    ) -> None:
        self.doc_ids = list(doc_ids)
        self.texts = list(texts)
        self.embedder = embedder
        self.cache = cache or EmbeddingCache()
        self._unit: np.ndarray | None = None
        self._lock = threading.Lock()

    def build(self) -> np.ndarray:
        """The documents' unit vectors (rows in knowledge-base order)."""
        if self._unit is None:
            with self._lock:
                if self._unit is None:
                    self._unit = _unit_rows(self._vectors())
        return self._unit

    def _vectors(self) -> np.ndarray:
        if not self.texts:
            raise EmbeddingError("the knowledge base has no documents to embed")
        with self.cache.lock(self.embedder):
            found = self.cache.load(self.embedder, self.texts)
            missing = [i for i, row in enumerate(found) if row is None]
            if missing:
                texts = [self.texts[i] for i in missing]
                fresh = model_calls.run(lambda: self.embedder.aembed(texts))
                self.cache.store(self.embedder, texts, fresh)
                for i, row in zip(missing, fresh, strict=True):
                    found[i] = row
        if len({row.shape for row in found}) > 1:
            raise EmbeddingError(
                f"cached embeddings of {self.embedder.model} have different sizes; "
                f"remove {self.cache.folder(self.embedder)} to rebuild them"
            )
        return np.vstack(found)

    def top(self, query_vector: np.ndarray, top_k: int) -> list[tuple[str, float]]:
        """(document id, cosine similarity) of the best `top_k`, best first."""
        unit = self.build()
        norm = np.linalg.norm(query_vector)
        if norm == 0:
            scores = np.zeros(len(self.doc_ids))
        else:
            scores = unit @ (query_vector / norm)
        k = min(top_k, len(self.doc_ids))
        order = np.argsort(scores)[::-1][:k]
        return [(self.doc_ids[i], float(scores[i])) for i in order]


def _unit_rows(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms = np.where(norms == 0, 1, norms)
    return vectors / norms


class QueryMemo:
    """Query vectors already asked for, per embedder and prefix (bounded, process-wide)."""

    def __init__(self, size: int = _QUERY_MEMO_SIZE) -> None:
        self.size = size
        self._items: OrderedDict[tuple, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple) -> np.ndarray | None:
        with self._lock:
            found = self._items.get(key)
            if found is not None:
                self._items.move_to_end(key)
            return found

    def put(self, key: tuple, vector: np.ndarray) -> None:
        with self._lock:
            self._items[key] = vector
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)


QUERY_MEMO = QueryMemo()


class DenseRetriever:
    """Cosine search over a `DenseIndex`; `encode` is the reference's input step (the query's
    embedding), `retrieve` the whole search."""

    def __init__(self, index: DenseIndex, top_k: int = 10, memo: QueryMemo | None = None) -> None:
        self.index = index
        self.top_k = top_k
        self.memo = memo or QUERY_MEMO

    def encode(self, query: str) -> np.ndarray:
        # The documents first, as the reference (which embeds them when it sets up) asks.
        self.index.build()
        if not query or not query.strip():
            raise ValueError(BLANK_QUERY)
        embedder = self.index.embedder
        key = (json.dumps(embedder.identity(), sort_keys=True), embedder.query_prefix, query)
        vector = self.memo.get(key)
        if vector is None:
            text = embedder.query_prefix + query
            vector = model_calls.run(lambda: embedder.aembed([text]))[0]
            self.memo.put(key, vector)
        return vector

    def rank(self, vector: np.ndarray) -> list[tuple[str, float]]:
        return self.index.top(vector, self.top_k)

    def retrieve(self, query: str) -> list[tuple[str, float]]:
        return self.rank(self.encode(query))
