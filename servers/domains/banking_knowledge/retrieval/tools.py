"""The agent's retrieval tools, to be mixed into banking_knowledge's agent toolkit.

Each tool is its own class, named as the reference names the mixin that defines it: Python's
messages for a call with bad arguments (which the agent sees) name the defining class. A tool
runs on the episode's variant, the resolved retrieval configuration; which of these tools an
episode lists and serves is the configuration's choice (`Episode` enforces it).
"""

from __future__ import annotations

from servers.domains.banking_knowledge.retrieval.service import BankingRetrieval
from servers.engine.toolkit import ToolKind, Toolkit, tool


def _retrieval(toolkit: Toolkit) -> BankingRetrieval:
    variant = getattr(toolkit.episode, "variant", None)
    if not isinstance(variant, BankingRetrieval):
        raise ValueError("this episode has no retrieval config")
    return variant


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


class RetrievalTools(
    KBSearchMixin, GrepMixin, KBSearchBm25AllToolsMixin, KBSearchDenseAllToolsMixin, ShellMixin
):
    """Every retrieval tool of every configuration; the agent toolkit inherits this."""
