"""The decision of one cell (docs/method.md §11, "Decision"): which condition to use on this corpus, and how
sure the run is.

Per cell (corpus, embedder, reranker) the conditions are ranked by their mean on the cell's *decision reading*
(:func:`decision_metric`): the smallest token budget's coverage when a read-time condition runs (its units
vary in length, and a budget charges every token read, so no length can buy a higher score), else the
primary metric. The leader is the highest mean; every other condition is compared with it by a paired,
document-clustered bootstrap of ``leader − condition`` (:func:`paired_bootstrap`), its p adjusted by Holm over
the cell's comparisons with the leader, and *tied with the leader* when that adjusted p is at least ``alpha``
(:func:`tied`). A power note gives the minimum detectable effect of the closest comparison
(:func:`minimum_detectable_effect`, 2.80 times the bootstrap standard error of the paired difference) and a
ceiling note the share of the leader's queries at the metric's maximum (:func:`ceiling_share`).

:func:`decision_table` is the statistics step's table (workflow rule ``condition_stats``); the report adds each
condition's cost and the leader as a call (:func:`leader_call`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from structbench.artifacts.cells import CELL
from structbench.conditions import NO_PREFIX, is_readtime, parse_value
from structbench.defaults import ALPHA, T_MAX, T_MIN
from structbench.stats.bootstrap import bootstrap_p, bootstrap_replicates, cluster_sums, percentile_ci
from structbench.stats.paired import holm_decisions, paired_deltas
from structbench.stats.readings import budget_of

# z_{1 - alpha/2} + z_{power} at alpha = .05 (two-sided) and 80% power: 1.960 + 0.842 = 2.80
MDE_MULTIPLIER = 2.80
METRIC_MAXIMUM = 1.0  # every ranked metric's best per-query score (coverage, budgets, nDCG, MRR, recall)
API_CALL = "structbench.chunk_markdown_file(path{options})"

DECISION = {
    "corpus": pl.String,
    "embedder": pl.String,
    "reranker": pl.String,
    "rank": pl.Int64,
    "condition": pl.String,
    "metric": pl.String,
    "mean": pl.Float64,
    "ci_low": pl.Float64,
    "ci_high": pl.Float64,
    "delta": pl.Float64,  # leader − condition (0 for the leader)
    "delta_ci_low": pl.Float64,
    "delta_ci_high": pl.Float64,
    "se": pl.Float64,  # bootstrap standard error of leader − condition
    "mde": pl.Float64,  # MDE_MULTIPLIER · se
    "p": pl.Float64,
    "p_holm": pl.Float64,
    "holm_fragile": pl.Boolean,
    "tied": pl.Boolean,  # tied with the leader: p_holm >= alpha (the leader itself: null)
    "at_ceiling": pl.Float64,  # share of the condition's queries at METRIC_MAXIMUM
    "n_queries": pl.Int64,
    "n_docs": pl.Int64,
    "cluster": pl.String,  # the unit the bootstrap resampled (stats.cluster: document or query)
    "n_clusters": pl.Int64,
}


def decision_metric(retrievals: Sequence[str], metrics: Sequence[str], primary_metric: str) -> str:
    """The reading a cell's conditions are ranked on: the smallest token budget among ``metrics`` when any of
    ``retrievals`` (the cell's conditions' retrieval values) is read-time and a budget was scored, else
    ``primary_metric``."""
    budgets = sorted((m for m in metrics if budget_of(m) is not None), key=budget_of)
    if budgets and any(is_readtime(value) for value in retrievals):
        return budgets[0]
    return primary_metric


def rank_conditions(means: Mapping[str, float], order: Sequence[str] = ()) -> list[str]:
    """Condition names by descending mean; equal means (and NaN, last) keep ``order`` (declared order), then
    name order."""
    position = {name: i for i, name in enumerate(order)}

    def key(name):
        mean = means[name]
        return (mean != mean, -mean if mean == mean else 0.0, position.get(name, len(position)), name)

    return sorted(means, key=key)


@dataclass(frozen=True)
class PairedBootstrap:
    """A paired difference's mean with its 95% percentile CI, two-sided p and bootstrap standard error."""

    estimate: float
    ci_low: float
    ci_high: float
    p: float
    se: float
    n_queries: int
    n_docs: int


def paired_bootstrap(deltas, units, *, n_boot: int, seed: int) -> PairedBootstrap:
    """The clustered bootstrap of :mod:`structbench.stats.bootstrap` over per-query ``deltas`` (clusters
    ``units``), with the standard deviation of the replicate means (ddof 1) as the standard error."""
    deltas = np.asarray(deltas, dtype=np.float64)
    if len(deltas) == 0:
        return PairedBootstrap(*[float("nan")] * 5, 0, 0)
    docs, sums, counts = cluster_sums(deltas, units)
    replicates = bootstrap_replicates(sums[:, 0], counts, n_boot=n_boot, seed=seed)
    low, high = percentile_ci(replicates)
    se = float(np.std(replicates, ddof=1)) if n_boot > 1 else float("nan")
    p = float(bootstrap_p(replicates))
    return PairedBootstrap(float(deltas.mean()), float(low), float(high), p, se, len(deltas), len(docs))


def minimum_detectable_effect(se: float, multiplier: float = MDE_MULTIPLIER) -> float:
    """The smallest true difference a two-sided test at alpha = .05 detects with 80% power given the
    standard error ``se`` of the paired difference: ``(z_.975 + z_.80) · se = 2.80 · se``."""
    return multiplier * se


def ceiling_share(scores, maximum: float = METRIC_MAXIMUM) -> float:
    """The share of per-query ``scores`` at (or above) ``maximum``; NaN for none."""
    scores = np.asarray(scores, dtype=np.float64)
    scores = scores[~np.isnan(scores)]
    return float((scores >= maximum).mean()) if len(scores) else float("nan")


def tied(p_holm: float, alpha: float = ALPHA) -> bool:
    """Tied with the leader: the Holm-adjusted p of ``leader − condition`` is at least ``alpha`` (no adjusted
    p, e.g. no query in common: tied, the run cannot tell them apart)."""
    return not (p_holm == p_holm and p_holm < alpha)


def cell_decision(
    scores: pl.DataFrame,
    metric: str,
    *,
    order: Sequence[str] = (),
    n_boot: int,
    seed: int,
    cluster: str = "document",
    alpha: float = ALPHA,
) -> pl.DataFrame:
    """One cell's ranking on ``metric`` (``scores``: ``qid, doc_id, condition, <metric>``): per condition, by
    :func:`rank_conditions`, its mean with a 95% clustered bootstrap CI, and against the leader the paired
    ``leader − condition`` difference with CI, standard error, MDE, p, Holm p over the cell's comparisons with
    the leader (fragile as in the contrasts table) and whether it is tied; the share of its queries at the
    ceiling. Columns: :data:`DECISION` less the cell columns."""
    valid = scores.filter(pl.col(metric).is_not_null() & pl.col(metric).is_not_nan())
    by_condition = {name: group.sort("qid") for (name,), group in valid.group_by(["condition"], maintain_order=True)}
    if not by_condition:
        return pl.DataFrame(schema={k: v for k, v in DECISION.items() if k not in CELL})
    unit = "doc_id" if cluster == "document" else "qid"
    own = {
        name: paired_bootstrap(group[metric].to_numpy(), group[unit].to_numpy(), n_boot=n_boot, seed=seed)
        for name, group in by_condition.items()
    }
    ranked = rank_conditions({name: result.estimate for name, result in own.items()}, order)
    leader = ranked[0]
    against = {}
    for name in ranked[1:]:
        paired = paired_deltas(by_condition[leader], by_condition[name], metric)
        units = paired.doc_id if cluster == "document" else paired.qid
        against[name] = paired_bootstrap(paired.delta, units, n_boot=n_boot, seed=seed)
    p = np.array([against[name].p for name in ranked[1:]])
    p_mcse = np.sqrt(np.clip(p, 0, 1) * (2 - np.clip(p, 0, 1)) / n_boot) if len(p) else p
    p_holm, _, fragile = holm_decisions(p, p_mcse, alpha)
    rows = []
    for i, name in enumerate(ranked):
        result, group = own[name], by_condition[name]
        versus = against.get(name)
        rows.append(
            {
                "rank": i + 1,
                "condition": name,
                "metric": metric,
                "mean": result.estimate,
                "ci_low": result.ci_low,
                "ci_high": result.ci_high,
                "delta": versus.estimate if versus else 0.0,
                "delta_ci_low": versus.ci_low if versus else None,
                "delta_ci_high": versus.ci_high if versus else None,
                "se": versus.se if versus else None,
                "mde": minimum_detectable_effect(versus.se) if versus else None,
                "p": versus.p if versus else None,
                "p_holm": float(p_holm[i - 1]) if versus else None,
                "holm_fragile": bool(fragile[i - 1]) if versus else None,
                "tied": tied(float(p_holm[i - 1]), alpha) if versus else None,
                "at_ceiling": ceiling_share(group[metric].to_numpy()),
                "n_queries": group.height,
                "n_docs": group["doc_id"].n_unique(),
                "cluster": cluster,
                "n_clusters": group[unit].n_unique(),
            }
        )
    return pl.DataFrame(rows, schema={k: v for k, v in DECISION.items() if k not in CELL})


def decision_table(
    scores: pl.DataFrame,
    conditions: Mapping[str, Mapping],
    primary_metric: str,
    *,
    n_boot: int,
    seed: int,
    cluster: str = "document",
    alpha: float = ALPHA,
) -> pl.DataFrame:
    """Every cell's decision (:func:`cell_decision`) on its reading (:func:`decision_metric` over the cell's
    conditions, ``conditions`` mapping a name to its axes in declared order): :data:`DECISION`."""
    if scores.is_empty():
        return pl.DataFrame(schema=DECISION)
    frames = []
    for (corpus, embedder, reranker), cell in scores.group_by(CELL, maintain_order=True):
        present = cell["condition"].unique().to_list()
        retrievals = [str(conditions[name]["retrieval"]) for name in present if name in conditions]
        metric = decision_metric(retrievals, cell.columns, primary_metric)
        ranked = cell_decision(
            cell, metric, order=list(conditions), n_boot=n_boot, seed=seed, cluster=cluster, alpha=alpha
        )
        frames.append(ranked.with_columns(corpus=pl.lit(corpus), embedder=pl.lit(embedder), reranker=pl.lit(reranker)))
    return pl.concat(frames).select(list(DECISION)).cast(DECISION)


def leader_call(axes: Mapping, *, t_max: int = T_MAX, t_min: int = T_MIN) -> str | None:
    """The condition as one call of the public API, or None when the API cannot express it.

    ``chunk_markdown_file`` cuts at the document's own headings (``boundaries: structural``, ``structure:
    gold``) or in overlapping windows (``fixed_overlap:<o>`` -> ``overlap=<o>``), prepends the real heading
    path cut to ``depth`` (``prefix: path:<d>`` -> ``depth=<d>``, ``none`` -> ``depth=0``), and the caller
    searches the vectors flat (``retrieval: flat``). ``t_max`` / ``t_min`` are the condition's chunk bounds
    (its own, else the run's), written only where they differ from the API's defaults."""
    boundaries, _ = parse_value("boundaries", str(axes["boundaries"]))
    prefix, depth = parse_value("prefix", str(axes["prefix"]))
    if str(axes["structure"]) != "gold" or str(axes["retrieval"]) != "flat":
        return None
    options = []
    if prefix.name == NO_PREFIX:
        options.append("depth=0")
    elif prefix.name == "path":
        options.append(f"depth={int(depth)}")
    else:
        return None
    if boundaries.name == "fixed_overlap":
        overlap = str(axes["boundaries"]).split(":", 1)[1]
        options.append(f"overlap={overlap}")
    elif boundaries.name != "structural":
        return None
    t_max, t_min = axes.get("t_max") or t_max, axes.get("t_min") or t_min
    if t_max != T_MAX:
        options.append(f"t_max={t_max}")
    if t_min != T_MIN:
        options.append(f"t_min={t_min}")
    return API_CALL.format(options="".join(f", {o}" for o in options))


def needs_workflow(axes: Mapping) -> str:
    """The axes :func:`leader_call` cannot express, in words (``retrieval two_stage, prefix context``)."""
    expressible = {
        "boundaries": lambda v: parse_value("boundaries", v)[0].name in ("structural", "fixed_overlap"),
        "structure": lambda v: v == "gold",
        "prefix": lambda v: parse_value("prefix", v)[0].name in (NO_PREFIX, "path"),
        "retrieval": lambda v: v == "flat",
    }
    return ", ".join(f"{axis} {axes[axis]}" for axis, fits in expressible.items() if not fits(str(axes[axis])))
