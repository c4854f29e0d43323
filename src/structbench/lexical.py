"""BM25 over the same chunks (SPEC section 8): the non-lexicality probe.

"BM25 gold-top-1" is the share of queries for which BM25 puts a binary-relevant chunk at rank 1
(seed 000, appendix I): how far plain keyword overlap solves the benchmark. The index is built on each
chunk's content alone (no prefix), with rank-bm25's Okapi BM25 (k1 = 1.5, b = 0.75) over lower-cased
word tokens. Rankings break score ties by ``chunk_id`` ascending, like every ranking of the study.
"""

from __future__ import annotations

import re

import numpy as np
import polars as pl

from structbench.retrieval import order_candidates, runs_from_arrays

WORD = re.compile(r"\w+", re.UNICODE)


def bm25_tokens(text: str) -> list[str]:
    return WORD.findall(text.lower())


def bm25_search(chunk_texts: list[str], query_texts: list[str], qids: list[str], top_k: int = 100) -> pl.DataFrame:
    """Top-k chunks per query by Okapi BM25; row i of ``chunk_texts`` is ``chunk_id`` i."""
    from rank_bm25 import BM25Okapi

    index = BM25Okapi([bm25_tokens(text) for text in chunk_texts])
    k = min(top_k, len(chunk_texts))
    ids = np.arange(len(chunk_texts), dtype=np.int64)
    all_scores = np.stack([index.get_scores(bm25_tokens(query)) for query in query_texts]) if query_texts else np.zeros((0, len(ids)))
    scores, chosen = order_candidates(all_scores, np.broadcast_to(ids, all_scores.shape), k)
    return runs_from_arrays(qids, scores, chosen, stage="bm25")
