"""Agreement of an induced segmentation with gold (docs/method.md §5): Pk, WindowDiff, boundary P/R/F1.

**Representation.** A document of ``n`` paragraphs (0-based) is segmented by its set of *boundaries*: a
boundary at paragraph ``i`` (``0 < i < n``) means a section starts at paragraph ``i``. Paragraph 0
always starts a section and is never a boundary. From a sections table (``datamodel.SECTIONS``, or any
frame with ``doc_id, level, para_start, para_end``) the boundaries of all levels are every section start
(:func:`section_boundaries`); the top-level boundaries are the starts of level-1 sections only. An empty
parent heading (``para_end == para_start``) starts at the same paragraph as its first child, so it adds
no boundary of its own.

**Windows.** Both window metrics slide a probe over the ``n - 1`` gaps between consecutive paragraphs:
the probe at ``i`` (``0 <= i < n - k``) looks at paragraphs ``i`` and ``i + k``, i.e. at the boundaries
``b`` with ``i < b <= i + k``. There are ``n - k`` probes. The probe width is

    k = min(max(2, round_half_up(mean gold segment length / 2)), n - 1),

where the mean gold segment length is ``n / (gold boundaries + 1)`` paragraphs (Beeferman et al.'s
"half the mean reference segment length", in paragraphs, at least 2, clipped to the document). The
top-level variants take ``k`` from the top-level gold segments. This is nltk's convention
(``nltk.metrics.segmentation.pk``/``windowdiff`` on a string of ``n - 1`` gap characters, ``"1"`` at
gap ``b - 1`` for a boundary at ``b``) with ``k`` passed explicitly: nltk's own default ``k`` counts
gaps, not paragraphs.

**Degenerate documents.** A one-paragraph document has no gap and no probe: Pk and WindowDiff are
``nan`` (undefined, not perfect) and :func:`agreement_summary` averages over the documents where they
are defined. Boundary P/R/F1 follow the zero-division rule "1.0 when both sides have no boundary,
else 0.0 for a zero denominator".

References: D. Beeferman, A. Berger, J. Lafferty (1999), "Statistical models for text segmentation",
Machine Learning 34 (Pk); L. Pevzner, M. A. Hearst (2002), "A critique and improvement of an evaluation
metric for text segmentation", Computational Linguistics 28(1) (WindowDiff).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

# The keys of agreement_summary, in order (documented there).
SUMMARY_KEYS = (
    "n_docs", "pk", "windowdiff", "boundary_precision", "boundary_recall", "boundary_f1",
    "pk_top", "windowdiff_top", "boundary_precision_top", "boundary_recall_top", "boundary_f1_top",
    "sections_per_doc", "gold_sections_per_doc", "top_sections_per_doc", "gold_top_sections_per_doc",
)  # fmt: skip


def _round_half_up(value: float) -> int:
    return math.floor(value + 0.5)


def probe_width(gold_boundaries: Collection[int], n_paragraphs: int) -> int:
    """``k`` of the module docstring: half the mean gold segment length in paragraphs, at least 2,
    at most ``n - 1``; 0 for a one-paragraph document (no probe fits)."""
    if n_paragraphs < 2:
        return 0
    mean_segment = n_paragraphs / (len(set(gold_boundaries)) + 1)
    return min(max(2, _round_half_up(mean_segment / 2)), n_paragraphs - 1)


def _gap_indicator(boundaries: Iterable[int], n_paragraphs: int) -> np.ndarray:
    """1 at gap ``b - 1`` (between paragraphs ``b - 1`` and ``b``) for each boundary ``b``."""
    gaps = np.zeros(max(n_paragraphs - 1, 0), dtype=np.int64)
    for boundary in boundaries:
        if not 0 < boundary < n_paragraphs:
            raise ValueError(f"boundary {boundary} outside 1..{n_paragraphs - 1}")
        gaps[boundary - 1] = 1
    return gaps


def _probe_counts(boundaries: Iterable[int], n_paragraphs: int, k: int) -> np.ndarray:
    """Boundaries inside each probe: entry ``i`` counts boundaries ``b`` with ``i < b <= i + k``."""
    cumulative = np.concatenate([[0], np.cumsum(_gap_indicator(boundaries, n_paragraphs))])
    return cumulative[k:] - cumulative[:-k]


def _check_k(k: int | None, gold: Collection[int], n_paragraphs: int) -> int:
    k = probe_width(gold, n_paragraphs) if k is None else k
    if not 1 <= k < n_paragraphs:
        raise ValueError(f"probe width k={k} must lie in 1..{n_paragraphs - 1} for {n_paragraphs} paragraphs")
    return k


def pk(gold: Collection[int], induced: Collection[int], n_paragraphs: int, k: int | None = None) -> float:
    """Beeferman et al.'s Pk: the share of probes ``(i, i + k)`` on which gold and induced disagree
    about whether paragraphs ``i`` and ``i + k`` lie in the same segment,

        Pk = 1/(n - k) * sum_{i=0}^{n-k-1} [ (g(i) > 0) != (h(i) > 0) ],

    with ``g(i)``/``h(i)`` the gold/induced boundaries ``b`` with ``i < b <= i + k``. 0 is perfect.
    ``nan`` for a one-paragraph document; ``k`` defaults to :func:`probe_width`."""
    if n_paragraphs < 2:
        return math.nan
    k = _check_k(k, gold, n_paragraphs)
    disagree = (_probe_counts(gold, n_paragraphs, k) > 0) != (_probe_counts(induced, n_paragraphs, k) > 0)
    return float(disagree.mean())


def windowdiff(gold: Collection[int], induced: Collection[int], n_paragraphs: int, k: int | None = None) -> float:
    """Pevzner & Hearst's WindowDiff: the share of probes where gold and induced place a different
    number of boundaries,

        WD = 1/(n - k) * sum_{i=0}^{n-k-1} [ g(i) != h(i) ],

    (same probes as :func:`pk`; it also penalises a wrong count of near misses). 0 is perfect. ``nan``
    for a one-paragraph document."""
    if n_paragraphs < 2:
        return math.nan
    k = _check_k(k, gold, n_paragraphs)
    differ = _probe_counts(gold, n_paragraphs, k) != _probe_counts(induced, n_paragraphs, k)
    return float(differ.mean())


@dataclass(frozen=True)
class BoundaryMatch:
    """Matched boundaries and the two set sizes of one document (or pooled over documents), and what they
    give: precision = matched / induced, recall = matched / gold, F1 their harmonic mean (1.0 each when
    both sets are empty: nothing to find, nothing claimed)."""

    matched: int
    n_induced: int
    n_gold: int

    def __add__(self, other: BoundaryMatch) -> BoundaryMatch:
        return BoundaryMatch(self.matched + other.matched, self.n_induced + other.n_induced, self.n_gold + other.n_gold)

    @property
    def precision(self) -> float:
        return _ratio(self.matched, self.n_induced, both_empty=self.n_induced == self.n_gold == 0)

    @property
    def recall(self) -> float:
        return _ratio(self.matched, self.n_gold, both_empty=self.n_induced == self.n_gold == 0)

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0


def _ratio(numerator: int, denominator: int, both_empty: bool) -> float:
    if denominator:
        return numerator / denominator
    return 1.0 if both_empty else 0.0


def match_boundaries(gold: Collection[int], induced: Collection[int], tolerance: int = 1) -> BoundaryMatch:
    """The most induced boundaries matchable to gold ones within ``tolerance`` paragraphs, each gold
    boundary used at most once. Sweeping induced boundaries in order and giving each the leftmost free
    gold boundary within reach is a maximum matching for intervals on a line (an earlier gold boundary
    is useless to every later induced one)."""
    gold_sorted, free_from = sorted(set(gold)), 0
    matched = 0
    for boundary in sorted(set(induced)):
        while free_from < len(gold_sorted) and gold_sorted[free_from] < boundary - tolerance:
            free_from += 1
        if free_from < len(gold_sorted) and gold_sorted[free_from] <= boundary + tolerance:
            matched += 1
            free_from += 1
    return BoundaryMatch(matched, len(set(induced)), len(set(gold)))


def section_boundaries(starts: Iterable[int], n_paragraphs: int) -> set[int]:
    """Boundaries from section start paragraphs: every start inside ``1..n - 1``, duplicates once. (Paragraph
    0 always starts a section; an empty heading at the very end, starting at ``n``, starts nothing.)"""
    return {int(start) for start in starts if 0 < start < n_paragraphs}


@dataclass(frozen=True)
class _DocSegments:
    n_paragraphs: int
    boundaries: set[int]
    top_boundaries: set[int]
    n_sections: int
    n_top_sections: int


def _segments_by_doc(sections: pl.DataFrame) -> dict[str, _DocSegments]:
    result = {}
    for doc_id, frame in sections.sort("doc_id", "para_start").group_by("doc_id", maintain_order=True):
        top = frame.filter(pl.col("level") == 1)
        n_paragraphs = int(frame["para_end"].max())
        result[doc_id[0]] = _DocSegments(
            n_paragraphs=n_paragraphs,
            boundaries=section_boundaries(frame["para_start"].to_list(), n_paragraphs),
            top_boundaries=section_boundaries(top["para_start"].to_list(), n_paragraphs),
            n_sections=frame.height,
            n_top_sections=top.height,
        )
    return result


def agreement_summary(
    induced_sections: pl.DataFrame, gold_sections: pl.DataFrame, doc_ids: Sequence[str]
) -> dict[str, float]:
    """Agreement over ``doc_ids``; the keys (``SUMMARY_KEYS``):

    - ``n_docs``: documents averaged;
    - ``pk``, ``windowdiff``: per-document values over boundaries of all levels, then the mean over the
      documents where they are defined (``nan`` only when none is);
    - ``boundary_precision``, ``boundary_recall``, ``boundary_f1``: **micro** averages (matches and set
      sizes pooled over documents, tolerance one paragraph), so a document with one boundary does not
      swing the mean between 0 and 1;
    - the same five with suffix ``_top``: level-1 section starts only (``k`` from top-level gold);
    - ``sections_per_doc``, ``gold_sections_per_doc``, ``top_sections_per_doc``,
      ``gold_top_sections_per_doc``: mean rows per document (empty parent headings count as sections).

    A document missing from either table, or whose two tables disagree on its paragraph count, is a
    ``ValueError``."""
    induced, gold = _segments_by_doc(induced_sections), _segments_by_doc(gold_sections)
    missing = [doc_id for doc_id in doc_ids if doc_id not in induced or doc_id not in gold]
    if missing:
        raise ValueError(f"documents without sections in one of the tables: {missing[:5]}")
    values: dict[str, list[float]] = {key: [] for key in ("pk", "windowdiff", "pk_top", "windowdiff_top")}
    match, match_top = BoundaryMatch(0, 0, 0), BoundaryMatch(0, 0, 0)
    for doc_id in doc_ids:
        ours, theirs = induced[doc_id], gold[doc_id]
        n = theirs.n_paragraphs
        if ours.n_paragraphs != n:
            raise ValueError(f"{doc_id}: induced sections cover {ours.n_paragraphs} paragraphs, gold {n}")
        values["pk"].append(pk(theirs.boundaries, ours.boundaries, n))
        values["windowdiff"].append(windowdiff(theirs.boundaries, ours.boundaries, n))
        values["pk_top"].append(pk(theirs.top_boundaries, ours.top_boundaries, n))
        values["windowdiff_top"].append(windowdiff(theirs.top_boundaries, ours.top_boundaries, n))
        match += match_boundaries(theirs.boundaries, ours.boundaries)
        match_top += match_boundaries(theirs.top_boundaries, ours.top_boundaries)
    summary: dict[str, float] = {"n_docs": len(doc_ids)}
    for key in ("pk", "windowdiff"):
        summary[key] = _defined_mean(values[key])
    summary.update(boundary_precision=match.precision, boundary_recall=match.recall, boundary_f1=match.f1)
    for key in ("pk_top", "windowdiff_top"):
        summary[key] = _defined_mean(values[key])
    summary.update(
        boundary_precision_top=match_top.precision, boundary_recall_top=match_top.recall, boundary_f1_top=match_top.f1
    )
    summary.update(
        sections_per_doc=_defined_mean([induced[d].n_sections for d in doc_ids]),
        gold_sections_per_doc=_defined_mean([gold[d].n_sections for d in doc_ids]),
        top_sections_per_doc=_defined_mean([induced[d].n_top_sections for d in doc_ids]),
        gold_top_sections_per_doc=_defined_mean([gold[d].n_top_sections for d in doc_ids]),
    )
    return {key: summary[key] for key in SUMMARY_KEYS}


def _defined_mean(values: Sequence[float]) -> float:
    defined = [value for value in values if not math.isnan(value)]
    return float(np.mean(defined)) if defined else math.nan


# ---- baselines: what an inducer must beat under the same conventions -----------------------------------

# Each names a segmentation built from the gold one's counts alone, scored by agreement_summary like an
# inducer: one section per document; the paragraphs split evenly into as many segments as gold has
# (distinct section starts: an empty parent heading starts where its first child does, so it adds none);
# the same with gold's top-level segment count.
BASELINES = ("single section", "even split, gold count", "even split, gold top-level count")


def even_split_starts(n_paragraphs: int, n_segments: int) -> list[int]:
    """Start paragraphs of ``n_segments`` near-equal segments of ``n_paragraphs`` (``floor(i * n / k)``,
    ``k`` clipped to ``1..n``): distinct, ``0`` first."""
    k = max(1, min(n_segments, n_paragraphs))
    return [i * n_paragraphs // k for i in range(k)]


def baseline_sections(gold_sections: pl.DataFrame, doc_ids: Sequence[str], baseline: str) -> pl.DataFrame:
    """The ``baseline`` segmentation (one of ``BASELINES``) of ``doc_ids`` as level-1 sections
    (``doc_id, level, para_start, para_end``: what :func:`agreement_summary` reads)."""
    if baseline not in BASELINES:
        raise ValueError(f"unknown baseline {baseline!r}; expected one of {BASELINES}")
    gold = _segments_by_doc(gold_sections)
    rows = []
    for doc_id in doc_ids:
        segments = gold[doc_id]
        n = segments.n_paragraphs
        count = {
            "single section": 1,
            "even split, gold count": len(segments.boundaries) + 1,
            "even split, gold top-level count": len(segments.top_boundaries) + 1,
        }[baseline]
        starts = even_split_starts(n, count)
        rows += [(doc_id, 1, start, end) for start, end in zip(starts, [*starts[1:], n])]
    return pl.DataFrame(
        rows, schema={"doc_id": pl.String, "level": pl.Int8, "para_start": pl.Int32, "para_end": pl.Int32}, orient="row"
    )


def baseline_agreement(gold_sections: pl.DataFrame, doc_ids: Sequence[str]) -> dict[str, dict[str, float]]:
    """:func:`agreement_summary` of every baseline against gold over ``doc_ids``, by baseline name."""
    return {
        baseline: agreement_summary(baseline_sections(gold_sections, doc_ids, baseline), gold_sections, doc_ids)
        for baseline in BASELINES
    }


def nonempty_sections_per_doc(sections: pl.DataFrame, doc_ids: Sequence[str]) -> float:
    """Mean section rows per document that hold a paragraph of their own (empty parent headings left out)."""
    if not doc_ids:
        return math.nan
    own = sections.filter(pl.col("doc_id").is_in(list(doc_ids)) & (pl.col("para_end") > pl.col("para_start")))
    return own.height / len(doc_ids)
