"""The agent's retrieval tools, which a retrieval configuration adds to the agent toolkit.

Each tool is its own class, named as the reference names the mixin that defines it: Python's
messages for a call with bad arguments (which the agent sees) name the defining class. A
configuration's tools are one instance of a class composed of the mixins it needs, bound to the
configuration (stateless, so every episode of the configuration shares it); `Episode` adds them
to each episode's agent toolkit (`Toolkit.add_tools`).
"""

from __future__ import annotations

from functools import cache
from typing import Any

from tau_mcp.servers.engine.toolkit import ToolKind, Toolkit, tool


class RetrievalToolkit(Toolkit):
    """Base of the composed classes: tools that run on one configuration's backends."""

    def __init__(self, retrieval: Any) -> None:
        super().__init__(db=None)
        self.retrieval = retrieval

    def blocks(self, name: str) -> bool:
        return self.retrieval.blocks(name)


def _retrieval(toolkit: Toolkit) -> Any:
    return toolkit.retrieval  # type: ignore[attr-defined]


class KBSearchMixin(Toolkit):
    @tool(ToolKind.READ)
    def KB_search(self, query: str) -> str:
        """Search the knowledge base and return the best-matching documents in full.

        Args:
            query: What to look for.
        """
        return _retrieval(self).search("KB_search", query)


class GrepMixin(Toolkit):
    @tool(ToolKind.READ)
    def grep(self, pattern: str) -> str:
        """Find the knowledge-base documents matching a regular expression (case-insensitive),
        most matches first, with their full content.

        Args:
            pattern: A Python regular expression; an invalid one is searched for literally.
        """
        return _retrieval(self).grep(pattern)


class KBSearchBm25AllToolsMixin(Toolkit):
    @tool(ToolKind.READ)
    def KB_search_bm25(self, query: str, k: int = 10) -> str:
        """Search the knowledge base with BM25 and return up to `k` documents in full.

        Args:
            query: What to look for.
            k: How many documents to return at most.
        """
        return _retrieval(self).search("KB_search_bm25", query, k)


class KBSearchDenseAllToolsMixin(Toolkit):
    @tool(ToolKind.READ)
    def KB_search_dense(self, query: str, k: int = 10) -> str:
        """Search the knowledge base with dense embeddings and return up to `k` documents.

        Args:
            query: What to look for.
            k: How many documents to return at most.
        """
        return _retrieval(self).search("KB_search_dense", query, k)


class ShellMixin(Toolkit):
    @tool(ToolKind.READ)
    def shell(self, command: str) -> str:
        """Run a shell command in a read-only copy of the knowledge base (one Markdown file
        per document).

        Args:
            command: The command line, e.g. `grep -ril 'annual fee' . | head`.
        """
        return _retrieval(self).shell(command)


MIXINS: dict[str, type[Toolkit]] = {
    "KB_search": KBSearchMixin,
    "grep": GrepMixin,
    "KB_search_bm25": KBSearchBm25AllToolsMixin,
    "KB_search_dense": KBSearchDenseAllToolsMixin,
    "shell": ShellMixin,
}


@cache
def toolkit_class(tools: tuple[str, ...]) -> type[RetrievalToolkit]:
    """The class holding exactly `tools` (retrieval tool names)."""
    bases = tuple(MIXINS[name] for name in tools)
    return type("RetrievalTools", (*bases, RetrievalToolkit), {"__module__": __name__})


class RetrievalTools(*MIXINS.values(), RetrievalToolkit):  # type: ignore[misc]
    """Every retrieval tool of every configuration (their descriptions, for listings)."""
