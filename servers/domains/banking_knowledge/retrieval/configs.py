"""banking_knowledge's retrieval configurations (`--retrieval-config`), read from the data.

The reference defines 20 configurations (plus the alias `AllTools`): which prompt template the
agent's policy comes from and how it is composed, which agent tools exist, and the search
backends behind them. The data folder's `tau2/reference_texts/banking_knowledge.json` records
all of it (read at run time, like every reference text); this module turns an entry into a
`RetrievalConfig`, applies `--retrieval-config-kwargs` the way the reference does, and decides
whether the configuration can run here: a configuration whose backends are not in this build,
or that lacks an API key or the shell sandbox, is refused in one sentence naming an offline one.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tau_mcp.servers.engine import data as datafiles
from tau_mcp.servers.engine.errors import DataError
from tau_mcp.servers.engine.variants import VariantError
from tau_mcp.servers.knowledge import registry

TEXTS_FILE = Path("tau2") / "reference_texts" / "banking_knowledge.json"

# The reference's toolkit: which spec of a configuration backs which agent tool.
SEARCH_TOOLS = {
    "kb_search": "KB_search",
    "kb_search_bm25": "KB_search_bm25",
    "kb_search_dense": "KB_search_dense",
}
RETRIEVAL_TOOLS = (*SEARCH_TOOLS.values(), "grep", "shell")

# `--retrieval-config-kwargs` the reference reads, and the type each must have; then ours: the
# texts the network backends send a model when the data folder does not hold them, and the
# reranker's chat model (any model litellm serves).
KWARG_TYPES: dict[str, type] = {
    "top_k": int,
    "grep_top_k": int,
    "case_sensitive": bool,
    "reranker_min_score": int,
    "reranker_model": str,
    "reranker_prompt": str,
    "query_prefix": str,
}
# Where the data folder's reference texts keep the texts the network backends send a model:
# `{"reranker_prompt": ..., "reranker_model": ..., "qwen_query_prefix": ...}`.
MODEL_TEXTS = "retrieval_model_texts"
PREFERRED_OFFLINE = "bm25_grep"


@dataclass(frozen=True)
class SearchSpec:
    """A search tool's pipeline: a retriever kind, its own top-k, an optional reranker."""

    kind: str  # "bm25" or "embedding"
    top_k: int = 10
    embedder_type: str | None = None
    embedder_model: str | None = None
    reranker: bool = False
    reranker_min_score: int = 5
    # Texts and the model the network backends need (from the data folder or the kwargs).
    query_prefix: str | None = None
    reranker_prompt: str | None = None
    reranker_model: str | None = None

    def retriever_params(self) -> dict[str, Any]:
        params: dict[str, Any] = {"top_k": self.top_k}
        if self.kind != "bm25":
            params |= {
                "embedder_type": self.embedder_type,
                "embedder_model": self.embedder_model,
                "query_prefix": self.query_prefix,
            }
        return params

    def reranker_params(self) -> dict[str, Any]:
        return {
            "min_score": self.reranker_min_score,
            "prompt": self.reranker_prompt,
            "model": self.reranker_model,
        }


@dataclass(frozen=True)
class GrepSpec:
    top_k: int = 10
    case_sensitive: bool = False


@dataclass(frozen=True)
class ShellSpec:
    allow_writes: bool = False
    file_format: str = "md"


@dataclass(frozen=True)
class RetrievalConfig:
    """One configuration with its overrides applied."""

    name: str
    prompt_file: str  # relative to the data folder
    prompt_builder: str  # standard_prompt | full_kb_prompt | golden_prompt
    agent_tools: tuple[str, ...]
    searches: Mapping[str, SearchSpec] = field(default_factory=dict)  # tool name -> spec
    grep: GrepSpec | None = None
    shell: ShellSpec | None = None
    kwargs: Mapping[str, Any] = field(default_factory=dict)

    def backends(self) -> list[tuple[str, str, dict[str, Any]]]:
        """(tool, backend kind, parameters) of every backend the configuration's tools use."""
        out: list[tuple[str, str, dict[str, Any]]] = []
        for tool, spec in self.searches.items():
            out.append((tool, spec.kind, spec.retriever_params()))
            if spec.reranker:
                out.append((tool, "pointwise_llm_reranker", spec.reranker_params()))
        if self.grep is not None:
            params = {"top_k": self.grep.top_k, "case_sensitive": self.grep.case_sensitive}
            out.append(("grep", "grep", params))
        if self.shell is not None:
            params = {
                "allow_writes": self.shell.allow_writes,
                "file_format": self.shell.file_format,
            }
            out.append(("shell", "shell", params))
        return out

    def missing(self) -> list[str]:
        """What this machine or build lacks for the configuration (empty when it can run)."""
        found: list[str] = []
        for _tool, kind, params in self.backends():
            for item in registry.missing(kind, params):
                if item not in found:
                    found.append(item)
        return found

    @property
    def needs_nothing(self) -> bool:
        """True when every backend is built in and needs no key, sandbox or network."""
        return all(
            registry.kind(kind) is not None and not registry.kind(kind).requirements(params)
            for _tool, kind, params in self.backends()
        )


def _spec(raw: Any, cls: type, where: str) -> Any:
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise DataError(f"{where} is not an object")
    if cls is SearchSpec:
        raw = {("kind" if k == "type" else k): v for k, v in raw.items()}
    known = {f for f in cls.__dataclass_fields__}
    return cls(**{k: v for k, v in raw.items() if k in known})


def _check_kwargs(kwargs: Mapping[str, Any] | None) -> dict[str, Any]:
    if kwargs is None:
        return {}
    if not isinstance(kwargs, Mapping):
        raise VariantError("retrieval config kwargs must be a JSON object")
    out: dict[str, Any] = {}
    for key, value in kwargs.items():
        want = KWARG_TYPES.get(key)
        if want is None:
            raise VariantError(
                f"unknown retrieval config kwarg '{key}' (known: {', '.join(KWARG_TYPES)})"
            )
        if not isinstance(value, want) or (want is int and isinstance(value, bool)):
            raise VariantError(f"retrieval config kwarg '{key}' must be {_type_word(want)}")
        out[key] = value
    return out


def _type_word(kind: type) -> str:
    return {int: "an integer", bool: "true or false"}.get(kind, kind.__name__)


class RetrievalCatalog:
    """Every retrieval configuration of one data folder, as its reference texts describe them."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.path = data_dir / TEXTS_FILE
        raw = datafiles.load_structured(self.path)
        if not isinstance(raw, dict) or not isinstance(raw.get("retrieval_configs"), dict):
            raise DataError(f"{self.path} has no 'retrieval_configs' object")
        self.texts = raw
        model_texts = raw.get(MODEL_TEXTS)
        self.model_texts: dict[str, Any] = model_texts if isinstance(model_texts, dict) else {}
        self.default: str = raw.get("default_config") or "alltools"
        self.aliases: dict[str, str] = dict(raw.get("aliases") or {})
        self._configs = {
            name: self._read(name, entry) for name, entry in raw["retrieval_configs"].items()
        }
        self._resolved: dict[tuple, RetrievalConfig] = {}
        self._lock = threading.Lock()

    def _read(self, name: str, entry: Any) -> RetrievalConfig:
        where = f"{self.path} retrieval_configs.{name}"
        if not isinstance(entry, dict):
            raise DataError(f"{where} is not an object")
        try:
            texts = self.model_texts
            searches = {
                tool: replace(
                    _spec(entry[key], SearchSpec, f"{where}.{key}"),
                    query_prefix=texts.get("qwen_query_prefix"),
                    reranker_prompt=texts.get("reranker_prompt"),
                    reranker_model=texts.get("reranker_model"),
                )
                for key, tool in SEARCH_TOOLS.items()
                if entry.get(key) is not None
            }
            return RetrievalConfig(
                name=name,
                prompt_file=entry["prompt_file"],
                prompt_builder=entry["prompt_builder"],
                agent_tools=tuple(entry["agent_tools"]),
                searches=searches,
                grep=_spec(entry.get("grep"), GrepSpec, f"{where}.grep"),
                shell=_spec(entry.get("shell"), ShellSpec, f"{where}.shell"),
            )
        except (KeyError, TypeError) as exc:
            raise DataError(f"{where} is malformed ({exc})") from None

    @property
    def names(self) -> list[str]:
        """The configuration names the reference's command line accepts, sorted."""
        return sorted(self._configs)

    @property
    def offline(self) -> list[str]:
        """Configurations that run with what this build has and nothing from the machine."""
        return [n for n, c in self._configs.items() if c.needs_nothing]

    def canonical(self, name: str | None) -> str:
        chosen = self.default if name is None else self.aliases.get(name, name)
        if chosen not in self._configs:
            raise VariantError(
                f"unknown retrieval config '{name}' (known: {', '.join(self.names)})"
            )
        return chosen

    def resolve(
        self, name: str | None, kwargs: Mapping[str, Any] | None = None, *, check: bool = True
    ) -> RetrievalConfig:
        """The configuration `name` (None: the default) with the kwargs applied, or a one-sentence
        error when the name or kwargs are wrong or (with `check`) it cannot run here."""
        canonical = self.canonical(name)
        overrides = _check_kwargs(kwargs)
        key = (canonical, tuple(sorted(overrides.items())))
        config = self._resolved.get(key)
        if config is None:
            config = _apply(self._configs[canonical], overrides)
            with self._lock:
                self._resolved[key] = config
        lacking = config.missing() if check else []
        if lacking:
            label = f"'{canonical}' (the default)" if name is None else f"'{canonical}'"
            raise VariantError(self.refusal(label, lacking))
        return config

    def refusal(self, label: str, lacking: list[str]) -> str:
        offline = self.offline
        example = PREFERRED_OFFLINE if PREFERRED_OFFLINE in offline else offline[0]
        return (
            f"retrieval config {label} cannot run here: it needs {_and(lacking)}; use an "
            f"offline config such as --retrieval-config {example} (offline: {', '.join(offline)})"
        )

    def config(self, name: str) -> RetrievalConfig:
        """The unmodified configuration, whether or not it can run here (for listings)."""
        return self._configs[self.canonical(name)]


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _apply(config: RetrievalConfig, kwargs: dict[str, Any]) -> RetrievalConfig:
    """The overrides as the reference applies them: `top_k` and `reranker_min_score` to every
    search tool, `grep_top_k` and `case_sensitive` to grep; an override for a tool the
    configuration lacks changes nothing."""
    search_fields = ("top_k", "reranker_min_score", "reranker_model", "reranker_prompt")
    search_changes = {f: kwargs[f] for f in (*search_fields, "query_prefix") if f in kwargs}
    grep_changes = {
        field: kwargs[key]
        for key, field in (("grep_top_k", "top_k"), ("case_sensitive", "case_sensitive"))
        if key in kwargs
    }
    return replace(
        config,
        searches={tool: replace(s, **search_changes) for tool, s in config.searches.items()},
        grep=replace(config.grep, **grep_changes) if config.grep is not None else None,
        kwargs=dict(kwargs),
    )
