"""The report's span-metric table (docs/method.md §10, "Span metrics"): Chroma's measures under both rules,
side by side, per condition.

structbench's span IoU and precision merge the retrieved ranges (a character two retrieved chunks share counts
once); Chroma's code sums them (``span_IoU_sum@k``, ``span_precision_sum@k``). They agree on a set that tiles
and part on an overlapping one, where the sign of an overlap effect can flip with the rule. precision-Ω comes
in up to three readings: a chunk sharing a character (the default), a chunk touching counts (Chroma's rule),
and Chroma's rule on Chroma's chunk extents (``span_precision_omega_chroma``, Chroma's own number). A pure
function of :class:`~structbench.report.table_registry.ReportInputs`, declared like every table.
"""

from __future__ import annotations

import polars as pl

from structbench.artifacts.cells import CELL
from structbench.metrics.registry import metric_columns, metric_label, parse_metric
from structbench.report.formatting import cell_heading
from structbench.report.table_registry import Block, Omit, ReportInputs, TableContent, report_table, require_scores
from structbench.stats.means import condition_means

# each union measure and its sum twin (same cutoff)
SUM_TWINS = {"span_IoU": "span_IoU_sum", "span_precision": "span_precision_sum"}
OMEGA_READINGS = ("span_precision_omega", "span_precision_omega_touching", "span_precision_omega_chroma")


def rule_columns(metrics: list[str]) -> list[tuple[str, str]]:
    """``(score column, header)`` of the span measures scored under both rules, each union measure followed by
    its sum twin at the same cutoff (cutoffs ascending), then the precision-Ω readings present. A union measure
    whose twin was not scored is left out (nothing to set beside it)."""
    scored = set(metrics)
    pairs = []
    for name in metrics:
        metric = parse_metric(name)
        twin = SUM_TWINS.get(metric.definition.name)
        if twin and f"{twin}@{metric.cutoff}" in scored:
            pairs.append((metric.cutoff, name, f"{twin}@{metric.cutoff}"))
    columns = []
    for _, union, summed in sorted(pairs, key=lambda pair: pair[0]):
        columns += [(union, f"{metric_label(union)} (union)"), (summed, metric_label(summed))]
    return columns + [(name, metric_label(name)) for name in OMEGA_READINGS if name in scored]


@report_table(
    "span_rules",
    "Span metrics under both rules",
    "Chroma's span IoU and precision (docs/method.md §10) per condition under structbench's rule, the union of the "
    "retrieved ranges (a character two retrieved chunks share counts once), beside Chroma's, their lengths summed "
    "(it counts twice). The two agree on chunk sets that tile and part on overlapping ones. precision-Ω: a chunk "
    "counts when it shares a character with the evidence; under Chroma's rule also when it only touches it; and "
    "Chroma's rule on Chroma's chunk extents (each chunk's text without surrounding whitespace, placed by str.find), "
    "the number Chroma's code gives.",
)
def span_rules_table(inputs: ReportInputs) -> TableContent:
    require_scores(inputs)
    means = condition_means(inputs.scores)
    columns = rule_columns(metric_columns(means))
    if not any(name.startswith(tuple(f"{twin}@" for twin in SUM_TWINS.values())) for name, _ in columns):
        raise Omit(
            "no span metric is scored under Chroma's sum rule (metrics.extra: span_IoU_sum@k, span_precision_sum@k)"
        )
    data = inputs.by_condition(means).select(
        *CELL, "condition", *[pl.col(name).alias(header) for name, header in columns]
    )
    blocks = tuple(
        Block(cell_heading(*cell), frame.drop(CELL)) for cell, frame in data.group_by(CELL, maintain_order=True)
    )
    return TableContent(data, blocks, float_digits=4)
