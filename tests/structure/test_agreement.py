"""Segmentation agreement metrics (structbench.structure.agreement): hand-worked cases and nltk cross-checks.

Conventions under test: a boundary ``b`` means a section starts at paragraph ``b`` (``0 < b < n``); a probe
``i`` (``0 <= i < n - k``) sees the boundaries ``i < b <= i + k``; ``k`` = half the mean gold segment length
rounded half up, at least 2, at most ``n - 1``.
"""

import math

import polars as pl
import pytest
from conftest import SHARED_DATA
from nltk.metrics.segmentation import pk as nltk_pk
from nltk.metrics.segmentation import windowdiff as nltk_windowdiff

from structbench.corpus.build import build_tables
from structbench.corpus.qasper import parse_paper, read_qasper_records
from structbench.structure.agreement import (
    SUMMARY_KEYS,
    agreement_summary,
    match_boundaries,
    pk,
    probe_width,
    section_boundaries,
    windowdiff,
)

QASPER10 = SHARED_DATA / "qasper/sample-train10"
QASPER10_FILE = QASPER10 / "qasper-train-first10.official-format.json"


def gap_string(boundaries, n):
    """nltk's representation: one character per gap between consecutive paragraphs, "1" where a section
    starts at the paragraph after the gap."""
    return "".join("1" if gap + 1 in set(boundaries) else "0" for gap in range(n - 1))


def frame(rows):
    """A minimal sections frame from (doc_id, level, para_start, para_end) rows."""
    return pl.DataFrame(rows, schema=["doc_id", "level", "para_start", "para_end"], orient="row")


# ------------------------------------------------------------------------------------------ probe width


@pytest.mark.parametrize(
    ("gold", "n", "expected"),
    [
        (set(), 10, 5),  # one segment of 10: 10 / 2 = 5
        ({4}, 10, 3),  # mean 5, 5 / 2 = 2.5 rounds half up to 3 (Python's round would give 2)
        ({2, 4, 6, 8}, 10, 2),  # mean 2, 2 / 2 = 1, raised to the floor of 2
        (set(), 3, 2),  # 1.5 -> 2, and 2 <= n - 1
        (set(), 2, 1),  # the floor 2 is clipped to n - 1 = 1: one probe over the only gap
        (set(), 1, 0),  # no gap, no probe
    ],
)
def test_probe_width_is_half_the_mean_gold_segment_rounded_half_up(gold, n, expected):
    assert probe_width(gold, n) == expected


# ---------------------------------------------------------------------------------------- Pk and WD


def test_pk_and_windowdiff_hand_worked_near_miss():
    # n = 10, gold {5}: segments of 5, k = round_half_up(2.5) = 3, probes i = 0..6 (7 of them).
    # gold b=5 is seen by probes i with i < 5 <= i + 3: i in {2, 3, 4}  -> g = 0 0 1 1 1 0 0
    # induced b=6 is seen by i in {3, 4, 5}                              -> h = 0 0 0 1 1 1 0
    # they differ at i = 2 and i = 5: Pk = WD = 2/7.
    assert pk({5}, {6}, 10) == pytest.approx(2 / 7)
    assert windowdiff({5}, {6}, 10) == pytest.approx(2 / 7)


def test_windowdiff_counts_boundaries_pk_only_their_presence():
    # gold {5} as above: g = 0 0 1 1 1 0 0. induced {4, 6}: b=4 seen by i in {1, 2, 3}, b=6 by {3, 4, 5},
    # so h = 0 1 1 2 1 1 0. Pk compares g>0 = 0 0 1 1 1 0 0 with h>0 = 0 1 1 1 1 1 0: i = 1, 5 -> 2/7.
    # WD compares counts: i = 1 (0 v 1), 3 (1 v 2), 5 (0 v 1) -> 3/7.
    assert pk({5}, {4, 6}, 10) == pytest.approx(2 / 7)
    assert windowdiff({5}, {4, 6}, 10) == pytest.approx(3 / 7)


def test_missing_every_boundary_and_perfect_agreement():
    # gold {5}, nothing induced: g = 0 0 1 1 1 0 0, h = 0: three probes differ -> 3/7.
    assert pk({5}, set(), 10) == pytest.approx(3 / 7)
    assert windowdiff({5}, set(), 10) == pytest.approx(3 / 7)
    assert pk({3, 7}, {3, 7}, 10) == 0.0
    assert windowdiff({3, 7}, {3, 7}, 10) == 0.0


def test_one_paragraph_document_is_undefined_and_boundaries_must_be_inside():
    assert math.isnan(pk(set(), set(), 1))
    assert math.isnan(windowdiff(set(), set(), 1))
    with pytest.raises(ValueError, match="outside"):
        pk({10}, set(), 10)
    with pytest.raises(ValueError, match="probe width"):
        windowdiff({5}, set(), 10, k=10)


@pytest.mark.parametrize(
    ("gold", "induced", "n"),
    [
        ({5}, {6}, 10),
        ({5}, {4, 6}, 10),
        ({2, 3, 9}, {1, 8}, 12),
        ({1}, set(), 2),
        (set(), {1, 2}, 3),
        ({4, 9, 10, 17, 30}, {3, 9, 11, 12, 25, 31}, 33),
    ],
)
@pytest.mark.parametrize("k", [None, 1, 2, 4])
def test_matches_nltk_on_hand_examples(gold, induced, n, k):
    width = probe_width(gold, n) if k is None else min(k, n - 1)
    ref, hyp = gap_string(gold, n), gap_string(induced, n)
    assert pk(gold, induced, n, width) == pytest.approx(nltk_pk(ref, hyp, width))
    assert windowdiff(gold, induced, n, width) == pytest.approx(nltk_windowdiff(ref, hyp, width))


# ----------------------------------------------------------------------------------- boundary P/R/F1


def test_boundary_precision_recall_f1_hand_worked():
    # gold {5, 10, 15}, induced {4, 6, 15, 18}, tolerance 1: 4 -> 5; 6 would need 5 again (used) and 10 is
    # too far; 15 -> 15; 18 -> nothing. 2 matched: P = 2/4, R = 2/3, F1 = 2PR/(P+R) = (2/3)/(7/6) = 4/7.
    match = match_boundaries({5, 10, 15}, {4, 6, 15, 18})
    precision, recall, f1 = match.precision, match.recall, match.f1
    assert (precision, recall) == (pytest.approx(0.5), pytest.approx(2 / 3))
    assert f1 == pytest.approx(4 / 7)


def test_boundary_matching_is_maximum_not_nearest():
    # gold {4, 6}, induced {5, 7}: matching 5 to its nearest gold 6 (a tie with 4) would strand 7; the
    # sweep gives 5 the leftmost reachable gold 4 and 7 gets 6: both match.
    assert match_boundaries({4, 6}, {5, 7}).matched == 2
    assert match_boundaries({4, 6}, {5}).matched == 1  # one induced boundary matches one gold at most
    assert match_boundaries({5}, {3, 7}).matched == 0  # two paragraphs off is outside the tolerance
    assert match_boundaries({5}, {3}, tolerance=2).matched == 1


def test_boundary_precision_recall_f1_zero_division_convention():
    def prf(gold, induced):
        match = match_boundaries(gold, induced)
        return match.precision, match.recall, match.f1

    assert prf(set(), set()) == (1.0, 1.0, 1.0)  # nothing to find, nothing claimed
    assert prf({3}, set()) == (0.0, 0.0, 0.0)
    assert prf(set(), {3}) == (0.0, 0.0, 0.0)


# -------------------------------------------------------------------------------------------- summary


def test_section_boundaries_ignore_paragraph_zero_empty_headings_and_the_end():
    # An empty parent heading at 4 shares its start with its first child; a trailing empty heading at 9
    # (= n) starts nothing.
    assert section_boundaries([0, 4, 4, 7, 9], 9) == {4, 7}


def test_agreement_summary_hand_worked_two_documents_and_a_one_paragraph_one():
    gold = frame(
        [
            ("a", 1, 0, 5),
            ("a", 1, 5, 10),  # gold boundary {5}
            ("b", 1, 0, 3),
            ("b", 1, 3, 3),
            ("b", 2, 3, 6),
            ("b", 2, 6, 8),  # all levels {3, 6}; top {3}
            ("c", 1, 0, 1),
        ]
    )
    induced = frame(
        [
            ("a", 1, 0, 6),
            ("a", 1, 6, 10),  # {6}: Pk = WD = 2/7 (hand-worked above)
            ("b", 1, 0, 3),
            ("b", 1, 3, 6),
            ("b", 1, 6, 8),  # all levels {3, 6} (perfect); top {3, 6}
            ("c", 1, 0, 1),
        ]
    )
    summary = agreement_summary(induced, gold, ["a", "b", "c"])
    assert list(summary) == list(SUMMARY_KEYS)
    assert summary["n_docs"] == 3
    # c has one paragraph: Pk undefined there, so the means run over a and b.
    assert summary["pk"] == pytest.approx((2 / 7 + 0.0) / 2)
    assert summary["windowdiff"] == pytest.approx((2 / 7 + 0.0) / 2)
    # micro: a matches 6 to 5 (tolerance 1), b matches both: 3 of 3 induced, 3 of 3 gold.
    assert summary["boundary_f1"] == pytest.approx(1.0)
    # top level: a as before (Pk 2/7); b gold top {3}, induced {3, 6}, n = 8, k = round_half_up(4/2) = 2,
    # probes i = 0..5 see b=3 at i in {1, 2} and b=6 at i in {4, 5}: g = 0 1 1 0 0 0, h = 0 1 1 0 1 1 ->
    # two of six differ -> Pk_top(b) = 1/3.
    assert summary["pk_top"] == pytest.approx((2 / 7 + 1 / 3) / 2)
    # top-level micro: a 1/1 matched, b 1 matched of 2 induced, 1 gold: P = 2/3, R = 2/2, F1 = 0.8.
    assert summary["boundary_precision_top"] == pytest.approx(2 / 3)
    assert summary["boundary_recall_top"] == pytest.approx(1.0)
    assert summary["boundary_f1_top"] == pytest.approx(0.8)
    assert summary["sections_per_doc"] == pytest.approx((2 + 3 + 1) / 3)
    assert summary["gold_sections_per_doc"] == pytest.approx((2 + 4 + 1) / 3)
    assert summary["top_sections_per_doc"] == pytest.approx((2 + 3 + 1) / 3)
    assert summary["gold_top_sections_per_doc"] == pytest.approx((2 + 2 + 1) / 3)


def test_agreement_summary_rejects_missing_documents_and_different_lengths():
    gold = frame([("a", 1, 0, 5), ("a", 1, 5, 10)])
    with pytest.raises(ValueError, match="without sections"):
        agreement_summary(frame([("b", 1, 0, 10)]), gold, ["a"])
    with pytest.raises(ValueError, match="cover 9 paragraphs"):
        agreement_summary(frame([("a", 1, 0, 9)]), gold, ["a"])


# ------------------------------------------------------------------------------------ real documents


@pytest.fixture(scope="module")
def qasper_gold():
    if not QASPER10_FILE.exists():
        pytest.skip(f"QASPER train sample not found at {QASPER10_FILE}")
    docs = [parse_paper(paper_id, record) for _, paper_id, record in read_qasper_records([QASPER10_FILE])]
    _, paragraphs, sections = build_tables("qasper", docs)
    return paragraphs, sections


def shifted(sections: pl.DataFrame, n_by_doc: dict[str, int]) -> pl.DataFrame:
    """Every section start moved one paragraph later (kept inside the document), a near-miss segmentation."""
    rows = []
    for doc_id, group in sections.sort("doc_id", "section_id").group_by("doc_id", maintain_order=True):
        n = n_by_doc[doc_id[0]]
        starts = sorted({0} | {min(start + 1, n - 1) for start in group["para_start"].to_list() if start > 0})
        levels = dict(zip(group["para_start"].to_list()[::-1], group["level"].to_list()[::-1]))
        for start, end in zip(starts, starts[1:] + [n]):
            rows.append((doc_id[0], levels.get(start - 1, 1), start, end))
    return frame(rows)


def test_matches_nltk_on_qasper_train_gold_against_shifted_gold(qasper_gold):
    paragraphs, gold = qasper_gold
    n_by_doc = dict(paragraphs.group_by("doc_id").len().iter_rows())
    induced = shifted(gold, n_by_doc)
    compared = 0
    for doc_id, n in sorted(n_by_doc.items()):
        gold_b = section_boundaries(gold.filter(pl.col("doc_id") == doc_id)["para_start"].to_list(), n)
        ours_b = section_boundaries(induced.filter(pl.col("doc_id") == doc_id)["para_start"].to_list(), n)
        k = probe_width(gold_b, n)
        ref, hyp = gap_string(gold_b, n), gap_string(ours_b, n)
        assert pk(gold_b, ours_b, n) == pytest.approx(nltk_pk(ref, hyp, k))
        assert windowdiff(gold_b, ours_b, n) == pytest.approx(nltk_windowdiff(ref, hyp, k))
        assert 0 < windowdiff(gold_b, ours_b, n) <= 1  # a shift is a disagreement...
        assert match_boundaries(gold_b, ours_b).recall > 0.9  # ...that the one-paragraph tolerance forgives
        compared += 1
    assert compared == 10
    summary = agreement_summary(induced, gold, sorted(n_by_doc))
    assert (
        0
        < summary["pk"]
        < agreement_summary(frame([(d, 1, 0, n) for d, n in n_by_doc.items()]), gold, sorted(n_by_doc))["pk"]
    )
    assert agreement_summary(gold, gold, sorted(n_by_doc))["pk"] == 0.0


# ------------------------------------------------------------------------------------------ baselines


def test_even_split_starts_are_floor_multiples_clipped_to_the_document():
    from structbench.structure.agreement import even_split_starts

    assert even_split_starts(10, 3) == [0, 3, 6]
    assert even_split_starts(10, 1) == [0] and even_split_starts(3, 7) == [0, 1, 2] and even_split_starts(5, 0) == [0]


def test_baselines_are_built_from_gold_counts_and_scored_like_an_inducer():
    from structbench.structure.agreement import (
        BASELINES,
        baseline_agreement,
        baseline_sections,
        nonempty_sections_per_doc,
    )

    # 12 paragraphs; gold: an empty top-level parent at 0 with children at 0 and 4, a top-level section at 8,
    # a subsection at 10. Distinct starts 0, 4, 8, 10 -> 4 segments; top-level starts 0, 8 -> 2.
    gold = frame([("d", 1, 0, 0), ("d", 2, 0, 4), ("d", 2, 4, 8), ("d", 1, 8, 10), ("d", 2, 10, 12)])
    starts = {b: baseline_sections(gold, ["d"], b)["para_start"].to_list() for b in BASELINES}
    assert starts == {
        "single section": [0],
        "even split, gold count": [0, 3, 6, 9],
        "even split, gold top-level count": [0, 6],
    }
    scored = baseline_agreement(gold, ["d"])
    for name, summary in scored.items():
        assert summary == agreement_summary(baseline_sections(gold, ["d"], name), gold, ["d"])
    # Gold boundaries {4, 8, 10}; the even split's {3, 6, 9}: 3 -> 4 and 9 -> 8 or 10 match within one
    # paragraph, 6 matches nothing: P = R = F1 = 2/3.
    assert scored["even split, gold count"]["boundary_f1"] == pytest.approx(2 / 3)
    assert scored["single section"]["boundary_f1"] == 0.0 and scored["single section"]["sections_per_doc"] == 1
    assert nonempty_sections_per_doc(gold, ["d"]) == 4  # the empty parent left out of 5 rows
    with pytest.raises(ValueError, match="unknown baseline"):
        baseline_sections(gold, ["d"], "random")
