"""The agent policy of a retrieval configuration, composed as the reference composes it.

The rules are the reference's (recorded under `composition` in the reference texts): the
configuration's prompt template with every `{{component:NAME}}` replaced by
`prompts/components/NAME.md` as read; then, by the configuration's builder, nothing more
(`standard_prompt`), the whole knowledge base for `{{full_knowledge_base}}` (`full_kb_prompt`),
or the task's required documents for `{{required_documents}}` (`golden_prompt`); the AllTools
configurations also get a sentence naming their dense-search backend. The texts themselves are
the data folder's.

Policies are composed once per process and configuration (the whole-KB one is ~867k
characters); the per-task ones of `golden_retrieval` are kept for the most recent tasks.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tau_mcp.servers.engine import data as datafiles
from tau_mcp.servers.engine.errors import DataError
from tau_mcp.servers.engine.lru import LruCache
from tau_mcp.servers.knowledge.documents import Document, KnowledgeBase

COMPONENT = re.compile(r"\{\{component:(\w+)\}\}")
FULL_KNOWLEDGE_BASE = re.compile(r"\{\{full_knowledge_base\}\}")
REQUIRED_DOCUMENTS = "{{required_documents}}"
DENSE_INSTRUCTIONS = "{{all_tools_dense_instructions}}"
DOCUMENT_SEPARATOR = "\n\n---\n\n"
BUILDERS = ("standard_prompt", "full_kb_prompt", "golden_prompt")


def document_block(documents: Sequence[Document]) -> str:
    """Documents as the prompts inline them: a `## title` heading and the content each."""
    return DOCUMENT_SEPARATOR.join(f"## {doc.title}\n\n{doc.content}" for doc in documents)


class PolicyComposer:
    """Composes the policies of one data folder's configurations over its knowledge base."""

    def __init__(self, data_dir: Path, texts: dict[str, Any], base: KnowledgeBase) -> None:
        self.data_dir = data_dir
        self.prompts_dir = datafiles.domain_dir(data_dir, "banking_knowledge") / "prompts"
        self.base = base
        composition = texts.get("composition") or {}
        self.dense_sentences: dict[str, str] = dict(
            composition.get("all_tools_dense_sentence") or {}
        )
        self._templates: dict[str, str] = {}
        self._golden: LruCache[tuple[str, tuple[str, ...]], str] = LruCache(256)
        self._lock = threading.Lock()

    def _component(self, match: re.Match) -> str:
        return datafiles.read_text(self.prompts_dir / "components" / f"{match.group(1)}.md")

    def template(self, prompt_file: str) -> str:
        """A prompt template with its components substituted (cached)."""
        text = self._templates.get(prompt_file)
        if text is None:
            raw = datafiles.read_text(self.data_dir / prompt_file)
            text = COMPONENT.sub(self._component, raw)
            with self._lock:
                self._templates[prompt_file] = text
        return text

    def policy(
        self,
        name: str,
        prompt_file: str,
        builder: str,
        dense: bool,
        required_documents: Sequence[str] | None = None,
    ) -> str:
        """The policy of configuration `name`; `required_documents` (titles or ids) are the
        task's, for the `golden_prompt` builder."""
        if builder not in BUILDERS:
            raise DataError(
                f"retrieval config '{name}' names an unknown prompt builder '{builder}'"
            )
        if builder == "golden_prompt":
            key = (prompt_file, tuple(required_documents or ()))
            policy = self._golden.get(key)
            if policy is None:
                policy = self._golden_policy(prompt_file, required_documents or ())
                self._golden.put(key, policy)
        elif builder == "full_kb_prompt":
            policy = self._full_kb_policy(prompt_file)
        else:
            policy = self.template(prompt_file)
        if dense:
            sentence = self.dense_sentences.get(name)
            if sentence is None:
                raise DataError(f"the reference texts have no dense-search sentence for '{name}'")
            policy = policy.replace(DENSE_INSTRUCTIONS, sentence)
        if not policy.strip():
            raise DataError(f"retrieval config '{name}' composes an empty policy")
        return policy

    def _full_kb_policy(self, prompt_file: str) -> str:
        key = f"full_kb:{prompt_file}"
        policy = self._templates.get(key)
        if policy is None:
            template = self.template(prompt_file)
            if FULL_KNOWLEDGE_BASE.search(template):
                # `re.sub` with the block as its replacement template, as the reference does.
                policy = FULL_KNOWLEDGE_BASE.sub(document_block(self.base.documents), template)
            else:
                policy = template
            with self._lock:
                self._templates[key] = policy
        return policy

    def _golden_policy(self, prompt_file: str, required: Sequence[str]) -> str:
        found = [doc for ref in required if (doc := self.base.lookup(ref)) is not None]
        block = document_block(found) if found else "(No documents provided)"
        return self.template(prompt_file).replace(REQUIRED_DOCUMENTS, block)
