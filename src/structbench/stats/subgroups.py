"""Subgroup (moderator) analysis of one cell's pairwise contrasts (docs/method.md §11, "Subgroups (moderators)").

For each contrast (treatment − control, on the paired per-question deltas of :func:`structbench.stats.paired
.paired_deltas`) and each moderator (:mod:`structbench.stats.moderators`: sides A and B, finer levels):

- each side's (and each level's) Δ: the unweighted mean delta over its questions, with ``n_queries`` and
  ``n_docs`` (the documents holding them) and a 95% percentile CI;
- the interaction Δ_A − Δ_B with a 95% percentile CI and a two-sided bootstrap p
  (:func:`structbench.stats.bootstrap.bootstrap_p`), its Monte-Carlo error, Holm over the moderators of the
  contrast (:func:`structbench.stats.paired.holm_decisions`, fragile decisions marked), and its dz: the
  interaction over the standard deviation (ddof 1) of all the contrast's per-question deltas.

**The same draws as the contrast.** A contrast's bootstrap resamples the documents its paired questions lie in
(``stats.cluster: query``: the questions), sorted, with the study's B and seed
(:func:`structbench.stats.contrasts.contrast_table`); the subgroup analysis takes exactly those draws
(:func:`structbench.stats.bootstrap.bootstrap_totals` over the same units, B and seed), and in each replicate
a subgroup's mean is taken over the questions of the drawn documents::

    mean*_{b,S} = sum_{d in draw_b} sum_{d,S} / sum_{d in draw_b} count_{d,S}

so a document-level moderator (depth: a document's questions are all on one side) and a question-level one
(a document's questions on both sides) are resampled alike. A replicate that draws no question of a subgroup
has no mean for it: it is dropped from that subgroup's CI (and from the interaction's when either side is
empty), and the rows count the dropped replicates (``n_empty_resamples``) beside the ones used
(``n_resamples``). A p is then over the replicates used, its Monte-Carlo error at that count.

**Not testable.** A side whose questions lie in fewer than :data:`MIN_SUBGROUP_DOCS` (20) documents makes its
moderator not testable on that sample (pre-registered, docs/results.md): the sides and the interaction are
reported with their CIs, the interaction gets no p and stays out of the contrast's Holm family. Below about 20
clusters a clustered percentile bootstrap's intervals are too narrow (:data:`structbench.stats.contrasts
.MIN_CLUSTERS`), so those CIs are descriptive only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from structbench.defaults import ALPHA, BOOTSTRAP_ITERS
from structbench.stats.bootstrap import bootstrap_p, bootstrap_p_mcse, bootstrap_totals, percentile_ci
from structbench.stats.contrasts import CLUSTER_UNITS, MIN_CLUSTERS
from structbench.stats.moderators import DEFAULT_QTYPE_REFERENCE, Labelling, moderator_labels
from structbench.stats.paired import PairedDeltas, holm_decisions, paired_deltas

MIN_SUBGROUP_DOCS = MIN_CLUSTERS  # pre-registered: a side in fewer documents is not testable
# The table this module writes, one row per side, level and interaction (docs/method.md §3), as
# structbench.stats.contrasts.CONTRAST_COLUMNS beside the contrasts: a schema in structbench.datamodel, which every
# script imports, would change the code version of every rule (structbench.provenance) and rerun whole runs.
SUBGROUP_COLUMNS = {
    "contrast": pl.String,
    "treatment": pl.String,
    "control": pl.String,
    "metric": pl.String,
    "moderator": pl.String,
    "kind": pl.String,  # subgroup (a tested side), level (one level of a side holding several), interaction
    "group": pl.String,  # A or B; "A − B" for the interaction
    "level": pl.String,  # the side's or level's label; the interaction's "A label − B label"
    "delta": pl.Float64,
    "ci_low": pl.Float64,
    "ci_high": pl.Float64,
    "n_queries": pl.Int64,
    "n_docs": pl.Int64,
    "n_excluded": pl.Int64,  # the contrast's paired questions this moderator could not label
    "n_resamples": pl.Int64,  # the replicates the CI (and p) are taken over
    "n_empty_resamples": pl.Int64,  # the replicates dropped: a subgroup drew no question
    "p": pl.Float64,
    "p_mcse": pl.Float64,
    "p_holm": pl.Float64,
    "p_holm_mcse": pl.Float64,
    "holm_fragile": pl.Boolean,
    "dz": pl.Float64,
    "testable": pl.Boolean,
    "note": pl.String,
    "cluster": pl.String,
}


@dataclass(frozen=True)
class _Subset:
    """One subgroup of a contrast's paired questions: a side, or a level within one."""

    moderator: str
    kind: str
    group: str
    level: str
    members: np.ndarray  # bool over the paired questions


def _scores_of(scores: pl.DataFrame, condition: str, metric: str) -> pl.DataFrame:
    return scores.filter(pl.col("condition") == condition).select("qid", "doc_id", metric)


def _subsets(paired: PairedDeltas, labelling: Labelling) -> tuple[list[_Subset], int]:
    """The two sides of a moderator over the paired questions, then the levels of a side holding several (in
    level order); and the paired questions it leaves unlabelled."""
    by_qid = {qid: (level, group) for qid, level, group in labelling.labels.iter_rows()}
    labelled = [by_qid.get(qid) for qid in paired.qid.tolist()]
    groups = np.array([entry[1] if entry else "" for entry in labelled])
    levels = np.array([entry[0] if entry else "" for entry in labelled])
    side = labelling.moderator
    subsets = [
        _Subset(side.name, "subgroup", "A", side.a, groups == "A"),
        _Subset(side.name, "subgroup", "B", side.b, groups == "B"),
    ]
    for group in ("A", "B"):
        names = sorted(set(levels[groups == group].tolist()))
        if len(names) > 1:
            in_group = groups == group
            subsets += [_Subset(side.name, "level", group, name, in_group & (levels == name)) for name in names]
    return subsets, int(sum(entry is None for entry in labelled))


def _units(paired: PairedDeltas, cluster: str) -> np.ndarray:
    """What the contrast's bootstrap resamples for each paired question: its document, or itself."""
    return (paired.doc_id if cluster == "document" else paired.qid).astype(str)


def _replicate_means(split: Sequence[tuple[PairedDeltas, Sequence[_Subset]]], B: int, seed: int, cluster: str):
    """Per contrast, the (n_boot x S) replicate means of its subsets over the contrast's own draws, and the
    (n_boot x S) mask of the replicates in which a subset drew at least one question (elsewhere the mean is 0,
    never used). The contrasts of ``split`` resample the same units, so they share one pass over the draws."""
    index = np.unique(_units(split[0][0], cluster))
    columns = []
    for paired, subsets in split:
        position = np.searchsorted(index, _units(paired, cluster))
        for subset in subsets:
            weight = subset.members.astype(np.float64)
            columns.append(
                (np.bincount(position, paired.delta * weight, len(index)), np.bincount(position, weight, len(index)))
            )
    sums, counts = (np.stack(part, axis=1) for part in zip(*columns))
    totals = bootstrap_totals(np.concatenate((sums, counts), axis=1), n_boot=B, seed=seed)
    drawn_sums, drawn_counts = totals[:, : len(columns)], totals[:, len(columns) :]
    drawn = drawn_counts > 0
    means = np.divide(drawn_sums, drawn_counts, out=np.zeros_like(drawn_sums), where=drawn)
    edges = np.cumsum([0] + [len(subsets) for _, subsets in split])
    return [(means[:, lo:hi], drawn[:, lo:hi]) for lo, hi in zip(edges[:-1], edges[1:])]


def _interval(replicates: np.ndarray) -> tuple[float, float]:
    if len(replicates) == 0:
        return float("nan"), float("nan")
    low, high = percentile_ci(replicates)
    return float(low), float(high)


def _empty_note(dropped: int, B: int, what: str) -> str:
    return f"{dropped} of {B} resamples drew no question of {what}: left out of its CI" if dropped else ""


def _join(*notes: str) -> str:
    return "; ".join(note for note in notes if note)


def _subset_row(base: dict, subset: _Subset, paired: PairedDeltas, replicates: np.ndarray, B: int, excluded: int):
    """A side's or level's row: its Δ, CI over the replicates that drew one of its questions, n, testability."""
    picked = subset.members
    n_docs = len(np.unique(paired.doc_id[picked]))
    low, high = _interval(replicates)
    testable = n_docs >= MIN_SUBGROUP_DOCS
    return base | {
        "moderator": subset.moderator,
        "kind": subset.kind,
        "group": subset.group,
        "level": subset.level,
        "delta": float(paired.delta[picked].mean()) if picked.any() else float("nan"),
        "ci_low": low,
        "ci_high": high,
        "n_queries": int(picked.sum()),
        "n_docs": n_docs,
        "n_excluded": excluded,
        "n_resamples": len(replicates),
        "n_empty_resamples": B - len(replicates),
        "testable": testable,
        "note": _join(
            "" if picked.any() else "no question",
            "" if testable else f"fewer than {MIN_SUBGROUP_DOCS} documents",
            _empty_note(B - len(replicates), B, subset.level),
        ),
    }


def _interaction_row(base: dict, side_a: dict, side_b: dict, label: str, paired: PairedDeltas, members, replicates, B):
    """The interaction row: Δ_A − Δ_B, its CI over the replicates that drew both sides, and (testable: both sides
    in at least MIN_SUBGROUP_DOCS documents) its p, Monte-Carlo error and dz."""
    low, high = _interval(replicates)
    interaction = side_a["delta"] - side_b["delta"]
    testable = side_a["testable"] and side_b["testable"]
    p = float(bootstrap_p(replicates)) if testable and len(replicates) else float("nan")
    sd = float(paired.delta.std(ddof=1)) if paired.n_queries > 1 else float("nan")
    small = ", ".join(f"{side['level']}: {side['n_docs']}" for side in (side_a, side_b) if not side["testable"])
    return base | {
        "moderator": side_a["moderator"],
        "kind": "interaction",
        "group": "A − B",
        "level": label,
        "delta": interaction,
        "ci_low": low,
        "ci_high": high,
        "n_queries": side_a["n_queries"] + side_b["n_queries"],
        "n_docs": len(np.unique(paired.doc_id[members])),
        "n_excluded": side_a["n_excluded"],
        "n_resamples": len(replicates),
        "n_empty_resamples": B - len(replicates),
        "p": p,
        "p_mcse": float(bootstrap_p_mcse(p, len(replicates))) if np.isfinite(p) else float("nan"),
        "dz": interaction / sd if sd > 0 else float("nan"),
        "testable": testable,
        "note": _join(
            "" if testable else f"not testable: a side in fewer than {MIN_SUBGROUP_DOCS} documents ({small})",
            _empty_note(B - len(replicates), B, "one side"),
        ),
    }


def _contrast_rows(
    contrast: Mapping,
    paired: PairedDeltas,
    labellings: Sequence[Labelling],
    split: Sequence[tuple[list[_Subset], int]],
    replicates: tuple[np.ndarray, np.ndarray],
    metric: str,
    B: int,
    cluster: str,
) -> list[dict]:
    """Every row of one contrast: per moderator its sides, levels and interaction; Holm over the interactions.
    ``split`` is each moderator's subsets and unlabelled count, ``replicates`` their means and drawn mask."""
    base = {
        "contrast": contrast["name"],
        "treatment": contrast["treatment"],
        "control": contrast["control"],
        "metric": metric,
        "cluster": cluster,
        "p": float("nan"),
        "p_mcse": float("nan"),
        "p_holm": float("nan"),
        "p_holm_mcse": float("nan"),
        "holm_fragile": False,
        "dz": float("nan"),
    }
    means, drawn = replicates
    rows: list[dict] = []
    interactions: list[dict] = []
    first = 0  # the column of the moderator's side A; side B is the next, then its levels
    for labelling, (members, excluded) in zip(labellings, split):
        for offset, subset in enumerate(members):
            column = first + offset
            rows.append(_subset_row(base, subset, paired, means[drawn[:, column], column], B, excluded))
        side_a, side_b = rows[-len(members)], rows[-len(members) + 1]
        both = drawn[:, first] & drawn[:, first + 1]
        differences = means[both, first] - means[both, first + 1]
        either = members[0].members | members[1].members
        label = labelling.moderator.interaction
        rows.append(_interaction_row(base, side_a, side_b, label, paired, either, differences, B))
        interactions.append(rows[-1])
        first += len(members)
    decisions = holm_decisions([r["p"] for r in interactions], [r["p_mcse"] for r in interactions], ALPHA)
    for row, adjusted, error, fragile in zip(interactions, *decisions):
        row.update(p_holm=float(adjusted), p_holm_mcse=float(error), holm_fragile=bool(fragile))
    return rows


def _check_pairwise(contrast: Mapping, conditions: set[str]) -> None:
    if "treatment" not in contrast or "control" not in contrast:
        raise ValueError(
            f"subgroups: contrast {contrast.get('name')!r} is not a pairwise (treatment/control) contrast; "
            "a dose-response has no per-question delta to split"
        )
    missing = [c for c in (contrast["treatment"], contrast["control"]) if c not in conditions]
    if missing:
        raise ValueError(f"subgroups: contrast {contrast['name']!r}: conditions {missing} have no scores in this cell")


def subgroup_table(
    scores: pl.DataFrame,
    contrasts: Sequence[Mapping],
    labellings: Sequence[Labelling],
    metric: str,
    *,
    B: int = BOOTSTRAP_ITERS,
    seed: int = 0,
    cluster: str = "document",
) -> pl.DataFrame:
    """The subgroup table of one cell (:data:`SUBGROUP_COLUMNS`; module docstring): per pairwise contrast (in the
    given order) and moderator (in ``labellings``' order), the A and B rows, the level rows of a side holding
    several levels, then the interaction row. ``scores`` is the cell's long table (``qid, doc_id, condition,
    <metric>``); ``contrasts`` their params (``name, treatment, control``); ``B``, ``seed`` and ``cluster`` the
    contrasts' own, so the draws are theirs. Deterministic. A contrast with no paired question, or a cell without
    scores, gives no row."""
    if cluster not in CLUSTER_UNITS:
        raise ValueError(f"stats.cluster must be one of {list(CLUSTER_UNITS)}, got {cluster!r}")
    if scores.is_empty() or not labellings:
        return pl.DataFrame(schema=SUBGROUP_COLUMNS)
    for column in ("qid", "doc_id", "condition", metric):
        if column not in scores.columns:
            raise ValueError(f"scores are missing column {column!r}")
    conditions = set(scores["condition"].unique().to_list())
    rows: list[dict] = []
    for contrast in contrasts:
        _check_pairwise(contrast, conditions)
    prepared = []  # (contrast, paired deltas, each moderator's subsets and unlabelled count)
    for contrast in contrasts:
        paired = paired_deltas(
            _scores_of(scores, contrast["treatment"], metric), _scores_of(scores, contrast["control"], metric), metric
        )
        if paired.n_queries:
            prepared.append((contrast, paired, [_subsets(paired, labelling) for labelling in labellings]))
    # contrasts over the same units draw the same replicates (contrast_table shares them too): one pass each
    by_units: dict[tuple, list[int]] = {}
    for i, (_, paired, _) in enumerate(prepared):
        by_units.setdefault(tuple(np.unique(_units(paired, cluster))), []).append(i)
    replicates = {}
    for members in by_units.values():
        split = [(prepared[i][1], [s for subsets, _ in prepared[i][2] for s in subsets]) for i in members]
        replicates.update(zip(members, _replicate_means(split, B, seed, cluster)))
    for i, (contrast, paired, split) in enumerate(prepared):
        rows += _contrast_rows(contrast, paired, labellings, split, replicates[i], metric, B, cluster)
    return pl.DataFrame(rows, schema=SUBGROUP_COLUMNS)


def cell_subgroups(
    scores: pl.DataFrame,
    queries: pl.DataFrame,
    sections: pl.DataFrame,
    subgroups: Mapping,
    metric: str,
    *,
    tokenize: Callable[[str], Sequence[str]],
    qtype_reference: str = DEFAULT_QTYPE_REFERENCE,
    B: int = BOOTSTRAP_ITERS,
    seed: int = 0,
    cluster: str = "document",
) -> pl.DataFrame:
    """The workflow's entry: the moderators ``subgroups["moderators"]`` labelled on the corpus's ``queries`` and gold
    ``sections`` (:func:`structbench.stats.moderators.moderator_labels`; ``tokenize`` the anchoring analyzer,
    ``qtype_reference`` the qtype moderator's side A), then :func:`subgroup_table` over the contrasts
    ``subgroups["contrasts"]`` (their params)."""
    labellings = moderator_labels(
        list(subgroups["moderators"]), queries, sections, tokenize=tokenize, reference=qtype_reference
    )
    return subgroup_table(scores, list(subgroups["contrasts"]), labellings, metric, B=B, seed=seed, cluster=cluster)
