"""Synthetic scoring cells (queries, chunks, texts, runs) for tests and benchmarks.

Not a model of any corpus: chunk sets tile each document, gold spans are paragraph-sized intervals that
often straddle chunk boundaries, and each corpus-wide ranking mixes chunks of the query's document with
chunks of other documents, with distinct descending scores (so no evaluator can break ties
differently). Sizes default to a QASPER cell (Kuehlkamp et al.: 4,303 queries over 1,508 papers, mean 2.10
spans per question, top 100).
"""

from __future__ import annotations

import json

import numpy as np
import polars as pl

from structbench import datamodel
from structbench.defaults import TOP_K


def synthetic_cell(
    n_docs: int = 1508,
    n_queries: int = 4303,
    *,
    chunks_per_doc: float = 15.0,
    mean_spans: float = 2.1,
    top_k: int = TOP_K,
    own_doc_chunks: int = 10,
    chars_per_chunk: int = 1000,
    seed: int = 0,
) -> dict[str, pl.DataFrame]:
    """Return ``{"queries", "chunks", "texts", "runs"}`` conforming to :mod:`structbench.datamodel`."""
    rng = np.random.default_rng(seed)
    n_chunks_doc = np.maximum(1, rng.poisson(chunks_per_doc - 1, n_docs) + 1)
    n_chunks = int(n_chunks_doc.sum())
    chunk_doc = np.repeat(np.arange(n_docs), n_chunks_doc)
    lengths = rng.integers(chars_per_chunk // 4, 2 * chars_per_chunk, n_chunks)
    doc_first = np.concatenate(([0], np.cumsum(n_chunks_doc)[:-1]))
    ends_global = np.cumsum(lengths)
    doc_offset = np.repeat(ends_global[doc_first] - lengths[doc_first], n_chunks_doc)
    chunk_end = ends_global - doc_offset
    chunk_start = chunk_end - lengths
    doc_length = chunk_end[np.cumsum(n_chunks_doc) - 1]
    doc_ids = np.array([f"doc{d:05d}" for d in range(n_docs)])
    chunks = pl.DataFrame(
        {
            "chunk_id": np.arange(n_chunks, dtype=np.int64),
            "doc_id": doc_ids[chunk_doc],
            "start": chunk_start,
            "end": chunk_end,
            "n_tokens": (lengths // 4).astype(np.int32),
            "section_id": np.zeros(n_chunks, dtype=np.int32),
            "path": [[]] * n_chunks,
            "cut": np.where(np.isin(np.arange(n_chunks), np.cumsum(n_chunks_doc) - 1), "end", "sentence"),
        },
        schema=datamodel.CHUNKS,
    )
    prefix_tokens = rng.integers(0, 25, n_chunks).astype(np.int32)
    texts = pl.DataFrame(
        {
            "chunk_id": np.arange(n_chunks, dtype=np.int64),
            "prefix": [""] * n_chunks,
            "text_for_embedding": [""] * n_chunks,
            "prefix_tokens": prefix_tokens,
        },
        schema=datamodel.TEXTS,
    )

    query_doc = np.concatenate((np.arange(min(n_docs, n_queries)), rng.integers(0, n_docs, max(0, n_queries - n_docs))))
    query_doc = np.sort(query_doc)
    n_spans = 1 + rng.poisson(mean_spans - 1, n_queries)
    span_query = np.repeat(np.arange(n_queries), n_spans)
    span_doc_length = doc_length[query_doc[span_query]]
    span_len = np.minimum(
        rng.integers(chars_per_chunk // 5, 3 * chars_per_chunk // 2, len(span_query)), span_doc_length
    )
    span_start = (rng.random(len(span_query)) * (span_doc_length - span_len + 1)).astype(np.int64)
    span_end = span_start + span_len
    bounds = np.concatenate(([0], np.cumsum(n_spans)))
    spans = [np.column_stack((span_start[a:b], span_end[a:b])).tolist() for a, b in zip(bounds[:-1], bounds[1:])]
    qtypes = np.array(["factoid", "underspecified", "multihop", "structural"])
    queries = pl.DataFrame(
        {
            "qid": [f"q{q:06d}" for q in range(n_queries)],
            "corpus": ["synthetic"] * n_queries,
            "doc_id": doc_ids[query_doc],
            "text": [""] * n_queries,
            "qtype": qtypes[rng.integers(0, 4, n_queries)],
            "spans": spans,
            "meta": [json.dumps({})] * n_queries,
        },
        schema=datamodel.QUERIES,
    )

    # rankings: a few own-document chunks at random ranks, other documents' chunks elsewhere
    own_first = doc_first[query_doc]
    own_n = n_chunks_doc[query_doc]
    take = np.minimum(own_n, own_doc_chunks)
    ranked = rng.integers(0, n_chunks, (n_queries, top_k))
    own_choice = np.argsort(
        rng.random((n_queries, int(own_n.max()))) + (np.arange(int(own_n.max())) >= own_n[:, None]), axis=1
    )
    # own chunks land near the top more often: exponential noise on the rank position
    positions = np.argsort(np.arange(top_k) * 0.1 + rng.exponential(2.0, (n_queries, top_k)), axis=1)
    for slot in range(own_doc_chunks):
        active = slot < take
        rows = np.flatnonzero(active)
        ranked[rows, positions[rows, slot]] = own_first[rows] + own_choice[rows, slot]
    # remove duplicate chunks within a ranking by replacing repeats with fresh other-document draws
    ranked = _dedupe(ranked, n_chunks, rng)
    runs = pl.DataFrame(
        {
            "qid": np.repeat(queries["qid"].to_numpy(), top_k),
            "rank": np.tile(np.arange(1, top_k + 1, dtype=np.int32), n_queries),
            "chunk_id": ranked.ravel().astype(np.int64),
            "score": np.tile(np.linspace(1.0, 0.01, top_k, dtype=np.float32), n_queries),
            "stage": ["flat"] * (n_queries * top_k),
        },
        schema=datamodel.RUNS,
    )
    return {"queries": queries, "chunks": chunks, "texts": texts, "runs": runs}


def _dedupe(ranked: np.ndarray, n_chunks: int, rng: np.random.Generator) -> np.ndarray:
    ranked = ranked.copy()
    for _ in range(20):
        order = np.argsort(ranked, axis=1, kind="stable")
        sorted_rows = np.take_along_axis(ranked, order, axis=1)
        repeat = np.zeros_like(ranked, dtype=bool)
        repeat[:, 1:] = sorted_rows[:, 1:] == sorted_rows[:, :-1]
        if not repeat.any():
            return ranked
        rows, cols = np.nonzero(repeat)
        ranked[rows, order[rows, cols]] = rng.integers(0, n_chunks, len(rows))
    raise RuntimeError("could not draw duplicate-free rankings")
