"""Vectorized array kernels behind :mod:`structbench.metrics` (arrays in, arrays out).

Nothing here knows about polars, queries or runs: the kernels take flat integer/float arrays that are
already grouped and sorted as each docstring states, and return flat arrays. The definitions a
reviewer checks live in the documented functions of :mod:`structbench.metrics.measures`; this module
only makes them fast. No Python loop runs over (query x rank x span); the only loops are over the k
steps of the greedy ideal ordering and over a handful of cutoffs.

Float summation order is fixed on purpose: per-rank gains are accumulated span by span in span
order, then divided by the span count, then discounted, then accumulated rank by rank. The plain
Python reference (:mod:`structbench.metrics.reference`) sums in the same order, so the two agree to
the last bit on the coverage parts and the greedy ideal breaks ties identically.
"""

from __future__ import annotations

import numpy as np

INDEX = np.int64


def group_starts(sorted_keys: np.ndarray) -> np.ndarray:
    """Indices where a new run of equal values begins in ``sorted_keys`` (empty input -> empty)."""
    if len(sorted_keys) == 0:
        return np.zeros(0, dtype=INDEX)
    change = np.flatnonzero(sorted_keys[1:] != sorted_keys[:-1]) + 1
    return np.concatenate(([0], change)).astype(INDEX)


def sum_by(index: np.ndarray, weights: np.ndarray, n: int) -> np.ndarray:
    """``out[i] = sum(weights[index == i])`` for i < n, accumulated in input order, always float64
    (``np.bincount`` returns int64 for empty input)."""
    return np.bincount(index, weights=weights, minlength=n).astype(np.float64, copy=False)


def concatenated_ranges(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """``concatenate([arange(s, s + c) for s, c in zip(starts, counts)])`` without the loop."""
    counts = np.asarray(counts, dtype=INDEX)
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, dtype=INDEX)
    ends = np.cumsum(counts)
    block_first = ends - counts  # position of each block's first element in the output
    offsets = np.repeat(np.asarray(starts, dtype=INDEX) - block_first, counts)
    return offsets + np.arange(total, dtype=INDEX)


def interval_overlap(a_start, a_end, b_start, b_end) -> np.ndarray:
    """``|[a_start, a_end) ∩ [b_start, b_end)|`` elementwise (0 when disjoint)."""
    return np.maximum(np.minimum(a_end, b_end) - np.maximum(a_start, b_start), 0)


def binary_relevant(overlap, chunk_length, span_length) -> np.ndarray:
    """Binary relevance rule (Kuehlkamp et al., appendix C) on integer lengths, without float division.

    ``overlap/|g| >= 0.5``  <=>  ``2*overlap >= |g|``;  ``overlap/|c| >= 0.8``  <=>  ``5*overlap >= 4*|c|``.
    A pair with no overlap is never relevant (so a zero-length chunk cannot become relevant).
    """
    overlap = np.asarray(overlap, dtype=INDEX)
    return (overlap > 0) & ((2 * overlap >= span_length) | (5 * overlap >= 4 * np.asarray(chunk_length)))


def elementary_segments(group: np.ndarray, lo: np.ndarray, hi: np.ndarray):
    """Cut each group's line at every interval endpoint of that group.

    Returns ``(seg_group, seg_lo, seg_hi)``: within each group, the consecutive pieces between the
    sorted distinct endpoints. Every interval of the group is exactly a union of such pieces, so
    coverage questions become set questions over pieces. Pieces covered by no interval are kept
    (they simply never get covered).
    """
    if len(group) == 0:
        empty = np.zeros(0, dtype=INDEX)
        return empty, empty, empty
    # one int64 key (group, x) sorts and dedups both coordinates at once
    lo_min = int(lo.min())
    stride = int(hi.max()) - lo_min + 1
    keys = np.sort(np.concatenate((group * stride + (lo - lo_min), group * stride + (hi - lo_min))))
    keys = keys[np.concatenate(([True], keys[1:] != keys[:-1]))]
    point_group, point_x = np.divmod(keys, stride)
    point_x += lo_min
    same_group = point_group[1:] == point_group[:-1]
    return point_group[:-1][same_group], point_x[:-1][same_group], point_x[1:][same_group]


def covering_pairs(group, lo, hi, seg_group, seg_lo, seg_hi):
    """All (interval, piece) pairs of the same group where the interval contains the piece.

    ``group`` must be sorted ascending. Returns ``(pair_interval, pair_piece)`` sorted by piece, then by
    interval index.
    """
    first = np.searchsorted(group, seg_group, side="left")
    last = np.searchsorted(group, seg_group, side="right")
    counts = last - first
    pair_piece = np.repeat(np.arange(len(seg_group), dtype=INDEX), counts)
    pair_interval = concatenated_ranges(first, counts)
    contains = (lo[pair_interval] <= seg_lo[pair_piece]) & (hi[pair_interval] >= seg_hi[pair_piece])
    return pair_interval[contains], pair_piece[contains]


def new_coverage(group: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Novelty kernel: characters of ``[lo, hi)`` not covered by any EARLIER interval of its group.

    Intervals must be sorted by ``(group, order)`` where ``order`` is the walk order (rank). Returns
    integer lengths (as int64). Exact for arbitrary overlaps: every piece between endpoints is credited
    to the first interval (lowest index = highest rank) that contains it. ``sum(new_coverage)`` over a
    prefix of a group's intervals is the length of their union.
    """
    n = len(group)
    if n == 0:
        return np.zeros(0, dtype=INDEX)
    seg_group, seg_lo, seg_hi = elementary_segments(group, lo, hi)
    pair_interval, pair_piece = covering_pairs(group, lo, hi, seg_group, seg_lo, seg_hi)
    if len(pair_piece) == 0:
        return np.zeros(n, dtype=INDEX)
    # pairs are sorted by piece then interval: the first pair of each piece is its first cover
    firsts = group_starts(pair_piece)
    lengths = (seg_hi - seg_lo)[pair_piece[firsts]]
    return sum_by(pair_interval[firsts], lengths, n).astype(INDEX)


def union_length_by(group: np.ndarray, lo: np.ndarray, hi: np.ndarray, n: int) -> np.ndarray:
    """``out[g] = |∪ [lo, hi)|`` over the intervals of group g < n (any order), as float64.

    One sort by start: each interval adds what reaches past the furthest end seen before it. Keys
    ``group * stride + offset`` keep groups apart (an earlier group's ends lie below a later group's
    starts), so the running maximum needs no reset at group boundaries.
    """
    if len(group) == 0:
        return np.zeros(n)
    lo_min = int(lo.min())
    stride = int(hi.max()) - lo_min + 1
    lo_key = group * stride + (lo - lo_min)
    hi_key = group * stride + (hi - lo_min)
    order = np.argsort(lo_key, kind="stable")
    lo_key, hi_key = lo_key[order], hi_key[order]
    reach = np.maximum.accumulate(hi_key)
    before = np.concatenate((lo_key[:1], reach[:-1]))
    return sum_by(group[order], np.maximum(hi_key - np.maximum(lo_key, before), 0), n)


def discounts(max_rank: int) -> np.ndarray:
    """``1/log2(rank + 1)`` for rank = 0..max_rank (index 0 unused, set to 0)."""
    table = np.zeros(max_rank + 1)
    if max_rank >= 1:
        table[1:] = 1.0 / np.log2(np.arange(2, max_rank + 2, dtype=np.float64))
    return table


def per_rank_gain(hit_query, hit_rank, hit_span, hit_new, span_length, query_n_spans):
    """Collapse (query, rank, span) hits to one gain per (query, rank).

    ``gain = (sum over spans, in span order, of new/|g|) / S``. Hits must be sorted by
    ``(query, rank, span)``. Returns ``(query, rank, gain)`` arrays, one entry per distinct (query, rank).
    """
    if len(hit_query) == 0:
        empty = np.zeros(0, dtype=INDEX)
        return empty, empty, np.zeros(0)
    key_change = np.ones(len(hit_query), dtype=bool)
    key_change[1:] = (hit_query[1:] != hit_query[:-1]) | (hit_rank[1:] != hit_rank[:-1])
    starts = np.flatnonzero(key_change)
    slot = np.cumsum(key_change) - 1
    values = hit_new / span_length[hit_span]
    summed = sum_by(slot, values, len(starts))
    query = hit_query[starts]
    return query, hit_rank[starts], summed / query_n_spans[query]


def discounted_gain(hit_query, hit_rank, hit_span, hit_new, span_length, query_n_spans, n_queries, k):
    """Coverage DCG@k per query from hits sorted by (query, rank, span) with precomputed novelty."""
    keep = hit_rank <= k
    query, rank, gain = per_rank_gain(
        hit_query[keep], hit_rank[keep], hit_span[keep], hit_new[keep], span_length, query_n_spans
    )
    return sum_by(query, gain * discounts(k)[rank], n_queries)


def static_gain_order(cand_query, pair_cand, pair_span, pair_lo, pair_hi, span_length, query_n_spans, k):
    """:func:`greedy_coverage_order` for candidates that never overlap each other.

    Disjoint candidates cover disjoint characters, so each one's marginal gain is its initial gain at
    every step and the greedy ordering is a sort by (gain descending, candidate order). Gains are
    computed with the same operations as the greedy kernel, so both orderings agree exactly.
    """
    n_cand = len(cand_query)
    if n_cand == 0 or k <= 0:
        empty = np.zeros(0, dtype=INDEX)
        return empty, empty
    pair_new = (pair_hi - pair_lo).astype(np.float64)
    gain = sum_by(pair_cand, pair_new / span_length[pair_span], n_cand) / query_n_spans[cand_query]
    order = np.argsort(-gain, kind="stable")  # ties keep candidate order
    order = order[np.argsort(cand_query[order], kind="stable")]
    sorted_query = cand_query[order]
    firsts = group_starts(sorted_query)
    block_sizes = np.diff(np.append(firsts, n_cand))
    rank = np.arange(n_cand) - np.repeat(firsts, block_sizes) + 1
    keep = (rank <= k) & (gain[order] > 0)
    return order[keep].astype(INDEX), rank[keep].astype(INDEX)


def greedy_coverage_order(
    cand_query: np.ndarray,
    pair_cand: np.ndarray,
    pair_span: np.ndarray,
    pair_lo: np.ndarray,
    pair_hi: np.ndarray,
    span_length: np.ndarray,
    query_n_spans: np.ndarray,
    k: int,
):
    """Greedy maximum-marginal-coverage ordering, all queries at once.

    Candidates ``0..n_cand-1`` are sorted by (query, tie-break key) with ``cand_query`` their query;
    ``pair_*`` lists, sorted by (candidate, span), the clipped overlap ``[pair_lo, pair_hi)`` of each
    candidate with each gold span it touches. At each of ``k`` steps every query with a positive best
    marginal gain appends its argmax candidate (first in candidate order on exact ties); the argmax is
    vectorized over all candidates of all queries. Marginal gains are computed exactly as the metric
    defines them: integer newly covered characters per (candidate, span), divided by |g|, summed in
    span order, divided by S.

    Returns ``(chosen_cand, chosen_rank)`` sorted by (query, rank), ranks 1-based.
    """
    n_cand = len(cand_query)
    if n_cand == 0 or k <= 0:
        empty = np.zeros(0, dtype=INDEX)
        return empty, empty
    # pieces are built per span; pairs must be grouped by span for that
    by_span = np.argsort(pair_span, kind="stable")
    span_sorted = pair_span[by_span]
    seg_group, seg_lo, seg_hi = elementary_segments(span_sorted, pair_lo[by_span], pair_hi[by_span])
    cover_pair_sorted, cover_piece = covering_pairs(
        span_sorted, pair_lo[by_span], pair_hi[by_span], seg_group, seg_lo, seg_hi
    )
    cover_pair = by_span[cover_pair_sorted]  # index into the (candidate, span) pair list
    piece_length = seg_hi - seg_lo
    uncovered = np.ones(len(seg_group), dtype=bool)
    n_pairs = len(pair_cand)
    pair_span_length = span_length[pair_span]
    cand_n_spans = query_n_spans[cand_query]
    query_first = group_starts(cand_query)
    block_of_cand = np.repeat(np.arange(len(query_first)), np.diff(np.append(query_first, n_cand)))
    cover_cand = pair_cand[cover_pair]

    chosen_cand, chosen_rank = [], []
    for step in range(1, k + 1):
        live = uncovered[cover_piece]
        pair_new = sum_by(cover_pair[live], piece_length[cover_piece[live]], n_pairs)
        gain = sum_by(pair_cand, pair_new / pair_span_length, n_cand) / cand_n_spans
        best = np.maximum.reduceat(gain, query_first)
        at_best = (gain == best[block_of_cand]) & (best[block_of_cand] > 0)
        winners = np.flatnonzero(at_best)
        if len(winners) == 0:
            break
        first_of_block = group_starts(block_of_cand[winners])
        winners = winners[first_of_block]
        chosen_cand.append(winners)
        chosen_rank.append(np.full(len(winners), step, dtype=INDEX))
        is_winner = np.zeros(n_cand, dtype=bool)
        is_winner[winners] = True
        uncovered[cover_piece[is_winner[cover_cand]]] = False
    if not chosen_cand:
        empty = np.zeros(0, dtype=INDEX)
        return empty, empty
    cand = np.concatenate(chosen_cand)
    rank = np.concatenate(chosen_rank)
    order = np.lexsort((rank, cand_query[cand]))
    return cand[order], rank[order]
