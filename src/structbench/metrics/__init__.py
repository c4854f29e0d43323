"""Retrieval metrics of the study (docs/method.md §10; Kuehlkamp et al., appendices B and C).

Layout, ranx-style: :mod:`.kernels` holds the vectorized array kernels; :mod:`.measures` holds one
documented function per metric (the docstring is the definition) plus :func:`score_run`, the single
entry every caller uses; :mod:`.registry` names every metric (``cov_nDCG@10``, ``R@50``, ``MRR``, ...)
with its label and description, and turns config into the list of names ``score_run`` computes;
:mod:`.evidence` validates and aligns the tables once per run; :mod:`.diagnostics` holds section
recall and the title-chain study's run comparison; :mod:`.spans` holds Chroma's character-overlap metrics
(span IoU and precision under the union and under Chroma's sum, recall, precision-Ω on the condition's and
on Chroma's chunk extents); :mod:`.reference` is a plain-Python implementation used only to check and
benchmark the kernels.
"""

# measures before diagnostics: modules register their metrics on import, and the registry lists them
# in that order (the study's set first, then diagnostics such as section_recall)
from structbench.metrics.measures import (  # isort: skip
    binary_ndcg,
    budget_coverage,
    chunk_judgments,
    coverage_dcg,
    coverage_ndcg,
    gold_top1,
    ideal_coverage_dcg,
    ideal_coverage_ranking,
    is_relevant,
    metric_columns,
    reciprocal_rank,
    score_run,
    span_recall,
)
from structbench.metrics.diagnostics import (  # isort: skip
    compare_runs,
    section_recall,
    section_recall_per_query,
    summarize_run_comparison,
    toc_fallback,
)
from structbench.metrics.spans import (  # isort: skip
    chroma_extents,
    precision_omega,
    precision_omega_chroma,
    span_char_recall,
    span_iou,
    span_iou_sum,
    span_precision,
    span_precision_sum,
)
from structbench.metrics.evidence import RunEvidence, align_run
from structbench.metrics.registry import (
    ExtraInput,
    Metric,
    MetricDefinition,
    is_metric,
    metric_label,
    metric_names,
    metrics_from_config,
    parse_metric,
    parse_metrics,
    register,
    registered_metrics,
)

__all__ = [
    "ExtraInput",
    "Metric",
    "MetricDefinition",
    "RunEvidence",
    "align_run",
    "binary_ndcg",
    "chroma_extents",
    "budget_coverage",
    "chunk_judgments",
    "compare_runs",
    "coverage_dcg",
    "coverage_ndcg",
    "gold_top1",
    "ideal_coverage_dcg",
    "ideal_coverage_ranking",
    "is_metric",
    "is_relevant",
    "metric_columns",
    "metric_label",
    "metric_names",
    "metrics_from_config",
    "parse_metric",
    "parse_metrics",
    "precision_omega",
    "precision_omega_chroma",
    "reciprocal_rank",
    "register",
    "registered_metrics",
    "score_run",
    "section_recall",
    "section_recall_per_query",
    "span_char_recall",
    "span_iou",
    "span_iou_sum",
    "span_precision",
    "span_precision_sum",
    "span_recall",
    "summarize_run_comparison",
    "toc_fallback",
]
