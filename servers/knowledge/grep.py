"""Regex search over a knowledge base, with the reference's results and a fraction of its cost.

The reference's grep compiles the pattern with Python's `re` (case-insensitive unless asked
otherwise; an invalid pattern is escaped and searched literally), scores every document by
`len(pattern.findall(content))`, keeps documents with at least one match, sorts them by score
with a stable sort (ties in knowledge-base order) and cuts at `top_k`.

Running `re` over all ~800k characters costs ~5 ms per query. Most patterns, though, contain
literal text that every match must contain ("annual fee", the "credit" and "card" of
"credit.*card", one of the branches of "fee|charge"). We read those required literals off the
parsed pattern and look their trigrams up in an index of the case-folded base, which names the
documents that can hold them; `re` itself then scores only those documents (a pattern that is
nothing but a literal is counted with `str.count` on the folded text, which finds the same
non-overlapping, leftmost matches). The filter can only over-select (it folds case even for a
case-sensitive search, and anything it cannot reason about leaves every document in), so the
scores are always what `re` finds.

Case folding follows `re.IGNORECASE` exactly: two characters are one class when `re` matches one
with the other (which also joins pairs plain lower-casing misses, such as "s" and the long s).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Iterator
from functools import lru_cache

import numpy as np

from tau_mcp.servers.engine.lru import LruCache
from tau_mcp.servers.knowledge.documents import KnowledgeBase

try:  # the parser `re` itself uses; without it every pattern scans every document
    from re import _constants as _sre_c
    from re import _parser as _sre_parse
except ImportError:  # pragma: no cover - Python < 3.11
    _sre_c = _sre_parse = None

_ALL = None  # "every document may match"
GRAM = 3  # the literal filter indexes trigrams
_PATTERN_CACHE = 512


def _fold_classes(alphabet: str) -> tuple[dict[str, str], bool]:
    """Each character of `alphabet` mapped to a representative of its `re.IGNORECASE` class,
    and whether those classes are exactly `re`'s relation (every member matches every other).

    Classes are merged transitively, so even a relation that were not transitive would only
    make them coarser: the filter stays safe; the exact flag then turns off literal counting.
    """
    parent = {ch: ch for ch in alphabet}

    def root(ch: str) -> str:
        while parent[ch] != ch:
            parent[ch] = parent[parent[ch]]
            ch = parent[ch]
        return ch

    matches = {ch: re.compile(re.escape(ch), re.IGNORECASE).findall(alphabet) for ch in alphabet}
    for ch, others in matches.items():
        for other in others:
            a, b = root(ch), root(other)
            if a != b:
                parent[max(a, b)] = min(a, b)
    reps = {ch: root(ch) for ch in alphabet}
    members: dict[str, set[str]] = {}
    for ch, rep in reps.items():
        members.setdefault(rep, set()).add(ch)
    exact = all(set(matches[ch]) == members[reps[ch]] for ch in alphabet)
    return reps, exact


def _gram_masks(folded: str, starts: list[int]) -> dict[str, int]:
    """Each trigram of a one-byte folded text (documents separated by code 0) mapped to the
    bit set of the documents holding it."""
    text = np.frombuffer(folded.encode("latin-1"), dtype=np.uint8).astype(np.int64)
    width = len(text) - GRAM + 1
    code = np.zeros(max(width, 0), dtype=np.int64)
    inside = np.ones(max(width, 0), dtype=bool)
    for k in range(GRAM):
        window = text[k : k + width]
        code = code * 256 + window
        inside &= window != 0
    doc_of = np.searchsorted(np.asarray(starts), np.arange(width)[inside], side="right") - 1
    code = code[inside]
    ordered = np.sort(code)
    grams = ordered[np.concatenate(([True], ordered[1:] != ordered[:-1]))]
    matrix = np.zeros((len(grams), len(starts)), dtype=bool)
    matrix[np.searchsorted(grams, code), doc_of] = True
    packed = np.packbits(matrix, axis=1, bitorder="little")
    return {
        g.to_bytes(GRAM, "big").decode("latin-1"): int.from_bytes(bits.tobytes(), "little")
        for g, bits in zip(grams.tolist(), packed, strict=True)
    }


class GrepIndex:
    """The documents of a knowledge base and a case-folded copy of their text for filtering."""

    def __init__(self, base: KnowledgeBase) -> None:
        self.doc_ids = [doc.id for doc in base.documents]
        self.contents = [doc.content for doc in base.documents]
        self._alphabet = "".join(sorted(set("".join(self.contents))))
        classes, self._exact_fold = _fold_classes(self._alphabet)
        # One code per class. Up to 255 classes the codes are 1..255, so the folded text is a
        # one-byte string, which `str.find` scans several times faster (memchr); code 0 then
        # separates documents. Beyond that each class keeps its representative character.
        reps = sorted(set(classes.values()))
        if len(reps) < 256:
            codes = {rep: chr(i + 1) for i, rep in enumerate(reps)}
            separator = "\x00"
        else:
            codes = {rep: rep for rep in reps}
            separator = next(chr(c) for c in range(0x110000) if chr(c) not in codes)
        self._reps = {ch: codes[rep] for ch, rep in classes.items()}
        self._table = str.maketrans(self._reps)
        starts: list[int] = []
        position = 0
        for text in self.contents:
            starts.append(position)
            position += len(text) + 1
        self._starts = starts
        self._ends = [*starts[1:], position]
        self._folded = separator.join(t.translate(self._table) for t in self.contents)
        self._grams = _gram_masks(self._folded, starts) if separator == "\x00" else None
        self._literal_docs: LruCache[str, int] = LruCache(4096)

    # --- the filter -----------------------------------------------------------------------------
    def _fold(self, text: str) -> str | None:
        """`text` in folded form, or None when some character matches nothing in the base."""
        out = []
        for ch in text:
            rep = self._reps.get(ch)
            if rep is None:
                rep = self._outside_rep(ch)
                if rep is None:
                    return None
            out.append(rep)
        return "".join(out)

    @lru_cache(maxsize=4096)  # noqa: B019 - one index per process; bounded
    def _outside_rep(self, ch: str) -> str | None:
        """The code of a character that does not occur in the base, if it meets a class there."""
        found = re.compile(re.escape(ch), re.IGNORECASE).search(self._alphabet)
        return self._reps[found.group()] if found else None

    def docs_with(self, literal: str) -> int:
        """Bit set of documents among which are all those holding `literal` (case folded); with
        the trigram masks it may hold a few more (every caller counts the matches itself)."""
        if not literal:
            return (1 << len(self.contents)) - 1
        cached = self._literal_docs.get(literal)
        if cached is not None:
            return cached
        folded = self._fold(literal)
        if folded is None:
            mask = 0
        elif self._grams is not None:
            if len(folded) < GRAM:  # too short to filter on: every document is a candidate
                mask = (1 << len(self.contents)) - 1
            else:
                mask = -1
                for i in range(len(folded) - GRAM + 1):
                    mask &= self._grams.get(folded[i : i + GRAM], 0)
                    if not mask:
                        break
        else:
            mask = 0
            starts, ends, find = self._starts, self._ends, self._folded.find
            at = find(folded)
            while at != -1:
                doc = bisect_right(starts, at) - 1
                mask |= 1 << doc
                at = find(folded, ends[doc])
        self._literal_docs.put(literal, mask)
        return mask

    def candidates(self, pattern: str, flags: int) -> int | None:
        """Bit set of the documents that can match, or None for all of them."""
        if _sre_parse is None:
            return _ALL
        try:
            parsed = _sre_parse.parse(pattern, flags)
            return self._required(parsed)
        except Exception:  # noqa: BLE001 - the filter is an optimisation; never fail on it
            return _ALL

    def _required(self, items) -> int | None:
        """Documents holding everything a match of the item sequence must contain."""
        c = _sre_c
        result: int | None = _ALL
        run: list[str] = []

        def both(a: int | None, b: int | None) -> int | None:
            return b if a is None else a if b is None else a & b

        for op, av in items:
            if op is c.LITERAL:
                run.append(chr(av))
                continue
            if run:
                result = both(result, self.docs_with("".join(run)))
                run = []
            if op is c.SUBPATTERN:
                result = both(result, self._required(av[-1]))
            elif op is c.ATOMIC_GROUP:
                result = both(result, self._required(av))
            elif op in (c.MAX_REPEAT, c.MIN_REPEAT, c.POSSESSIVE_REPEAT):
                low, _high, body = av
                if low >= 1:
                    result = both(result, self._required(body))
            elif op is c.BRANCH:
                union = 0
                for branch in av[1]:
                    docs = self._required(branch)
                    if docs is None:
                        union = None
                        break
                    union |= docs
                result = both(result, union)
            # Anything else (classes, anchors, look-arounds, back-references) constrains nothing
            # we index, so it leaves the set as it is.
        if run:
            result = both(result, self.docs_with("".join(run)))
        return result

    # --- search ---------------------------------------------------------------------------------
    @lru_cache(maxsize=_PATTERN_CACHE)  # noqa: B019 - one index per process; bounded
    def _plan(self, pattern: str, case_sensitive: bool) -> tuple[Callable[[int], int], int | None]:
        """How to count one document's matches, and which documents to count."""
        flags = 0 if case_sensitive else re.IGNORECASE
        try:
            compiled = re.compile(pattern, flags)
            literal = None
        except re.error:
            compiled = re.compile(re.escape(pattern), flags)
            literal = pattern
        findall, contents = compiled.findall, self.contents

        def by_regex(i: int) -> int:
            return len(findall(contents[i]))

        if literal is None:
            literal = self._plain_literal(pattern, flags)
        if literal is None:
            return by_regex, self.candidates(pattern, flags)
        mask = self.docs_with(literal)
        if not compiled.flags & re.IGNORECASE:
            return (lambda i: contents[i].count(literal)), mask
        folded = self._fold(literal)
        if folded is None or not self._exact_fold or compiled.flags & re.ASCII:
            return by_regex, mask
        # Non-overlapping occurrences, leftmost first: what findall finds for a literal.
        count, starts, ends = self._folded.count, self._starts, self._ends
        return (lambda i: count(folded, starts[i], ends[i] - 1)), mask

    @staticmethod
    def _plain_literal(pattern: str, flags: int) -> str | None:
        """The text a pattern matches when it is nothing but literal characters (no inline
        flags that change matching), else None."""
        if _sre_parse is None:
            return None
        try:
            parsed = _sre_parse.parse(pattern, flags)
        except Exception:  # noqa: BLE001
            return None
        if parsed.state.flags & ~(re.IGNORECASE | re.UNICODE):
            return None
        chars = []
        for op, av in parsed:
            if op is not _sre_c.LITERAL:
                return None
            chars.append(chr(av))
        return "".join(chars) or None

    def _docs(self, mask: int | None) -> Iterator[int]:
        if mask is None:
            yield from range(len(self.contents))
            return
        while mask:
            low = mask & -mask
            yield low.bit_length() - 1
            mask ^= low

    def search(
        self, pattern: str, top_k: int, case_sensitive: bool = False
    ) -> list[tuple[str, float]]:
        """Documents with at least one match, most matches first (ties in knowledge-base
        order), cut at `top_k` (Python slice semantics); none for a blank pattern."""
        if not pattern.strip():
            return []
        count, mask = self._plan(pattern, case_sensitive)
        ids = self.doc_ids
        results = []
        for i in self._docs(mask):
            matches = count(i)
            if matches:
                results.append((ids[i], float(matches)))
        results.sort(key=lambda item: item[1], reverse=True)
        return results[:top_k]
