"""Read-time runs as tables and runs of spans scored (docs/method.md §18): cross-checks against score_run."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

from structbench.conditions import is_readtime, readtime_kinds
from structbench.metrics import score_run
from structbench.metrics.units import score_units
from structbench.retrieval.unit_runs import MODES, document_trees, readtime_run
from structbench.tokens import load_tokenizer

WORD = "word "  # 5 characters, one token each
TEXT = WORD * 40  # 200 characters, 40 tokens
DOCS = pl.DataFrame({"doc_id": ["d", "e"], "text": [TEXT, TEXT], "n_chars": [200, 200]})
# d: section S1 (level 1) 0-100 with S1.1 (level 2) at 50; S2 (level 1) 100-200. e: one section.
SECTIONS = pl.DataFrame(
    {
        "doc_id": ["d", "d", "d", "e"],
        "section_id": [0, 1, 2, 0],
        "level": [1, 2, 1, 1],
        "start": [0, 50, 100, 0],
        "end": [50, 100, 200, 200],
    }
)
# chunks of 50 characters (10 tokens) tiling both documents: d 0..3, e 4..7
CHUNKS = pl.DataFrame(
    {
        "chunk_id": list(range(8)),
        "doc_id": ["d"] * 4 + ["e"] * 4,
        "start": [0, 50, 100, 150] * 2,
        "end": [50, 100, 150, 200] * 2,
        "n_tokens": [10] * 8,
    }
)
QUERIES = pl.DataFrame(
    {"qid": ["q1", "q2"], "doc_id": ["d", "d"], "qtype": ["x", "x"], "spans": [[[40, 60]], [[160, 170]]]}
)
RUNS = pl.DataFrame(
    {
        "qid": ["q1", "q1", "q1", "q2", "q2"],
        "rank": [1, 2, 3, 1, 2],
        "chunk_id": [1, 5, 0, 2, 3],
        "score": [0.9, 0.8, 0.7, 0.6, 0.5],
        "stage": ["flat"] * 5,
    }
).cast({"rank": pl.Int32, "score": pl.Float32})
METRICS = ["cov_nDCG@10", "nDCG@10", "MRR", "R@50", "budget_cov@20", "budget_cov@30", "gold_top1"]


@pytest.fixture(scope="module")
def counter():
    return load_tokenizer()


def test_unexpanded_units_score_as_the_flat_run():
    # the flat run as a run of units (every unit is its chunk): every span metric equals score_run's
    flat = score_run(RUNS, QUERIES, CHUNKS, metrics=METRICS)
    spans = score_units(RUNS, CHUNKS, QUERIES, CHUNKS, metrics=METRICS)
    for name in ("cov_nDCG@10", "R@50", "budget_cov@20", "budget_cov@30"):
        assert spans[name].to_list() == flat[name].to_list()
    for name in ("nDCG@10", "MRR", "gold_top1"):  # chunk-only metrics say they do not apply
        assert all(math.isnan(v) for v in spans[name].to_list())


def test_parent_run_hand_worked(counter):
    runs, units = readtime_run("parent:1", RUNS, CHUNKS, SECTIONS, DOCS, counter, hits=10, seed=0)
    table = runs.join(units, on="chunk_id").sort("qid", "rank")
    # q1: chunk 1 (d 50-100) -> S1 0-100; chunk 5 (e 50-100) -> e's one block 0-200; chunk 0 inside S1: dropped
    # q2: chunk 2 (d 100-150) -> S2 100-200; chunk 3 inside it: dropped
    assert table.select("qid", "rank", "doc_id", "start", "end").rows() == [
        ("q1", 1, "d", 0, 100),
        ("q1", 2, "e", 0, 200),
        ("q2", 1, "d", 100, 200),
    ]
    assert table["n_tokens"].to_list() == [20, 40, 20]  # counted on the text: "word " x 20, x 40
    assert set(range(8)) <= set(units["chunk_id"].to_list())  # the chunk set keeps its ids
    assert table["chunk_id"].min() >= 8  # every span here is new
    assert table["score"].to_list() == pytest.approx([0.9, 0.8, 0.6])  # the best hit each holds
    scores = score_units(runs, units, QUERIES, CHUNKS, metrics=METRICS)
    q1, q2 = scores.row(0, named=True), scores.row(1, named=True)
    # q1's span 40-60 lies in chunks 0 and 1: the chunk set's ideal is (10 + 10 / log2 3) / 20 = 0.8155;
    # S1 at rank 1 covers it all: DCG = 1, so coverage-nDCG = 1 / 0.8155 = 1.226 (above 1: not clipped)
    ideal = 0.5 + 0.5 / math.log2(3)
    assert q1["cov_nDCG@10"] == pytest.approx(1 / ideal)
    assert q1["budget_cov@20"] == 1.0 and q1["R@50"] == 1.0
    # budget 30 takes S2 (20 tokens) for q2; budget 19 would take nothing
    assert q2["budget_cov@20"] == 1.0 and q2["cov_nDCG@10"] == pytest.approx(1.0)
    flat = score_run(RUNS, QUERIES, CHUNKS, metrics=METRICS)
    # the flat run covers q1's span half at rank 1 (chunk 1: 50-60) and half at rank 3 (chunk 0)
    assert flat["cov_nDCG@10"][0] == pytest.approx((0.5 + 0.5 / 2) / ideal)


def test_placebo_parent_and_window_runs(counter):
    # d with uneven sections: S1 0-80 (S1.1 at 30), S2 80-200; equal sibling lengths could not move
    uneven = SECTIONS.with_columns(start=pl.Series([0, 30, 80, 0]), end=pl.Series([30, 80, 200, 200]))
    trees, equal = document_trees(uneven, DOCS, placebo=True, seed=3)
    assert equal.sort("doc_id").rows() == [("d", 0), ("e", 1)]  # e's one block cannot move
    assert trees["d"][0][0] == (0, 120)  # S2 (120 characters) first, then S1 (80)
    assert trees["d"][0][1] in ((0, 120, 150), (0, 120, 170))  # S1's children moved with it
    runs, units = readtime_run("placebo_parent:1", RUNS, CHUNKS, uneven, DOCS, counter, hits=10, seed=3)
    spans = runs.join(units, on="chunk_id").sort("qid", "rank").select("qid", "doc_id", "start", "end").rows()
    # q1: chunk 1 (50-100) and chunk 0 (0-50) lie in placebo block 0-120 (24 + 40 tokens, within the real
    # parent's 40 + 40: kept whole). q2: chunk 2 (100-150) spans both placebo blocks, 0-200, 40 tokens
    # against the real parent's 24 (80-200): cut to windows inside the blocks. At window 19, chunk 2 grows
    # 4 tokens left and 5 right (80-175), chunk 3 runs into block 120-200's end (140-200): 80-200, 24 tokens
    assert spans == [("q1", "d", 0, 120), ("q1", "e", 0, 200), ("q2", "d", 80, 200)]
    assert runs.join(units, on="chunk_id").group_by("qid").agg(pl.col("n_tokens").sum()).sort("qid").rows() == [
        ("q1", 64),
        ("q2", 24),
    ]
    real, real_units = readtime_run("parent:1", RUNS, CHUNKS, uneven, DOCS, counter, hits=10, seed=3)
    # the real tree: chunk 1 (50-100) straddles S1/S2, so its parent is both; q2's chunk 2 lies in S2
    real_spans = real.join(real_units, on="chunk_id").sort("qid", "rank").select("qid", "doc_id", "start", "end")
    assert real_spans.rows() == [("q1", "d", 0, 200), ("q1", "e", 0, 200), ("q2", "d", 80, 200)]
    # window:20 grows each 10-token hit by 5 tokens (25 characters) a side; q2's two hits touch and merge
    runs, units = readtime_run("window:20", RUNS, CHUNKS, SECTIONS, DOCS, counter, hits=10, seed=0)
    spans = runs.join(units, on="chunk_id").sort("qid", "rank").select("qid", "doc_id", "start", "end").rows()
    assert spans == [("q1", "d", 0, 125), ("q1", "e", 25, 125), ("q2", "d", 75, 200)]


def test_matched_window_and_automerge_runs(counter):
    parent, parent_units = readtime_run("parent:1", RUNS, CHUNKS, SECTIONS, DOCS, counter, hits=10, seed=0)
    matched, matched_units = readtime_run("matched_window:1", RUNS, CHUNKS, SECTIONS, DOCS, counter, hits=10, seed=0)
    tokens = {
        name: run.join(u, on="chunk_id").group_by("qid").agg(pl.col("n_tokens").sum()).sort("qid")["n_tokens"]
        for name, run, u in (("parent", parent, parent_units), ("matched", matched, matched_units))
    }
    assert np.all(tokens["matched"].to_numpy() <= tokens["parent"].to_numpy())
    assert tokens["matched"].to_list() == [60, 20]  # q1: 20 + 40 (both whole blocks' worth); q2: 20
    # automerge:0.5: q1 retrieves chunks 0, 1 of S1 (two of two) and 5 of e (one of four)
    runs, units = readtime_run("automerge:0.5", RUNS, CHUNKS, SECTIONS, DOCS, counter, hits=10, seed=0)
    spans = runs.join(units, on="chunk_id").sort("qid", "rank").select("qid", "rank", "start", "end").rows()
    assert spans == [("q1", 1, 0, 100), ("q1", 2, 50, 100), ("q2", 1, 100, 200)]


def test_is_readtime():
    assert is_readtime("parent:2") and is_readtime("placebo_automerge:0.5") and not is_readtime("flat")
    assert not is_readtime("rrf:bm25") and not is_readtime("bm25")


def test_every_readtime_kind_has_its_expansion_and_no_other_kind_has_one():
    assert sorted(MODES) == sorted(readtime_kinds())
    assert len(readtime_kinds()) == 6


def test_token_budget_coverage_cannot_exceed_one_however_long_and_overlapping_the_units():
    # four units over q1's span 40-60, each long and overlapping the others; the whole document at rank 1
    units = pl.concat(
        [
            CHUNKS,
            pl.DataFrame(
                {
                    "chunk_id": [8, 9, 10, 11],
                    "doc_id": ["d"] * 4,
                    "start": [0, 0, 30, 40],
                    "end": [200, 150, 200, 60],
                    "n_tokens": [40, 30, 34, 4],
                }
            ),
        ]
    )
    runs = pl.DataFrame(
        {"qid": ["q1"] * 4 + ["q2"] * 2, "rank": [1, 2, 3, 4, 1, 2], "chunk_id": [8, 9, 10, 11, 10, 9]}
    ).with_columns(score=pl.lit(1.0, pl.Float32), stage=pl.lit("x"))
    runs = runs.cast({"rank": pl.Int32})
    budgets = ["budget_cov@30", "budget_cov@40", "budget_cov@200", "budget_cov@100000"]
    scores = score_units(runs, units, QUERIES, CHUNKS, metrics=["cov_nDCG@10", *budgets])
    # coverage-nDCG credits the whole document at rank 1 against the chunk set's ideal: above 1
    assert scores["cov_nDCG@10"][0] == pytest.approx(1 / (0.5 + 0.5 / math.log2(3)))
    # the budgets charge what is read: 30 tokens cannot take the 40-token document, 40 can; the overlaps
    # that follow add nothing (coverage is of the union), so no budget passes 1
    assert scores.select(budgets).rows() == [(0.0, 1.0, 1.0, 1.0), (0.0, 1.0, 1.0, 1.0)]
