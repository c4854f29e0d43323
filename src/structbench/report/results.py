"""The report's result tables (docs/method.md §15): what was measured, per cell.

The conditions, Table 1 (contrasts; Kuehlkamp et al.'s layout: one row per contrast and corpus with delta,
95% CI, Holm p, dz, MixedLM p's, win/tie/loss query counts, its family as label), Table 2 (one row per
corpus, one column per condition), the means with CIs, the metric ladder, the dose-response slopes,
section recall, the title-chain study's run comparison and the per-query scores. Each builder is a pure
function of :class:`~structbench.report.table_registry.ReportInputs`; :mod:`.latex` writes Tables 1 and 2 (and the
decision) as booktabs LaTeX from the same shown frames.

Over 500 lines as one concern: every table here presents the statistics step's per-cell numbers (contrasts,
means, slopes, per-query scores) with the same cell blocks and condition order; the diagnostics live apart.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from structbench.artifacts.cells import CELL
from structbench.conditions import AXES, FAMILIES, retrieval_kind, routed_kinds
from structbench.defaults import ALPHA
from structbench.metrics.registry import metric_columns, metric_label
from structbench.report.formatting import (
    cell_heading,
    comparison_labels,
    format_p,
    metric_legend,
    signed,
    slope_columns,
)
from structbench.report.table_registry import (
    Block,
    Omit,
    ReportInputs,
    TableContent,
    blocks_by,
    report_table,
    require_scores,
)
from structbench.stats.contrasts import HOLM_FAMILIES, MIN_CLUSTERS
from structbench.stats.means import condition_means
from structbench.stats.readings import table_reading

ALL_QTYPES = "all"


@report_table(
    "conditions",
    "Conditions",
    "Each condition is a point on four axes: where chunks are cut (boundaries), whose heading "
    "tree (structure), what is prepended to each chunk before embedding (prefix) and how search "
    "runs (retrieval).",
)
def conditions_table(inputs: ReportInputs) -> TableContent:
    if not inputs.conditions:
        raise Omit("no condition is declared")
    rows = [
        {"condition": name, **{axis: str(axes.get(axis, "")) for axis in AXES}}
        for name, axes in inputs.conditions.items()
    ]
    schema = {"condition": pl.String, **dict.fromkeys(AXES, pl.String)}
    if any("t_max" in axes or "t_min" in axes for axes in inputs.conditions.values()):
        # a condition's own chunk size (docs/method.md §6a); blank: the run's chunking.t_max / t_min
        for row, axes in zip(rows, inputs.conditions.values()):
            row["size"] = ", ".join(f"{key} {axes[key]}" for key in ("t_max", "t_min") if key in axes)
        schema["size"] = pl.String
    return TableContent(pl.DataFrame(rows, schema=schema))


def contrast_rows(
    contrasts: pl.DataFrame, contrast_specs: Sequence[dict], primary_metric: str | None = None
) -> pl.DataFrame:
    """Table 1's data: one row per (contrast, corpus, embedder, reranker, metric), metrics in the
    table's reading order (:func:`~structbench.stats.readings.table_reading`: the readtime family leads
    with token budgets, every other family with ``primary_metric``; budgets by ascending budget), then
    contrasts in declared order, with what each compares and whether it is Holm-significant
    (``p_holm`` < ALPHA within a Holm family; exploratory rows never are)."""
    order = {spec["name"]: i for i, spec in enumerate(contrast_specs)}
    labels = comparison_labels(list(contrast_specs))
    reading = table_reading(
        contrasts["label"].unique().to_list(), contrasts["metric"].unique(maintain_order=True).to_list(), primary_metric
    )
    frame = contrasts.join(labels, on="contrast", how="left").with_columns(
        pl.coalesce("comparison", pl.col("treatment") + " − " + pl.col("control")).alias("comparison"),
        pl.col("contrast").replace_strict(order, default=len(order), return_dtype=pl.Int64).alias("_order"),
        pl.col("metric").replace_strict({m: i for i, m in enumerate(reading)}, return_dtype=pl.Int64).alias("_reading"),
    )
    significant = (
        pl.col("label").is_in(list(HOLM_FAMILIES)) & pl.col("p_holm").is_not_nan() & (pl.col("p_holm") < ALPHA)
    )
    columns = [
        "embedder",
        "reranker",
        "contrast",
        "comparison",
        "treatment",
        "control",
        "corpus",
        pl.col("label").alias("family"),
        "metric",
        "delta",
        "ci_low",
        "ci_high",
        "p",
        "p_holm",
        significant.fill_null(False).alias("holm_significant"),
        "p_mcse",
        "p_holm_mcse",
        "holm_fragile",
        "dz",
        "p_mixedlm",
        "p_mixedlm_nested",
        "n_queries",
        "n_docs",
        "n_dropped",
        "wins",
        "ties",
        "losses",
        "mixedlm_note",
        "cluster",
        "n_clusters",
        "few_clusters",
    ]
    return frame.sort("embedder", "reranker", "_reading", "_order", "contrast", "corpus").select(
        [c for c in columns if not isinstance(c, str) or c in frame.columns]
    )


@report_table(
    "table1_contrasts",
    "Contrasts (Table 1)",
    "Kuehlkamp et al.'s Table 1 layout: each declared contrast per corpus. Δ is the mean paired per-query "
    "difference (treatment − control; for a dose-response, the mean per-query slope per path level), "
    "the 95% CI and p come from the document-clustered bootstrap, p (Holm) is adjusted within the "
    f"contrast's family ({', '.join(HOLM_FAMILIES[:-1])} or {HOLM_FAMILIES[-1]}; exploratory rows are outside any "
    "family), dz is "
    "Cohen's dz, and the MixedLM p's are the secondary model (random intercept per document; "
    "nested: plus a per-query effect). The pre-registered MixedLM can disagree with the bootstrap by "
    "design: it has no per-query effect, so it ignores the pairing of a query's two scores and their "
    "query-to-query variance lands in its residual, which makes it conservative (a p of .09 beside a "
    "bootstrap p below 1e-4 is that, not a contradiction); the nested model restores the pairing. "
    "W/T/L counts the paired queries where the treatment scored above, "
    "exactly equal to and below the control (PyTerrier's and ranx's convention; none for a dose-response "
    'slope). clusters: the units the bootstrap resampled (stats.cluster), "few" below 20. n.s.: not '
    "Holm-significant at 0.05. MC s.e. (p): the bootstrap p's Monte-Carlo standard error, sqrt(p(2 − p)/B); "
    "fragile: a Holm decision within two such errors (times the Holm multiplier) of 0.05.",
)
def contrasts_table(inputs: ReportInputs) -> TableContent:
    require_scores(inputs)
    if inputs.contrasts.is_empty():
        if inputs.dropped_contrasts:
            raise Omit("no declared contrast was run: " + dropped_note(inputs.dropped_contrasts))
        raise Omit("no contrast is declared")
    data = contrast_rows(inputs.contrasts, inputs.contrast_specs, inputs.primary_metric)
    B = inputs.bootstrap_iters

    def holm_text(p_holm, family, significant, fragile):
        if family not in HOLM_FAMILIES:
            return "– (exploratory)"
        text = format_p(p_holm, B)
        marks = [m for m, on in (("n.s.", not significant and text != "n/a"), ("fragile", fragile)) if on]
        return f"{text} ({', '.join(marks)})" if marks else text

    shown = data.select(
        "embedder",
        "reranker",
        "metric",
        (pl.col("contrast") + ": " + pl.col("comparison")).alias("contrast"),
        "corpus",
        "family",
        pl.col("delta").map_elements(signed, return_dtype=pl.String).alias("Δ"),
        pl.struct("ci_low", "ci_high")
        .map_elements(lambda ci: f"[{signed(ci['ci_low'])}, {signed(ci['ci_high'])}]", return_dtype=pl.String)
        .alias("95% CI"),
        pl.col("p").map_elements(lambda p: format_p(p, B), return_dtype=pl.String).alias("p"),
        _mcse_text(data).alias("MC s.e. (p)"),
        pl.struct("p_holm", "family", "holm_significant", _fragile(data).alias("fragile"))
        .map_elements(
            lambda r: holm_text(r["p_holm"], r["family"], r["holm_significant"], r["fragile"]), return_dtype=pl.String
        )
        .alias("p (Holm)"),
        pl.col("dz").map_elements(lambda v: signed(v, 2), return_dtype=pl.String).alias("dz"),
        pl.col("p_mixedlm").map_elements(format_p, return_dtype=pl.String).alias("p (MixedLM)"),
        pl.col("p_mixedlm_nested").map_elements(format_p, return_dtype=pl.String).alias("p (MixedLM, nested)"),
        pl.when(pl.col("wins").is_null())
        .then(pl.lit("n/a"))
        .otherwise(pl.format("{}/{}/{}", "wins", "ties", "losses"))
        .alias("W/T/L"),
        _queries_docs(data).alias("queries / docs"),
    )
    blocks = blocks_by(
        shown, ["embedder", "reranker", "metric"], lambda e, r, m: f"{e} · reranker: {r} · {metric_label(m)}"
    )
    notes = (
        tuple(
            f"{name} · {corpus} · {embedder} · {reranker}: {note}"
            for name, corpus, embedder, reranker, note in data.select(
                "contrast", "corpus", "embedder", "reranker", "mixedlm_note"
            ).iter_rows()
            if note
        )
        + _cluster_notes(data)
        + _fragile_notes(data)
    )
    counts = family_counts(inputs.contrast_specs, inputs.dropped_contrasts, inputs.contrasts)
    families = "; ".join(f"{family} {declared} / {run} / {holm}" for family, declared, run, holm in counts.iter_rows())
    notes += (f"Contrasts per family (declared / run / Holm over, per cell and metric): {families}.",)
    notes += (dropped_note(inputs.dropped_contrasts),) if inputs.dropped_contrasts else ()
    return TableContent(data, blocks, notes)


def _queries_docs(data: pl.DataFrame) -> pl.Expr:
    """``queries / docs``, marked ``(few)`` where the bootstrap had fewer than MIN_CLUSTERS clusters."""
    counts = pl.format("{} / {}", "n_queries", "n_docs")
    if "few_clusters" not in data.columns:
        return counts
    return pl.when(pl.col("few_clusters")).then(counts + pl.lit(" (few)")).otherwise(counts)


def _mcse_text(data: pl.DataFrame) -> pl.Expr:
    """A bootstrap p's Monte-Carlo standard error to four decimals (``n/a`` where none was estimated)."""
    if "p_mcse" not in data.columns:
        return pl.lit("n/a")
    return pl.col("p_mcse").map_elements(lambda v: "n/a" if v != v else f"{v:.4f}", return_dtype=pl.String)


def _fragile(data: pl.DataFrame) -> pl.Expr:
    """Whether a row's Holm decision is fragile (stats' ``holm_fragile``; false for tables that predate it)."""
    return pl.col("holm_fragile").fill_null(False) if "holm_fragile" in data.columns else pl.lit(False)


def _fragile_notes(data: pl.DataFrame) -> tuple[str, ...]:
    """State the fragile rule and how many Holm decisions it marks (docs/method.md §11)."""
    if "holm_fragile" not in data.columns or data.is_empty():
        return ()
    fragile = data.filter(pl.col("holm_fragile").fill_null(False))
    return (
        f"fragile: the Holm decision at {ALPHA:g} lies within two Monte-Carlo standard errors of the adjusted p "
        "(|p (Holm) − α| < 2 · MCSE, the MCSE of a bootstrap p being sqrt(p(2 − p)/B), times the Holm multiplier); "
        f"another bootstrap seed could flip it. {fragile.height} of {data.height} rows are fragile.",
    )


def _cluster_notes(data: pl.DataFrame) -> tuple[str, ...]:
    """Say which unit the bootstrap resampled and how many rows have too few clusters to trust its CI and p."""
    if "cluster" not in data.columns or data.is_empty():
        return ()
    units = ", ".join(sorted(set(data["cluster"].drop_nulls().to_list())))
    notes = [f"The bootstrap resampled {units}s (stats.cluster: {units})."]
    few = data.filter(pl.col("few_clusters"))
    if few.height:
        notes.append(
            f"{few.height} of {data.height} rows have fewer than {MIN_CLUSTERS} clusters (marked few; e.g. "
            f"{few['n_clusters'].min()} {few['cluster'][0]}s): a clustered percentile bootstrap then gives too "
            "narrow a CI and too small a p, so read their CI and p with the MixedLM p beside them, or resample "
            "queries (stats.cluster: query) and say so."
        )
    return tuple(notes)


def dropped_note(dropped: Sequence[dict]) -> str:
    """One line for every declared contrast the selection left out, by family, each naming the conditions it
    misses ("" when none): a narrowed selection can leave out most of the declared contrasts, and a line each
    would bury the table."""
    if not dropped:
        return ""
    families: dict[str, list[str]] = {}
    for spec in dropped:
        families.setdefault(spec["family"], []).append(f"{spec['name']} (missing {', '.join(spec['missing'])})")
    listed = "; ".join(f"{family}: {', '.join(names)}" for family, names in families.items())
    count = f"{len(dropped)} declared contrast{'' if len(dropped) == 1 else 's'}"
    return f"Not run, {count} whose conditions are not selected (select.conditions): {listed}."


def family_counts(run: Sequence[dict], dropped: Sequence[dict], contrasts: pl.DataFrame) -> pl.DataFrame:
    """Per family (in declared family order, those with a declared contrast): how many contrasts were
    declared, how many run, and how many rows each Holm adjustment ran over (per cell and metric, the
    run contrasts with a finite p: docs/method.md §11; a range when cells differ, ``–`` for exploratory)."""
    rows = []
    for family in FAMILIES:
        declared = sum(spec["family"] == family for spec in (*run, *dropped))
        if not declared:
            continue
        n_run = sum(spec["family"] == family for spec in run)
        holm = "–" if family not in HOLM_FAMILIES else "0"
        if family in HOLM_FAMILIES and n_run and not contrasts.is_empty():
            sizes = (
                contrasts.filter((pl.col("label") == family) & pl.col("p").is_not_nan() & pl.col("p").is_not_null())
                .group_by("corpus", "embedder", "reranker", "metric")
                .len()["len"]
            )
            low, high = (sizes.min(), sizes.max()) if sizes.len() else (0, 0)
            holm = str(low) if low == high else f"{low}–{high}"
        rows.append((family, declared, n_run, holm))
    return pl.DataFrame(
        rows, schema={"family": pl.String, "declared": pl.Int64, "run": pl.Int64, "holm_over": pl.String}, orient="row"
    )


@report_table(
    "table2_condition_means",
    "Per-condition means (Table 2)",
    "Kuehlkamp et al.'s Table 2 layout: the primary metric's mean over queries, one row per corpus and one "
    "column per condition.",
)
def means_table(inputs: ReportInputs) -> TableContent:
    require_scores(inputs)
    metric = inputs.primary_metric
    means = condition_means(inputs.scores)
    order = inputs.condition_order(means["condition"].unique().to_list())
    wide = means.pivot(on="condition", index=CELL, values=metric).sort(CELL)
    conditions = [c for c in order if c in wide.columns]
    data = wide.select(CELL + conditions)
    blocks = blocks_by(
        data.select("embedder", "reranker", "corpus", *conditions),
        ["embedder", "reranker"],
        lambda e, r: f"{e} · reranker: {r} · {metric_label(metric)}",
    )
    return TableContent(data, blocks)


def primary_condition_means(inputs: ReportInputs) -> pl.DataFrame:
    """The statistics step's per-condition means of the primary metric with their CIs
    (:func:`structbench.stats.means.condition_mean_cis`); omitted when it wrote none."""
    means = inputs.condition_means
    if means.is_empty() or not (means["metric"] == inputs.primary_metric).any():
        raise Omit(f"the statistics step wrote no per-condition means of {inputs.primary_metric}")
    return means.filter(pl.col("metric") == inputs.primary_metric)


@report_table(
    "condition_means_ci",
    "Per-condition means with 95% CIs",
    "The primary metric's mean per condition with a 95% document-clustered bootstrap interval "
    "(the statistics step's B and seed): the uncertainty of each condition on its own. Whether two "
    "conditions differ is Table 1's paired test, which is much tighter than overlapping intervals "
    "suggest.",
)
def means_ci_table(inputs: ReportInputs) -> TableContent:
    require_scores(inputs)
    data = primary_condition_means(inputs)
    data = inputs.by_condition(data)
    shown = data.select(
        *CELL,
        "condition",
        "mean",
        pl.struct("ci_low", "ci_high")
        .map_elements(lambda ci: f"[{ci['ci_low']:.3f}, {ci['ci_high']:.3f}]", return_dtype=pl.String)
        .alias("95% CI"),
        "n_queries",
        "n_docs",
    )
    return TableContent(data, blocks_by(shown, CELL, cell_heading))


@report_table(
    "metric_ladder", "Metric ladder", "Every metric's mean per condition, in each cell (corpus · embedder · reranker)."
)
def ladder_table(inputs: ReportInputs) -> TableContent:
    require_scores(inputs)
    data = condition_means(inputs.scores)
    data = inputs.by_condition(data)
    metrics = metric_columns(data)
    blocks = []
    for (corpus, embedder, reranker), cell in data.group_by(CELL, maintain_order=True):
        shown = [m for m in metrics if cell[m].null_count() < cell.height]  # e.g. section recall: routed only
        blocks.append(
            Block(
                cell_heading(corpus, embedder, reranker),
                cell.select("condition", *[pl.col(m).alias(metric_label(m)) for m in shown]),
            )
        )
    legend = tuple(line.removeprefix("- ") for line in metric_legend(metrics).splitlines()) if metrics else ()
    return TableContent(data, tuple(blocks), legend)


# ---- dose-response ------------------------------------------------------------------------------------


@report_table(
    "dose_response",
    "Heading-path dose-response",
    "Exploratory (Kuehlkamp et al., section 6.6): the primary metric against the depth of the injected "
    "heading path (0 = no prefix). The slope is the mean per-query OLS slope per path level over "
    "queries scored under every member (it equals the slope of the condition means), with a "
    "document-clustered bootstrap CI and p. Declared series are the config's dose-response "
    "contrasts (Table 1 shows the same slope); derived series are conditions that differ only in "
    "path depth.",
)
def dose_response_table(inputs: ReportInputs) -> TableContent:
    require_scores(inputs)
    slopes = inputs.dose_response
    if slopes.is_empty() or not (slopes["metric"] == inputs.primary_metric).any():
        raise Omit(
            "no dose-response contrast and no three or more conditions that differ only in heading-path depth "
            "in this config"
        )
    keys = CELL + ["condition"]
    means = primary_condition_means(inputs).select(*keys, "mean", "ci_low", "ci_high")
    data = (
        slopes.filter(pl.col("metric") == inputs.primary_metric)
        .join(means, on=keys, how="left", maintain_order="left")
        .select(
            *CELL,
            "series",
            "declared",
            "condition",
            "depth",
            "mean",
            "ci_low",
            "ci_high",
            "slope",
            "slope_ci_low",
            "slope_ci_high",
            "slope_p",
            "slope_n_queries",
        )
        .sort(CELL, maintain_order=True)
    )
    B = inputs.bootstrap_iters
    shown = (
        data.group_by(CELL + ["series"], maintain_order=True)
        .agg(
            pl.col("declared").first(),
            pl.struct("depth", "mean")
            .map_elements(lambda r: f"{r['depth']:g}: {r['mean']:.3f}", return_dtype=pl.String)
            .str.join(" · ")
            .alias("mean by depth"),
            pl.col("slope").first(),
            pl.col("slope_ci_low").first(),
            pl.col("slope_ci_high").first(),
            pl.col("slope_p").first(),
            pl.col("slope_n_queries").first().alias("queries"),
        )
        .select(
            *CELL,
            "series",
            pl.when("declared").then(pl.lit("declared contrast")).otherwise(pl.lit("derived")).alias("source"),
            "mean by depth",
            *slope_columns("level", B),
            "queries",
        )
    )
    return TableContent(data, blocks_by(shown, CELL, cell_heading))


# ---- diagnostics: section recall, retrieval layer, BM25 ------------------------------------------------


@report_table(
    "section_recall",
    "Section recall of routed retrieval",
    "Routed retrieval (two-stage, TOC) first keeps some sections and ranks chunks only inside them: "
    "section recall is the share of queries for which a kept section overlaps the gold evidence "
    "(Kuehlkamp et al., section 6.4). Whatever stage 1 drops, stage 2 cannot recover. By query type, and "
    "over all queries.",
)
def section_recall_table(inputs: ReportInputs) -> TableContent:
    routed = [name for name, axes in inputs.conditions.items() if retrieval_kind(str(axes["retrieval"])).routed]
    if not routed:
        raise Omit(f"no routed conditions (retrieval {' or '.join(routed_kinds())}) in this config")
    require_scores(inputs)
    if "section_recall" not in inputs.scores.columns:
        raise Omit(f"the routed conditions {', '.join(routed)} were scored without section recall")
    scored = inputs.scores.filter(pl.col("section_recall").is_not_null() & pl.col("section_recall").is_not_nan())
    if scored.is_empty():
        raise Omit(f"the routed conditions {', '.join(routed)} were scored without section recall")
    keys = CELL + ["condition"]
    by_type = scored.group_by(keys + ["qtype"]).agg(pl.len().alias("n_queries"), pl.col("section_recall").mean())
    overall = scored.group_by(keys).agg(
        pl.lit(ALL_QTYPES).alias("qtype"), pl.len().alias("n_queries"), pl.col("section_recall").mean()
    )
    data = pl.concat([by_type.sort(keys + ["qtype"]), overall.select(by_type.columns).sort(keys)])
    data = data.sort(keys, maintain_order=True)
    qtypes = sorted(by_type["qtype"].unique().to_list()) + [ALL_QTYPES]
    shown = (
        data.with_columns(
            pl.struct("section_recall", "n_queries")
            .map_elements(lambda r: f"{r['section_recall']:.3f} (n={r['n_queries']})", return_dtype=pl.String)
            .alias("v")
        )
        .pivot(on="qtype", index=keys, values="v")
        .select(keys + [q for q in qtypes if q in data["qtype"].unique().to_list()])
    )
    return TableContent(data, blocks_by(shown, CELL, cell_heading))


@report_table(
    "retrieval_layer",
    "Retrieval-layer comparison (prefixed vs unprefixed index)",
    "The title-chain study's annotation-free check that a prefix restructures retrieval: each prefixed condition "
    "against the condition that ranks the same chunks with no prefix. Shares of queries whose rank-1 "
    "chunk changed, whose top 5 share no chunk or the same set, and the mean top-5 overlap "
    "(the title-chain study: 86.9% top-1 changed, overlap 2.11 / 5).",
)
def retrieval_layer_report(inputs: ReportInputs) -> TableContent:
    require_scores(inputs)
    data = inputs.retrieval_layer
    if data.is_empty():
        raise Omit(
            "no pair of conditions ranks one chunk set with and without a prefix (same boundaries, "
            "structure and retrieval) in this config"
        )
    data = data.sort(CELL, maintain_order=True)
    top = "top-" + "/".join(str(d) for d in data["depth"].unique().sort().to_list())
    shown = data.select(
        *CELL,
        pl.format("{} vs {}", "condition", "baseline").alias("prefixed vs unprefixed"),
        pl.col("n_queries").alias("queries"),
        pl.col("top1_changed").alias("top-1 changed"),
        pl.struct("mean_overlap", "depth")
        .map_elements(lambda r: f"{r['mean_overlap']:.2f} / {r['depth']}", return_dtype=pl.String)
        .alias(f"mean {top} overlap"),
        pl.col("fully_different").alias(f"{top} fully different"),
        pl.col("identical").alias(f"{top} identical"),
    )
    return TableContent(data, blocks_by(shown, CELL, cell_heading))


@report_table(
    "per_query_scores",
    "Per-query scores",
    "Every metric for every query under every condition, embedder and reranker: the data every other "
    "table is computed from (too long to show here).",
)
def per_query_table(inputs: ReportInputs) -> TableContent:
    require_scores(inputs)
    ids = [
        c
        for c in ("corpus", "embedder", "reranker", "condition", "qid", "doc_id", "qtype")
        if c in inputs.scores.columns
    ]
    data = inputs.scores.select(ids + [c for c in inputs.scores.columns if c not in ids]).sort(ids[:5])
    return TableContent(data, inline=False)
