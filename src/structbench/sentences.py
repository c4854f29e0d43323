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


@functools.lru_cache(maxsize=1 << 16)
def sentence_starts(text: str) -> tuple[int, ...]:
    """Offsets in ``text`` where its second, third, ... sentence begins (0 and len(text) excluded)."""
    if len(text) < 2:
        return ()
    try:
        segments = _segmenter().segment(text)
    except Exception:  # pysbd fails on rare inputs; a plain punctuation rule is better than no cut
        segments = None
    if segments is None:
        candidates = [match.end() for match in _FALLBACK_SPLIT.finditer(text)]
    elif "".join(segments) == text:
        candidates, offset = [], 0
        for segment in segments:
            candidates.append(offset + (len(segment) - len(segment.lstrip())))
            offset += len(segment)
    else:  # pysbd altered the text: locate each sentence in order instead
        candidates, cursor = [], 0
        for segment in segments:
            core = segment.strip()
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
