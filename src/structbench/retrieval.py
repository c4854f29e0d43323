"""The retrieval axis (SPEC section 8): flat corpus-wide search over a FAISS inner-product index.

Vectors are L2-normalized, so inner product is cosine. Rankings are sorted by score descending, then
``chunk_id`` ascending (SPEC section 17), so equal scores cannot make two runs differ. The other
strategies of the study (two-stage routing, TOC routing, RRF, query-side title injection) plug in here
as further functions returning the same ``runs`` table.

RRF (:mod:`structbench.fusion`), query-side title injection and per-candidate prefix choice
(:mod:`structbench.rescoring`) run the flat search of this module on each index they read, then
combine; their inputs beyond the condition's own vectors are keyword arguments of their function here.
FAISS runs on a GPU when ``use_gpu`` asks for one and faiss-gpu sees one (:func:`use_faiss_gpu`); GPU
and CPU inner products may differ in their last bits, which can only reorder near-ties, and exact
ties are broken by chunk_id on both.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
import polars as pl

from structbench.conditions import parse_value
from structbench.defaults import RESCORE_CANDIDATES, RRF_K
from structbench.fusion import reciprocal_rank_fusion
from structbench.rescoring import choose_per_candidate, inject_query_titles
from structbench.tables import conform

# Extra candidates fetched beyond k so that ties straddling rank k are broken by chunk_id, not by FAISS.
TIE_MARGIN = 16


def use_faiss_gpu(use_gpu: bool | str, faiss_module=None) -> bool:
    """Whether FAISS searches on a GPU, for config ``retrieval.use_gpu``: ``"auto"`` when faiss-gpu is
    installed and sees a GPU, ``True`` requires one (an error without), ``False`` never."""
    if use_gpu not in ("auto", True, False):
        raise ValueError(f"retrieval.use_gpu = {use_gpu!r}; expected auto, true or false")
    if faiss_module is None:
        import faiss as faiss_module
    available = hasattr(faiss_module, "StandardGpuResources") and faiss_module.get_num_gpus() > 0
    if use_gpu is True and not available:
        raise RuntimeError("retrieval.use_gpu = true, but FAISS sees no GPU (faiss-gpu not installed, or no "
                           "visible device); use auto or false")
    return available if use_gpu == "auto" else use_gpu


def build_index(chunk_vectors: np.ndarray, use_gpu: bool | str = False):
    import faiss

    index = faiss.IndexFlatIP(chunk_vectors.shape[1])
    if use_faiss_gpu(use_gpu, faiss):
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


def top_k_by_score(scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The k best of one query's scores over every chunk (index = chunk_id), by (score desc, chunk_id asc).

    Exact under ties: every chunk scoring at least the k-th best score competes, so a tie straddling
    rank k keeps the lowest chunk_ids (a plain argpartition would keep arbitrary ones)."""
    k = min(k, scores.shape[0])
    if k == 0:
        return scores[:0], np.zeros(0, dtype=np.int64)
    kth_best = np.partition(scores, scores.shape[0] - k)[scores.shape[0] - k]
    contenders = np.flatnonzero(scores >= kth_best)
    order = np.lexsort((contenders, -scores[contenders]))[:k]
    return scores[contenders[order]], contenders[order].astype(np.int64)


def flat_search(
    chunk_vectors: np.ndarray,
    query_vectors: np.ndarray,
    qids: list[str],
    top_k: int = 100,
    use_gpu: bool | str = False,
) -> pl.DataFrame:
    """Top-k chunks per query over the whole corpus; row i of ``chunk_vectors`` is ``chunk_id`` i."""
    n_chunks = chunk_vectors.shape[0]
    k = min(top_k, n_chunks)
    index = build_index(chunk_vectors, use_gpu)
    scores, ids = index.search(np.ascontiguousarray(query_vectors, dtype=np.float32), min(n_chunks, k + TIE_MARGIN))
    scores, ids = order_candidates(scores, ids.astype(np.int64), k)
    return runs_from_arrays(qids, scores, ids, stage="flat")


def rrf_search(chunk_vectors: np.ndarray, query_vectors: np.ndarray, qids: list[str], top_k: int = 100,
               use_gpu: bool | str = False, *, partner_vectors: Sequence[np.ndarray] = (),
               partner_runs: Sequence[pl.DataFrame] = (), rrf_k: int = RRF_K) -> pl.DataFrame:
    """``rrf:<sources>``: reciprocal rank fusion (:mod:`structbench.fusion`) of the flat top-k of the
    condition's index and of each partner index (``partner_vectors``: other text sets of the same chunk
    set), and of ``partner_runs`` (the BM25 run of the chunk set)."""
    if not partner_vectors and not partner_runs:
        raise ValueError("rrf needs at least one partner run besides the condition's own")
    dense = [flat_search(vectors, query_vectors, qids, top_k, use_gpu) for vectors in (chunk_vectors, *partner_vectors)]
    return reciprocal_rank_fusion([*dense, *partner_runs], k=rrf_k, top_k=top_k)


def query_titles_search(chunk_vectors: np.ndarray, query_vectors: np.ndarray, qids: list[str], top_k: int = 100,
                        use_gpu: bool | str = False, *, query_texts: Mapping[str, str], titles: Mapping[int, str],
                        encode_queries: Callable[[list[str]], np.ndarray],
                        candidates: int = RESCORE_CANDIDATES) -> pl.DataFrame:
    """``query_titles:<d>``: the flat top-k, its top ``candidates`` rescored with the candidate's title
    chain injected into the query embedding (:func:`structbench.rescoring.inject_query_titles`)."""
    run = flat_search(chunk_vectors, query_vectors, qids, top_k, use_gpu)
    return inject_query_titles(run, chunk_vectors, query_texts, titles, encode_queries, candidates, top_k)


def per_candidate_search(chunk_vectors: np.ndarray, query_vectors: np.ndarray, qids: list[str], top_k: int = 100,
                         use_gpu: bool | str = False, *, unprefixed_vectors: np.ndarray,
                         query_texts: Mapping[str, str], prefixed_texts: Mapping[int, str],
                         unprefixed_texts: Mapping[int, str],
                         score_pairs: Callable[[Sequence[tuple[str, str]]], Sequence[float]],
                         candidates: int = RESCORE_CANDIDATES) -> pl.DataFrame:
    """``per_candidate:<reranker>``: the prefixed (own) and unprefixed indexes' top ``candidates``, each
    candidate scored in both versions by the cross-encoder ``score_pairs``, the better kept
    (:func:`structbench.rescoring.choose_per_candidate`)."""
    prefixed = flat_search(chunk_vectors, query_vectors, qids, top_k, use_gpu)
    unprefixed = flat_search(unprefixed_vectors, query_vectors, qids, candidates, use_gpu)
    return choose_per_candidate(prefixed, unprefixed, query_texts, prefixed_texts, unprefixed_texts, score_pairs,
                                candidates, top_k)


# One function per retrieval kind of structbench.conditions.AXES["retrieval"] (a test checks they agree).
RETRIEVERS = {"flat": flat_search, "rrf": rrf_search, "query_titles": query_titles_search,
              "per_candidate": per_candidate_search}


def retrieve(kind: str, chunk_vectors: np.ndarray, query_vectors: np.ndarray, qids: list[str], top_k: int,
             use_gpu: bool | str = False, **kind_inputs) -> pl.DataFrame:
    """The runs table of one retrieval kind (the ``retrieval`` axis value of a condition, e.g. ``flat`` or
    ``rrf:bm25``); ``kind_inputs`` are the kind's own keyword inputs (see its function in RETRIEVERS)."""
    name = parse_value("retrieval", kind)[0].name
    if name not in RETRIEVERS:
        raise ValueError(f"retrieval {kind!r} has no implementation; implemented: {sorted(RETRIEVERS)}")
    return RETRIEVERS[name](chunk_vectors, query_vectors, qids, top_k=top_k, use_gpu=use_gpu, **kind_inputs)


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
