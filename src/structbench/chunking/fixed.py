"""Fixed windows size-matched per document to a reference chunk set (A0, A1; docs/method.md §§6, 17)."""

from __future__ import annotations

import bisect
import math

import polars as pl

from structbench.chunking.cuts import _LINE_START, _check_bounds, _frame, _nearest, _own_counts
from structbench.chunking.document import _Doc, _Piece, _prepare, _tokenized
from structbench.defaults import FIXED_SNAP_TOKENS, T_MAX, T_MIN
from structbench.overlap import Overlap
from structbench.tokens import TokenCounter, load_tokenizer


def fixed_chunks(
    documents: pl.DataFrame,
    paragraphs: pl.DataFrame,
    sections: pl.DataFrame,
    tokenizer: TokenCounter | str,
    *,
    reference_chunks: pl.DataFrame,
    snap_tokens: int = FIXED_SNAP_TOKENS,
    t_min: int = T_MIN,
    t_max: int = T_MAX,
    overlap: Overlap | None = None,
) -> pl.DataFrame:
    """Fixed windows size-matched per document to ``reference_chunks`` (A0, A1; docs/method.md §§6, 17).

    Per document the target is the mean ``n_tokens`` of its reference chunks, rounded half up (and
    at most ``t_max``). Greedy from the start, each cut goes, for the window starting at token ``s``,
    to the first of these that exists, all within ``snap_tokens`` of ``s + target`` and never making
    the window longer than ``t_max``:

    1. the sentence boundary (paragraph starts included) nearest ``s + target`` (ties to the earlier);
    2. the line start nearest ``s + target``;
    3. the start of the whitespace-delimited word holding token ``s + target`` (moving the cut back,
       so no word is split);
    4. the last token start at or before ``s + target`` that begins a pre-token, else token
       ``s + target`` itself (a pre-token is what the tokenizer's pre-tokenizer splits off: a word,
       a punctuation mark, a CJK character).

    The last window takes the remainder and is merged into the previous one when under ``t_min``,
    unless the merged window would pass ``t_max``. A chunk's ``section_id`` and ``path`` are those of
    the section its start lies in; ``cut`` says which rule placed its end. ``paragraphs`` and
    ``sections`` are the same tables the reference chunks were built from (sentence boundaries and
    paths need them).

    With ``overlap`` (docs/method.md §6, "Overlap"; ``boundaries: fixed_overlap:<o>``) the windows keep
    their size and their end rule, and the stride is ``size − overlap``: the window after one that ends at
    token ``e`` starts at the start of the word holding token ``e − overlap`` (so the realized overlap
    is the declared one, or more by less than a word), and never at or before the previous window's
    start; its end, found by the rules above, lies past the previous end. ``overlap`` in tokens per
    document is ``overlap.tokens_at(target)`` (a share: ``floor(share · target)``); a document whose
    target leaves no stride is a ``ValueError`` naming it. The last window runs to the document's end
    and is dropped (the previous one extended to the end) when under ``t_min``, unless that passes
    ``t_max``. Such windows do not tile: :func:`structbench.chunking.tiling.assert_covering` checks them.
    """
    _check_bounds(t_max, t_min)
    tokenizer = load_tokenizer(tokenizer)
    docs = _prepare(documents, paragraphs, sections)
    targets = _targets(reference_chunks)
    rows = []
    for doc in _tokenized(docs, tokenizer):
        if not doc.text:
            continue
        if doc.doc_id not in targets:
            raise ValueError(f"document {doc.doc_id!r} has no reference chunks to size-match against")
        target = min(targets[doc.doc_id], t_max)
        if overlap is None:
            cuts = _window_cuts(doc, target, snap_tokens, t_min, t_max)
            edges = [0, *(char for char, _ in cuts), doc.n_chars]
            windows = list(zip(edges[:-1], edges[1:], [kind for _, kind in cuts] + ["end"]))
        else:
            overlap.check_size(target, f"document {doc.doc_id!r}: fixed_overlap (a size-matched window), overlap")
            windows = _overlap_windows(doc, target, overlap.tokens_at(target), snap_tokens, t_min, t_max)
        section_starts = doc.section_starts()
        pieces = []
        for start, end, kind in windows:
            section = doc.sections[max(bisect.bisect_right(section_starts, start) - 1, 0)]
            pieces.append(
                _Piece(start, end, doc.tokens.count(start, end), section.section_id, section.path, section.top_id, kind)
            )
        rows.append((doc.doc_id, _own_counts(doc, pieces, t_max)))
    return _frame(rows)


def _targets(reference_chunks: pl.DataFrame) -> dict[str, int]:
    means = reference_chunks.group_by("doc_id").agg(pl.col("n_tokens").cast(pl.Float64).mean().alias("mean"))
    return {
        doc_id: max(1, math.floor(mean + 0.5))
        for doc_id, mean in zip(means["doc_id"].to_list(), means["mean"].to_list())
    }


_Cut = tuple[int, int, str]  # (token index, char offset, cut kind)


def _window_cuts(doc: _Doc, target: int, snap_tokens: int, t_min: int, t_max: int) -> list[tuple[int, str]]:
    """The cuts of :func:`fixed_chunks` in one document, as (char offset, cut kind)."""
    tokens = doc.tokens
    n = len(tokens)
    cuts: list[tuple[int, str]] = []
    window_starts = [0]  # token index where each window starts
    while window_starts[-1] + target < n:
        cut = _end_cut(doc, window_starts[-1], target, snap_tokens, t_max)
        if cut is None:
            break
        _, char, kind = cut
        window_starts.append(tokens.index(char))  # the window's size is the count of tokens starting in it
        cuts.append((char, kind))
    if cuts and n - window_starts[-1] < t_min and n - window_starts[-2] <= t_max:
        cuts.pop()
    return cuts


def _end_cut(doc: _Doc, position: int, target: int, snap_tokens: int, t_max: int, after: int = 0) -> _Cut | None:
    """The end of the window starting at token ``position`` (rules 1-4 of :func:`fixed_chunks`), at a token
    index of at least ``after``; None when no token start is left for it."""
    tokens = doc.tokens
    n = len(tokens)
    desired = position + target
    # A cut must start a later character than the window does (tokens can share a start offset).
    lo = max(position + 1, desired - snap_tokens, bisect.bisect_right(tokens.starts, tokens.starts[position]), after)
    if lo >= n:
        return None
    desired = max(desired, lo)
    hi = max(min(n - 1, desired + snap_tokens, position + t_max), desired)
    return (
        _sentence_near(doc, lo, hi, desired)
        or _line_near(doc, lo, hi, desired)
        or _word_before(doc, lo, desired)
        or _token_before(doc, lo, desired)
    )


def _overlap_windows(
    doc: _Doc, target: int, overlap: int, snap_tokens: int, t_min: int, t_max: int
) -> list[tuple[int, int, str]]:
    """The windows of :func:`fixed_chunks` with ``overlap`` tokens, as (start char, end char, cut kind)."""
    tokens = doc.tokens
    n = len(tokens)
    starts, ends = [0], []  # token index of each window's start; (char, kind) of each window's end but the last
    while starts[-1] + target < n:
        # each end lies past the previous one, so no window holds another
        after = tokens.index(ends[-1][0]) + 1 if ends else 0
        cut = _end_cut(doc, starts[-1], target, snap_tokens, t_max, after)
        if cut is None:
            break
        end, char, kind = cut
        ends.append((char, kind))
        # the next start moves back to a word start (no word is split), always past this window's start
        lo = bisect.bisect_right(tokens.starts, tokens.starts[starts[-1]])
        desired = max(end - overlap, lo)
        starts.append((_word_before(doc, lo, desired) or _token_before(doc, lo, desired))[0])
    if ends and n - starts[-1] < t_min and n - starts[-2] <= t_max:
        starts.pop()
        ends.pop()
    return [
        (tokens.starts[start] if i else 0, char, kind)
        for i, (start, (char, kind)) in enumerate(zip(starts, [*ends, (doc.n_chars, "end")]))
    ]


def _sentence_near(doc: _Doc, lo: int, hi: int, desired: int) -> _Cut | None:
    """The sentence boundary at a token in ``[lo, hi]`` nearest ``desired`` (ties to the earlier)."""
    starts = doc.tokens.starts
    best: _Cut | None = None
    for para in range(doc.paragraph_of(starts[lo]), doc.paragraph_of(starts[hi]) + 1):
        # The boundaries at a token in [lo, hi] lie in (starts[lo - 1], starts[hi]]: segment only there.
        chars, indices = doc.sentence_bounds_near(para, starts[lo - 1] + 1, starts[hi])
        j = _nearest(indices, desired, bisect.bisect_left(indices, lo), bisect.bisect_right(indices, hi))
        if j is not None and (best is None or abs(indices[j] - desired) < abs(best[0] - desired)):
            best = (indices[j], chars[j], doc.cut_kind(chars[j], "sentence"))
    return best


def _line_near(doc: _Doc, lo: int, hi: int, desired: int) -> _Cut | None:
    """The line start at a token in ``[lo, hi]`` nearest ``desired`` (ties to the earlier)."""
    tokens = doc.tokens
    chars = [match.end() for match in _LINE_START.finditer(doc.text, tokens.starts[lo - 1], tokens.starts[hi] + 1)]
    indices = [tokens.index(char) for char in chars]
    j = _nearest(indices, desired, bisect.bisect_left(indices, lo), bisect.bisect_right(indices, hi))
    return None if j is None else (indices[j], chars[j], "line")


def _word_before(doc: _Doc, lo: int, desired: int) -> _Cut | None:
    """The token in ``[lo, desired]`` nearest ``desired`` that starts a whitespace-delimited word."""
    starts, text = doc.tokens.starts, doc.text
    for index in range(desired, lo - 1, -1):
        char = starts[index]
        if char > 0 and text[char - 1].isspace():
            return index, char, "word"
    return None


def _token_before(doc: _Doc, lo: int, desired: int) -> _Cut:
    """The token in ``[lo, desired]`` nearest ``desired`` that begins a pre-token, else token ``desired``."""
    indices = doc.pretoken_starts(lo, desired + 1)
    index = int(indices[-1]) if len(indices) else desired
    return index, doc.tokens.starts[index], "token"
