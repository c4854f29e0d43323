"""The contrasts table of one cell (docs/method.md §§11, 12; Kuehlkamp et al., appendix D).

A cell is (corpus, embedder, reranker). Its per-query scores come as one long table
``qid, doc_id, condition, <metric columns>``; contrasts come from config as dicts:

- pairwise: ``{"name": "C1", "treatment": "A3", "control": "A1", "family": "primary"}``
  -> delta = treatment - control per query;
- dose-response (exploratory): ``{"name": "depth_slope", "conditions": ["A2", "A3-d1", "A3-d2", "A3"],
  "depths": [0, 1, 2, 3], "family": "exploratory"}`` -> per query, the OLS slope of the score on depth
  (``sum_x (x - mean x) * y_x / sum_x (x - mean x)^2``) over queries scored under every listed
  condition. Because the slope is linear in the scores and all conditions share those queries, the mean
  per-query slope equals the slope of the condition means; it is bootstrapped exactly like a delta.
  ``depths`` defaults to 0, 1, 2, ...
- size curve (exploratory, docs/method.md §6a): ``{"name": "size-curve", "conditions": ["G2-200", "G2", "G2-800"],
  "sizes": [200, 350, 800]}`` -> the same per-query slope on log2(size): the change per doubling of ``t_max``.

Decisions (also in :func:`contrast_table`):

- One bootstrap draw matrix per distinct document set, seeded by ``seed``: every (contrast, metric)
  column over the same documents (the normal case: all conditions score all queries) shares the same
  draws; a column whose paired queries span a different document set is resampled over its own
  documents with the same seed.
- Holm runs within each declared family (``primary``, ``secondary``, ``model_free``, ``chunkers``) separately
  for each metric, over the contrasts of that family with a finite p. For the primary metric and the primary
  family this is the pre-registered correction; ``exploratory`` rows get ``p_holm = NaN`` (no family claim).
- Monte-Carlo honesty: ``p_mcse`` is each bootstrap p's Monte-Carlo standard error
  (:func:`structbench.stats.bootstrap.bootstrap_p_mcse`, ``sqrt(p (2 - p) / B)``), ``p_holm_mcse`` the
  Holm-adjusted p's (:func:`structbench.stats.paired.holm_mcse`: the raw error times the Holm multiplier
  of the p that sets the adjusted value), and ``holm_fragile`` is true when the Holm decision at
  ``defaults.ALPHA`` lies within two such errors: ``|p_holm - ALPHA| < 2 * p_holm_mcse``
  (:func:`structbench.stats.paired.fragile_decision`); another bootstrap seed could flip it.
- MixedLM p-values are NaN for dose-response rows and, when a fit fails, NaN with the reason in
  ``mixedlm_note``.
- ``wins``/``ties``/``losses`` count the paired queries whose treatment score is above, equal to (exact
  float equality, as PyTerrier's baseline comparison and ranx's ``compare``) and below the control's
  (:func:`structbench.stats.paired.win_tie_loss`). They are null for dose-response rows: a per-query slope
  over several conditions has no treatment/control pair, and the floating-point slope of equal scores is
  not exactly zero, so its sign would not count ties.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

import numpy as np
import polars as pl

from structbench.conditions import FAMILIES
from structbench.defaults import ALPHA, BOOTSTRAP_ITERS
from structbench.logs import with_progress
from structbench.sizes import size_doses
from structbench.stats.bootstrap import bootstrap_p, bootstrap_p_mcse, bootstrap_replicates, percentile_ci
from structbench.stats.mixedlm import mixedlm_treatment_p
from structbench.stats.paired import PairedDeltas, cohens_dz, holm_decisions, paired_deltas, win_tie_loss

log = logging.getLogger(__name__)

HOLM_FAMILIES = FAMILIES[:-1]  # every family but exploratory, which claims none
CLUSTER_UNITS = ("document", "query")  # stats.cluster: what the bootstrap resamples (docs/method.md §11)
# Below about 20 clusters a clustered percentile bootstrap's intervals are too narrow and its p too small
# (Cameron, Gelbach & Miller, "Bootstrap-based improvements for inference with clustered errors", 2008)
MIN_CLUSTERS = 20
CONTRAST_COLUMNS = {
    "contrast": pl.String,
    "treatment": pl.String,
    "control": pl.String,
    "metric": pl.String,
    "delta": pl.Float64,
    "ci_low": pl.Float64,
    "ci_high": pl.Float64,
    "p": pl.Float64,
    "p_holm": pl.Float64,
    "dz": pl.Float64,
    "p_mixedlm": pl.Float64,
    "p_mixedlm_nested": pl.Float64,
    "n_queries": pl.Int64,
    "n_docs": pl.Int64,
    "n_dropped": pl.Int64,
    "wins": pl.Int64,
    "ties": pl.Int64,
    "losses": pl.Int64,
    "label": pl.String,
    "mixedlm_note": pl.String,
    "cluster": pl.String,
    "n_clusters": pl.Int64,
    "few_clusters": pl.Boolean,
    "p_mcse": pl.Float64,
    "p_holm_mcse": pl.Float64,
    "holm_fragile": pl.Boolean,
}


def _condition(scores: pl.DataFrame, condition: str, metric: str) -> pl.DataFrame:
    return scores.filter(pl.col("condition") == condition).select("qid", "doc_id", metric)


def depth_slopes(
    scores: pl.DataFrame, conditions: Sequence[str], metric: str, depths: Sequence[float] | None = None
) -> PairedDeltas:
    """Per-query OLS slope of ``metric`` on breadcrumb depth across ``conditions`` (exploratory).

        slope_q = sum_x (x - mean(x)) * score_q(x) / sum_x (x - mean(x))^2

    over the queries scored (non-null) under every condition; the others are counted in ``n_dropped``.
    Returned as :class:`PairedDeltas` so it is bootstrapped like a delta.
    """
    depths = np.arange(len(conditions), dtype=np.float64) if depths is None else np.asarray(depths, dtype=np.float64)
    if len(depths) != len(conditions) or len(conditions) < 2:
        raise ValueError("a dose-response contrast needs >= 2 conditions and one depth per condition")
    centered = depths - depths.mean()
    weights = centered / (centered**2).sum()
    per_condition = [
        _condition(scores, c, metric)
        .filter(pl.col(metric).is_not_null() & pl.col(metric).is_not_nan())
        .rename({metric: f"y{i}", "doc_id": f"doc{i}"})
        for i, c in enumerate(conditions)
    ]
    all_qids = pl.concat([f["qid"] for f in per_condition]).n_unique()
    joined = per_condition[0]
    for frame in per_condition[1:]:
        joined = joined.join(frame, on="qid", how="inner")
    joined = joined.sort("qid")
    values = (
        np.column_stack([joined[f"y{i}"].to_numpy().astype(np.float64) for i in range(len(conditions))])
        if joined.height
        else np.zeros((0, len(conditions)))
    )
    slope = np.zeros(joined.height)
    for i in range(len(conditions)):  # fixed order of accumulation: deterministic
        slope = slope + weights[i] * values[:, i]
    return PairedDeltas(joined["qid"].to_numpy(), joined["doc0"].to_numpy(), slope, int(all_qids - joined.height))


def dose_axis(contrast: Mapping) -> list[float] | None:
    """The x of a slope contrast: log2 of a size curve's sizes (a slope per doubling of t_max,
    :func:`structbench.sizes.size_doses`), else its depths (None: 0, 1, 2, ...)."""
    if contrast.get("sizes"):
        return size_doses(contrast["sizes"])
    return contrast.get("depths")


def _check_contrast(contrast: Mapping, conditions: set[str]) -> None:
    if "name" not in contrast or contrast.get("family") not in FAMILIES:
        raise ValueError(f"contrast {contrast!r}: needs a name and a family in {FAMILIES}")
    named = (
        list(contrast["conditions"])
        if "conditions" in contrast
        else [contrast.get("treatment"), contrast.get("control")]
    )
    unknown = [c for c in named if c not in conditions]
    if unknown:
        raise ValueError(f"contrast {contrast['name']!r}: conditions {unknown} have no scores in this cell")


def contrast_table(
    scores: pl.DataFrame,
    contrasts: Sequence[Mapping],
    metrics: Sequence[str],
    *,
    B: int = BOOTSTRAP_ITERS,
    seed: int = 0,
    mixedlm: bool = True,
    mixedlm_metrics: Sequence[str] | None = None,
    cluster: str = "document",
) -> pl.DataFrame:
    """One row per (contrast, metric) of one cell, in the given contrast order then metric order.

    For each contrast and metric: paired per-query deltas (treatment - control) on the queries scored
    under both (``n_dropped`` counts the rest); ``delta`` = their unweighted mean; ``ci_low``/``ci_high``
    and ``p`` from the document-clustered bootstrap (``B`` replicates, ``seed``;
    :func:`structbench.stats.bootstrap.cluster_bootstrap`); ``p_holm`` = Holm within the contrast's
    family for that metric (exploratory: NaN); ``dz`` = Cohen's dz; ``p_mixedlm`` /
    ``p_mixedlm_nested`` = the pre-registered and nested MixedLM (only when ``mixedlm`` and the metric is
    in ``mixedlm_metrics``, default all; else NaN); ``cluster``, ``n_clusters``, ``few_clusters`` (below);
    ``wins``/``ties``/``losses`` = the paired queries
    where treatment > control, = and < (null for a dose-response); ``label`` = the family. ``mixedlm_note`` (an addition
    to the listed columns) records why a MixedLM p is NaN or what the fit warned. Deterministic: the same
    inputs and seed give byte-identical output. ``scores`` without a row (a cell with no query) give a
    table without a row. See the module docstring for the shared-draws and Holm
    decisions. ``cluster`` is the bootstrap's resampling unit (``document``: every query of a drawn
    document enters as a bundle, the study's design; ``query``: queries are drawn one by one, which
    ignores their dependence within a document), named in the ``cluster`` column; ``n_clusters`` counts
    the units resampled and
    ``few_clusters`` is true when they are fewer than ``MIN_CLUSTERS`` (its CI and p are then not to be
    trusted; the report flags the row).
    """
    if cluster not in CLUSTER_UNITS:
        raise ValueError(f"stats.cluster must be one of {list(CLUSTER_UNITS)}, got {cluster!r}")
    for column in ("qid", "doc_id", "condition", *metrics):
        if column not in scores.columns:
            raise ValueError(f"scores are missing column {column!r}")
    if scores.is_empty():
        # A cell without a single scored query (e.g. query generation kept none): no contrast to test,
        # and no row of NaN estimates either; the report says why the cell is empty.
        return pl.DataFrame(schema=CONTRAST_COLUMNS)
    conditions = set(scores["condition"].unique().to_list())
    for contrast in contrasts:
        _check_contrast(contrast, conditions)
    fit_metrics = set(metrics if mixedlm_metrics is None else mixedlm_metrics) if mixedlm else set()

    rows: list[dict] = []
    columns: list[PairedDeltas] = []
    for contrast in with_progress(contrasts, log, "tested", len(contrasts), "contrasts"):  # MixedLM fits take longest
        slope = "conditions" in contrast
        for metric in metrics:
            if slope:
                paired = depth_slopes(scores, contrast["conditions"], metric, dose_axis(contrast))
                treatment, control = contrast["conditions"][-1], contrast["conditions"][0]
            else:
                treatment, control = contrast["treatment"], contrast["control"]
                paired = paired_deltas(
                    _condition(scores, treatment, metric), _condition(scores, control, metric), metric
                )
            columns.append(paired)
            wins, ties, losses = (None, None, None) if slope else win_tie_loss(paired.delta)
            row = {
                "contrast": contrast["name"],
                "treatment": treatment,
                "control": control,
                "metric": metric,
                "delta": paired.mean,
                "ci_low": float("nan"),
                "ci_high": float("nan"),
                "p": float("nan"),
                "p_holm": float("nan"),
                "p_mcse": float("nan"),
                "p_holm_mcse": float("nan"),
                "holm_fragile": False,
                "dz": cohens_dz(paired.delta),
                "p_mixedlm": float("nan"),
                "p_mixedlm_nested": float("nan"),
                "n_queries": paired.n_queries,
                "n_docs": paired.n_docs,
                "n_dropped": paired.n_dropped,
                "wins": wins,
                "ties": ties,
                "losses": losses,
                "label": contrast["family"],
                "mixedlm_note": "",
                "cluster": cluster,
                "n_clusters": paired.n_docs if cluster == "document" else paired.n_queries,
            }
            row["few_clusters"] = bool(paired.n_queries) and row["n_clusters"] < MIN_CLUSTERS
            if slope:
                row["mixedlm_note"] = "not applicable (dose-response)"
            elif metric in fit_metrics and paired.n_queries:
                row.update(_mixedlm_columns(scores, treatment, control, metric, paired))
            rows.append(row)

    _bootstrap_columns(rows, columns, B, seed, cluster)
    for family in HOLM_FAMILIES:
        for metric in metrics:
            members = [i for i, r in enumerate(rows) if r["label"] == family and r["metric"] == metric]
            decisions = holm_decisions([rows[i]["p"] for i in members], [rows[i]["p_mcse"] for i in members], ALPHA)
            for i, value, error, flag in zip(members, *decisions):
                rows[i].update(p_holm=float(value), p_holm_mcse=float(error), holm_fragile=bool(flag))
    return pl.DataFrame(rows, schema=CONTRAST_COLUMNS)


def _bootstrap_columns(rows: list[dict], columns: list[PairedDeltas], B: int, seed: int, cluster: str) -> None:
    """Fill ci_low, ci_high, p; columns over the same cluster set share one draw matrix."""

    def units(paired: PairedDeltas) -> np.ndarray:
        return (paired.doc_id if cluster == "document" else paired.qid).astype(str)

    groups: dict[tuple, list[int]] = {}
    for i, paired in enumerate(columns):
        if paired.n_queries:
            groups.setdefault(tuple(np.unique(units(paired))), []).append(i)
    for docs, members in groups.items():
        doc_index = np.asarray(docs, dtype=str)
        sums = np.zeros((len(doc_index), len(members)))
        counts = np.zeros((len(doc_index), len(members)))
        for j, i in enumerate(members):
            position = np.searchsorted(doc_index, units(columns[i]))
            sums[:, j] = np.bincount(position, weights=columns[i].delta, minlength=len(doc_index))
            counts[:, j] = np.bincount(position, minlength=len(doc_index))
        replicates = bootstrap_replicates(sums, counts, n_boot=B, seed=seed)
        low, high = percentile_ci(replicates)
        p = bootstrap_p(replicates)
        p_mcse = bootstrap_p_mcse(p, B)
        for j, i in enumerate(members):
            rows[i].update(ci_low=float(low[j]), ci_high=float(high[j]), p=float(p[j]), p_mcse=float(p_mcse[j]))


def _mixedlm_columns(scores: pl.DataFrame, treatment: str, control: str, metric: str, paired: PairedDeltas) -> dict:
    keep = pl.Series(paired.qid)
    long = (
        scores.filter(pl.col("condition").is_in([treatment, control]) & pl.col("qid").is_in(keep.implode()))
        .select(
            "qid",
            "doc_id",
            (pl.col("condition") == treatment).cast(pl.Float64).alias("treated"),
            pl.col(metric).cast(pl.Float64),
        )
        .sort("qid", "treated")
    )
    arrays = (long[metric].to_numpy(), long["treated"].to_numpy(), long["doc_id"].to_numpy(), long["qid"].to_numpy())
    plain = mixedlm_treatment_p(*arrays, nested=False)
    nested = mixedlm_treatment_p(*arrays, nested=True)
    notes = [f"{label}: {fit.note}" for label, fit in (("mixedlm", plain), ("nested", nested)) if fit.note]
    return {"p_mixedlm": plain.p, "p_mixedlm_nested": nested.p, "mixedlm_note": " | ".join(notes)}
