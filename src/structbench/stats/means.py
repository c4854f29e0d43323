"""Per-condition statistics of one cell (docs/method.md §§11, 15; Kuehlkamp et al., section 6.6): each condition's
mean with its bootstrap CI, and the heading-path dose-response slopes.

The statistics step writes both as tables (the workflow's ``condition_stats`` rule); the report formats
them and draws no bootstrap of its own.

- :func:`condition_mean_cis`: each condition's mean of the primary metric with a 95%
  document-clustered bootstrap CI (:func:`structbench.stats.bootstrap.cluster_bootstrap`, ``B`` and
  ``seed`` of the statistics settings, every condition resampled with the same seed).
- :func:`dose_series`: the dose-response series, the declared dose-response contrasts and every group
  of conditions that differ only in heading-path depth.
- :func:`dose_response_slopes`: per series, the mean per-query OLS slope on depth
  (:func:`structbench.stats.contrasts.depth_slopes`, the one definition of a slope, which the
  contrasts table also uses) with its clustered bootstrap CI and p.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import polars as pl

from structbench.artifacts.cells import CELL
from structbench.conditions import MIN_DOSE_LEVELS, parse_value
from structbench.metrics.registry import metric_columns
from structbench.stats.bootstrap import cluster_bootstrap
from structbench.stats.contrasts import depth_slopes


def condition_means(scores: pl.DataFrame) -> pl.DataFrame:
    """Mean of every metric per (corpus, embedder, reranker, condition), with query and document counts
    (the report's metric ladder and Table 2; no CI: :func:`condition_mean_cis` draws those)."""
    metrics = metric_columns(scores)
    return (
        scores.group_by(CELL + ["condition"])
        .agg(
            pl.len().alias("n_queries"),
            pl.col("doc_id").n_unique().alias("n_docs"),
            *[pl.col(m).mean().alias(m) for m in metrics],
        )
        .sort(CELL + ["condition"])
    )


CONDITION_MEANS = {
    "corpus": pl.String,
    "embedder": pl.String,
    "reranker": pl.String,
    "condition": pl.String,
    "metric": pl.String,
    "mean": pl.Float64,
    "ci_low": pl.Float64,
    "ci_high": pl.Float64,
    "n_queries": pl.Int64,
    "n_docs": pl.Int64,
}
DOSE_RESPONSE = {
    "corpus": pl.String,
    "embedder": pl.String,
    "reranker": pl.String,
    "series": pl.String,
    "declared": pl.Boolean,
    "condition": pl.String,
    "depth": pl.Float64,
    "metric": pl.String,
    "slope": pl.Float64,
    "slope_ci_low": pl.Float64,
    "slope_ci_high": pl.Float64,
    "slope_p": pl.Float64,
    "slope_n_queries": pl.Int64,
}


def condition_mean_cis(
    scores: pl.DataFrame, metric: str, n_boot: int, seed: int, cluster: str = "document"
) -> pl.DataFrame:
    """Each condition's mean of ``metric`` per cell with its 95% document-clustered bootstrap CI
    (:func:`structbench.stats.bootstrap.cluster_bootstrap`: documents resampled with replacement, the
    replicate mean = drawn documents' score sums / their query counts; percentile interval).

    Queries with a missing score are left out. Returns :data:`CONDITION_MEANS` (``corpus, embedder,
    reranker, condition, metric, mean, ci_low, ci_high, n_queries, n_docs``) sorted by cell and condition.
    ``cluster`` (``stats.cluster``): ``query`` resamples queries one by one instead of documents."""
    if scores.is_empty():
        return pl.DataFrame(schema=CONDITION_MEANS)
    rows = []
    valid = scores.filter(pl.col(metric).is_not_null() & pl.col(metric).is_not_nan())
    for (corpus, embedder, reranker, condition), group in valid.sort(CELL + ["condition", "qid"]).group_by(
        CELL + ["condition"], maintain_order=True
    ):
        units = group["doc_id" if cluster == "document" else "qid"].to_numpy()
        result = cluster_bootstrap(group[metric].to_numpy(), units, n_boot=n_boot, seed=seed)
        rows.append(
            {
                "corpus": corpus,
                "embedder": embedder,
                "reranker": reranker,
                "condition": condition,
                "metric": metric,
                "mean": float(result.estimate[0]),
                "ci_low": float(result.ci_low[0]),
                "ci_high": float(result.ci_high[0]),
                "n_queries": result.n_queries,
                "n_docs": group["doc_id"].n_unique(),
            }
        )
    return pl.DataFrame(rows, schema=CONDITION_MEANS)


@dataclass(frozen=True)
class DoseSeries:
    """Conditions ordered by heading-path depth: a declared dose-response contrast, or one derived from
    the declared conditions (same boundaries, structure and retrieval; prefix none = depth 0, path:d = d)."""

    name: str
    conditions: tuple[str, ...]
    depths: tuple[float, ...]
    declared: bool

    def as_params(self) -> dict:
        """A plain dict for the workflow's params (:meth:`from_params` reads it back)."""
        return {
            "name": self.name,
            "conditions": list(self.conditions),
            "depths": list(self.depths),
            "declared": self.declared,
        }

    @classmethod
    def from_params(cls, entry: Mapping) -> DoseSeries:
        return cls(
            str(entry["name"]),
            tuple(entry["conditions"]),
            tuple(float(d) for d in entry["depths"]),
            bool(entry["declared"]),
        )


def path_depth(prefix: str) -> int | None:
    """The heading-path depth a prefix injects: 0 for none, d for path:d; None for any other prefix."""
    kind, parameter = parse_value("prefix", prefix)
    if kind.name == "none":
        return 0
    if kind.name == "path":
        return int(parameter)
    return None


def dose_series(conditions: Mapping[str, Mapping], contrast_specs: Sequence[Mapping]) -> list[DoseSeries]:
    """The declared dose-response contrasts, then every group of declared conditions that differ only in
    path depth (at least ``MIN_DOSE_LEVELS`` depths: through two points a "slope" is one contrast over a
    depth difference, with no declared contrast behind it) and is not already a declared series. The first
    condition declared at a depth represents it. ``conditions`` maps a name to its axes (and its own
    ``t_max``/``t_min``, which a series shares: a size is no depth), in declared order. A size curve
    (``sizes``) is no depth series: the contrasts table has its slope, the report its curve."""
    series = [
        DoseSeries(
            spec["name"],
            tuple(spec["conditions"]),
            tuple(float(d) for d in (spec.get("depths") or range(len(spec["conditions"])))),
            True,
        )
        for spec in contrast_specs
        if spec.get("conditions") and not spec.get("sizes")
    ]
    covered = {frozenset(s.conditions) for s in series}
    groups: dict[tuple, dict[int, str]] = {}
    for name, axes in conditions.items():
        depth = path_depth(str(axes["prefix"]))
        if depth is not None:
            key = (axes["boundaries"], axes["structure"], axes["retrieval"], axes.get("t_max"), axes.get("t_min"))
            groups.setdefault(key, {}).setdefault(depth, name)
    for by_depth in groups.values():
        members = tuple(by_depth[d] for d in sorted(by_depth))
        if len(members) >= MIN_DOSE_LEVELS and frozenset(members) not in covered:
            series.append(DoseSeries(" → ".join(members), members, tuple(float(d) for d in sorted(by_depth)), False))
    return series


def dose_response_slopes(
    scores: pl.DataFrame, series: Sequence[DoseSeries], metric: str, n_boot: int, seed: int, cluster: str = "document"
) -> pl.DataFrame:
    """Per cell and series whose members the cell scored: the mean per-query slope of ``metric`` on depth
    (:func:`structbench.stats.contrasts.depth_slopes`, over the queries scored under every member) with its
    95% document-clustered bootstrap CI and p (``n_boot`` replicates, ``seed``).

    One row per member (condition and depth, in the series' order), the series' slope repeated on each:
    :data:`DOSE_RESPONSE`. Cells come in the order of ``scores``."""
    if scores.is_empty():
        return pl.DataFrame(schema=DOSE_RESPONSE)
    rows = []
    for (corpus, embedder, reranker), cell in scores.group_by(CELL, maintain_order=True):
        present = set(cell["condition"].unique().to_list())
        for one in series:
            if not set(one.conditions) <= present:
                continue
            slopes = depth_slopes(cell, one.conditions, metric, one.depths)
            units = slopes.doc_id if cluster == "document" else slopes.qid
            boot = cluster_bootstrap(slopes.delta, units, n_boot=n_boot, seed=seed)
            for condition, depth in zip(one.conditions, one.depths):
                rows.append(
                    {
                        "corpus": corpus,
                        "embedder": embedder,
                        "reranker": reranker,
                        "series": one.name,
                        "declared": one.declared,
                        "condition": condition,
                        "depth": depth,
                        "metric": metric,
                        "slope": float(boot.estimate[0]),
                        "slope_ci_low": float(boot.ci_low[0]),
                        "slope_ci_high": float(boot.ci_high[0]),
                        "slope_p": float(boot.p[0]),
                        "slope_n_queries": slopes.n_queries,
                    }
                )
    return pl.DataFrame(rows, schema=DOSE_RESPONSE)
