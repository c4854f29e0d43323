"""Align a run with its queries' gold evidence and its condition's chunk set (docs/method.md §§3, 10).

:func:`align_run` validates the four tables once and turns them into flat arrays
(:class:`RunEvidence`) that every metric in :mod:`structbench.metrics.measures` reads. All overlaps
are on content offsets: a prefix can never create relevance. A ranked chunk of another document keeps
its rank and its token cost, but contributes no overlap (offsets are per-document coordinates).

Over 500 lines as one concern: the checks of the four tables and the arrays built from them share the
invariants (sorted, disjoint, in-document offsets) that every metric relies on, so they stay side by side.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import polars as pl

from structbench.metrics import kernels
from structbench.metrics.kernels import INDEX


@dataclass(frozen=True)
class RunEvidence:
    """A run joined with gold spans and chunk offsets, as flat arrays.

    Queries are sorted by ``qid``; every per-query array has one entry per query in that order.

    - spans: ``span_query``, ``span_start``, ``span_end``, ``span_length`` (grouped by query, in the
      order the query lists them); ``query_n_spans``.
    - binary-relevant ranked rows (relevant to any span), sorted by (query, rank):
      ``relevant_query``, ``relevant_rank``.
    - hits: (ranked row of the query's own document) x (gold span) with positive overlap, sorted by
      (query, rank, span): ``hit_query``, ``hit_rank``, ``hit_span``, ``hit_new`` (characters of the span
      this chunk covers that no higher-ranked chunk covered), ``hit_cost`` (prefix + content tokens of
      the query's ranking from rank 1 through this chunk, chunks of other documents included).
    - the condition's chunk set of each query's document, restricted to chunks that touch a gold span:
      candidates ``cand_query``, ``cand_chunk_id`` sorted by (query, chunk_id); their overlaps
      ``pair_cand``, ``pair_span``, ``pair_lo``, ``pair_hi`` sorted by (candidate, span);
      ``cand_relevant`` (the candidate is binary-relevant to a span of its query: the chunk-level
      judgments, :func:`~structbench.metrics.measures.chunk_judgments`); ``query_n_relevant``
      (binary-relevant chunks of the gold document in the chunk set).
    - ``chunks_disjoint``: no two chunks of a document overlap (true for chunk sets that tile their
      documents); marginal coverage gains then never interact, which the kernels exploit.
    - character extents, for the span metrics (:mod:`structbench.metrics.spans`): ``hit_lo``, ``hit_hi``
      (each hit's clipped overlap ``c ∩ g``); ``cand_start``, ``cand_end`` (each candidate's content
      interval); ``touch_query``, ``touch_start``, ``touch_end``: chunks of the query's document whose
      overlap with a gold span is EMPTY but that meet it (a chunk ending where the span starts, or
      starting where it ends), for Chroma's rule of precision-Ω; the run as blocks of rows, one per
      query's ranking, ``block_query``, ``block_len``,
      with ``row_rank`` and ``row_chunk`` (the chunk-set position of every run row, all documents) and
      ``chunk_length`` (content characters of each chunk-set position) and ``chunk_key`` (its start as
      ``doc * stride + start``, a key that keeps documents apart, so unions of retrieved ranges never
      join two documents' offsets). These reuse arrays the alignment builds anyway: no extra pass over
      the run.
    """

    qid: np.ndarray
    doc_id: np.ndarray
    qtype: np.ndarray
    query_n_spans: np.ndarray
    span_query: np.ndarray
    span_start: np.ndarray
    span_end: np.ndarray
    span_length: np.ndarray
    relevant_query: np.ndarray
    relevant_rank: np.ndarray
    hit_query: np.ndarray
    hit_rank: np.ndarray
    hit_span: np.ndarray
    hit_new: np.ndarray
    hit_cost: np.ndarray
    cand_query: np.ndarray
    cand_chunk_id: np.ndarray
    pair_cand: np.ndarray
    pair_span: np.ndarray
    pair_lo: np.ndarray
    pair_hi: np.ndarray
    cand_relevant: np.ndarray
    query_n_relevant: np.ndarray
    chunks_disjoint: bool
    hit_lo: np.ndarray
    hit_hi: np.ndarray
    cand_start: np.ndarray
    cand_end: np.ndarray
    touch_query: np.ndarray
    touch_start: np.ndarray
    touch_end: np.ndarray
    block_query: np.ndarray
    block_len: np.ndarray
    row_rank: np.ndarray
    row_chunk: np.ndarray
    chunk_length: np.ndarray
    chunk_key: np.ndarray

    @property
    def n_queries(self) -> int:
        return len(self.qid)


def _examples(values, limit: int = 5) -> str:
    values = list(values)
    shown = ", ".join(repr(v) for v in values[:limit])
    return shown + (f", ... ({len(values)} in all)" if len(values) > limit else "")


def _lookup(sorted_keys: np.ndarray, needles: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """Positions of ``needles`` in strictly increasing ``sorted_keys``, and ``None`` when all were found
    (else a boolean mask of the found ones; missing positions are 0).

    Chunk ids are ordinals (``tables``), so the contiguous case is a subtraction, not a binary search.
    """
    n = len(sorted_keys)
    if len(needles) == 0:
        return np.zeros(0, dtype=INDEX), None
    if n and int(sorted_keys[-1]) - int(sorted_keys[0]) == n - 1:
        first = int(sorted_keys[0])
        if needles.min() >= first and needles.max() < first + n:
            return (needles - first if first else needles), None
        found = (needles >= first) & (needles < first + n)
        return np.where(found, needles - first, 0), found
    position = np.minimum(np.searchsorted(sorted_keys, needles), max(n - 1, 0))
    found = sorted_keys[position] == needles if n else np.zeros(len(needles), dtype=bool)
    return np.where(found, position, 0), (None if found.all() else found)


def _ranked_blocks(runs: pl.DataFrame, query_ids: pl.Series):
    """Split ``runs`` into one block of consecutive rows per query, ranks strictly increasing inside.

    Returns ``(block_query, block_start, block_len, row_rank, row_chunk_id)`` where ``block_query`` is
    the index into ``query_ids`` (sorted). Runs written in (qid, rank) order — as retrieval writes
    them — are used as they are; anything else is sorted first.
    """
    _require(runs, "runs", ["qid", "rank", "chunk_id"])
    frame = runs
    for attempt in range(2):
        qid_runs = frame["qid"].rle().struct.unnest()
        values = qid_runs["value"]
        block_len = qid_runs["len"].to_numpy().astype(INDEX)
        row_rank = frame["rank"].to_numpy()
        block_start = np.cumsum(block_len) - block_len
        increasing = row_rank[1:] > row_rank[:-1]
        increasing[block_start[1:] - 1] = True
        if not values.is_duplicated().any() and increasing.all():
            break
        if attempt:
            bad = np.flatnonzero(~increasing) + 1
            block = np.searchsorted(block_start, bad, side="right") - 1
            raise ValueError(f"runs: repeated rank within a query: {_examples(np.unique(values.to_numpy()[block]))}")
        frame = frame.select("qid", "rank", "chunk_id").sort("qid", "rank")
    known = values.is_in(query_ids.implode())
    if not known.all():
        raise ValueError(f"runs: qid not in queries: {_examples(values.filter(~known).unique().sort())}")
    if len(row_rank) and row_rank.min() < 1:
        raise ValueError("runs: rank is 1-based; found rank < 1")
    block_query = values.cast(pl.Enum(query_ids)).to_physical().to_numpy().astype(INDEX)
    return block_query, block_start, block_len, row_rank, frame["chunk_id"].to_numpy().astype(INDEX, copy=False)


def _check_repeated_chunks(row_chunk, block_start, block_len, n_chunks, block_qids) -> None:
    """Error if a query ranks one chunk twice."""
    if len(row_chunk) < 2:
        return
    if (block_len == block_len[0]).all():  # the usual top-k layout: sort each ranking's chunk ids
        table = row_chunk.reshape(len(block_len), block_len[0])
        table = np.sort(table.astype(np.int32) if n_chunks < 2**31 else table, axis=1)  # int32 sorts faster
        repeated = (table[:, 1:] == table[:, :-1]).any(axis=1)
        blocks_hit = np.flatnonzero(repeated)
    else:
        block_of_row = np.repeat(np.arange(len(block_len), dtype=INDEX), block_len)
        key = np.sort(block_of_row * n_chunks + row_chunk)
        same = key[1:] == key[:-1]
        blocks_hit = np.unique(key[1:][same] // n_chunks)
    if len(blocks_hit):
        raise ValueError(f"runs: a chunk ranked twice for one query: {_examples(np.unique(block_qids[blocks_hit]))}")


def _require(frame: pl.DataFrame, name: str, columns: list[str]) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(f"{name} table is missing columns {missing}")


def _query_arrays(queries: pl.DataFrame) -> tuple[pl.DataFrame, _Spans]:
    """The queries sorted by qid and their gold spans; errors on duplicate qids, a query without spans,
    a span that is not a ``[start, end)`` pair, and an empty or negative span."""
    _require(queries, "queries", ["qid", "doc_id", "qtype", "spans"])
    queries = queries.select("qid", "doc_id", "qtype", "spans")
    if not queries["qid"].is_sorted():
        queries = queries.sort("qid")
    qids = queries["qid"].to_numpy()
    repeated = qids[1:] == qids[:-1]
    if repeated.any():
        raise ValueError(f"queries: duplicate qid {_examples(np.unique(qids[1:][repeated]))}")
    n_spans = queries["spans"].list.len().fill_null(0).to_numpy().astype(INDEX)
    if (n_spans == 0).any():
        raise ValueError(
            f"queries without gold spans (drop them upstream and count them): {_examples(qids[n_spans == 0])}"
        )
    span_query = np.repeat(np.arange(len(queries), dtype=INDEX), n_spans)
    spans = queries["spans"].explode()
    if not (spans.list.len() == 2).all():
        bad = span_query[(spans.list.len() != 2).fill_null(True).to_numpy()]
        raise ValueError(f"queries: spans must be [start, end) pairs; bad in {_examples(np.unique(qids[bad]))}")
    bounds = spans.explode().to_numpy().astype(INDEX).reshape(-1, 2)
    span_start, span_end = bounds[:, 0].copy(), bounds[:, 1].copy()
    bad = (span_start < 0) | (span_end <= span_start)
    if bad.any():
        raise ValueError(f"queries: empty or negative gold span in {_examples(np.unique(qids[span_query[bad]]))}")
    return queries, _Spans(n_spans, span_query, span_start, span_end, span_end - span_start)


class _Spans(NamedTuple):
    """The queries' gold spans, grouped by query in query order (see :class:`RunEvidence`)."""

    query_n_spans: np.ndarray
    query: np.ndarray
    start: np.ndarray
    end: np.ndarray
    length: np.ndarray


class _Chunks(NamedTuple):
    """The condition's chunk set as arrays in ``chunk_id`` order (index = chunk position)."""

    chunk_id: np.ndarray
    start: np.ndarray
    end: np.ndarray
    tokens: np.ndarray
    doc: np.ndarray  # document code, shared with the queries' ``query_doc``


class _RankedRows(NamedTuple):
    """The run as one block of consecutive rows per query (see :func:`_ranked_blocks`), each row's chunk
    as a position in the chunk set."""

    block_query: np.ndarray
    block_start: np.ndarray
    block_len: np.ndarray
    row_rank: np.ndarray
    row_chunk: np.ndarray


class _ChunkLayout(NamedTuple):
    """Chunks in (document, start) order as sortable keys ``doc * stride + offset``."""

    stride: int
    by_position: np.ndarray  # chunk positions in (doc, start) order
    start_key: np.ndarray  # their start keys (non-decreasing)
    reach_key: np.ndarray  # running maximum of their end keys
    disjoint: bool  # no two chunks of a document overlap


class _Hits(NamedTuple):
    """The ``hit_*`` and ``relevant_*`` arrays of :class:`RunEvidence`."""

    query: np.ndarray
    rank: np.ndarray
    span: np.ndarray
    new: np.ndarray
    cost: np.ndarray
    relevant_query: np.ndarray
    relevant_rank: np.ndarray
    lo: np.ndarray
    hi: np.ndarray


class _Candidates(NamedTuple):
    """The ``cand_*``, ``pair_*`` and ``query_n_relevant`` arrays of :class:`RunEvidence` (candidates as
    chunk-set positions)."""

    cand_query: np.ndarray
    cand_chunk: np.ndarray
    pair_cand: np.ndarray
    pair_span: np.ndarray
    pair_lo: np.ndarray
    pair_hi: np.ndarray
    cand_relevant: np.ndarray
    query_n_relevant: np.ndarray


def align_run(
    runs: pl.DataFrame,
    queries: pl.DataFrame,
    chunks: pl.DataFrame,
    texts: pl.DataFrame | None = None,
) -> RunEvidence:
    """Validate and align one run (one condition) with gold evidence and the condition's chunk set.

    ``runs`` follows ``datamodel.RUNS`` (only qid, rank, chunk_id are read), ``queries`` ``datamodel.QUERIES``
    (qid, doc_id, qtype, spans), ``chunks`` ``datamodel.CHUNKS`` (chunk_id, doc_id, start, end, n_tokens) and
    ``texts`` ``datamodel.TEXTS`` (chunk_id, prefix_tokens; ``None`` means no prefix, 0 tokens).

    Errors (never a silent wrong number): a run row whose qid is not a query or whose chunk_id is not
    in the chunk set; a repeated (qid, rank) or (qid, chunk_id); rank < 1; a query without spans or with
    an empty span; duplicate qids or chunk_ids; a query document with no chunk in the chunk set; a ranked
    chunk missing from ``texts``; a negative token count. Queries with no run rows are kept (they score 0).

    The steps, in the order their errors are raised: queries and spans (:func:`_query_arrays`), the
    chunk set (:func:`_chunk_arrays`), document codes (:func:`_document_codes`), ranked rows
    (:func:`_ranked_rows`), token costs (:func:`_chunk_costs`, :func:`_cumulative_costs`), then the
    error-free alignment: chunk layout (:func:`_chunk_layout`), hits (:func:`_hits`) and candidates
    (:func:`_candidates`).
    """
    queries, spans = _query_arrays(queries)
    qids = queries["qid"].to_numpy()
    chunks, chunk_id, chunk_start, chunk_end, chunk_tokens = _chunk_arrays(chunks)
    query_doc, chunk_doc = _document_codes(queries, chunks)
    chunk_set = _Chunks(chunk_id, chunk_start, chunk_end, chunk_tokens, chunk_doc)
    rows = _ranked_rows(runs, queries["qid"], qids, chunk_id)
    chunk_cost = _chunk_costs(chunk_id, chunk_tokens, texts)
    cumulative, tokens_before_block = _cumulative_costs(chunk_cost, chunk_id, rows)
    layout = _chunk_layout(chunk_set, spans)
    hits = _hits(rows, chunk_set, query_doc, spans, cumulative, tokens_before_block, layout.disjoint)
    candidates = _candidates(layout, chunk_set, query_doc, spans, len(queries))
    touch_query, touch_chunk = _adjacent(layout, chunk_set, query_doc, spans)

    return RunEvidence(
        qid=qids,
        doc_id=queries["doc_id"].to_numpy(),
        qtype=queries["qtype"].to_numpy(),
        query_n_spans=spans.query_n_spans,
        span_query=spans.query,
        span_start=spans.start,
        span_end=spans.end,
        span_length=spans.length,
        relevant_query=hits.relevant_query,
        relevant_rank=hits.relevant_rank,
        hit_query=hits.query,
        hit_rank=hits.rank,
        hit_span=hits.span,
        hit_new=hits.new,
        hit_cost=hits.cost,
        cand_query=candidates.cand_query,
        cand_chunk_id=chunk_id[candidates.cand_chunk],
        pair_cand=candidates.pair_cand,
        pair_span=candidates.pair_span,
        pair_lo=candidates.pair_lo,
        pair_hi=candidates.pair_hi,
        cand_relevant=candidates.cand_relevant,
        query_n_relevant=candidates.query_n_relevant,
        chunks_disjoint=layout.disjoint,
        hit_lo=hits.lo,
        hit_hi=hits.hi,
        cand_start=chunk_start[candidates.cand_chunk],
        cand_end=chunk_end[candidates.cand_chunk],
        touch_query=touch_query,
        touch_start=chunk_start[touch_chunk],
        touch_end=chunk_end[touch_chunk],
        block_query=rows.block_query,
        block_len=rows.block_len,
        row_rank=rows.row_rank,
        row_chunk=rows.row_chunk,
        chunk_length=chunk_end - chunk_start,
        chunk_key=chunk_doc * layout.stride + chunk_start,
    )


def _chunk_arrays(chunks: pl.DataFrame):
    """The chunk set sorted by ``chunk_id``, and its ``chunk_id, start, end, n_tokens`` as arrays; errors
    on duplicate ids and on empty or negative intervals."""
    _require(chunks, "chunks", ["chunk_id", "doc_id", "start", "end", "n_tokens"])
    chunks = chunks.select("chunk_id", "doc_id", "start", "end", "n_tokens")
    if not chunks["chunk_id"].is_sorted():
        chunks = chunks.sort("chunk_id")
    chunk_id = chunks["chunk_id"].to_numpy().astype(INDEX)
    if len(chunk_id) > 1 and (np.diff(chunk_id) == 0).any():
        raise ValueError(f"chunks: duplicate chunk_id {_examples(np.unique(chunk_id[1:][np.diff(chunk_id) == 0]))}")
    chunk_start = chunks["start"].to_numpy().astype(INDEX)
    chunk_end = chunks["end"].to_numpy().astype(INDEX)
    bad_interval = (chunk_end <= chunk_start) | (chunk_start < 0)
    if bad_interval.any():
        raise ValueError(f"chunks: empty or negative interval at chunk_id {_examples(chunk_id[bad_interval])}")
    chunk_tokens = chunks["n_tokens"].to_numpy().astype(INDEX)
    return chunks, chunk_id, chunk_start, chunk_end, chunk_tokens


def _document_codes(queries: pl.DataFrame, chunks: pl.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """One integer code per document (sorted doc_id order), for queries and chunks; error if a query's
    document has no chunk in the chunk set."""
    doc_categories = pl.concat([queries["doc_id"], chunks["doc_id"]]).unique().sort()
    doc_enum = pl.Enum(doc_categories)
    query_doc = queries["doc_id"].cast(doc_enum).to_physical().to_numpy().astype(INDEX)
    chunk_doc = chunks["doc_id"].cast(doc_enum).to_physical().to_numpy().astype(INDEX)
    doc_has_chunk = np.bincount(chunk_doc, minlength=len(doc_categories)) > 0
    missing_docs = np.unique(query_doc[~doc_has_chunk[query_doc]])
    if len(missing_docs):
        raise ValueError(
            f"query documents with no chunk in the chunk set: {_examples(doc_categories.to_numpy()[missing_docs])}"
        )
    return query_doc, chunk_doc


def _ranked_rows(runs: pl.DataFrame, query_ids: pl.Series, qids: np.ndarray, chunk_id: np.ndarray) -> _RankedRows:
    """The run's rows in blocks per query, each chunk_id resolved to its chunk-set position; errors on a
    chunk_id outside the chunk set and on a chunk ranked twice for one query."""
    block_query, block_start, block_len, row_rank, run_chunk_id = _ranked_blocks(runs, query_ids)
    row_chunk, found = _lookup(chunk_id, run_chunk_id)
    if found is not None:
        raise ValueError(f"runs: chunk_id not in the chunk set: {_examples(np.unique(run_chunk_id[~found]))}")
    _check_repeated_chunks(row_chunk, block_start, block_len, len(chunk_id), qids[block_query])
    return _RankedRows(block_query, block_start, block_len, row_rank, row_chunk)


def _chunk_costs(chunk_id: np.ndarray, chunk_tokens: np.ndarray, texts: pl.DataFrame | None) -> np.ndarray:
    """Token cost of each chunk of the set: content tokens plus its text's prefix tokens (no ``texts``:
    no prefix). A chunk without a text row gets cost -1, which :func:`_cumulative_costs` reports if it
    is ranked (texts may hold other chunk sets' rows: those are ignored)."""
    chunk_cost = chunk_tokens
    if (chunk_cost < 0).any() or (len(chunk_cost) and chunk_cost.max() >= 2**31):
        raise ValueError("chunks: n_tokens out of range")
    if texts is None:
        return chunk_cost
    _require(texts, "texts", ["chunk_id", "prefix_tokens"])
    text_chunk = texts["chunk_id"].to_numpy().astype(INDEX)
    at, found_text = _lookup(chunk_id, text_chunk)
    ok = slice(None) if found_text is None else found_text  # texts of other chunk sets are ignored
    has_text = np.bincount(at[ok], minlength=len(chunk_id))
    if (has_text > 1).any():
        raise ValueError(f"texts: duplicate chunk_id {_examples(chunk_id[has_text > 1])}")
    prefix = texts["prefix_tokens"].to_numpy().astype(INDEX)[ok]
    if (prefix < 0).any():
        raise ValueError("texts: negative prefix_tokens")
    # a chunk without a text row gets a negative cost: found in the same pass as the cumulative costs
    chunk_cost = np.where(has_text > 0, chunk_tokens, -1)
    chunk_cost[at[ok]] += prefix
    return chunk_cost


def _cumulative_costs(chunk_cost: np.ndarray, chunk_id: np.ndarray, rows: _RankedRows) -> tuple[np.ndarray, np.ndarray]:
    """Running token total over all run rows, and that total before each query's block (their
    difference is the budget walk's cost through a row); error if a ranked chunk has no text row."""
    row_cost = np.take(chunk_cost.astype(np.int32), rows.row_chunk)
    if len(row_cost) and row_cost.min() < 0:
        raise ValueError(
            f"texts: ranked chunk_id missing: {_examples(np.unique(chunk_id[rows.row_chunk[row_cost < 0]]))}"
        )
    cumulative = np.cumsum(row_cost, dtype=INDEX)
    block_start = rows.block_start
    tokens_before_block = (
        np.where(block_start > 0, cumulative[np.maximum(block_start - 1, 0)], 0) if len(block_start) else block_start
    )
    return cumulative, tokens_before_block


def _chunk_layout(chunk_set: _Chunks, spans: _Spans) -> _ChunkLayout:
    """Chunks in (document, start) order, with the keys the candidate windows search."""
    stride = int(max(chunk_set.end.max(initial=0), spans.end.max(initial=0))) + 1
    doc, start, end = chunk_set.doc, chunk_set.start, chunk_set.end
    # chunks in (doc, start) order; chunk index order (= chunk_id order) breaks ties (stable sort)
    by_position = np.argsort(doc * stride + start, kind="stable")
    start_key = doc[by_position] * stride + start[by_position]
    reach_key = np.maximum.accumulate(doc[by_position] * stride + end[by_position])
    # chunk sets that tile their documents never overlap: then novelty is just the overlap length
    disjoint = not (start_key[1:] < reach_key[:-1]).any()
    return _ChunkLayout(stride, by_position, start_key, reach_key, disjoint)


def _hits(
    rows: _RankedRows,
    chunk_set: _Chunks,
    query_doc: np.ndarray,
    spans: _Spans,
    cumulative: np.ndarray,
    tokens_before_block: np.ndarray,
    chunks_disjoint: bool,
) -> _Hits:
    """Rows of the query's own document x that query's spans, positive overlap only, in (query, rank,
    span) order, with novelty, budget cost and the first relevant row of each query."""
    chunk_start, chunk_end = chunk_set.start, chunk_set.end
    block_query, block_start, block_len = rows.block_query, rows.block_start, rows.block_len
    query_n_spans, span_start, span_end, span_length = spans.query_n_spans, spans.start, spans.end, spans.length
    span_first = np.concatenate(([0], np.cumsum(query_n_spans)[:-1])).astype(INDEX)
    # int32 codes: this is one of the two passes over every run row, and half the bytes is twice the speed
    row_doc = np.take(chunk_set.doc.astype(np.int32), rows.row_chunk)
    block_doc = query_doc.astype(np.int32)[block_query]
    if len(block_len) and (block_len == block_len[0]).all():  # the usual top-k layout: compare row by row
        own = np.flatnonzero(row_doc.reshape(len(block_len), block_len[0]) == block_doc[:, None])
    else:
        own = np.flatnonzero(row_doc == np.repeat(block_doc, block_len))
    own_block = np.searchsorted(block_start, own, side="right") - 1
    # blocks may come in any qid order: put the few own-document rows in (query, rank) order
    by_query = np.argsort(block_query[own_block], kind="stable")
    own, own_block = own[by_query], own_block[by_query]
    own_query = block_query[own_block]
    counts = query_n_spans[own_query]
    hit_row = np.repeat(own, counts)
    hit_query = np.repeat(own_query, counts)
    hit_cost = np.repeat(cumulative[own] - tokens_before_block[own_block], counts)
    hit_span = kernels.concatenated_ranges(span_first[own_query], counts)
    hit_chunk = rows.row_chunk[hit_row]
    hit_lo = np.maximum(chunk_start[hit_chunk], span_start[hit_span])
    hit_hi = np.minimum(chunk_end[hit_chunk], span_end[hit_span])
    touching = hit_hi > hit_lo
    hit_row, hit_span, hit_chunk, hit_query, hit_cost = (
        hit_row[touching],
        hit_span[touching],
        hit_chunk[touching],
        hit_query[touching],
        hit_cost[touching],
    )
    hit_lo, hit_hi = hit_lo[touching], hit_hi[touching]
    hit_rank = rows.row_rank[hit_row].astype(INDEX)
    if chunks_disjoint:  # a ranking never repeats a chunk (checked), so nothing is covered twice
        hit_new = hit_hi - hit_lo
    else:
        by_span = np.lexsort((hit_rank, hit_span))
        hit_new = np.empty(len(hit_row), dtype=INDEX)
        hit_new[by_span] = kernels.new_coverage(hit_span[by_span], hit_lo[by_span], hit_hi[by_span])
    hit_relevant = kernels.binary_relevant(
        hit_hi - hit_lo, chunk_end[hit_chunk] - chunk_start[hit_chunk], span_length[hit_span]
    )
    relevant_hits = np.flatnonzero(hit_relevant)  # in (query, rank) order, one per relevant span
    relevant_hits = relevant_hits[kernels.group_starts(hit_row[relevant_hits])]
    return _Hits(
        hit_query,
        hit_rank,
        hit_span,
        hit_new,
        hit_cost,
        hit_query[relevant_hits],
        hit_rank[relevant_hits],
        hit_lo,
        hit_hi,
    )


def _candidates(
    layout: _ChunkLayout,
    chunk_set: _Chunks,
    query_doc: np.ndarray,
    spans: _Spans,
    n_queries: int,
) -> _Candidates:
    """The condition's chunks of each query's document that touch a gold span (the ideal's pool), their
    (candidate, span) overlaps, and the count of binary-relevant chunks per query."""
    chunk_start, chunk_end = chunk_set.start, chunk_set.end
    span_query, span_start, span_end, span_length = spans.query, spans.start, spans.end, spans.length
    stride = layout.stride
    span_doc = query_doc[span_query]
    window_end = np.searchsorted(layout.start_key, span_doc * stride + span_end, side="left")
    window_start = np.searchsorted(layout.reach_key, span_doc * stride + span_start, side="right")
    window = np.maximum(window_end - window_start, 0)
    pair_span = np.repeat(np.arange(len(span_query), dtype=INDEX), window)
    pair_chunk = layout.by_position[kernels.concatenated_ranges(window_start, window)]
    pair_lo = np.maximum(chunk_start[pair_chunk], span_start[pair_span])
    pair_hi = np.minimum(chunk_end[pair_chunk], span_end[pair_span])
    touching = pair_hi > pair_lo
    pair_span, pair_chunk, pair_lo, pair_hi = (
        pair_span[touching],
        pair_chunk[touching],
        pair_lo[touching],
        pair_hi[touching],
    )
    pair_query = span_query[pair_span]
    order = np.lexsort((pair_span, pair_chunk, pair_query))  # chunk index order == chunk_id order
    pair_span, pair_chunk, pair_lo, pair_hi, pair_query = (
        pair_span[order],
        pair_chunk[order],
        pair_lo[order],
        pair_hi[order],
        pair_query[order],
    )
    new_cand = np.ones(len(pair_span), dtype=bool)
    new_cand[1:] = (pair_query[1:] != pair_query[:-1]) | (pair_chunk[1:] != pair_chunk[:-1])
    pair_cand = np.cumsum(new_cand).astype(INDEX) - 1
    cand_query = pair_query[new_cand]
    cand_chunk = pair_chunk[new_cand]
    pair_relevant = kernels.binary_relevant(
        pair_hi - pair_lo, chunk_end[pair_chunk] - chunk_start[pair_chunk], span_length[pair_span]
    )
    cand_relevant = np.zeros(len(cand_query), dtype=bool)
    cand_relevant[pair_cand[pair_relevant]] = True
    query_n_relevant = np.bincount(cand_query[cand_relevant], minlength=n_queries).astype(INDEX)
    return _Candidates(cand_query, cand_chunk, pair_cand, pair_span, pair_lo, pair_hi, cand_relevant, query_n_relevant)


def _adjacent(
    layout: _ChunkLayout, chunk_set: _Chunks, query_doc: np.ndarray, spans: _Spans
) -> tuple[np.ndarray, np.ndarray]:
    """``(query, chunk)`` pairs of chunks of the query's document that meet a gold span with an empty
    overlap (``max(starts) == min(ends)``): what Chroma's ``intersect_two_ranges`` also accepts."""
    stride = layout.stride
    span_doc = query_doc[spans.query]
    # inclusive windows: chunks starting at or before the span's end, reaching at or past its start
    window_end = np.searchsorted(layout.start_key, span_doc * stride + spans.end, side="right")
    window_start = np.searchsorted(layout.reach_key, span_doc * stride + spans.start, side="left")
    window = np.maximum(window_end - window_start, 0)
    pair_span = np.repeat(np.arange(len(spans.query), dtype=INDEX), window)
    pair_chunk = layout.by_position[kernels.concatenated_ranges(window_start, window)]
    lo = np.maximum(chunk_set.start[pair_chunk], spans.start[pair_span])
    hi = np.minimum(chunk_set.end[pair_chunk], spans.end[pair_span])
    meets = (lo == hi) & (chunk_set.doc[pair_chunk] == span_doc[pair_span])
    return spans.query[pair_span[meets]], pair_chunk[meets]
