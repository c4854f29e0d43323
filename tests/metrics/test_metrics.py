"""Tests of structbench.metrics: hand-computed cases, the reference, ir_measures, and properties."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from conftest import REPO
from hypothesis import given, settings
from hypothesis import strategies as st

from structbench import datamodel
from structbench.metrics import (
    align_run,
    compare_runs,
    coverage_dcg,
    coverage_ndcg,
    ideal_coverage_dcg,
    ideal_coverage_ranking,
    is_metric,
    is_relevant,
    metric_columns,
    metric_label,
    metric_names,
    metrics_from_config,
    parse_metric,
    registered_metrics,
    registry,
    score_run,
    section_recall,
    summarize_run_comparison,
)
from structbench.metrics import reference as ref
from structbench.metrics.synthetic import synthetic_cell

# --------------------------------------------------------------------------- builders


def make_queries(rows):
    """rows: (qid, doc_id, spans[, qtype])"""
    return pl.DataFrame(
        {
            "qid": [r[0] for r in rows],
            "corpus": ["test"] * len(rows),
            "doc_id": [r[1] for r in rows],
            "text": [""] * len(rows),
            "qtype": [r[3] if len(r) > 3 else "factoid" for r in rows],
            "spans": [[list(s) for s in r[2]] for r in rows],
            "meta": ["{}"] * len(rows),
        },
        schema=datamodel.QUERIES,
    )


def make_chunks(rows):
    """rows: (chunk_id, doc_id, start, end[, n_tokens])"""
    return pl.DataFrame(
        {
            "chunk_id": [r[0] for r in rows],
            "doc_id": [r[1] for r in rows],
            "start": [r[2] for r in rows],
            "end": [r[3] for r in rows],
            "n_tokens": [r[4] if len(r) > 4 else 10 for r in rows],
            "section_id": [0] * len(rows),
            "path": [[]] * len(rows),
            "cut": ["sentence"] * len(rows),
        },
        schema=datamodel.CHUNKS,
    )


def make_runs(rankings: dict[str, list[int]]):
    qids, ranks, chunk_ids, scores = [], [], [], []
    for qid, ranking in rankings.items():
        for i, chunk_id in enumerate(ranking, start=1):
            qids.append(qid)
            ranks.append(i)
            chunk_ids.append(chunk_id)
            scores.append(1000.0 - i)
    return pl.DataFrame(
        {"qid": qids, "rank": ranks, "chunk_id": chunk_ids, "score": scores, "stage": ["flat"] * len(qids)},
        schema=datamodel.RUNS,
    )


def make_texts(prefix_tokens: dict[int, int]):
    return pl.DataFrame(
        {
            "chunk_id": list(prefix_tokens),
            "prefix": [""] * len(prefix_tokens),
            "text_for_embedding": [""] * len(prefix_tokens),
            "prefix_tokens": list(prefix_tokens.values()),
        },
        schema=datamodel.TEXTS,
    )


def one(frame: pl.DataFrame, qid: str, column: str) -> float:
    return frame.filter(pl.col("qid") == qid)[column].item()


# --------------------------------------------------------------------------- coverage-nDCG by hand


def test_worked_example_appendix_b3():
    # one 100-char span; chunks [0,60), [40,100), then an irrelevant chunk
    queries = make_queries([("q", "d", [(0, 100)])])
    chunks = make_chunks([(0, "d", 0, 60), (1, "d", 40, 100), (2, "d", 100, 300)])
    runs = make_runs({"q": [0, 1, 2]})
    evidence = align_run(runs, queries, chunks)
    expected_dcg = 0.60 + 0.40 / math.log2(3)
    assert coverage_dcg(evidence)[0] == pytest.approx(expected_dcg, abs=1e-12)
    assert round(expected_dcg, 3) == 0.852
    assert ideal_coverage_dcg(evidence)[0] == pytest.approx(expected_dcg, abs=1e-12)
    assert coverage_ndcg(evidence)[0] == 1.0
    assert score_run(runs, queries, chunks)["cov_nDCG@10"].item() == 1.0


def test_worked_example_with_a_covering_chunk_in_the_set():
    # "Suppose instead a third chunk covered [0,100) in one shot": the ideal ranks it first
    queries = make_queries([("q", "d", [(0, 100)])])
    chunks = make_chunks([(0, "d", 0, 60), (1, "d", 40, 100), (2, "d", 0, 100)])
    runs = make_runs({"q": [0, 1]})
    evidence = align_run(runs, queries, chunks)
    assert ideal_coverage_dcg(evidence)[0] == pytest.approx(1.0)
    assert coverage_ndcg(evidence)[0] == pytest.approx(0.60 + 0.40 / math.log2(3))
    assert ideal_coverage_ranking(evidence)["chunk_id"].to_list() == [2]


def test_multi_span_novelty_by_hand():
    # spans g1 = [0,100), g2 = [200,300); S = 2
    queries = make_queries([("q", "d", [(0, 100), (200, 300)])])
    chunks = make_chunks([(0, "d", 0, 100), (1, "d", 50, 250), (2, "d", 200, 300), (3, "other", 0, 100)])
    runs = make_runs({"q": [1, 3, 0, 2]})
    evidence = align_run(runs, queries, chunks)
    # rank 1 [50,250): 50/100 of g1 and 50/100 of g2 -> 0.5
    # rank 2: another document, occupies the rank, gain 0
    # rank 3 [0,100): new in g1 is [0,50) -> 0.5/2 = 0.25
    # rank 4 [200,300): new in g2 is [250,300) -> 0.25
    dcg = 0.5 + 0.25 / math.log2(4) + 0.25 / math.log2(5)
    assert coverage_dcg(evidence)[0] == pytest.approx(dcg, abs=1e-12)
    # greedy ideal: all three start at 0.5; tie -> chunk 0; then chunk 2 (0.5) beats chunk 1 (0.25)
    assert ideal_coverage_ranking(evidence)["chunk_id"].to_list() == [0, 2]
    idcg = 0.5 + 0.5 / math.log2(3)
    assert coverage_ndcg(evidence)[0] == pytest.approx(dcg / idcg, abs=1e-12)


def test_tiling_multi_span_and_other_documents():
    # tiling chunk set of d: [0,50) [50,120) [120,200) [200,260); spans [40,130), [200,210)
    queries = make_queries([("q", "d", [(40, 130), (200, 210)])])
    chunks = make_chunks([(0, "d", 0, 50), (1, "d", 50, 120), (2, "d", 120, 200), (3, "d", 200, 260), (4, "e", 0, 500)])
    runs = make_runs({"q": [4, 2, 1]})
    scores = score_run(runs, queries, chunks)
    g1, g2 = 90, 10
    gains = {1: 0.0, 2: (10 / g1) / 2, 3: (70 / g1) / 2}
    dcg = sum(g / math.log2(r + 1) for r, g in gains.items())
    ideal = sorted([(10 / g1) / 2, (70 / g1) / 2, (10 / g1) / 2, (10 / g2) / 2], reverse=True)
    idcg = sum(g / math.log2(r + 1) for r, g in enumerate(ideal, start=1))
    assert one(scores, "q", "cov_nDCG@10") == pytest.approx(dcg / idcg, abs=1e-12)


def test_cutoff_k_limits_both_dcg_and_ideal():
    queries = make_queries([("q", "d", [(0, 100)])])
    chunks = make_chunks([(i, "d", 10 * i, 10 * i + 10) for i in range(10)])
    runs = make_runs({"q": [9, 8, 7, 0]})
    evidence = align_run(runs, queries, chunks)
    # k = 3: three chunks of 0.1 each at ranks 1..3, ideal the same
    assert coverage_ndcg(evidence, k=3)[0] == pytest.approx(1.0)
    assert coverage_ndcg(evidence, k=10)[0] == pytest.approx(
        sum(0.1 / math.log2(r + 1) for r in range(1, 5)) / sum(0.1 / math.log2(r + 1) for r in range(1, 11))
    )


def test_zero_ideal_gives_zero():
    queries = make_queries([("q", "d", [(1000, 1100)])])  # beyond every chunk
    chunks = make_chunks([(0, "d", 0, 100)])
    scores = score_run(make_runs({"q": [0]}), queries, chunks)
    assert scores.select(metric_columns()).row(0) == (0.0,) * len(metric_columns())


# --------------------------------------------------------------------------- binary metrics by hand


@pytest.mark.parametrize(
    "chunk, span, expected",
    [
        ((0, 100), (50, 150), True),  # |c∩g|/|g| = 0.5 exactly
        ((0, 100), (51, 151), False),  # 0.49 of g, 0.49 of c
        ((0, 100), (20, 1000), True),  # |c∩g|/|c| = 0.8 exactly
        ((0, 100), (21, 1000), False),  # 0.79 of c, small share of g
        ((0, 10), (10, 20), False),  # touching, no overlap
        ((0, 1000), (100, 200), True),  # contains the span
    ],
)
def test_binary_relevance_rule_boundaries(chunk, span, expected):
    assert bool(is_relevant([chunk[0]], [chunk[1]], [span[0]], [span[1]])[0]) is expected
    assert ref.relevant(ref.Chunk(0, "d", *chunk), "d", [span]) is expected


def test_mrr_binary_ndcg_recall_gold_top1_by_hand():
    queries = make_queries([("q", "d", [(0, 100), (300, 400)])])
    chunks = make_chunks([(0, "d", 0, 60), (1, "d", 60, 100), (2, "d", 100, 300), (3, "d", 300, 400), (4, "e", 0, 100)])
    runs = make_runs({"q": [4, 2, 1, 3]})
    scores = score_run(runs, queries, chunks, recall_k=3)
    # relevant chunks in the set: 0 (60% of g1), 1 (inside g1), 3 (= g2); 2 is not
    assert one(scores, "q", "MRR") == pytest.approx(1 / 3)
    assert one(scores, "q", "gold_top1") == 0.0
    dcg = 1 / math.log2(4) + 1 / math.log2(5)
    idcg = 1 + 1 / math.log2(3) + 1 / math.log2(4)
    assert one(scores, "q", "nDCG@10") == pytest.approx(dcg / idcg)
    # top 3 = [e, 2, 1]: g1 covered 40%, g2 0% -> 0 of 2 spans
    assert one(scores, "q", "R@3") == 0.0
    assert one(score_run(runs, queries, chunks, recall_k=4), "q", "R@4") == 0.5
    # exactly half of a span counts as recalled
    half = score_run(make_runs({"q": [0]}), make_queries([("q", "d", [(0, 100), (300, 500)])]), chunks, recall_k=1)
    assert one(half, "q", "R@1") == 0.5  # [0,60) covers 60% of g1; g2 untouched
    exact = score_run(make_runs({"q": [3]}), make_queries([("q", "d", [(200, 400)])]), chunks, recall_k=1)
    assert one(exact, "q", "R@1") == 1.0  # [300,400) covers exactly 50%


def test_budget_coverage_stops_at_first_chunk_that_does_not_fit():
    queries = make_queries([("q", "d", [(0, 300)])])
    chunks = make_chunks([(0, "d", 0, 100, 200), (1, "d", 100, 200, 300), (2, "d", 200, 300, 10), (3, "e", 0, 5, 50)])
    texts = make_texts({0: 20, 1: 20, 2: 0, 3: 0})
    runs = make_runs({"q": [3, 0, 1, 2]})
    scores = score_run(runs, queries, chunks, texts, budgets=(250, 300, 600, 1000))
    # costs: e 50, c0 220, c1 320, c2 10 -> cumulative 50, 270, 590, 600
    assert one(scores, "q", "budget_cov@250") == 0.0  # c0 does not fit; c2 would, but the walk stopped
    assert one(scores, "q", "budget_cov@300") == pytest.approx(1 / 3)
    assert one(scores, "q", "budget_cov@600") == pytest.approx(1.0)
    # without texts, prefixes cost nothing: cumulative 50, 250, 550, 560
    no_prefix = score_run(runs, queries, chunks, budgets=(250,))
    assert one(no_prefix, "q", "budget_cov@250") == pytest.approx(1 / 3)


def test_queries_without_run_rows_are_present_with_zero():
    queries = make_queries([("a", "d", [(0, 10)]), ("b", "d", [(0, 10)])])
    chunks = make_chunks([(0, "d", 0, 10)])
    scores = score_run(make_runs({"b": [0]}), queries, chunks)
    assert scores["qid"].to_list() == ["a", "b"]
    assert scores.columns == ["qid", "doc_id", "qtype", *metric_columns()]
    assert scores.filter(pl.col("qid") == "a").select(metric_columns()).row(0) == (0.0,) * 8
    assert one(scores, "b", "cov_nDCG@10") == 1.0


def test_unsorted_runs_are_sorted_first():
    queries = make_queries([("a", "d", [(0, 10)]), ("b", "d", [(10, 20)])])
    chunks = make_chunks([(0, "d", 0, 10), (1, "d", 10, 20)])
    runs = make_runs({"a": [1, 0], "b": [0, 1]})
    shuffled = runs.sample(fraction=1.0, shuffle=True, seed=3)
    assert score_run(shuffled, queries, chunks).equals(score_run(runs, queries, chunks))


@pytest.mark.parametrize(
    "runs, message",
    [
        (make_runs({"zzz": [0]}), "qid not in queries"),
        (make_runs({"q": [0, 99]}), "chunk_id not in the chunk set"),
        (make_runs({"q": [0, 0]}), "ranked twice"),
        (make_runs({"q": [0, 1]}).with_columns(pl.lit(1, dtype=pl.Int32).alias("rank")), "repeated rank"),
    ],
)
def test_bad_runs_are_errors(runs, message):
    queries = make_queries([("q", "d", [(0, 10)])])
    chunks = make_chunks([(0, "d", 0, 10), (1, "d", 10, 20)])
    with pytest.raises(ValueError, match=message):
        score_run(runs, queries, chunks)


def test_bad_queries_and_chunk_sets_are_errors():
    chunks = make_chunks([(0, "d", 0, 10)])
    with pytest.raises(ValueError, match="empty or negative gold span"):
        score_run(make_runs({}), make_queries([("q", "d", [(5, 5)])]), chunks)
    with pytest.raises(ValueError, match="without gold spans"):
        score_run(make_runs({}), make_queries([("q", "d", [])]), chunks)
    with pytest.raises(ValueError, match="no chunk in the chunk set"):
        score_run(make_runs({}), make_queries([("q", "missing", [(0, 5)])]), chunks)
    with pytest.raises(ValueError, match="ranked chunk_id missing"):
        score_run(make_runs({"q": [0]}), make_queries([("q", "d", [(0, 5)])]), chunks, make_texts({7: 1}))


# --------------------------------------------------------------------------- against the reference


def reference_scores(cell, **options):
    queries, rankings, by_doc = ref.reference_inputs(cell)
    rows = []
    for qid, doc_id, spans in queries:
        rows.append({"qid": qid, **ref.score_query(rankings.get(qid, []), by_doc[doc_id], doc_id, spans, **options)})
    return pl.DataFrame(rows)


def test_vectorized_equals_reference_on_a_synthetic_cell():
    cell = synthetic_cell(n_docs=60, n_queries=200, top_k=40, own_doc_chunks=12, seed=11)
    fast = score_run(cell["runs"], cell["queries"], cell["chunks"], cell["texts"], recall_k=20, budgets=(256, 1024))
    slow = reference_scores(cell, recall_k=20, budgets=(256, 1024))
    assert fast["qid"].to_list() == slow["qid"].to_list()
    for column in metric_columns(recall_k=20, budgets=(256, 1024)):
        np.testing.assert_allclose(fast[column].to_numpy(), slow[column].to_numpy(), rtol=0, atol=1e-12, err_msg=column)
    assert fast["cov_nDCG@10"].mean() > 0.1  # the case is not trivially zero


def overlapping_cell(seed: int):
    """Chunk sets whose chunks overlap (not the data contract, but the definition must hold)."""
    rng = np.random.default_rng(seed)
    chunk_rows, query_rows, rankings = [], [], {}
    next_id = 0
    for d in range(6):
        doc = f"d{d}"
        ids = []
        for _ in range(12):
            start = int(rng.integers(0, 900))
            chunk_rows.append((next_id, doc, start, start + int(rng.integers(5, 200)), int(rng.integers(1, 80))))
            ids.append(next_id)
            next_id += 1
        for qn in range(3):
            spans = []
            for _ in range(int(rng.integers(1, 4))):
                start = int(rng.integers(0, 950))
                spans.append((start, start + int(rng.integers(1, 150))))
            qid = f"{doc}-q{qn}"
            query_rows.append((qid, doc, spans))
            rankings[qid] = [int(c) for c in rng.permutation(next_id)[:25]]
    chunks = make_chunks(chunk_rows)
    return {
        "queries": make_queries(query_rows),
        "chunks": chunks,
        "texts": make_texts({r[0]: int(rng.integers(0, 10)) for r in chunk_rows}),
        "runs": make_runs(rankings),
    }


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_vectorized_equals_reference_with_overlapping_chunks(seed):
    cell = overlapping_cell(seed)
    assert not align_run(cell["runs"], cell["queries"], cell["chunks"]).chunks_disjoint
    fast = score_run(cell["runs"], cell["queries"], cell["chunks"], cell["texts"], recall_k=15, budgets=(100, 400))
    slow = reference_scores(cell, recall_k=15, budgets=(100, 400))
    for column in metric_columns(recall_k=15, budgets=(100, 400)):
        np.testing.assert_allclose(fast[column].to_numpy(), slow[column].to_numpy(), rtol=0, atol=1e-12, err_msg=column)


# --------------------------------------------------------------------------- against ir_measures (trec_eval)


def trec_eval_scores(queries, chunks, runs, measures):
    """ir_measures (pytrec_eval) on qrels = every chunk of the gold document that the reference's
    binary rule marks relevant; distinct run scores, so no tie can be broken differently."""
    import ir_measures

    qrels = []
    chunk_rows = list(chunks.iter_rows(named=True))
    for q in queries.iter_rows(named=True):
        spans = [tuple(s) for s in q["spans"]]
        for c in chunk_rows:
            if c["doc_id"] == q["doc_id"] and ref.relevant(
                ref.Chunk(c["chunk_id"], c["doc_id"], c["start"], c["end"]), q["doc_id"], spans
            ):
                qrels.append(ir_measures.Qrel(q["qid"], str(c["chunk_id"]), 1))
    scored = [
        ir_measures.ScoredDoc(r["qid"], str(r["chunk_id"]), float(r["score"])) for r in runs.iter_rows(named=True)
    ]
    values = {(m.query_id, str(m.measure)): m.value for m in ir_measures.iter_calc(measures, qrels, scored)}
    n_relevant: dict[str, int] = {}
    for qrel in qrels:
        n_relevant[qrel.query_id] = n_relevant.get(qrel.query_id, 0) + 1
    return values, n_relevant


def test_binary_ndcg_and_mrr_match_ir_measures():
    from ir_measures import RR, nDCG

    # half the spans random (they straddle chunk boundaries), half built around one chunk so that
    # |c∩g|/|c| and |c∩g|/|g| land near the rule's 0.8 and 0.5 thresholds
    cell = synthetic_cell(n_docs=40, n_queries=150, top_k=60, own_doc_chunks=12, chars_per_chunk=300, seed=5)
    queries, chunks, runs = cell["queries"], cell["chunks"], cell["runs"]
    rng = np.random.default_rng(1)
    by_doc = {
        r["doc_id"]: list(zip(r["start"], r["end"]))
        for r in chunks.group_by("doc_id").agg("start", "end").iter_rows(named=True)
    }
    spans = []
    for doc, original in zip(queries["doc_id"], queries["spans"].to_list()):
        start, end = by_doc[doc][int(rng.integers(len(by_doc[doc])))]
        lo = start + int((end - start) * rng.uniform(0.0, 0.3))
        spans.append([original[0], [lo, lo + max(1, int((end - start) * rng.uniform(0.4, 3.0)))]])
    queries = queries.with_columns(pl.Series("spans", spans, dtype=datamodel.QUERIES["spans"]))
    ours = score_run(runs, queries, chunks)
    theirs, n_relevant = trec_eval_scores(queries, chunks, runs, [nDCG @ 10, RR])
    assert len(n_relevant) > 100
    for row in ours.filter(pl.col("qid").is_in(list(n_relevant))).iter_rows(named=True):
        assert row["nDCG@10"] == pytest.approx(theirs[(row["qid"], "nDCG@10")], abs=1e-9), row["qid"]
        assert row["MRR"] == pytest.approx(theirs[(row["qid"], "RR")], abs=1e-9), row["qid"]
    assert 0.05 < ours["nDCG@10"].mean() < 0.95 and 0.05 < ours["MRR"].mean() < 0.95  # not degenerate
    # the rule's "inside the evidence" branch decides some of these judgments
    evidence = align_run(runs, queries, chunks)
    assert (evidence.query_n_relevant > 0).sum() == len(n_relevant)


def test_span_recall_matches_ir_measures_when_spans_are_chunks():
    from ir_measures import R

    cell = synthetic_cell(n_docs=40, n_queries=150, top_k=60, own_doc_chunks=12, seed=6)
    queries, chunks, runs = cell["queries"], cell["chunks"], cell["runs"]
    # span recall counts spans, trec_eval's recall counts relevant chunks: equal when each span is a chunk
    rng = np.random.default_rng(0)
    by_doc = chunks.group_by("doc_id").agg("start", "end")
    bounds = {r["doc_id"]: list(zip(r["start"], r["end"])) for r in by_doc.iter_rows(named=True)}
    aligned = []
    for doc in queries["doc_id"]:
        options = bounds[doc]
        picks = rng.choice(len(options), size=min(len(options), int(rng.integers(1, 4))), replace=False)
        aligned.append([list(options[i]) for i in sorted(picks)])
    queries = queries.with_columns(pl.Series("spans", aligned, dtype=datamodel.QUERIES["spans"]))
    ours = score_run(runs, queries, chunks, recall_k=50)
    theirs, n_relevant = trec_eval_scores(queries, chunks, runs, [R @ 50])
    checked = 0
    for row in ours.iter_rows(named=True):
        n_spans = len(queries.filter(pl.col("qid") == row["qid"])["spans"].item())
        if n_relevant.get(row["qid"]) == n_spans:
            assert row["R@50"] == pytest.approx(theirs[(row["qid"], "R@50")], abs=1e-9), row["qid"]
            checked += 1
    assert checked > 100 and 0.05 < ours["R@50"].mean() < 0.95


# --------------------------------------------------------------------------- properties


@st.composite
def tiled_case(draw):
    """One document tiled into chunks, 1-3 gold spans, a ranking mixing its chunks with another doc's."""
    length = draw(st.integers(20, 400))
    cuts = sorted(set(draw(st.lists(st.integers(1, length - 1), max_size=12))))
    bounds = [0, *cuts, length]
    own = [(i, "d", bounds[i], bounds[i + 1]) for i in range(len(bounds) - 1)]
    others = [(len(own) + j, "e", 10 * j, 10 * j + 10) for j in range(5)]
    spans = []
    for _ in range(draw(st.integers(1, 3))):
        start = draw(st.integers(0, length - 1))
        spans.append((start, draw(st.integers(start + 1, length))))
    pool = [c[0] for c in own + others]
    ranking = draw(st.permutations(pool))[: draw(st.integers(0, len(pool)))]
    return own + others, spans, list(ranking)


@settings(max_examples=60, deadline=None)
@given(tiled_case())
def test_cov_ndcg_lies_in_unit_interval(case):
    chunk_rows, spans, ranking = case
    scores = score_run(make_runs({"q": ranking}), make_queries([("q", "d", spans)]), make_chunks(chunk_rows))
    for column in metric_columns():
        assert 0.0 <= scores[column].item() <= 1.0 + 1e-12, column


@settings(max_examples=60, deadline=None)
@given(tiled_case(), st.randoms(use_true_random=False))
def test_permuting_irrelevant_chunks_changes_nothing(case, random):
    chunk_rows, spans, ranking = case
    queries, chunks = make_queries([("q", "d", spans)]), make_chunks(chunk_rows)
    by_id = {c[0]: c for c in chunk_rows}
    touches = lambda cid: by_id[cid][1] == "d" and any(min(by_id[cid][3], e) > max(by_id[cid][2], s) for s, e in spans)  # noqa: E731
    slots = [i for i, cid in enumerate(ranking) if not touches(cid)]
    moved = [ranking[i] for i in slots]
    random.shuffle(moved)
    permuted = list(ranking)
    for i, cid in zip(slots, moved):
        permuted[i] = cid
    before = score_run(make_runs({"q": ranking}), queries, chunks)["cov_nDCG@10"].item()
    after = score_run(make_runs({"q": permuted}), queries, chunks)["cov_nDCG@10"].item()
    assert before == after


@settings(max_examples=60, deadline=None)
@given(tiled_case())
def test_the_ideal_ranking_scores_one(case):
    chunk_rows, spans, _ = case
    queries, chunks = make_queries([("q", "d", spans)]), make_chunks(chunk_rows)
    ideal = ideal_coverage_ranking(align_run(make_runs({}), queries, chunks))["chunk_id"].to_list()
    assert len(ideal) <= 10
    assert len(ideal_coverage_ranking(align_run(make_runs({}), queries, chunks), k=2)) <= 2
    tail = [c[0] for c in chunk_rows if c[0] not in ideal]
    assert score_run(make_runs({"q": ideal + tail}), queries, chunks)["cov_nDCG@10"].item() == 1.0


@settings(max_examples=40, deadline=None)
@given(tiled_case())
def test_matches_reference_on_random_tilings(case):
    chunk_rows, spans, ranking = case
    chunks = [ref.Chunk(*row) for row in chunk_rows]
    by_id = {c.chunk_id: c for c in chunks}
    expected = ref.score_query([by_id[c] for c in ranking], chunks, "d", spans)
    got = score_run(make_runs({"q": ranking}), make_queries([("q", "d", spans)]), make_chunks(chunk_rows)).row(
        0, named=True
    )
    for column in metric_columns():
        assert got[column] == pytest.approx(expected[column], abs=1e-12), column


# --------------------------------------------------------------------------- diagnostics


def test_section_recall():
    queries = make_queries([("a", "d", [(100, 200)]), ("b", "d", [(0, 10), (500, 600)]), ("c", "d", [(0, 10)])])
    kept = pl.DataFrame(
        {
            "qid": ["a", "a", "b", "b"],
            "doc_id": ["d", "d", "e", "d"],
            "start": [0, 200, 0, 550],
            "end": [100, 300, 1000, 560],
        }
    )
    result = section_recall(kept, queries)
    assert result.to_dict(as_series=False) == {"qid": ["a", "b", "c"], "section_recall": [0.0, 1.0, 0.0]}


def test_compare_runs_seed_004_numbers():
    run_a = make_runs({"q1": [1, 2, 3, 4, 5], "q2": [1, 2, 3, 4, 5], "q3": [1, 2, 3, 4, 5], "q4": [9]})
    run_b = make_runs({"q1": [1, 2, 3, 4, 5], "q2": [6, 7, 8, 9, 10], "q3": [2, 1, 3, 7, 8]})
    per_query = compare_runs(run_a, run_b)
    assert per_query["top1_changed"].to_list() == [0.0, 1.0, 1.0]
    assert per_query["overlap@5"].to_list() == [5.0, 0.0, 3.0]
    assert per_query["fully_different"].to_list() == [0.0, 1.0, 0.0]
    assert per_query["identical"].to_list() == [1.0, 0.0, 0.0]
    summary = summarize_run_comparison(run_a, run_b)
    assert summary == {
        "n_queries": 3,
        "n_dropped": 1,
        "top1_changed": pytest.approx(2 / 3),
        "mean_overlap": pytest.approx(8 / 3),
        "fully_different": pytest.approx(1 / 3),
        "identical": pytest.approx(1 / 3),
    }


def test_scoring_is_deterministic():
    cell = synthetic_cell(n_docs=30, n_queries=80, top_k=30, seed=2)
    first = score_run(cell["runs"], cell["queries"], cell["chunks"], cell["texts"])
    second = score_run(cell["runs"], cell["queries"], cell["chunks"], cell["texts"])
    assert first.equals(second)


# --------------------------------------------------------------------------- the metric registry

# The score table the default config produced before the registry existed (checked by hand against
# the parallel-list score_run it replaced): these columns, this order, these dtypes.
DEFAULT_COLUMNS_BEFORE_THE_REGISTRY = [
    "qid",
    "doc_id",
    "qtype",
    "cov_nDCG@10",
    "nDCG@10",
    "MRR",
    "R@50",
    "budget_cov@512",
    "budget_cov@1024",
    "budget_cov@2048",
    "gold_top1",
]


def default_config_metrics() -> dict:
    import yaml

    return yaml.safe_load((REPO / "config" / "config.yaml").read_text())["metrics"]


def test_default_config_gives_the_same_score_table_columns_as_before():
    names = metrics_from_config(default_config_metrics())
    assert names == DEFAULT_COLUMNS_BEFORE_THE_REGISTRY[3:] == metric_names() == metric_columns()
    cell = synthetic_cell(n_docs=20, n_queries=50, top_k=30, seed=4)
    scores = score_run(cell["runs"], cell["queries"], cell["chunks"], cell["texts"], metrics=names)
    assert scores.columns == DEFAULT_COLUMNS_BEFORE_THE_REGISTRY
    assert scores.dtypes == [pl.String] * 3 + [pl.Float64] * 8
    # the old keyword interface builds the very same table
    legacy = score_run(
        cell["runs"], cell["queries"], cell["chunks"], cell["texts"], k=10, recall_k=50, budgets=(512, 1024, 2048)
    )
    assert legacy.equals(scores) and score_run(cell["runs"], cell["queries"], cell["chunks"], cell["texts"]).equals(
        scores
    )


def test_default_metric_set_equals_the_reference_exactly():
    # the default set the rule passes, against the plain-Python reference with its own defaults
    cell = synthetic_cell(n_docs=60, n_queries=200, top_k=100, own_doc_chunks=12, seed=12)
    names = metrics_from_config(default_config_metrics())
    fast = score_run(cell["runs"], cell["queries"], cell["chunks"], cell["texts"], metrics=names)
    slow = reference_scores(cell)
    assert fast["qid"].to_list() == slow["qid"].to_list()
    assert slow.columns[1:] == names  # the reference keys its metrics independently of the registry
    for column in names:
        # same summation order as the reference: equal to the last bit, not just close
        np.testing.assert_array_equal(fast[column].to_numpy(), slow[column].to_numpy(), err_msg=column)
    assert fast["budget_cov@512"].mean() > 0.05 and fast["gold_top1"].sum() > 0  # not trivially zero


def test_every_registered_metric_is_documented():
    assert registered_metrics()[:6] == ["cov_nDCG", "nDCG", "MRR", "R", "budget_cov", "gold_top1"]
    assert "section_recall" in registered_metrics()
    for name in registered_metrics():
        definition = registry.REGISTRY[name]
        assert definition.label and definition.description, name
        assert len(definition.formula) > 40, name  # the docstring carries the definition
    assert parse_metric("cov_nDCG@10").label == "coverage-nDCG@10" and metric_label("R@50") == "recall@50"
    assert "Primary" in parse_metric("cov_nDCG@5").description
    assert "DCG@k" in parse_metric("cov_nDCG@5").definition.formula


@pytest.mark.parametrize(
    "name, message",
    [
        ("nDCG", "needs a positive integer k"),
        ("nDCG@0", "needs a positive integer k"),
        ("nDCG@010", "needs a positive integer k"),  # one metric, one column name
        ("nDCG@1.5", "needs a positive integer k"),
        ("MRR@10", "takes no cutoff"),
        ("P@10", "unknown metric 'P@10'"),
        ("budget_cov@x", "needs a positive integer budget"),
    ],
)
def test_bad_metric_names_are_errors(name, message):
    with pytest.raises(ValueError, match=message):
        parse_metric(name)
    assert not is_metric(name)


def test_score_run_computes_the_names_it_is_given_in_that_order():
    cell = synthetic_cell(n_docs=20, n_queries=60, top_k=30, seed=8)
    tables_ = cell["runs"], cell["queries"], cell["chunks"], cell["texts"]
    scores = score_run(*tables_, metrics=["MRR", "budget_cov@300", "cov_nDCG@3"])
    assert scores.columns == ["qid", "doc_id", "qtype", "MRR", "budget_cov@300", "cov_nDCG@3"]
    evidence = align_run(*tables_)
    np.testing.assert_array_equal(scores["cov_nDCG@3"].to_numpy(), coverage_ndcg(evidence, k=3))
    reference = reference_scores(cell, k=3, budgets=(300,))
    np.testing.assert_array_equal(scores["budget_cov@300"].to_numpy(), reference["budget_cov@300"].to_numpy())
    with pytest.raises(ValueError, match="listed twice"):
        score_run(*tables_, metrics=["MRR", "MRR"])
    with pytest.raises(ValueError, match="unknown metric 'MAP'"):
        score_run(*tables_, metrics=["MRR", "MAP"])
    with pytest.raises(TypeError, match="either metrics= or k="):
        score_run(*tables_, metrics=["MRR"], k=5)
    with pytest.raises(TypeError, match="list of names"):
        score_run(*tables_, metrics="MRR")


def test_metrics_from_config_names_the_missing_key():
    with pytest.raises(ValueError, match="metrics.recall_k"):
        metrics_from_config({"ndcg_k": 10, "budgets": [512]})
    assert metrics_from_config({"ndcg_k": 5, "recall_k": 20, "budgets": [100]}) == [
        "cov_nDCG@5",
        "nDCG@5",
        "MRR",
        "R@20",
        "budget_cov@100",
        "gold_top1",
    ]


def section_recall_case():
    queries = make_queries([("a", "d", [(100, 200)]), ("b", "d", [(0, 10), (500, 600)]), ("c", "d", [(0, 10)])])
    chunks = make_chunks([(0, "d", 0, 100), (1, "d", 100, 300), (2, "d", 300, 700), (3, "e", 0, 1000)])
    runs = make_runs({"a": [1, 0], "b": [3, 2], "c": [2]})
    kept = pl.DataFrame(
        {
            "qid": ["a", "a", "b", "b"],
            "doc_id": ["d", "d", "e", "d"],
            "start": [0, 200, 0, 550],
            "end": [100, 300, 1000, 560],
        }
    )
    return runs, queries, chunks, kept


def test_section_recall_is_a_registered_metric_outside_the_default_set():
    runs, queries, chunks, kept = section_recall_case()
    assert "section_recall" not in metric_names() and parse_metric("section_recall").requires[0].name == "kept_sections"
    scores = score_run(runs, queries, chunks, metrics=["cov_nDCG@10", "section_recall"], inputs={"kept_sections": kept})
    assert scores.columns == ["qid", "doc_id", "qtype", "cov_nDCG@10", "section_recall"]
    # a's kept sections [0,100), [200,300) miss its span [100,200); b keeps [550,560) of d; c keeps nothing
    assert scores["section_recall"].to_list() == [0.0, 1.0, 0.0]
    assert scores.select("qid", "section_recall").equals(section_recall(kept, queries))
    # the table-level function and the registered metric share one definition, on other data too
    kept_hits = kept.with_columns(pl.Series("end", [150, 300, 1000, 560]))
    again = score_run(runs, queries, chunks, metrics=["section_recall"], inputs={"kept_sections": kept_hits})
    assert again["section_recall"].to_list() == [1.0, 1.0, 0.0]
    assert again.select("qid", "section_recall").equals(section_recall(kept_hits, queries))


def test_a_metric_missing_its_input_is_an_error_naming_both():
    runs, queries, chunks, kept = section_recall_case()
    with pytest.raises(
        ValueError, match=r"metric 'section_recall' needs input 'kept_sections' \(the sections a router kept"
    ):
        score_run(runs, queries, chunks, metrics=["MRR", "section_recall"])
    with pytest.raises(ValueError, match="needs input 'kept_sections'"):
        score_run(runs, queries, chunks, metrics=["section_recall"], inputs={"kept": kept})
    # checked before any work: a bad run does not mask it
    with pytest.raises(ValueError, match="needs input 'kept_sections'"):
        score_run(make_runs({"zzz": [0]}), queries, chunks, metrics=["section_recall"])
    with pytest.raises(ValueError, match="kept_sections: qid not in queries"):
        score_run(
            runs,
            queries,
            chunks,
            metrics=["section_recall"],
            inputs={"kept_sections": kept.with_columns(pl.lit("x").alias("qid"))},
        )


def test_a_new_metric_plugs_in_by_registering(monkeypatch):
    monkeypatch.setattr(registry, "REGISTRY", dict(registry.REGISTRY))  # registrations vanish after the test
    routed = registry.ExtraInput("routed_doc", "the document each query was routed to: qid, doc_id")

    @registry.register(
        "doc_routed", label="routed to gold", description="1 when routing chose the gold document.", requires=(routed,)
    )
    def doc_routed(evidence, routed_doc):
        chosen = dict(routed_doc.iter_rows())
        return np.array([float(chosen.get(q) == d) for q, d in zip(evidence.qid, evidence.doc_id)])

    @registry.register(
        "first_hits",
        cutoff="depth",
        label="hits in the top {cutoff}",
        description="Relevant chunks ranked in the top depth.",
    )
    def first_hits(evidence, depth):
        return np.bincount(
            evidence.relevant_query[evidence.relevant_rank <= depth], minlength=evidence.n_queries
        ).astype(float)

    runs, queries, chunks, _ = section_recall_case()
    routed_doc = pl.DataFrame({"qid": ["a", "b"], "doc_id": ["d", "e"]})
    scores = score_run(
        runs, queries, chunks, metrics=["doc_routed", "first_hits@1", "MRR"], inputs={"routed_doc": routed_doc}
    )
    assert scores["doc_routed"].to_list() == [1.0, 0.0, 0.0]
    assert scores["first_hits@1"].to_list() == [1.0, 0.0, 0.0]  # only a ranks a relevant chunk first
    assert metric_label("first_hits@1") == "hits in the top 1"
    with pytest.raises(ValueError, match="metric 'doc_routed' needs input 'routed_doc'"):
        score_run(runs, queries, chunks, metrics=["doc_routed"])
    with pytest.raises(ValueError, match="registered twice"):
        registry.register("MRR", label="x", description="x")(lambda evidence: evidence.qid)
    with pytest.raises(ValueError, match="has no parameter 'k'"):
        registry.register("broken", cutoff="k", label="x", description="x")(lambda evidence: evidence.qid)
    registry.register("short", label="x", description="x")(lambda evidence: np.zeros(1))
    with pytest.raises(ValueError, match=r"metric 'short' returned shape \(1,\), not one value per query \(3\)"):
        score_run(runs, queries, chunks, metrics=["short"])


# --------------------------------------------------------------------------- align_run's validation, step by step


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda q, c, r, t: (q.vstack(q), c, r, t), "queries: duplicate qid"),
        (
            lambda q, c, r, t: (
                q.with_columns(pl.Series("spans", [[[0, 5, 9]]], dtype=pl.List(pl.List(pl.Int64)))),
                c,
                r,
                t,
            ),
            "spans must be",
        ),
        (lambda q, c, r, t: (q.drop("qtype"), c, r, t), r"queries table is missing columns \['qtype'\]"),
        (lambda q, c, r, t: (q, c.vstack(c.head(1)), r, t), "chunks: duplicate chunk_id"),
        (lambda q, c, r, t: (q, c.with_columns(pl.lit(0).alias("end")), r, t), "chunks: empty or negative interval"),
        (lambda q, c, r, t: (q, c.with_columns(pl.lit(-1).alias("n_tokens")), r, t), "n_tokens out of range"),
        (lambda q, c, r, t: (q, c, r.with_columns(pl.col("rank") - 1), t), "rank is 1-based"),
        (lambda q, c, r, t: (q, c, r.drop("chunk_id"), t), "runs table is missing columns"),
        (lambda q, c, r, t: (q, c, r, t.vstack(t.head(1))), "texts: duplicate chunk_id"),
        (lambda q, c, r, t: (q, c, r, t.with_columns(pl.lit(-2).alias("prefix_tokens"))), "negative prefix_tokens"),
        # two problems at once: the earlier step's error is the one raised (the split kept the order)
        (
            lambda q, c, r, t: (q, c.with_columns(pl.lit(0).alias("end")), make_runs({"zzz": [0]}), t),
            "chunks: empty or negative",
        ),
        (
            lambda q, c, r, t: (q, c, make_runs({"zzz": [0]}), t.with_columns(pl.lit(-2).alias("prefix_tokens"))),
            "qid not in queries",
        ),
    ],
)
def test_alignment_errors_name_the_bad_input(change, message):
    queries = make_queries([("q", "d", [(0, 10)])])
    chunks = make_chunks([(0, "d", 0, 10), (1, "d", 10, 20)])
    runs, texts = make_runs({"q": [0, 1]}), make_texts({0: 1, 1: 2})
    queries, chunks, runs, texts = change(queries, chunks, runs, texts)
    with pytest.raises(ValueError, match=message):
        align_run(runs, queries, chunks, texts)
