"""The report's size curve (docs/method.md §6a): the primary metric against each condition's ``t_max``, per
declared size curve (``contrasts.<name>.sizes``) and cell.

Its numbers come from the statistics step, which the report never re-draws: each member's mean and CI from the
per-condition means (:func:`structbench.stats.means.condition_mean_cis`), and the curve's slope per doubling
of ``t_max`` with its bootstrap CI and p from the contrasts table, where the curve is a dose-response row on
log2(size) (:func:`structbench.stats.contrasts.dose_axis`).
"""

from __future__ import annotations

import polars as pl

from structbench.artifacts.cells import CELL
from structbench.report.formatting import cell_heading, slope_columns
from structbench.report.results import primary_condition_means
from structbench.report.table_registry import Omit, ReportInputs, TableContent, blocks_by, report_table

SIZE_CURVE = {
    "corpus": pl.String,
    "embedder": pl.String,
    "reranker": pl.String,
    "series": pl.String,
    "condition": pl.String,
    "t_max": pl.Float64,
    "mean": pl.Float64,
    "ci_low": pl.Float64,
    "ci_high": pl.Float64,
    "slope": pl.Float64,
    "slope_ci_low": pl.Float64,
    "slope_ci_high": pl.Float64,
    "slope_p": pl.Float64,
    "slope_n_queries": pl.Int64,
}


def size_curve_rows(contrasts: pl.DataFrame, means: pl.DataFrame, specs: list[dict], metric: str) -> pl.DataFrame:
    """One row per (cell, size curve, member) the run scored: the member's mean of ``metric`` with its CI
    (``means``: the condition means of ``metric``) and the curve's slope per doubling of ``t_max`` (its
    contrasts row for ``metric``), in the curve's order. :data:`SIZE_CURVE`."""
    members = [
        {"series": spec["name"], "condition": condition, "t_max": float(size), "order": index}
        for spec in specs
        if spec.get("sizes")
        for index, (condition, size) in enumerate(zip(spec["conditions"], spec["sizes"]))
    ]
    if not members or contrasts.is_empty() or means.is_empty():
        return pl.DataFrame(schema=SIZE_CURVE)
    slopes = contrasts.filter(pl.col("metric") == metric).select(
        *CELL,
        pl.col("contrast").alias("series"),
        pl.col("delta").alias("slope"),
        pl.col("ci_low").alias("slope_ci_low"),
        pl.col("ci_high").alias("slope_ci_high"),
        pl.col("p").alias("slope_p"),
        pl.col("n_queries").alias("slope_n_queries"),
    )
    member_frame = pl.DataFrame(
        members, schema={"series": pl.String, "condition": pl.String, "t_max": pl.Float64, "order": pl.Int64}
    )
    keys = CELL + ["condition"]
    return (
        slopes.join(member_frame, on="series", how="inner")
        .join(means.select(*keys, "mean", "ci_low", "ci_high"), on=keys, how="inner")
        .sort(*CELL, "series", "order")
        .select(list(SIZE_CURVE))
        .cast(SIZE_CURVE)
    )


@report_table(
    "size_curve",
    "Chunk-size curve",
    "Exploratory (docs/method.md §6a): the primary metric against each condition's t_max, for each declared "
    "size curve (conditions that differ in chunk size alone). The slope is the mean per-query OLS slope on "
    "log2(t_max), the change per doubling of the chunk size (Table 1 shows the same row), with a "
    "document-clustered bootstrap CI and p; each mean has its own 95% CI.",
)
def size_curve_table(inputs: ReportInputs) -> TableContent:
    specs = [spec for spec in inputs.contrast_specs if spec.get("sizes")]
    if not specs:
        raise Omit("no size curve (a contrast with sizes) in this config")
    data = size_curve_rows(inputs.contrasts, primary_condition_means(inputs), specs, inputs.primary_metric)
    if data.is_empty():
        raise Omit("no cell scored every member of a size curve")
    B = inputs.bootstrap_iters
    shown = (
        data.group_by(CELL + ["series"], maintain_order=True)
        .agg(
            pl.struct("condition", "t_max", "mean", "ci_low", "ci_high")
            .map_elements(
                lambda r: f"{r['condition']} ({r['t_max']:g}): {r['mean']:.3f} [{r['ci_low']:.3f}, {r['ci_high']:.3f}]",
                return_dtype=pl.String,
            )
            .str.join(" · ")
            .alias("mean by t_max [95% CI]"),
            *[pl.col(c).first() for c in ("slope", "slope_ci_low", "slope_ci_high", "slope_p")],
            pl.col("slope_n_queries").first().alias("queries"),
        )
        .select(
            *CELL,
            "series",
            "mean by t_max [95% CI]",
            *slope_columns("doubling", B),
            "queries",
        )
    )
    return TableContent(data, blocks_by(shown, CELL, cell_heading))
