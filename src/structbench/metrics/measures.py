"""The study's retrieval metrics, one documented function each (docs/method.md §10; Kuehlkamp et al., appendices B, C).

Every function takes a :class:`~structbench.metrics.evidence.RunEvidence` (built once per run by
:func:`~structbench.metrics.evidence.align_run`) and returns one float per query, in the evidence's
query order (sorted by ``qid``). :func:`score_run` is the single entry the workflow, the report and
the benchmarks call. Each metric is registered by name (:mod:`structbench.metrics.registry`) with
the decorator above its function, so the function, its name, label and description are one
definition. Notation: a query belongs to document d, has gold spans ``g_1..g_S`` (half-open
content-offset intervals, ``|g|`` their lengths), and the run ranks chunks ``c_1, c_2, ...``; a chunk of
another document occupies its rank and overlaps nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import polars as pl

from structbench.defaults import BUDGETS, NDCG_K, RECALL_K
from structbench.metrics import kernels
from structbench.metrics.evidence import RunEvidence, align_run
from structbench.metrics.kernels import INDEX
from structbench.metrics.registry import Metric, metric_names, parse_metrics, register

ID_SCHEMA = {"qid": pl.String, "doc_id": pl.String, "qtype": pl.String}


def is_relevant(chunk_start, chunk_end, span_start, span_end) -> np.ndarray:
    """Binary relevance of chunk c to gold span g (Kuehlkamp et al., appendix C), elementwise.

        relevant(c, g)  iff  |c ∩ g| / |g| >= 0.5   or   |c ∩ g| / |c| >= 0.8

    (the chunk substantially contains the evidence, or lies substantially inside it). Evaluated in
    integer arithmetic, so the 0.5 / 0.8 boundaries are exact; a pair with no overlap is never
    relevant. A chunk is relevant to a query iff it is relevant to any of its spans.
    """
    chunk_start, chunk_end = np.asarray(chunk_start, dtype=INDEX), np.asarray(chunk_end, dtype=INDEX)
    span_start, span_end = np.asarray(span_start, dtype=INDEX), np.asarray(span_end, dtype=INDEX)
    overlap = kernels.interval_overlap(chunk_start, chunk_end, span_start, span_end)
    return kernels.binary_relevant(overlap, chunk_end - chunk_start, span_end - span_start)


def chunk_judgments(evidence: RunEvidence) -> pl.DataFrame:
    """The chunk-level relevance judgments every binary metric reads: ``qid, chunk_id, relevant``.

    One row per chunk of the condition's chunk set that lies in the query's document and overlaps one of
    its gold spans by at least one character (the pool binary nDCG's ideal counts from), ``relevant``
    true when the rule of :func:`is_relevant` holds for some span of the query. These are
    ``evidence.cand_relevant``, judged by the kernel that judges the ranked chunks of :func:`binary_ndcg`,
    :func:`reciprocal_rank` and :func:`gold_top1`, in the pass that counts binary nDCG's R: one rule, not a
    copy. Every other chunk is not relevant. Sorted by ``(qid, chunk_id)``; a query whose spans overlap no chunk
    has no row. Build ``evidence`` with :func:`~structbench.metrics.evidence.align_run` on the condition's
    chunk set (any run, an empty one included: judgments do not read it). Written as TREC qrels by
    :mod:`structbench.report.trec`.
    """
    ev = evidence
    return pl.DataFrame(
        {
            "qid": ev.qid[ev.cand_query].astype(str),
            "chunk_id": ev.cand_chunk_id,
            "relevant": ev.cand_relevant,
        },
        schema={"qid": pl.String, "chunk_id": pl.Int64, "relevant": pl.Boolean},
    )


def coverage_dcg(evidence: RunEvidence, k: int = NDCG_K) -> np.ndarray:
    """Coverage DCG@k of the run (the numerator of :func:`coverage_ndcg`)."""
    ev = evidence
    return kernels.discounted_gain(
        ev.hit_query, ev.hit_rank, ev.hit_span, ev.hit_new, ev.span_length, ev.query_n_spans, ev.n_queries, k
    )


def ideal_coverage_ranking(evidence: RunEvidence, k: int = NDCG_K) -> pl.DataFrame:
    """The greedy maximum-marginal-coverage ordering of each query's own chunk set, up to k.

    Repeatedly append the not-yet-chosen chunk of document d (in this condition's chunk set) with
    the largest marginal gain (definition in :func:`coverage_ndcg`); stop after k chunks or when no
    chunk adds coverage. Exact ties go to the smallest ``chunk_id`` (deterministic; with chunks that
    tile the document, marginal gains never interact, so the tie-break cannot change IDCG).
    Returns ``qid, rank, chunk_id`` (only queries with positive coverage appear).
    """
    cand, rank = _ideal(evidence, k)
    return pl.DataFrame(
        {
            "qid": evidence.qid[evidence.cand_query[cand]].astype(str),
            "rank": rank.astype(np.int32),
            "chunk_id": evidence.cand_chunk_id[cand],
        },
        schema={"qid": pl.String, "rank": pl.Int32, "chunk_id": pl.Int64},
    )


def _ideal(evidence: RunEvidence, k: int):
    ev = evidence
    order = kernels.static_gain_order if ev.chunks_disjoint else kernels.greedy_coverage_order
    return order(ev.cand_query, ev.pair_cand, ev.pair_span, ev.pair_lo, ev.pair_hi, ev.span_length, ev.query_n_spans, k)


def ideal_coverage_dcg(evidence: RunEvidence, k: int = NDCG_K) -> np.ndarray:
    """IDCG@k: the coverage DCG of :func:`ideal_coverage_ranking`, computed by the same DCG kernel as
    the run's DCG (so a run that equals the ideal ordering scores exactly 1.0)."""
    ev = evidence
    cand, rank = _ideal(ev, k)
    if len(cand) == 0:
        return np.zeros(ev.n_queries)
    pair_first = kernels.group_starts(ev.pair_cand)
    pair_count = np.diff(np.append(pair_first, len(ev.pair_cand)))
    pairs = kernels.concatenated_ranges(pair_first[cand], pair_count[cand])
    hit_rank = np.repeat(rank, pair_count[cand])
    hit_query = ev.cand_query[ev.pair_cand[pairs]]
    hit_span = ev.pair_span[pairs]
    lo, hi = ev.pair_lo[pairs], ev.pair_hi[pairs]
    if ev.chunks_disjoint:
        hit_new = hi - lo
    else:
        by_span = np.lexsort((hit_rank, hit_span))
        hit_new = np.empty(len(pairs), dtype=INDEX)
        hit_new[by_span] = kernels.new_coverage(hit_span[by_span], lo[by_span], hi[by_span])
    return kernels.discounted_gain(
        hit_query, hit_rank, hit_span, hit_new, ev.span_length, ev.query_n_spans, ev.n_queries, k
    )


@register(
    "cov_nDCG",
    cutoff="k",
    label="coverage-nDCG@{cutoff}",
    description="Primary metric. nDCG whose gain is the share of the gold spans' characters a chunk newly "
    "covers; the ideal is the greedy best ordering of the condition's own chunks.",
)
def coverage_ndcg(evidence: RunEvidence, k: int = NDCG_K) -> np.ndarray:
    """coverage-nDCG@k, the primary metric (Kuehlkamp et al., appendix B; docs/method.md §10).

    Walking down the ranking, the gain of the chunk at rank i is the mean over the query's gold spans
    of the fraction of each span's characters it NEWLY covers::

        gain(c_i) = (1/S) * sum_j |(c_i ∩ g_j) \\ covered_<i(g_j)| / |g_j|

    where ``covered_<i(g_j)`` is the union of ``c_l ∩ g_j`` over ranks l < i (chunks of other documents
    cover nothing but keep their rank). Then::

        DCG@k  = sum_{i=1..k} gain(c_i) / log2(i + 1)
        IDCG@k = DCG@k of the greedy maximum-marginal-coverage ordering of the SAME condition's chunk
                 set of document d (:func:`ideal_coverage_ranking`)
        cov-nDCG@k = DCG@k / IDCG@k,  and 0 when IDCG@k = 0.

    Worked example (appendix B.3): one 100-char span, chunks [0,60), [40,100), irrelevant ->
    DCG = 0.60 + 0.40/log2(3) = 0.852 = IDCG, cov-nDCG = 1.0. With chunk sets that tile each document
    (the data contract) the greedy ordering is the true maximum and the score lies in [0, 1]; with
    overlapping chunks greedy is the standard tractable stand-in and a run can exceed it (not clipped).
    """
    dcg = coverage_dcg(evidence, k)
    idcg = ideal_coverage_dcg(evidence, k)
    return np.divide(dcg, idcg, out=np.zeros_like(dcg), where=idcg > 0)


@register(
    "nDCG",
    cutoff="k",
    label="binary nDCG@{cutoff}",
    description="nDCG with 0/1 gains: a chunk is relevant when it holds >= 50% of a gold span or lies >= 80% "
    "inside one.",
)
def binary_ndcg(evidence: RunEvidence, k: int = NDCG_K) -> np.ndarray:
    """Binary nDCG@k (Kuehlkamp et al., appendix C): nDCG with 0/1 gains under :func:`is_relevant`.

        DCG@k  = sum_{i <= k, c_i relevant} 1 / log2(i + 1)
        IDCG@k = sum_{i=1..min(R, k)} 1 / log2(i + 1)

    where R counts the relevant chunks of the condition's own chunk set of the gold document (docs/method.md
    §17). 0 when R = 0. Equals trec_eval's ``ndcg_cut.k`` with those chunks as qrels.
    """
    ev = evidence
    table = kernels.discounts(k)
    keep = ev.relevant_rank <= k
    dcg = kernels.sum_by(ev.relevant_query[keep], table[ev.relevant_rank[keep]], ev.n_queries)
    ideal_table = np.concatenate(([0.0], np.cumsum(table[1:])))
    idcg = ideal_table[np.minimum(ev.query_n_relevant, k)]
    return np.divide(dcg, idcg, out=np.zeros_like(dcg), where=idcg > 0)


@register(
    "MRR",
    label="MRR",
    description="Reciprocal rank of the first relevant chunk in the full top 100 (its mean is the MRR).",
)
def reciprocal_rank(evidence: RunEvidence) -> np.ndarray:
    """Reciprocal rank of the first binary-relevant chunk, over the full ranking (top 100); 0 if none.

        RR = 1 / min{ i : c_i relevant }

    Its mean over queries is MRR (docs/method.md §17: computed over the full top 100, no cutoff).
    """
    ev = evidence
    first = kernels.group_starts(ev.relevant_query)
    out = np.zeros(ev.n_queries)
    out[ev.relevant_query[first]] = 1.0 / ev.relevant_rank[first]
    return out


@register(
    "R",
    cutoff="k",
    label="recall@{cutoff}",
    description="Share of the gold spans at least half covered by the union of the top k chunks.",
)
def span_recall(evidence: RunEvidence, k: int = RECALL_K, min_fraction: float = 0.5) -> np.ndarray:
    """recall@k (Kuehlkamp et al., appendix C): share of gold spans covered >= 50% by the union of the top k.

    R@k = (1/S) * #{ j : |g_j ∩ (c_1 ∪ ... ∪ c_k)| >= min_fraction * |g_j| }
    """
    ev = evidence
    keep = ev.hit_rank <= k
    covered = kernels.sum_by(ev.hit_span[keep], ev.hit_new[keep], len(ev.span_query))
    recalled = covered >= min_fraction * ev.span_length
    return kernels.sum_by(ev.span_query, recalled, ev.n_queries) / ev.query_n_spans


def _covered_fraction(evidence: RunEvidence, hit_mask: np.ndarray) -> np.ndarray:
    ev = evidence
    covered = kernels.sum_by(ev.hit_span[hit_mask], ev.hit_new[hit_mask], len(ev.span_query))
    return kernels.sum_by(ev.span_query, covered / ev.span_length, ev.n_queries) / ev.query_n_spans


@register(
    "budget_cov",
    cutoff="budget",
    label="budget coverage@{cutoff}",
    description="Share of the gold spans' characters covered by the whole chunks, taken in rank order, whose "
    "prefix + content tokens fit the token budget.",
)
def budget_coverage(evidence: RunEvidence, budget: int) -> np.ndarray:
    """Token-budget coverage @budget (Kuehlkamp et al., appendix C; docs/method.md §17).

    Walk the ranking adding WHOLE chunks while ``sum(prefix_tokens + n_tokens)`` of the chunks taken so
    far fits the budget; stop at the first chunk that does not fit (chunks of other documents cost
    their tokens too). With T the chunks taken::

        budget_cov@B = (1/S) * sum_j |g_j ∩ ∪T| / |g_j|

    Prefix tokens count against the budget, so each condition pays its real context-window cost.
    """
    # token costs are >= 0, so "cumulative cost <= budget" selects a prefix of each ranking: exactly
    # the chunks taken before the walk stops at the first one that does not fit
    return _covered_fraction(evidence, evidence.hit_cost <= budget)


@register(
    "gold_top1",
    label="gold top-1",
    description="1 when the rank-1 chunk is relevant; for BM25 runs, the non-lexicality probe.",
)
def gold_top1(evidence: RunEvidence) -> np.ndarray:
    """1.0 when the chunk at rank 1 is binary-relevant, else 0.0 (the BM25 non-lexicality probe)."""
    ev = evidence
    top = ev.relevant_rank == 1
    return np.bincount(ev.relevant_query[top], minlength=ev.n_queries).astype(np.float64)


def metric_columns(k: int = NDCG_K, recall_k: int = RECALL_K, budgets: Sequence[int] = BUDGETS) -> list[str]:
    """Column names :func:`score_run` writes by default: :func:`~structbench.metrics.registry.metric_names`
    (the older name, kept for its callers)."""
    return metric_names(k, recall_k, budgets)


def score_run(
    runs: pl.DataFrame,
    queries: pl.DataFrame,
    chunks: pl.DataFrame,
    texts: pl.DataFrame | None = None,
    *,
    metrics: Sequence[str] | None = None,
    inputs: Mapping[str, object] | None = None,
    k: int | None = None,
    recall_k: int | None = None,
    budgets: Sequence[int] | None = None,
) -> pl.DataFrame:
    """Score one run (one condition) per query with the registered metrics named in ``metrics``.

    ``metrics`` lists metric names (:mod:`structbench.metrics.registry`; config's ``metrics`` block
    gives them through :func:`~structbench.metrics.registry.metrics_from_config`). Without it, the
    study's set :func:`~structbench.metrics.registry.metric_names` ``(k, recall_k, budgets)`` is
    scored (``k``, ``recall_k``, ``budgets`` only shape that default set; passing them with
    ``metrics`` is an error). ``inputs`` holds the extra per-query inputs some metrics declare (e.g.
    ``{"kept_sections": ...}`` for ``section_recall``); a selected metric whose input is missing is an
    error naming the metric and the input, raised before any work.

    ``chunks`` (and ``texts``) must be the condition's own chunk set: it defines the ideal orderings.
    Returns one row per query, sorted by ``qid``: ``qid, doc_id, qtype`` then one Float64 column per
    metric in the order named (default ``cov_nDCG@10, nDCG@10, MRR, R@50, budget_cov@512,
    budget_cov@1024, budget_cov@2048, gold_top1``). ``MRR`` holds the per-query reciprocal rank (its
    mean is the MRR). A query with no rows in ``runs`` is present and scores 0 on every run metric. See
    :func:`align_run` for the errors the tables raise.
    """
    selected = _selected_metrics(metrics, k, recall_k, budgets)
    _check_inputs(selected, inputs or {})
    evidence = align_run(runs, queries, chunks, texts)
    frame = {"qid": evidence.qid, "doc_id": evidence.doc_id, "qtype": evidence.qtype}
    for metric in selected:
        values = metric.compute(evidence, inputs)
        if np.shape(values) != (evidence.n_queries,):
            raise ValueError(
                f"metric {metric.name!r} returned shape {np.shape(values)}, not one value per query "
                f"({evidence.n_queries})"
            )
        frame[metric.name] = values
    return pl.DataFrame(frame, schema=ID_SCHEMA | {metric.name: pl.Float64 for metric in selected})


def _selected_metrics(metrics, k, recall_k, budgets) -> list[Metric]:
    if metrics is None:
        return parse_metrics(
            metric_names(
                NDCG_K if k is None else k,
                RECALL_K if recall_k is None else recall_k,
                BUDGETS if budgets is None else tuple(budgets),
            )
        )
    given = [name for name, value in (("k", k), ("recall_k", recall_k), ("budgets", budgets)) if value is not None]
    if given:
        raise TypeError(f"score_run: pass either metrics= or {'/'.join(given)}= (they shape the default set), not both")
    return parse_metrics(metrics)


def _check_inputs(selected: list[Metric], inputs: Mapping[str, object]) -> None:
    """Error naming each selected metric whose declared extra inputs are not in ``inputs``."""
    problems = [
        f"metric {metric.name!r} needs input {needed.name!r} ({needed.holds})"
        for metric in selected
        for needed in metric.requires
        if needed.name not in inputs
    ]
    if problems:
        raise ValueError("; ".join(problems) + ": pass them as score_run(..., inputs={name: table})")
