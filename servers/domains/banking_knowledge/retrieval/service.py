"""A retrieval configuration put to work: its search backends, tool outputs and policy.

`RetrievalCatalog` (configs.py) says what a configuration is; `BankingRetrieval` is one resolved
configuration with its backends built (shared through the registry by every episode that uses
the same parameters), and `BankingVariants` is the domain's catalog the engine asks for
variants (servers/engine/variants.py). The tool outputs are the reference's formats.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from tau_mcp.servers.domains.banking_knowledge.retrieval.configs import (
    RETRIEVAL_TOOLS,
    RetrievalCatalog,
    RetrievalConfig,
)
from tau_mcp.servers.domains.banking_knowledge.retrieval.policy import PolicyComposer
from tau_mcp.servers.domains.banking_knowledge.retrieval.tools import toolkit_class
from tau_mcp.servers.engine.domain import Domain
from tau_mcp.servers.engine.tasks import Task
from tau_mcp.servers.engine.toolkit import ToolSpec
from tau_mcp.servers.knowledge import registry
from tau_mcp.servers.knowledge.documents import KnowledgeBase, load_knowledge_base
from tau_mcp.servers.knowledge.pipeline import Results, SearchPipeline, SearchTiming

NO_DOCUMENTS = "No relevant documents found."


def format_results(base: KnowledgeBase, results: Results) -> str:
    """Ranked documents with their full content, as the reference's search tools print them."""
    lines = []
    for rank, (doc_id, score) in enumerate(results, 1):
        doc = base.by_id.get(doc_id)
        title = (doc.title if doc else "") or "Untitled"
        content = (doc.content if doc else "") or ""
        lines.append(
            f"{rank}. {title}\n   ID: {doc_id}\n   Score: {score:.4f}\n   Content: {content}\n"
        )
    return "\n".join(lines)


def timing_line(timing: SearchTiming) -> str:
    """The wall-clock line the reference's search tools end with. It shows `reranking=` when
    its (possibly empty) postprocessing step took more than 0 ms, which on a real clock is
    always; we always show it."""
    return (
        f"\n\n[Timing: retrieval={timing.retrieval_ms:.0f}ms, "
        f"reranking={timing.postprocessing_ms:.0f}ms, total={timing.total_ms:.0f}ms]"
    )


class BankingRetrieval:
    """One resolved retrieval configuration (a `Variant` of banking_knowledge)."""

    def __init__(self, variants: BankingVariants, config: RetrievalConfig) -> None:
        self.config = config
        self.name = config.name
        self.kwargs = dict(config.kwargs)
        self.agent_tools = config.agent_tools
        self.policy_per_task = config.prompt_builder == "golden_prompt"
        self.base = variants.base
        self._variants = variants
        self._backends: dict[str, Any] = {}
        names = tuple(t for t in config.agent_tools if t in RETRIEVAL_TOOLS)
        self.tools = toolkit_class(names)(self) if names else None

    def _backend(self, tool: str) -> Any:
        """The shared backend of one of this configuration's tools, built on first use."""
        found = self._backends.get(tool)
        if found is not None:
            return found
        config, base = self.config, self.base
        if tool in config.searches:
            spec = config.searches[tool]
            retriever = registry.backend(spec.kind, base, spec.retriever_params())
            post = (
                [registry.backend("pointwise_llm_reranker", base, spec.reranker_params())]
                if spec.reranker
                else []
            )
            found = SearchPipeline(retriever, post)
        elif tool == "grep" and config.grep is not None:
            params = {"top_k": config.grep.top_k, "case_sensitive": config.grep.case_sensitive}
            found = registry.backend("grep", base, params)
        elif tool == "shell" and config.shell is not None:
            shell = config.shell
            params = {"allow_writes": shell.allow_writes, "file_format": shell.file_format}
            found = registry.backend("shell", base, params)
        else:
            raise ValueError(f"Tool '{tool}' not found.")
        self._backends[tool] = found
        return found

    def blocks(self, tool: str) -> bool:
        """Whether the tool waits on a subprocess or the network: the shell, and searches that
        embed the query or ask a model to rerank."""
        if tool == "shell":
            return True
        spec = self.config.searches.get(tool)
        return spec is not None and (spec.kind != "bm25" or spec.reranker)

    # --- the tools ------------------------------------------------------------------------------
    def search(self, tool: str, query: str, k: int | None = None) -> str:
        """`KB_search` (no `k`), `KB_search_bm25` / `KB_search_dense` (with `k`)."""
        results, timing = self._backend(tool).search(query, k)
        body = format_results(self.base, results) if results else NO_DOCUMENTS
        return body + timing_line(timing)

    def grep(self, pattern: str) -> str:
        results = self._backend("grep").retrieve(pattern)
        if not results:
            return f"No matches found for pattern: {pattern}"
        return format_results(self.base, results)

    def shell(self, command: str) -> str:
        return self._backend("shell").run(command)

    # --- the policy -----------------------------------------------------------------------------
    def policy(self, task: Task | None) -> str:
        config = self.config
        dense = "KB_search_bm25" in config.searches and "KB_search_dense" in config.searches
        return self._variants.composer.policy(
            config.name, config.prompt_file, config.prompt_builder, dense, required_documents(task)
        )


def required_documents(task: Task | None) -> list[str]:
    """The documents a task names as needed (titles or ids), in its order."""
    if task is None:
        return []
    value = getattr(task, "required_documents", None)
    if value is None and task.model_extra:
        value = task.model_extra.get("required_documents")
    return list(value or [])


class BankingVariants:
    """banking_knowledge's catalog of variants: its retrieval configurations."""

    def __init__(self, domain: Domain) -> None:
        self.catalog = RetrievalCatalog(domain.data_dir)
        self.base = load_knowledge_base(domain.folder / "documents")
        self.composer = PolicyComposer(domain.data_dir, self.catalog.texts, self.base)
        self.default = self.catalog.default
        self.names = self.catalog.names
        self._resolved: dict[tuple, BankingRetrieval] = {}
        self._lock = threading.Lock()

    def resolve(
        self, name: str | None, kwargs: Mapping[str, Any] | None, *, check: bool = True
    ) -> BankingRetrieval:
        """A resolved configuration, shared by every episode that asks for the same one.
        `check=False` skips the requirement check (its tools then fail only when called
        without their backend), for tools of a configuration that can partly run here."""
        config = self.catalog.resolve(name, kwargs, check=check)
        key = (config.name, tuple(sorted(config.kwargs.items())))
        found = self._resolved.get(key)
        if found is None:
            with self._lock:
                found = self._resolved.get(key)
                if found is None:
                    found = self._resolved[key] = BankingRetrieval(self, config)
        return found

    def agent_tools(self, name: str) -> tuple[str, ...]:
        return self.catalog.config(name).agent_tools

    def added_specs(self, name: str) -> dict[str, ToolSpec]:
        tools = tuple(t for t in self.agent_tools(name) if t in RETRIEVAL_TOOLS)
        return dict(toolkit_class(tools).specs) if tools else {}

    def offline(self) -> list[str]:
        return self.catalog.offline
