"""The cut rules of :mod:`structbench.chunking` (its docstring states them): splitting a unit over ``t_max``
at sentence boundaries, the line/word/token fallbacks, merging small chunks, and the CHUNKS output.
"""

from __future__ import annotations

import bisect
import dataclasses
import math
import re
from collections.abc import Sequence

import numpy as np
import polars as pl

from structbench.chunking.document import _Doc, _Piece, _Section
from structbench.chunking.tiling import FALLBACK_CUTS
from structbench.datamodel import CHUNKS, empty
from structbench.tokens import TokenSpans

_LINE_START = re.compile(r"\n\s*(?=\S)")  # match end: the first non-space character after a line break
_WORD_START = re.compile(r"\s+(?=\S)")  # match end: a non-space character after whitespace


# --------------------------------------------------------------------------------------------------
# Splitting and merging


def partition_sizes(positions: Sequence[int], t_max: int, *, strict: bool = False) -> list[int] | None:
    """Choose cuts among candidate positions: the fewest parts, then the most equal.

    ``positions`` are the token positions of the candidate boundaries of one unit, ascending, from 0
    to the unit's size ``T``. A part is a run of consecutive candidates; it may exceed ``t_max`` only
    if it holds a single sentence (two adjacent candidates), unless ``strict``. Minimizes (number of
    parts, sum of squared part sizes) lexicographically by dynamic programming; ties go to the earlier
    cut. Returns the indices into ``positions`` of the interior cuts (None when ``strict`` and no
    partition fits). Time: the number of candidates times the candidates within ``t_max`` of each.
    """
    m = len(positions) - 1
    if m <= 1 and not strict:
        return []
    inf = (math.inf, math.inf)
    best = [(0, 0)] + [inf] * m
    back = [0] * (m + 1)
    for j in range(1, m + 1):
        pj = positions[j]
        lo = bisect.bisect_left(positions, pj - t_max, 0, j)
        if not strict:
            lo = min(lo, j - 1)
        bj, arg = inf, j - 1
        for i in range(lo, j):
            count, squares = best[i]
            if count == math.inf:
                continue
            size = pj - positions[i]
            candidate = (count + 1, squares + size * size)
            if candidate < bj:
                bj, arg = candidate, i
        best[j], back[j] = bj, arg
    if best[m] == inf:
        return None
    cuts, j = [], m
    while j > 0:
        j = back[j]
        if j > 0:
            cuts.append(j)
    return cuts[::-1]


def _nearest(positions: Sequence[int], ideal: float, lo: int = 0, hi: int | None = None, base: int = 0) -> int | None:
    """Index in ``positions[lo:hi]`` (ascending) whose ``position - base`` is nearest ``ideal``.

    Ties go to the earlier index (also among equal positions); None when the range is empty. Distances
    are taken relative to ``base`` so a caller holding absolute token indices gets the very float
    comparisons of one holding positions relative to its unit. Time: O(log n).
    """
    hi = len(positions) if hi is None else hi
    if lo >= hi:
        return None
    key = (lambda p: p - base) if base else None
    j = bisect.bisect_left(positions, ideal, lo, hi, key=key)
    best = None
    if j > lo:  # the nearest position below ideal, at its first occurrence
        best = bisect.bisect_left(positions, positions[j - 1] - base, lo, j, key=key)
    if j < hi and (best is None or positions[j] - base - ideal < ideal - (positions[best] - base)):
        best = j
    return best


def _nearest_interior(
    positions: Sequence[int], ideal: float, total: int, lo: int = 0, hi: int | None = None, base: int = 0
) -> int | None:
    """:func:`_nearest` among the positions strictly inside the unit (``0 < position - base < total``)."""
    hi = len(positions) if hi is None else hi
    key = (lambda p: p - base) if base else None
    lo = bisect.bisect_right(positions, 0, lo, hi, key=key)
    hi = bisect.bisect_left(positions, total, lo, hi, key=key)
    return _nearest(positions, ideal, lo, hi, base)


def split_cuts(positions: Sequence[int], t_max: int) -> list[int]:
    """The split rule over a unit's candidate boundaries; returns indices of the interior cuts.

    ``positions`` are the token positions of the unit's sentence starts, ascending, from 0, followed
    by the unit size ``T``. With ``k = ceil(T / t_max)`` (the fewest parts that can fit), cut ``i``
    goes to the boundary nearest the equal-split position ``i * T / k`` (ties to the earlier). When
    that yields distinct cuts and parts within ``t_max``, those are the cuts (and ``k`` is the fewest
    possible). Otherwise (long sentences, lumpy sentence sizes) :func:`partition_sizes` decides: the
    fewest parts, then the most equal. A unit that fits, or is one sentence, is not cut.
    """
    total = positions[-1]
    if total <= t_max or len(positions) <= 2:
        return []
    k = math.ceil(total / t_max)
    cuts = [_nearest_interior(positions, total * i / k, total, 0, len(positions) - 1) for i in range(1, k)]
    if None not in cuts and all(a < b for a, b in zip(cuts, cuts[1:])):
        edges = [0, *(positions[c] for c in cuts), total]
        if all(b - a <= t_max for a, b in zip(edges[:-1], edges[1:])):
            return cuts
    return partition_sizes(positions, t_max)


def snapped_cuts(positions: Sequence[int], t_max: int) -> list[int]:
    """The fallback split rule (line, word and token starts); returns indices of the interior cuts.

    ``positions`` are the token positions of the candidates, strictly ascending from 0 to the size
    ``T``. A part is a run of consecutive candidates and may exceed ``t_max`` only if it is a single
    segment (two adjacent candidates; the next fallback level cuts it). The number of parts ``n`` is
    the fewest possible (greedy furthest reach from the start). Cut ``i`` is, among the candidates
    that still allow ``n`` parts after the cuts before it, the one nearest the equal-split position
    ``i * T / n`` (ties to the earlier). Where nothing constrains the cuts this is the snapping of
    :func:`split_cuts`; unlike its fallback, it needs no dynamic programming, so its time is
    ``O(n log m)`` for ``m`` candidates however dense they are.

    Why a feasible candidate always exists: with ``L_i`` the earliest candidate from which the rest
    fits in ``n - i`` parts (greedy from the end), every cut ``i`` of an ``n``-part partition lies at
    or after ``L_i``, and from any feasible previous cut one part reaches ``L_i`` (else the rest
    would need ``n - i + 1`` more parts, more than ``n`` in all).
    """
    m = len(positions) - 1
    total = positions[-1]
    if total <= t_max or m <= 1:
        return []

    def reach(i: int) -> int:  # the furthest candidate a part starting at candidate i can end at
        return max(bisect.bisect_right(positions, positions[i] + t_max) - 1, i + 1)

    def back(j: int) -> int:  # the earliest candidate a part ending at candidate j can start at
        return min(bisect.bisect_left(positions, positions[j] - t_max), j - 1)

    n, i = 0, 0
    while i < m:
        i, n = reach(i), n + 1
    earliest = [m]  # earliest[p]: the first candidate from which p parts reach the end
    for _ in range(n - 1):
        earliest.append(back(earliest[-1]))
    cuts, previous = [], 0
    for c in range(1, n):
        cut = _nearest(positions, total * c / n, earliest[n - c], reach(previous) + 1)
        if cut is None:  # impossible by the argument above; fail loudly rather than cut wrongly
            raise AssertionError(f"no feasible cut {c} of {n} over positions ending {positions[-5:]}")
        cuts.append(cut)
        previous = cut
    return cuts


def _unit_boundaries(doc: _Doc, para_start: int, para_end: int) -> list[int]:
    chars = []
    for para in range(para_start, para_end):
        chars.extend(doc.sentence_bounds(para)[0])
    return chars


def _split(doc: _Doc, piece: _Piece, para_start: int, para_end: int, t_max: int) -> list[_Piece]:
    """Apply :func:`split_cuts` to one unit (paragraphs ``[para_start, para_end)``) over ``t_max``.

    Sentence segmentation is the slow step, so it is done lazily, with the same result as segmenting
    the whole unit (a property test checks this): the boundary nearest an equal-split position lies
    in the paragraph holding that position or at its edges, so only those paragraphs are segmented.
    Each paragraph is segmented (and its boundaries located among the tokens) at most once, and the
    nearest boundary is found by bisection, so the time is linear in the unit.
    """
    tokens = doc.tokens
    base = tokens.index(piece.start)
    total = piece.tokens
    para_tok = [tokens.index(doc.para_starts[p]) - base for p in range(para_start, para_end)]
    k = math.ceil(total / t_max)
    cut_chars, cut_positions = [], []
    for i in range(1, k):
        ideal = total * i / k
        q = para_start + max(bisect.bisect_right(para_tok, ideal) - 1, 0)
        # Segment only around the ideal: a stretch holding the last token before it and the first after.
        before = tokens.starts[math.ceil(base + ideal) - 1]
        chars, indices = doc.sentence_bounds_near(q, before, before + 1)
        best = _nearest_interior(indices, ideal, total, base=base)
        best_char, best_position = (chars[best], indices[best] - base) if best is not None else (None, None)
        if q + 1 < para_end:  # the next paragraph's start is a candidate too; it comes last, so wins only if nearer
            following = para_tok[q + 1 - para_start]
            if 0 < following < total and (best is None or abs(following - ideal) < abs(best_position - ideal)):
                best_char, best_position = doc.para_starts[q + 1], following
        if best_char is None:
            break
        cut_chars.append(best_char)
        cut_positions.append(best_position)
    else:
        edges = [0, *cut_positions, total]
        if all(a < b for a, b in zip(cut_positions, cut_positions[1:])) and all(
            b - a <= t_max for a, b in zip(edges[:-1], edges[1:])
        ):
            char_edges = [piece.start, *cut_chars, piece.end]
            return [
                _Piece(
                    a,
                    b,
                    edges[n + 1] - edges[n],
                    piece.section_id,
                    piece.path,
                    piece.top_id,
                    piece.cut if n == len(cut_chars) else doc.cut_kind(b, "sentence"),
                )
                for n, (a, b) in enumerate(zip(char_edges[:-1], char_edges[1:]))
            ]

    # The fewest parts within t_max, if there are n of them, have cut i in [T - (n - i) * t_max,
    # i * t_max]: the DP needs the sentences of the paragraphs meeting those windows only (every
    # paragraph start is a candidate anyway). A strict DP (no part over t_max) over those candidates
    # that finds n parts has found the DP's answer over every boundary; it finding more means no
    # n-part split exists, so n grows and the windows widen; they cover the unit once
    # (n - 1) * t_max >= T, so this loop runs at most twice. Over-long sentences end up segmenting
    # the whole unit.
    para_next = para_tok[1:] + [total]
    segmented = [False] * (para_end - para_start)
    n = k - 1
    while not all(segmented):
        n += 1
        for i in range(1, n):  # mark the paragraphs meeting window i: para_tok <= hi and para_next >= lo
            lo, hi = total - (n - i) * t_max, i * t_max
            for offset in range(bisect.bisect_left(para_next, lo), bisect.bisect_right(para_tok, hi)):
                segmented[offset] = True
        chars, positions = [], []
        for offset, q in enumerate(range(para_start, para_end)):
            if segmented[offset]:
                sentence_chars, indices = doc.sentence_bounds(q)
                chars.extend(sentence_chars)
                positions.extend([index - base for index in indices])
            else:
                chars.append(doc.para_starts[q])
                positions.append(para_tok[offset])
        positions.append(total)
        cuts = partition_sizes(positions, t_max, strict=True)
        if cuts is not None and len(cuts) + 1 == n:
            return _parts(doc, piece, chars, positions, cuts)
    chars = _unit_boundaries(doc, para_start, para_end)
    positions = [tokens.index(c) - base for c in chars] + [total]
    return _parts(doc, piece, chars, positions, split_cuts(positions, t_max))


def _parts(doc: _Doc, piece: _Piece, chars: list[int], positions: list[int], cuts: list[int]) -> list[_Piece]:
    edges = [0, *cuts, len(chars)]
    parts = []
    for a, b in zip(edges[:-1], edges[1:]):
        start = chars[a]
        end = chars[b] if b < len(chars) else piece.end
        cut = piece.cut if b == len(chars) else doc.cut_kind(end, "sentence")
        parts.append(_Piece(start, end, positions[b] - positions[a], piece.section_id, piece.path, piece.top_id, cut))
    return parts


_FALLBACK_LEVELS = ("line", "word", "pretoken", "piece")  # "pretoken" and "piece" cuts are both "token" cuts


def _refine(doc: _Doc, piece: _Piece, t_max: int, level: int = 0) -> list[_Piece]:
    """Cut a piece over ``t_max`` that no sentence boundary serves (the fallback in the module docstring).

    Level by level (line, word, pre-token, any token start) with :func:`snapped_cuts`; a part that is
    a single segment of one level and still over ``t_max`` goes to the next. The last level has a
    candidate at every token, so its parts fit.
    """
    if piece.tokens <= t_max:
        return [piece]
    name = _FALLBACK_LEVELS[level]
    chars, positions = _fallback_candidates(doc, piece, name)
    cuts = snapped_cuts(positions, t_max)
    kind = name if name in FALLBACK_CUTS else "token"
    edges = [0, *cuts, len(chars)]
    out = []
    for a, b in zip(edges[:-1], edges[1:]):
        end = chars[b] if b < len(chars) else piece.end
        part = _Piece(
            chars[a],
            end,
            positions[b] - positions[a],
            piece.section_id,
            piece.path,
            piece.top_id,
            piece.cut if b == len(chars) else kind,
        )
        out.extend(_refine(doc, part, t_max, level + 1))
    return out


def _fallback_candidates(doc: _Doc, piece: _Piece, level: str) -> tuple[list[int], list[int]]:
    """Candidate cuts of one fallback level inside ``piece``: (chars, token positions).

    ``chars`` starts with the piece's own start; ``positions`` are relative to it, strictly
    ascending, and end with the piece's size (one more entry than ``chars``). A candidate's position
    is the number of the piece's tokens that start before it (so part sizes are span counts); one
    is kept only where a token starts after it and before the piece's end, and one char per
    position (several tokens can share a start offset, as a byte-level tokenizer's bytes of one
    character do).
    """
    tokens = doc.tokens
    base = tokens.index(piece.start)
    top = base + piece.tokens
    starts = np.asarray(tokens.starts[base:top], dtype=np.int64)
    if level in ("line", "word"):
        pattern = _LINE_START if level == "line" else _WORD_START
        found = np.fromiter(
            (match.end() for match in pattern.finditer(doc.text, piece.start, piece.end)), dtype=np.int64
        )
    elif level == "pretoken":
        found = starts[doc.pretoken_starts(base + 1, top) - base]
    else:
        found = starts[1:]
    indices = np.searchsorted(starts, found) + base
    keep = (indices > base) & (indices < top)
    keep[1:] &= indices[1:] != indices[:-1]  # equal token positions: keep the first char
    return [piece.start, *found[keep].tolist()], [0, *(indices[keep] - base).tolist(), piece.tokens]


def _common_path(a: tuple[str, ...], b: tuple[str, ...]) -> tuple[str, ...]:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return a[:n]


def _merged(first: _Piece, second: _Piece) -> _Piece:
    return _Piece(
        first.start,
        second.end,
        first.tokens + second.tokens,
        first.section_id,
        _common_path(first.path, second.path),
        first.top_id,
        second.cut,
    )


def _merge_small(pieces: list[_Piece], t_min: int, t_max: int) -> list[_Piece]:
    """Merge chunks under ``t_min`` within one top-level section (rules in the module docstring)."""
    out = list(pieces)
    i = 0
    while i < len(out):
        piece = out[i]
        if piece.tokens < t_min and len(out) > 1:
            if i + 1 < len(out) and piece.tokens + out[i + 1].tokens <= t_max:
                out[i : i + 2] = [_merged(piece, out[i + 1])]
                continue  # the merged chunk may still be small
            if i > 0 and out[i - 1].tokens + piece.tokens <= t_max:
                out[i - 1 : i + 1] = [_merged(out[i - 1], piece)]
                continue  # out[i] is now the chunk after the merged one
        i += 1
    return out


def _bounded(doc: _Doc, units: list[tuple[_Section, int, int]], t_max: int, t_min: int) -> list[_Piece]:
    """Split each unit over ``t_max`` (sentences, then the fallbacks), then merge small chunks within each
    top-level section."""
    tokens = doc.tokens
    by_top: list[list[_Piece]] = []
    for section, para_start, para_end in units:
        start = doc.para_starts[para_start]
        end = doc.para_char_start(para_end)
        piece = _Piece(
            start,
            end,
            tokens.count(start, end),
            section.section_id,
            section.path,
            section.top_id,
            doc.cut_kind(end, "paragraph"),
        )
        parts = _split(doc, piece, para_start, para_end, t_max) if piece.tokens > t_max else [piece]
        parts = [fitted for part in parts for fitted in _refine(doc, part, t_max)]
        if by_top and by_top[-1][0].top_id == section.top_id:
            by_top[-1].extend(parts)
        else:
            by_top.append(parts)
    out = []
    for group in by_top:
        out.extend(_merge_small(group, t_min, t_max))
    return out


# --------------------------------------------------------------------------------------------------
# Output


def _own_counts(doc: _Doc, pieces: list[_Piece], t_max: int) -> list[_Piece]:
    """For a tokenizer that is not word-level, give each piece its own text's count and keep ``t_max`` by those.

    Span counts are then estimates (a cut can change how the text around it is tokenized), so each
    chunk is counted again on its own text; a chunk over ``t_max`` by that count is cut again with
    the fallback levels over its own tokenization, and its parts are counted again in turn (each
    round cuts a smaller piece, so this ends).
    """
    if doc.counter.additive:
        return pieces
    counts = doc.counter.count_batch([doc.text[piece.start : piece.end] for piece in pieces])
    out = []
    for piece, count in zip(pieces, counts):
        piece = dataclasses.replace(piece, tokens=count)
        out.extend([piece] if count <= t_max else _cut_by_own_tokens(doc, piece, t_max))
    return out


def _cut_by_own_tokens(doc: _Doc, piece: _Piece, t_max: int) -> list[_Piece]:
    own = _Doc(doc.doc_id, doc.text, doc.para_starts, doc.para_ends, doc.sections, counter=doc.counter)
    own.tokens = TokenSpans(
        [piece.start + start for start in doc.counter.spans_batch([doc.text[piece.start : piece.end]])[0].starts]
    )
    parts = _refine(own, dataclasses.replace(piece, tokens=len(own.tokens)), t_max)
    return _own_counts(doc, parts, t_max)


def _frame(rows: list[tuple[str, list[_Piece]]]) -> pl.DataFrame:
    doc_ids, starts, ends, n_tokens, section_ids, paths, cuts = [], [], [], [], [], [], []
    for doc_id, pieces in rows:
        for piece in pieces:
            doc_ids.append(doc_id)
            starts.append(piece.start)
            ends.append(piece.end)
            n_tokens.append(piece.tokens)
            section_ids.append(piece.section_id)
            paths.append(list(piece.path))
            cuts.append(piece.cut)
    if not doc_ids:
        return empty("chunks")
    frame = pl.DataFrame(
        {
            "chunk_id": list(range(len(doc_ids))),
            "doc_id": doc_ids,
            "start": starts,
            "end": ends,
            "n_tokens": n_tokens,
            "section_id": section_ids,
            "path": paths,
            "cut": cuts,
        },
        schema=CHUNKS,
    )
    return frame


def _check_bounds(t_max: int, t_min: int) -> None:
    if t_max < 1 or t_min < 0 or t_min > t_max:
        raise ValueError(f"need 0 <= t_min <= t_max and t_max >= 1, got t_min={t_min}, t_max={t_max}")
