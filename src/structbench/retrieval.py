"""The retrieval axis (SPEC section 8): flat corpus-wide search over a FAISS inner-product index.

Vectors are L2-normalized, so inner product is cosine. Rankings are sorted by score descending, then
``chunk_id`` ascending (SPEC section 17), so equal scores cannot make two runs differ. The other
strategies of the study (two-stage routing, TOC routing, RRF, query-side title injection) plug in here
as further functions returning the same ``runs`` table.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from structbench.tables import conform

# Extra candidates fetched beyond k so that ties straddling rank k are broken by chunk_id, not by FAISS.
TIE_MARGIN = 16


def build_index(chunk_vectors: np.ndarray, use_gpu: bool = False):
    import faiss

    index = faiss.IndexFlatIP(chunk_vectors.shape[1])
    if use_gpu and hasattr(faiss, "StandardGpuResources") and faiss.get_num_gpus() > 0:
        index = faiss.index_cpu_to_gpu(faiss.StandardGpuResources(), 0, index)
    index.add(np.ascontiguousarray(chunk_vectors, dtype=np.float32))
    return index


def order_candidates(scores: np.ndarray, ids: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Per row, sort candidates by (score desc, id asc) and keep k; FAISS pads missing hits with id -1."""
    valid = ids >= 0
    sort_scores = np.where(valid, -scores, np.inf)
    sort_ids = np.where(valid, ids, np.iinfo(np.int64).max)
    order = np.lexsort((sort_ids, sort_scores), axis=1)[:, :k]
    return np.take_along_axis(scores, order, axis=1), np.take_along_axis(ids, order, axis=1)


def flat_search(
    chunk_vectors: np.ndarray,
    query_vectors: np.ndarray,
    qids: list[str],
    top_k: int = 100,
    use_gpu: bool = False,
) -> pl.DataFrame:
    """Top-k chunks per query over the whole corpus; row i of ``chunk_vectors`` is ``chunk_id`` i."""
    n_chunks = chunk_vectors.shape[0]
    k = min(top_k, n_chunks)
    index = build_index(chunk_vectors, use_gpu)
    scores, ids = index.search(np.ascontiguousarray(query_vectors, dtype=np.float32), min(n_chunks, k + TIE_MARGIN))
    scores, ids = order_candidates(scores, ids.astype(np.int64), k)
    return runs_from_arrays(qids, scores, ids, stage="flat")


# One function per retrieval kind of structbench.conditions.AXES["retrieval"] (a test checks they agree).
RETRIEVERS = {"flat": flat_search}


def retrieve(kind: str, chunk_vectors: np.ndarray, query_vectors: np.ndarray, qids: list[str], top_k: int,
             use_gpu: bool = False) -> pl.DataFrame:
    """The runs table of one retrieval kind (the ``retrieval`` axis value of a condition)."""
    if kind not in RETRIEVERS:
        raise ValueError(f"retrieval {kind!r} has no implementation; implemented: {sorted(RETRIEVERS)}")
    return RETRIEVERS[kind](chunk_vectors, query_vectors, qids, top_k=top_k, use_gpu=use_gpu)


def runs_from_arrays(qids: list[str], scores: np.ndarray, ids: np.ndarray, stage: str) -> pl.DataFrame:
    n_queries, k = ids.shape
    keep = ids.reshape(-1) >= 0
    frame = pl.DataFrame(
        {
            "qid": np.repeat(np.asarray(qids, dtype=object), k)[keep],
            "rank": np.tile(np.arange(1, k + 1, dtype=np.int32), n_queries)[keep],
            "chunk_id": ids.reshape(-1)[keep],
            "score": scores.reshape(-1).astype(np.float32)[keep],
            "stage": np.full(int(keep.sum()), stage, dtype=object),
        }
    )
    return conform(frame, "runs")
