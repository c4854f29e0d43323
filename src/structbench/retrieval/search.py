"""The retrieval axis (docs/method.md §8): flat corpus-wide search over a FAISS inner-product index, and the
routed kinds built on it.

Vectors are L2-normalized, so inner product is cosine. Rankings are sorted by score descending, then
``chunk_id`` ascending (docs/method.md §17), so equal scores cannot make two runs differ. The other
strategies of the study plug in here as further functions returning the same ``runs`` table.

Routed kinds (``two_stage``, ``toc``) rank the chunks of the sections a router kept first and fill the
rest of the top k from the flat ranking (:func:`routed_search`). The router runs before them and
writes a routing table (:mod:`structbench.retrieval.routing`: two-stage's stage 1 on section centroids;
:mod:`structbench.retrieval.toc`: the LLM reading a table of contents), which :func:`retrieve` takes as the
input ``routing``. The split keeps the LLM call of TOC routing in a GPU-kind step and the ranking in
a CPU-kind one, and it lets the scoring step read the same routing table for section recall.

RRF (:mod:`structbench.retrieval.fusion`), query-side title injection and per-candidate prefix choice
(:mod:`structbench.retrieval.rescoring`) run the flat search of this module on each index they read, then
combine; their inputs beyond the condition's own vectors are keyword arguments of their function here.
FAISS runs on a GPU when ``use_gpu`` asks for one and faiss-gpu sees one (:func:`use_faiss_gpu`); GPU
and CPU inner products may differ in their last bits, which can only reorder near-ties, and exact
ties are broken by chunk_id on both.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import polars as pl

from structbench.conditions import parse_value, readtime_kinds
from structbench.datamodel import RUNS, conform
from structbench.defaults import RESCORE_CANDIDATES, RRF_K, TOP_K
from structbench.retrieval.fusion import reciprocal_rank_fusion
from structbench.retrieval.rescoring import choose_per_candidate, inject_query_titles

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
        raise RuntimeError(
            "retrieval.use_gpu = true, but FAISS sees no GPU (faiss-gpu not installed, or no "
            "visible device); use auto or false"
        )
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
    top_k: int = TOP_K,
    use_gpu: bool | str = False,
) -> pl.DataFrame:
    """Top-k chunks per query over the whole corpus; row i of ``chunk_vectors`` is ``chunk_id`` i."""
    scores, ids = flat_ranking(chunk_vectors, query_vectors, top_k, use_gpu)
    return runs_from_arrays(qids, scores, ids, stage="flat")


def flat_ranking(
    chunk_vectors: np.ndarray, query_vectors: np.ndarray, top_k: int, use_gpu: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """(scores, chunk_ids), one row per query, of the top ``min(top_k, n_chunks)`` chunks in ranking order."""
    n_chunks = chunk_vectors.shape[0]
    k = min(top_k, n_chunks)
    index = build_index(chunk_vectors, use_gpu)
    scores, ids = index.search(np.ascontiguousarray(query_vectors, dtype=np.float32), min(n_chunks, k + TIE_MARGIN))
    return order_candidates(scores, ids.astype(np.int64), k)


def compose_ranking(
    routed_ids: np.ndarray, routed_scores: np.ndarray, flat_ids: np.ndarray, flat_scores: np.ndarray, k: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One query's routed ranking: ``(chunk_ids, scores, routed)`` of length min(k, available).

    The routed chunks come first, by score descending then chunk_id ascending (at most k of them);
    then the flat ranking (``flat_ids`` in rank order) fills the remaining ranks with the chunks it
    holds that were not routed, in its order (Kuehlkamp et al., appendix J: "if fewer than k candidates
    remain, the system backfills from the global ranking"). No chunk appears twice. ``routed`` marks
    the rows that came from the router."""
    routed_ids = np.asarray(routed_ids, dtype=np.int64)
    routed_scores = np.asarray(routed_scores, dtype=np.float32)
    order = np.lexsort((routed_ids, -routed_scores))[:k]
    head_ids, head_scores = routed_ids[order], routed_scores[order]
    if np.unique(head_ids).size != head_ids.size:
        raise ValueError("routed chunk_ids repeat a chunk")
    fill = ~np.isin(flat_ids, routed_ids)
    tail_ids = np.asarray(flat_ids, dtype=np.int64)[fill][: k - head_ids.size]
    tail_scores = np.asarray(flat_scores, dtype=np.float32)[fill][: k - head_ids.size]
    routed = np.concatenate((np.ones(head_ids.size, bool), np.zeros(tail_ids.size, bool)))
    return np.concatenate((head_ids, tail_ids)), np.concatenate((head_scores, tail_scores)), routed


def routed_search(
    chunk_vectors: np.ndarray,
    query_vectors: np.ndarray,
    qids: list[str],
    top_k: int = TOP_K,
    use_gpu: bool = False,
    *,
    routing: pl.DataFrame,
    routed_stage: str,
) -> pl.DataFrame:
    """Rank each query's routed chunks first, then backfill from the flat ranking (:func:`compose_ranking`).

    ``routing`` is a routing table (:data:`structbench.datamodel.ROUTING`): the union of ``chunk_ids``
    over a query's rows is its routed chunk set, scored by inner product with the query (the score
    flat search gives them). A query without routing rows is ranked by flat search alone. Rows get
    stage ``routed_stage`` (routed) or ``"backfill"``."""
    qids = list(qids)
    unknown = sorted(set(routing["qid"].to_list()) - set(qids))
    if unknown:
        raise ValueError(f"routing names queries that are not being ranked: {unknown[:5]}")
    routed_by_qid = dict(
        routing.select("qid", "chunk_ids")
        .explode("chunk_ids")
        .drop_nulls()
        .unique(maintain_order=True)
        .group_by("qid", maintain_order=True)
        .agg("chunk_ids")
        .iter_rows()
    )
    n_chunks = chunk_vectors.shape[0]
    k = min(top_k, n_chunks)
    most_routed = max((len(ids) for ids in routed_by_qid.values()), default=0)
    # enough flat hits that k remain after dropping the routed chunks from them
    flat_scores, flat_ids = flat_ranking(chunk_vectors, query_vectors, k + most_routed, use_gpu)
    frames = []
    for row, qid in enumerate(qids):
        routed_ids = np.asarray(routed_by_qid.get(qid, []), dtype=np.int64)
        if routed_ids.size and (routed_ids.min() < 0 or routed_ids.max() >= n_chunks):
            raise ValueError(f"routing of query {qid!r} names chunk_ids outside 0..{n_chunks - 1}")
        routed_scores = chunk_vectors[routed_ids].astype(np.float32) @ np.asarray(query_vectors[row], dtype=np.float32)
        valid = flat_ids[row] >= 0
        ids, scores, routed = compose_ranking(
            routed_ids, routed_scores, flat_ids[row][valid], flat_scores[row][valid], k
        )
        frames.append(
            pl.DataFrame(
                {
                    "qid": [qid] * ids.size,
                    "rank": np.arange(1, ids.size + 1, dtype=np.int32),
                    "chunk_id": ids,
                    "score": scores,
                    "stage": np.where(routed, routed_stage, "backfill").astype(object),
                },
                schema_overrides={"qid": pl.String, "stage": pl.String},
            )
        )
    return conform(pl.concat(frames) if frames else pl.DataFrame(schema=RUNS), "runs")


def two_stage_search(
    chunk_vectors: np.ndarray,
    query_vectors: np.ndarray,
    qids: list[str],
    top_k: int = TOP_K,
    use_gpu: bool = False,
    *,
    routing: pl.DataFrame,
) -> pl.DataFrame:
    """Two-stage retrieval (A4, G4): stage 2 ranks the chunks of the sections stage 1 kept
    (``routing`` from :func:`structbench.retrieval.routing.route_two_stage`); flat search backfills to k."""
    return routed_search(chunk_vectors, query_vectors, qids, top_k, use_gpu, routing=routing, routed_stage="stage2")


def toc_search(
    chunk_vectors: np.ndarray,
    query_vectors: np.ndarray,
    qids: list[str],
    top_k: int = TOP_K,
    use_gpu: bool = False,
    *,
    routing: pl.DataFrame,
) -> pl.DataFrame:
    """TOC routing (Li (The Chunk Was Never in the Document)): the chunks of the section the LLM named (``routing`` from
    :func:`structbench.retrieval.toc.route_toc`) lead the ranking; flat search fills the rest."""
    return routed_search(chunk_vectors, query_vectors, qids, top_k, use_gpu, routing=routing, routed_stage="toc")


def rrf_search(
    chunk_vectors: np.ndarray,
    query_vectors: np.ndarray,
    qids: list[str],
    top_k: int = TOP_K,
    use_gpu: bool | str = False,
    *,
    partner_vectors: Sequence[np.ndarray] = (),
    partner_runs: Sequence[pl.DataFrame] = (),
    rrf_k: int = RRF_K,
) -> pl.DataFrame:
    """``rrf:<sources>``: reciprocal rank fusion (:mod:`structbench.retrieval.fusion`) of the flat top-k of the
    condition's index and of each partner index (``partner_vectors``: other text sets of the same chunk
    set), and of ``partner_runs`` (the BM25 run of the chunk set)."""
    if not partner_vectors and not partner_runs:
        raise ValueError("rrf needs at least one partner run besides the condition's own")
    dense = [flat_search(vectors, query_vectors, qids, top_k, use_gpu) for vectors in (chunk_vectors, *partner_vectors)]
    return reciprocal_rank_fusion([*dense, *partner_runs], k=rrf_k, top_k=top_k)


def query_titles_search(
    chunk_vectors: np.ndarray,
    query_vectors: np.ndarray,
    qids: list[str],
    top_k: int = TOP_K,
    use_gpu: bool | str = False,
    *,
    query_texts: Mapping[str, str],
    titles: Mapping[int, str],
    encode_queries: Callable[[list[str]], np.ndarray],
    candidates: int = RESCORE_CANDIDATES,
) -> pl.DataFrame:
    """``query_titles:<d>``: the flat top-k, its top ``candidates`` rescored with the candidate's title
    chain injected into the query embedding (:func:`structbench.retrieval.rescoring.inject_query_titles`)."""
    run = flat_search(chunk_vectors, query_vectors, qids, top_k, use_gpu)
    return inject_query_titles(run, chunk_vectors, query_texts, titles, encode_queries, candidates, top_k)


def per_candidate_search(
    chunk_vectors: np.ndarray,
    query_vectors: np.ndarray,
    qids: list[str],
    top_k: int = TOP_K,
    use_gpu: bool | str = False,
    *,
    unprefixed_vectors: np.ndarray,
    query_texts: Mapping[str, str],
    prefixed_texts: Mapping[int, str],
    unprefixed_texts: Mapping[int, str],
    score_pairs: Callable[[Sequence[tuple[str, str]]], Sequence[float]],
    candidates: int = RESCORE_CANDIDATES,
) -> pl.DataFrame:
    """``per_candidate:<reranker>``: the prefixed (own) and unprefixed indexes' top ``candidates``, each
    candidate scored in both versions by the cross-encoder ``score_pairs``, the better kept
    (:func:`structbench.retrieval.rescoring.choose_per_candidate`)."""
    prefixed = flat_search(chunk_vectors, query_vectors, qids, top_k, use_gpu)
    unprefixed = flat_search(unprefixed_vectors, query_vectors, qids, candidates, use_gpu)
    return choose_per_candidate(
        prefixed, unprefixed, query_texts, prefixed_texts, unprefixed_texts, score_pairs, candidates, top_k
    )


# One function per retrieval kind of structbench.conditions.AXES["retrieval"] (a test checks they agree), but the
# lexical kind (bm25), whose run is the chunk set's BM25 run (structbench.retrieval.bm25, the workflow's bm25 rule).
RETRIEVERS = {
    "flat": flat_search,
    "two_stage": two_stage_search,
    "toc": toc_search,
    "rrf": rrf_search,
    "query_titles": query_titles_search,
    "per_candidate": per_candidate_search,
    # read-time modes search flat; the readtime rule expands their hits (structbench.retrieval.unit_runs)
    **dict.fromkeys(readtime_kinds(), flat_search),
}


def kind_inputs(kind: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``(required, accepted)`` keyword inputs of a retrieval value (``two_stage``, ``rrf:bm25``) beyond
    the vectors: its function's keyword-only parameters (e.g. ``routing`` for the routed kinds)."""
    function = RETRIEVERS[parse_value("retrieval", kind)[0].name]
    parameters = [p for p in inspect.signature(function).parameters.values() if p.kind is p.KEYWORD_ONLY]
    return tuple(p.name for p in parameters if p.default is p.empty), tuple(p.name for p in parameters)


def retrieve(
    kind: str,
    chunk_vectors: np.ndarray,
    query_vectors: np.ndarray,
    qids: list[str],
    top_k: int,
    use_gpu: bool | str = False,
    **inputs,
) -> pl.DataFrame:
    """The runs table of one retrieval kind (the ``retrieval`` axis value of a condition, e.g. ``flat``,
    ``two_stage`` or ``rrf:bm25``).

    ``inputs`` are the kind's own keyword inputs (:func:`kind_inputs`), e.g. ``routing=`` for the routed
    kinds; a missing or foreign one is an error naming the kind."""
    name = parse_value("retrieval", kind)[0].name
    if name not in RETRIEVERS:
        raise ValueError(f"retrieval {kind!r} has no implementation; implemented: {sorted(RETRIEVERS)}")
    required, accepted = kind_inputs(kind)
    missing, foreign = [n for n in required if n not in inputs], sorted(set(inputs) - set(accepted))
    if missing or foreign:
        raise ValueError(
            f"retrieval {kind!r} takes the inputs {list(accepted)}; missing {missing}, not taken {foreign}"
        )
    return RETRIEVERS[name](chunk_vectors, query_vectors, qids, top_k=top_k, use_gpu=use_gpu, **inputs)


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
