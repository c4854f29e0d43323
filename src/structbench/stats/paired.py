"""Paired per-query deltas, Cohen's dz and the Holm correction (docs/method.md §11; Kuehlkamp et al., appendix D)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl


@dataclass(frozen=True)
class PairedDeltas:
    """Per-query deltas ``treatment - control`` on the queries scored under both, sorted by qid.

    ``n_dropped`` counts queries scored under only one of the two (or with a missing value).
    """

    qid: np.ndarray
    doc_id: np.ndarray
    delta: np.ndarray
    n_dropped: int

    @property
    def n_queries(self) -> int:
        return len(self.delta)

    @property
    def n_docs(self) -> int:
        return len(np.unique(self.doc_id)) if len(self.doc_id) else 0

    @property
    def mean(self) -> float:
        """The reported effect: the unweighted mean delta over queries (NaN when none)."""
        return float(self.delta.mean()) if len(self.delta) else float("nan")


def _valid(frame: pl.DataFrame, metric: str) -> pl.DataFrame:
    for column in ("qid", "doc_id", metric):
        if column not in frame.columns:
            raise ValueError(f"scores are missing column {column!r}")
    if frame["qid"].is_duplicated().any():
        raise ValueError(f"scores: a qid appears twice in one condition (metric {metric!r})")
    return frame.select("qid", "doc_id", pl.col(metric).cast(pl.Float64)).filter(
        pl.col(metric).is_not_null() & pl.col(metric).is_not_nan()
    )


def paired_deltas(scores_a: pl.DataFrame, scores_b: pl.DataFrame, metric: str) -> PairedDeltas:
    """``delta_q = score_a(q) - score_b(q)`` for every query scored under both conditions.

    ``scores_a``/``scores_b`` are one condition's per-query scores (``qid, doc_id, <metric>``). Queries
    present in only one (or with a null/NaN value) are dropped and counted in ``n_dropped``
    (docs/method.md §17). A qid mapped to two different documents is an error.
    """
    all_qids = pl.concat([scores_a["qid"], scores_b["qid"]]).n_unique()
    a, b = _valid(scores_a, metric), _valid(scores_b, metric)
    joined = a.join(b, on="qid", how="inner", suffix="_b").sort("qid")
    mismatch = joined.filter(pl.col("doc_id") != pl.col("doc_id_b"))
    if mismatch.height:
        raise ValueError(f"scores: qid {mismatch['qid'][0]!r} belongs to different documents in the two conditions")
    delta = (joined[metric] - joined[f"{metric}_b"]).to_numpy().astype(np.float64)
    return PairedDeltas(
        qid=joined["qid"].to_numpy(),
        doc_id=joined["doc_id"].to_numpy(),
        delta=delta,
        n_dropped=int(all_qids - joined.height),
    )


def win_tie_loss(deltas) -> tuple[int, int, int]:
    """Queries where the treatment scored higher, the same and lower than the control: the counts of
    ``delta > 0``, ``delta == 0`` and ``delta < 0``.

    A tie is exact equality of the two float scores, the convention of PyTerrier's ``Experiment(baseline=)``
    (its ``+`` / ``-`` columns count strict ``>`` / ``<``) and of ranx's ``compare`` (``W``/``T``/``L`` by
    ``>``, ``==``, ``<``). No tolerance is needed: a query whose two rankings score alike gets the same float
    from the same metric code, and for finite IEEE floats ``a - b == 0`` exactly when ``a == b``. The three
    counts sum to the number of paired queries.
    """
    deltas = np.asarray(deltas, dtype=np.float64)
    if np.isnan(deltas).any():
        raise ValueError("win_tie_loss: a delta is NaN; paired deltas hold only queries scored under both conditions")
    return int((deltas > 0).sum()), int((deltas == 0).sum()), int((deltas < 0).sum())


def cohens_dz(deltas) -> float:
    """Cohen's dz = mean(delta) / sd(delta), sd with ddof = 1. NaN with fewer than two queries or sd = 0."""
    deltas = np.asarray(deltas, dtype=np.float64)
    if len(deltas) < 2:
        return float("nan")
    sd = deltas.std(ddof=1)
    return float(deltas.mean() / sd) if sd > 0 else float("nan")


def _members_ascending(p: np.ndarray) -> np.ndarray:
    """Indices of a Holm family's members (the finite p-values), by ascending p; ties in input order."""
    finite = np.flatnonzero(np.isfinite(p))
    return finite[np.argsort(p[finite], kind="stable")]


def holm(pvalues) -> np.ndarray:
    """Holm step-down adjustment over one family (Kuehlkamp et al., appendix D.3).

    Sort the m p-values ascending; the i-th smallest (0-indexed) becomes ``(m - i) * p_(i)``, under a
    running maximum so adjusted values stay monotone, clipped to 1. NaN p-values are not members of the
    family (m counts the finite ones) and stay NaN. Ties keep input order (stable sort).
    """
    p = np.asarray(pvalues, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    order = _members_ascending(p)
    m = len(order)
    adjusted = np.maximum.accumulate((m - np.arange(m)) * p[order])
    out[order] = np.minimum(adjusted, 1.0)
    return out


def holm_mcse(pvalues, mcse) -> np.ndarray:
    """Monte-Carlo standard error of each Holm-adjusted p (:func:`holm`), from each raw p's ``mcse``.

    A member's adjusted p is ``(m - j) * p_(j)`` for the sorted position j <= its own that sets the
    running maximum, so its error is that p's error times the same Holm multiplier::

        MCSE(p_holm_(i)) = (m - j) * MCSE(p_(j)),   j = the argmax over j <= i of (m - j) * p_(j)

    (first j on ties; the clip at 1 is ignored: a p_holm of 1 is far from any alpha). NaN p-values are
    not members and get NaN, as in :func:`holm`.
    """
    p = np.asarray(pvalues, dtype=np.float64)
    mcse = np.asarray(mcse, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    order = _members_ascending(p)
    m = len(order)
    if m == 0:
        return out
    multiplier = m - np.arange(m)
    scaled = multiplier * p[order]
    before = np.concatenate(([-np.inf], np.maximum.accumulate(scaled)[:-1]))
    # a position sets the running maximum when its scaled p passes every earlier one
    setter = np.maximum.accumulate(np.where(scaled > before, np.arange(m), 0))
    out[order] = multiplier[setter] * mcse[order][setter]
    return out


def fragile_decision(p_holm, p_holm_mcse, alpha: float, width: float = 2.0) -> np.ndarray:
    """Whether a Holm decision at ``alpha`` could flip with the bootstrap's seed, elementwise::

        fragile  iff  |p_holm - alpha| < width * MCSE(p_holm)      (width = 2)

    i.e. alpha lies within two Monte-Carlo standard errors of the adjusted p. False where p_holm is NaN
    (no Holm decision: exploratory rows, empty cells).
    """
    p_holm = np.asarray(p_holm, dtype=np.float64)
    error = np.asarray(p_holm_mcse, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        return np.isfinite(p_holm) & (np.abs(p_holm - alpha) < width * error)


def holm_decisions(pvalues, mcse, alpha: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One Holm family's ``(p_holm, p_holm_mcse, fragile)``: :func:`holm`, :func:`holm_mcse` and
    :func:`fragile_decision` at ``alpha`` over the raw p-values and their Monte-Carlo errors."""
    adjusted = holm(pvalues)
    adjusted_mcse = holm_mcse(pvalues, mcse)
    return adjusted, adjusted_mcse, fragile_decision(adjusted, adjusted_mcse, alpha)
