"""Grapheme clusters: the unit every title cut is made in (docs/method.md §§5, 7).

A reader's character is an extended grapheme cluster (``regex``'s ``\\X``): a base letter and the marks
written on it. A cut by code points or by a tokenizer's offsets can keep a Thai, Lao, Khmer or Devanagari
base letter and drop the vowel or tone mark that follows it, so every title that is shortened anywhere
(a model-free title, an LLM title over the schema's bound, a prefix over its token budget) is cut here,
between whole clusters. Pure and light: ``regex`` only.
"""

from __future__ import annotations

import regex

ELLIPSIS = "…"  # what ends a shortened title or prefix element

_GRAPHEME = regex.compile(r"\X")


def grapheme_count(text: str) -> int:
    """How many user-perceived characters (extended grapheme clusters) ``text`` holds: a base letter and
    the combining marks written on it count once, as a reader counts them."""
    return sum(1 for _ in _GRAPHEME.finditer(text))


def grapheme_prefix(text: str, limit: int) -> str:
    """The first ``limit`` grapheme clusters of ``text``, each whole: a cut by code points could keep a
    Thai or Devanagari base letter and drop the vowel or tone mark that follows it."""
    return "".join(cluster.group() for _, cluster in zip(range(limit), _GRAPHEME.finditer(text)))


def grapheme_boundary_before(text: str, offset: int) -> int:
    """The largest cluster boundary of ``text`` at or before character ``offset``: where a cut made at a
    tokenizer's offset (which may fall inside a cluster) is moved back to, so no mark loses its letter."""
    boundary = 0
    for cluster in _GRAPHEME.finditer(text):
        if cluster.end() > offset:
            break
        boundary = cluster.end()
    return boundary


def bounded_title(title: str, max_chars: int) -> str:
    """``title`` within ``max_chars`` code points (what a JSON schema's ``maxLength`` counts), ending in
    :data:`ELLIPSIS` when cut: the longest run of whole grapheme clusters that leaves room for the
    ellipsis, moved back to its last space when that keeps at least half of it (a word boundary reads
    better than half a word; text without spaces, CJK or Thai, is cut between clusters). A title within
    the bound comes back unchanged."""
    if len(title) <= max_chars:
        return title
    kept, used = [], 0
    for cluster in _GRAPHEME.finditer(title):
        if used + len(cluster.group()) > max_chars - len(ELLIPSIS):
            break
        kept.append(cluster.group())
        used += len(cluster.group())
    text = "".join(kept)
    space = text.rfind(" ")
    if space >= len(text) // 2:
        text = text[:space]
    return text.rstrip() + ELLIPSIS
