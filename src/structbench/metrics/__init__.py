"""Retrieval metrics of the study (SPEC section 10; seed 000, appendices B and C).

Layout, ranx-style: :mod:`.kernels` holds the vectorized array kernels; :mod:`.measures` holds one
documented function per metric (the docstring is the definition) plus :func:`score_run`, the single
entry every caller uses; :mod:`.evidence` validates and aligns the tables once per run;
:mod:`.diagnostics` holds section recall and seed 004's run comparison; :mod:`.reference` is a
plain-Python implementation used only to check and benchmark the kernels.
"""

from structbench.metrics.diagnostics import compare_runs, section_recall, summarize_run_comparison
from structbench.metrics.evidence import RunEvidence, align_run
from structbench.metrics.measures import (
    binary_ndcg,
    budget_coverage,
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

__all__ = [
    "RunEvidence",
    "align_run",
    "binary_ndcg",
    "budget_coverage",
    "compare_runs",
    "coverage_dcg",
    "coverage_ndcg",
    "gold_top1",
    "ideal_coverage_dcg",
    "ideal_coverage_ranking",
    "is_relevant",
    "metric_columns",
    "reciprocal_rank",
    "score_run",
    "section_recall",
    "span_recall",
    "summarize_run_comparison",
]
