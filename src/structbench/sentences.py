"""Sentence boundaries as character offsets (pysbd, offline), the only places a long unit may be cut.

Boundaries are computed per paragraph and cached per paragraph text, because a paragraph start is
always a boundary and the same paragraph is looked at by several chunkers (structural, fixed,
semantic) in one process. Callers ask lazily, only for the paragraphs where a cut can fall, since
rule-based segmentation is the slowest step of chunking.

A boundary is the offset where a sentence's first non-space character sits, and it is kept only
when whitespace precedes it: a cut there never splits a word, so token counts of the two sides add
up to the count of the whole (see :class:`structbench.tokens.TokenSpans`).
"""

from __future__ import annotations

import functools
import re

_FALLBACK_SPLIT = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=\S)")


@functools.lru_cache(maxsize=1)
def _segmenter():
    import pysbd

    return pysbd.Segmenter(language="en", clean=False)


def _sentences(text: str) -> list[str]:
    # pysbd's own offsets (char_span, or clean=False output) re-find every sentence with a freshly
    # compiled regex, which doubles its cost; its processor gives the sentences, located below.
    return _segmenter().processor(text).process() or []


@functools.lru_cache(maxsize=1 << 16)
def sentence_starts(text: str) -> tuple[int, ...]:
    """Offsets in ``text`` where its second, third, ... sentence begins (0 and len(text) excluded)."""
    if len(text) < 2:
        return ()
    try:
        sentences = _sentences(text)
    except Exception:  # pysbd fails on rare inputs; a plain punctuation rule is better than no cut
        sentences = None
    if sentences is None:
        candidates = [match.end() for match in _FALLBACK_SPLIT.finditer(text)]
    else:  # locate each sentence in order; one pysbd altered beyond recognition gives no boundary
        candidates, cursor = [], 0
        for sentence in sentences:
            core = sentence.strip()
            found = text.find(core, cursor) if core else -1
            if found >= 0:
                candidates.append(found)
                cursor = found + len(core)
    n = len(text)
    return tuple(sorted({b for b in candidates if 0 < b < n and text[b - 1].isspace() and not text[b].isspace()}))


def paragraph_boundaries(text: str, start: int, end: int) -> list[int]:
    """Absolute sentence starts of the paragraph ``text[start:end]``, its own start first."""
    return [start] + [start + b for b in sentence_starts(text[start:end])]


def clear_cache() -> None:
    sentence_starts.cache_clear()
