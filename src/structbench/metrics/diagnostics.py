"""Retrieval diagnostics (docs/method.md §10): routed section recall and the title-chain study's run comparison.

The BM25 gold-top-1 probe is :func:`structbench.metrics.measures.gold_top1` (a ``score_run`` column).
Section recall is also a registered metric (``section_recall``), outside the default set: it needs
the sections a router kept, which ``score_run`` takes as the extra input ``kept_sections`` (a routing
table, :data:`structbench.datamodel.ROUTING`). Both routers are scored by it: two-stage's stage 1 keeps 5
sections, TOC routing keeps 1, for which section recall is the routed-section hit rate. ``toc_fallback``
counts the TOC queries whose LLM reply named no section and were routed by the embedding fallback.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from structbench.conditions import NO_PREFIX
from structbench.metrics.evidence import RunEvidence
from structbench.metrics.registry import ExtraInput, register

KEPT_SECTIONS = ExtraInput(
    "kept_sections",
    "the sections a router kept (two-stage stage 1, TOC), one row per (query, section): qid, doc_id, start, end "
    "(a routing table, structbench.datamodel.ROUTING)",
)


def section_recall(kept_sections: pl.DataFrame, queries: pl.DataFrame) -> pl.DataFrame:
    """First-stage section recall of two-stage retrieval, per query (Kuehlkamp et al., section 6.4).

        section_recall(q) = 1  iff  some kept section s of q's document has |s ∩ g| > 0 for a gold span g

    ``kept_sections`` has one row per (query, kept section): ``qid, doc_id, start, end`` (the content
    offsets of the whole kept section, i.e. a top-level section with its subsections). Rows of another
    document never count. Returns ``qid, section_recall`` (Float64 0/1) for every query, sorted by qid;
    a query with no kept rows scores 0. A qid unknown to ``queries`` is an error.
    """
    queries = queries.select("qid", "doc_id", "spans").sort("qid")
    spans = queries.explode("spans").select(
        "qid", "doc_id", pl.col("spans").list.get(0).alias("g_start"), pl.col("spans").list.get(1).alias("g_end")
    )
    hit_ids = _queries_with_a_kept_hit(kept_sections, spans)
    return queries.select("qid", pl.col("qid").is_in(hit_ids.implode()).cast(pl.Float64).alias("section_recall"))


@register(
    "section_recall",
    label="section recall",
    description="Routed retrieval: 1 when the router (two-stage stage 1, TOC) kept a section of the query's "
    "document that overlaps its gold evidence; for TOC, which keeps one section, the routed-section hit rate.",
    requires=(KEPT_SECTIONS,),
)
def section_recall_per_query(evidence: RunEvidence, kept_sections: pl.DataFrame) -> np.ndarray:
    """:func:`section_recall` as a registered metric: one 0/1 float per query in the evidence's order
    (sorted by qid), from the gold spans the run was aligned with."""
    span_qid = evidence.qid[evidence.span_query]
    spans = pl.DataFrame(
        {
            "qid": span_qid,
            "doc_id": evidence.doc_id[evidence.span_query],
            "g_start": evidence.span_start,
            "g_end": evidence.span_end,
        },
        schema={"qid": pl.String, "doc_id": pl.String, "g_start": pl.Int64, "g_end": pl.Int64},
    )
    hit_ids = _queries_with_a_kept_hit(kept_sections, spans)
    return pl.Series(evidence.qid, dtype=pl.String).is_in(hit_ids.implode()).cast(pl.Float64).to_numpy()


@register(
    "toc_fallback",
    label="TOC fallback",
    description="TOC routing: 1 when the LLM's reply named no section of the contents and the section whose "
    "title embedding is nearest the query was routed instead.",
    requires=(KEPT_SECTIONS,),
)
def toc_fallback(evidence: RunEvidence, kept_sections: pl.DataFrame) -> np.ndarray:
    """1.0 when the query's routed section came from the embedding fallback (``source == "fallback"``
    in the routing table: the reply was not a number in range), else 0.0; one float per query in the
    evidence's order. Its mean is the fallback share. A query absent from the table scores 0."""
    if "source" not in kept_sections.columns:
        raise ValueError("kept_sections is missing column 'source' (toc_fallback reads a TOC routing table)")
    fell_back = kept_sections.filter(pl.col("source") == "fallback")["qid"].unique()
    return pl.Series(evidence.qid, dtype=pl.String).is_in(fell_back.implode()).cast(pl.Float64).to_numpy()


def _queries_with_a_kept_hit(kept_sections: pl.DataFrame, spans: pl.DataFrame) -> pl.Series:
    """Qids with a kept section of their own document that overlaps one of their gold spans.

    ``spans``: ``qid, doc_id, g_start, g_end``, one row per gold span; every kept qid must appear there."""
    for column in ("qid", "doc_id", "start", "end"):
        if column not in kept_sections.columns:
            raise ValueError(f"kept_sections is missing column {column!r}")
    unknown = ~kept_sections["qid"].is_in(spans["qid"].unique().implode())
    if unknown.any():
        raise ValueError(
            f"kept_sections: qid not in queries: {kept_sections.filter(unknown)['qid'].unique().sort().to_list()[:5]}"
        )
    pairs = kept_sections.select("qid", "doc_id", "start", "end").join(spans, on=["qid", "doc_id"], how="inner")
    return pairs.filter(pl.min_horizontal("end", "g_end") > pl.max_horizontal("start", "g_start"))["qid"].unique()


def _top(run: pl.DataFrame, depth: int) -> pl.DataFrame:
    return run.select("qid", "rank", "chunk_id").sort("qid", "rank").group_by("qid", maintain_order=True).head(depth)


def compare_runs(run_a: pl.DataFrame, run_b: pl.DataFrame, depth: int = 5) -> pl.DataFrame:
    """The title-chain study's retrieval-layer comparison of two runs over the SAME chunk set, per query.

    For each query ranked by both runs, with ``A``/``B`` the sets of the first ``depth`` chunk_ids by rank::

        top1_changed      = 1 if the rank-1 chunk differs
        overlap@depth     = |A ∩ B|              (the title-chain study reports its mean, e.g. 2.11/5)
        fully_different   = 1 if |A ∩ B| = 0
        identical         = 1 if A = B           (same set; order inside the top-depth is ignored)

    Returns ``qid, top1_changed, overlap@{depth}, fully_different, identical`` sorted by qid (Float64).
    Only queries present in both runs appear; :func:`summarize_run_comparison` reports the dropped count.
    Chunk identity is ``chunk_id``, so both runs must rank the same chunk set (e.g. prefixed vs
    unprefixed texts of one chunking).
    """
    top_a, top_b = _top(run_a, depth), _top(run_b, depth)
    shared = top_a.select("qid").unique().join(top_b.select("qid").unique(), on="qid", how="inner")
    top_a = top_a.join(shared, on="qid", how="semi")
    top_b = top_b.join(shared, on="qid", how="semi")
    first_a = top_a.group_by("qid").agg(pl.col("chunk_id").first().alias("first_a"), pl.len().alias("n_a"))
    first_b = top_b.group_by("qid").agg(pl.col("chunk_id").first().alias("first_b"), pl.len().alias("n_b"))
    overlap = (
        top_a.join(top_b.select("qid", "chunk_id"), on=["qid", "chunk_id"], how="inner").group_by("qid").len("overlap")
    )
    overlap_col = f"overlap@{depth}"
    return (
        first_a.join(first_b, on="qid")
        .join(overlap, on="qid", how="left")
        .with_columns(pl.col("overlap").fill_null(0))
        .select(
            "qid",
            (pl.col("first_a") != pl.col("first_b")).cast(pl.Float64).alias("top1_changed"),
            pl.col("overlap").cast(pl.Float64).alias(overlap_col),
            (pl.col("overlap") == 0).cast(pl.Float64).alias("fully_different"),
            ((pl.col("overlap") == pl.col("n_a")) & (pl.col("overlap") == pl.col("n_b")))
            .cast(pl.Float64)
            .alias("identical"),
        )
        .sort("qid")
    )


def summarize_run_comparison(run_a: pl.DataFrame, run_b: pl.DataFrame, depth: int = 5) -> dict:
    """The title-chain study's four headline numbers for two runs (shares over queries ranked by both).

    Returns ``{"n_queries", "n_dropped", "top1_changed", "mean_overlap", "fully_different", "identical"}``:
    shares of queries, mean overlap in chunks (out of ``depth``), and the number of queries ranked by
    only one of the runs.
    """
    per_query = compare_runs(run_a, run_b, depth)
    all_ids = pl.concat([run_a["qid"], run_b["qid"]]).n_unique()
    n = per_query.height
    mean = (lambda c: float(per_query[c].mean())) if n else (lambda c: float("nan"))
    return {
        "n_queries": n,
        "n_dropped": int(all_ids - n),
        "top1_changed": mean("top1_changed"),
        "mean_overlap": mean(f"overlap@{depth}"),
        "fully_different": mean("fully_different"),
        "identical": mean("identical"),
    }


def retrieval_layer_pairs(conditions: dict[str, dict]) -> list[tuple[str, str]]:
    """The title-chain study's prefixed vs unprefixed pairs among declared conditions: ``(prefixed, unprefixed)`` for
    every condition with a prefix whose boundaries, structure and retrieval match a declared condition
    with prefix ``none`` (the first such declared), in declared order, and the same own size (``t_max``,
    ``t_min``; absent: the run's). Both rank the same chunk set, so :func:`compare_runs` applies."""

    def key(axes):
        sizes = (axes.get("t_max"), axes.get("t_min"))
        return str(axes["boundaries"]), str(axes["structure"]), str(axes["retrieval"]), *sizes

    unprefixed: dict[tuple, str] = {}
    for name, axes in conditions.items():
        if str(axes["prefix"]) == NO_PREFIX:
            unprefixed.setdefault(key(axes), name)
    return [
        (name, unprefixed[key(axes)])
        for name, axes in conditions.items()
        if str(axes["prefix"]) != NO_PREFIX and key(axes) in unprefixed
    ]


def retrieval_layer_table(runs: dict[str, pl.DataFrame], pairs: list[tuple[str, str]], depth: int = 5) -> pl.DataFrame:
    """:func:`summarize_run_comparison` of each ``(condition, baseline)`` pair of ``runs`` (condition ->
    runs table of one cell), one row per pair: ``condition, baseline, depth, n_queries, n_dropped,
    top1_changed, mean_overlap, fully_different, identical``."""
    rows = [
        {
            "condition": condition,
            "baseline": baseline,
            "depth": depth,
            **summarize_run_comparison(runs[condition], runs[baseline], depth),
        }
        for condition, baseline in pairs
    ]
    schema = {
        "condition": pl.String,
        "baseline": pl.String,
        "depth": pl.Int64,
        "n_queries": pl.Int64,
        "n_dropped": pl.Int64,
        "top1_changed": pl.Float64,
        "mean_overlap": pl.Float64,
        "fully_different": pl.Float64,
        "identical": pl.Float64,
    }
    return pl.DataFrame(rows, schema=schema)
