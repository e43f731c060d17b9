"""The backend kinds that need a network or a shell: embedding retrievers, the pointwise LLM
reranker and the shell sandbox, registered in `tau_mcp.servers.knowledge.backends`
(the registry imports this module, so every kind is there when a configuration is resolved).

Each kind says what it needs from the machine, so a configuration that uses it is refused in
one sentence when something is missing: the embedding provider's API key, the reranker's key and
prompt, the Qwen query instruction, a working sandbox. The texts a model is sent (the reranker's
prompt, Qwen's query instruction) come from the data folder (`tau-harness data fetch` writes them
from the reference release's source) or the configuration's kwargs, never from our code.

Indexes and the knowledge-base files are shared by every episode (hung off the knowledge base);
a writable shell workspace belongs to the episode that uses it and goes when the episode ends.
"""

from __future__ import annotations

import string
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tau_mcp.servers.engine.call_context import current_episode
from tau_mcp.servers.knowledge.backends import BackendKind, Requirement, env_var, register
from tau_mcp.servers.knowledge.documents import KnowledgeBase

#: Where the texts below come from: the domain's reference texts, `retrieval_model_texts`.
TEXTS_WHERE = "the domain's reference texts (tau2/reference_texts/), retrieval_model_texts"


def _missing(description: str) -> Requirement:
    return Requirement(description, lambda: False)


def _present(description: str) -> Requirement:
    return Requirement(description, lambda: True)


# --- shell ----------------------------------------------------------------------------------------


class ShellBackend:
    """A configuration's shell tool over the knowledge base's files: one read-only workspace
    shared by every episode, or a writable one per episode."""

    def __init__(self, base: KnowledgeBase, allow_writes: bool, file_format: str) -> None:
        from tau_mcp.servers.knowledge.kb_files import FOLDERS
        from tau_mcp.servers.knowledge.shell import ShellWorkspace

        self.allow_writes = allow_writes
        self.folder: Path = base.index(
            f"files-{file_format}", lambda b: FOLDERS.shared(b.documents, file_format)
        )
        self._shared = None if allow_writes else ShellWorkspace(self.folder)

    def workspace(self) -> Any:
        from tau_mcp.servers.knowledge.shell import ShellWorkspace

        if self._shared is not None:
            return self._shared
        episode = current_episode()
        if episode is None:
            raise RuntimeError("a writable shell runs only inside an episode's tool call")
        return episode.resources.get(
            f"shell-workspace-{id(self)}", lambda: ShellWorkspace(self.folder, writable=True)
        )

    def run(self, command: str) -> str:
        return self.workspace().run(command)


def _shell_requirements(params: Mapping[str, Any]) -> list[Requirement]:
    from tau_mcp.servers.knowledge.sandbox import sandbox_problem

    problem = sandbox_problem()
    if problem is not None:
        return [_missing(f"a shell sandbox ({problem})")]
    return [_present("a shell sandbox (bubblewrap)")]


# --- embeddings -----------------------------------------------------------------------------------


def _embedding_requirements(params: Mapping[str, Any]) -> list[Requirement]:
    from tau_mcp.servers.knowledge.embeddings import KEY_ENV, needs_query_prefix

    kind, model = params.get("embedder_type") or "openai", params.get("embedder_model") or ""
    if kind not in KEY_ENV:
        return [_missing(f"an embedder of type '{kind}' (known: {', '.join(sorted(KEY_ENV))})")]
    needs = [env_var(KEY_ENV[kind], "embeddings")]
    if needs_query_prefix(kind, model) and not params.get("query_prefix"):
        needs.append(
            _missing(
                f"the query instruction for {model}, which the data folder does not hold "
                f"(`tau-harness data fetch` writes it to {TEXTS_WHERE}.qwen_query_prefix; or "
                "pass query_prefix in the kwargs)"
            )
        )
    return needs


def _build_dense(base: KnowledgeBase, params: Mapping[str, Any]) -> Any:
    from tau_mcp.servers.knowledge.embeddings import DenseIndex, DenseRetriever, reference_embedder

    embedder = reference_embedder(
        params.get("embedder_type") or "openai",
        params.get("embedder_model") or "",
        query_prefix=params.get("query_prefix") or "",
    )
    name = f"dense-{sorted(embedder.identity().items())}"
    index = base.index(
        name,
        lambda b: DenseIndex(
            [d.id for d in b.documents], [d.content for d in b.documents], embedder
        ),
    )
    return DenseRetriever(index, int(params.get("top_k", 10)))


# --- the reranker ---------------------------------------------------------------------------------


def _placeholders(template: str) -> int | None:
    """How many `{}` fields a prompt template has (None: it is not a valid template)."""
    try:
        fields = [f for _, f, _, _ in string.Formatter().parse(template) if f is not None]
    except ValueError:
        return None
    return len(fields) if all(f == "" for f in fields) else None


def _reranker_model(params: Mapping[str, Any]) -> str:
    from tau_mcp.servers.knowledge.rerank import DEFAULT_MODEL

    return params.get("model") or DEFAULT_MODEL


def _reranker_requirements(params: Mapping[str, Any]) -> list[Requirement]:
    needs: list[Requirement] = []
    model = _reranker_model(params)
    provider = model.split("/", 1)[0] if "/" in model else "openai"
    if provider == "openai":
        needs.append(env_var("OPENAI_API_KEY", "pointwise LLM reranker"))
    prompt = params.get("prompt")
    if not prompt:
        needs.append(
            _missing(
                "the reranker's prompt, which the data folder does not hold "
                f"(`tau-harness data fetch` writes it to {TEXTS_WHERE}.reranker_prompt; or "
                "pass reranker_prompt in the kwargs)"
            )
        )
    elif _placeholders(prompt) != 2:
        needs.append(_missing("a reranker prompt with two {} fields (the query, the document)"))
    return needs


def _build_reranker(base: KnowledgeBase, params: Mapping[str, Any]) -> Any:
    from tau_mcp.servers.knowledge.rerank import PointwiseReranker

    def content(doc_id: str) -> str | None:
        doc = base.by_id.get(doc_id)
        return doc.content if doc is not None else None

    return PointwiseReranker(
        params["prompt"],
        content,
        model=_reranker_model(params),
        min_score=int(params.get("min_score", 5)),
    )


register(
    BackendKind(
        "shell",
        "tool",
        lambda base, p: ShellBackend(
            base, bool(p.get("allow_writes", False)), str(p.get("file_format", "md"))
        ),
        _shell_requirements,
    )
)
register(BackendKind("embedding", "retriever", _build_dense, _embedding_requirements))
register(
    BackendKind("pointwise_llm_reranker", "postprocessor", _build_reranker, _reranker_requirements)
)
