"""Chroma's character-overlap span metrics (structbench.metrics.spans): hand-worked cases, the
character-set reference, config and the report's metric ladder."""

from __future__ import annotations

import copy

import numpy as np
import polars as pl
import pytest
import yaml
from conftest import REPO
from test_metrics import make_chunks, make_queries, make_runs, make_texts, overlapping_cell

from structbench.config import ConfigError, validate_config
from structbench.metrics import (
    align_run,
    kernels,
    metric_label,
    metric_names,
    metrics_from_config,
    parse_metric,
    precision_omega,
    registered_metrics,
    score_run,
)
from structbench.metrics import reference as ref
from structbench.metrics.spans import chroma_extents, chroma_placement, span_overlap
from structbench.metrics.synthetic import synthetic_cell
from structbench.plan.study import Study
from structbench.report.results import ladder_table
from structbench.report.span_rules import span_rules_table
from structbench.report.table_registry import Omit, ReportInputs

SPAN_METRICS = ["span_IoU@{k}", "span_precision@{k}", "span_recall@{k}"]


def span_names(*ks):
    return [name.format(k=k) for k in ks for name in SPAN_METRICS] + ["span_precision_omega"]


def tiling_case():
    """Document d tiled by [0,100) [100,200) [200,300) [300,400); document e holds [0,50)."""
    chunks = make_chunks(
        [(0, "d", 0, 100), (1, "d", 100, 200), (2, "d", 200, 300), (3, "d", 300, 400), (4, "e", 0, 50)]
    )
    queries = make_queries([("q1", "d", [(150, 250)]), ("q3", "d", [(0, 10)])])
    runs = make_runs({"q1": [1, 4, 2, 0]})  # q3 has no run rows
    return runs, queries, chunks


def test_hand_worked_example_on_a_tiling():
    # q1: t_e = [150,250), |t_e| = 100; ranking [100,200), e[0,50), [200,300), [0,100)
    #  k=1: t_r = 100, ∩ = [150,200) = 50  -> IoU 50/(100+100-50) = 1/3, P 50/100 = 0.5, R 50/100 = 0.5
    #  k=2: t_r = 150 (e's 50 chars count), ∩ = 50 -> IoU 50/(100+150-50) = 0.25, P 1/3, R 0.5
    #  k=3: t_r = 250, ∩ = 100 -> IoU 100/(100+250-100) = 0.4, P 0.4, R 1.0
    #  k=10 > run length: t_r = 350, ∩ = 100 -> IoU 100/350 = 2/7, P 2/7, R 1.0
    #  Ω: chunks of d overlapping the span: [100,200), [200,300); U = 200 -> 100/(200+100-100) = 0.5
    # q3: no run rows -> 0 everywhere but Ω; Ω: [0,100) holds it, 10/100 = 0.1
    runs, queries, chunks = tiling_case()
    scores = score_run(runs, queries, chunks, metrics=span_names(1, 2, 3, 10))
    q1 = scores.row(0, named=True)
    expected = {
        1: (1 / 3, 0.5, 0.5),
        2: (0.25, 1 / 3, 0.5),
        3: (0.4, 0.4, 1.0),
        10: (2 / 7, 2 / 7, 1.0),
    }
    for k, (iou, precision, recall) in expected.items():
        assert q1[f"span_IoU@{k}"] == pytest.approx(iou, abs=1e-15)
        assert q1[f"span_precision@{k}"] == pytest.approx(precision, abs=1e-15)
        assert q1[f"span_recall@{k}"] == pytest.approx(recall, abs=1e-15)
    assert q1["span_precision_omega"] == 0.5
    q3 = scores.row(1, named=True)
    assert q3["span_precision_omega"] == 0.1
    assert all(q3[name] == 0.0 for name in span_names(1, 2, 3, 10)[:-1])
    assert align_run(runs, queries, chunks).chunks_disjoint  # the fast path


def test_hand_worked_example_with_overlaps_and_a_gap():
    # chunks of f overlap: a = [0,100), b = [50,150); span [25,125)
    #  k=2: t_r = [0,100) ∪ [50,150) = 150 (the 50 shared chars count once: the union rule, docs/method.md §10;
    #       Chroma's sum would make it 200), ∩ = [25,125) = 100
    #       -> P 100/150 = 2/3, R 1.0, IoU 100/(100+150-100) = 2/3
    #  Ω: U = [0,150) = 150 (merged, as Chroma's code) -> 100/150 = 2/3 (= P@2: both take the union)
    # overlapping spans of document d: [10,60) and [40,90) -> t_e = [10,90) = 80 chars, not 100
    #  ranking [0,100): t_r = 100, ∩ = 80 -> P 0.8, R 1.0, IoU 80/(80+100-80) = 0.8; Ω = 80/100 = 0.8
    # a gap in g's chunk set: [0,40), [60,100); span [30,70)
    #  k=2: t_r = 80, ∩ = [30,40) + [60,70) = 20 -> P 0.25, R 0.5, IoU 20/(40+80-20) = 0.2
    #  Ω: U = 80, the gap's 20 gold chars join the denominator: 20/(80+40-20) = 0.2
    chunks = make_chunks(
        [(0, "f", 0, 100), (1, "f", 50, 150), (2, "d", 0, 100), (3, "d", 100, 200), (4, "g", 0, 40), (5, "g", 60, 100)]
    )
    queries = make_queries([("a", "f", [(25, 125)]), ("b", "d", [(10, 60), (40, 90)]), ("c", "g", [(30, 70)])])
    runs = make_runs({"a": [0, 1], "b": [2], "c": [4, 5]})
    scores = score_run(runs, queries, chunks, metrics=span_names(2))
    assert not align_run(runs, queries, chunks).chunks_disjoint  # the general (union) path
    expected = {
        "a": (2 / 3, 2 / 3, 1.0, 2 / 3),
        "b": (0.8, 0.8, 1.0, 0.8),
        "c": (0.2, 0.25, 0.5, 0.2),
    }
    for row in scores.iter_rows(named=True):
        assert (
            row["span_IoU@2"],
            row["span_precision@2"],
            row["span_recall@2"],
            row["span_precision_omega"],
        ) == pytest.approx(expected[row["qid"]], abs=1e-15), row["qid"]


def test_an_adjacent_chunk_is_not_in_precision_omegas_set():
    # Chroma's intersect_two_ranges accepts an empty overlap; we need one shared character
    chunks = make_chunks([(0, "d", 0, 100), (1, "d", 100, 200)])
    queries = make_queries([("q", "d", [(50, 100)])])
    evidence = align_run(make_runs({"q": [1]}), queries, chunks)
    assert precision_omega(evidence)[0] == 0.5  # [0,100) alone: 50/100, not 50/200
    intersection, retrieved, gold = span_overlap(evidence, 1)
    assert (intersection[0], retrieved[0], gold[0]) == (0, 100, 50)


def test_the_sum_rule_pays_shared_characters_once_per_chunk():
    # chunks [0,100), [50,150) of f against a span [25,125), both retrieved: ∩ = 100, union 150, sum 200
    #  union: P 100/150, IoU 100/(100+150-100); sum: P 100/200, IoU 100/(100+200-100)
    chunks = make_chunks([(0, "f", 0, 100), (1, "f", 50, 150), (2, "e", 0, 50)])
    queries = make_queries([("a", "f", [(25, 125)]), ("b", "f", [(0, 10)])])
    names = ["span_IoU@2", "span_IoU_sum@2", "span_precision@2", "span_precision_sum@2", "span_IoU_sum@1"]
    scores = score_run(make_runs({"a": [0, 1], "b": [2, 0]}), queries, chunks, metrics=names)
    a, b = scores.row(0, named=True), scores.row(1, named=True)
    assert (a["span_IoU@2"], a["span_precision@2"]) == pytest.approx((2 / 3, 2 / 3), abs=1e-15)
    assert (a["span_IoU_sum@2"], a["span_precision_sum@2"]) == pytest.approx((0.5, 0.5), abs=1e-15)
    assert a["span_IoU_sum@1"] == pytest.approx(75 / 125, abs=1e-15)  # one chunk: the rules agree
    # chunks of other documents add their length under both rules: [0,50) of e, then [0,100): 10/150
    assert b["span_precision_sum@2"] == b["span_precision@2"] == pytest.approx(10 / 150, abs=1e-15)


@pytest.mark.parametrize("seed", [0, 1])
def test_sum_rule_equals_chromas_formula_on_overlapping_chunks(seed):
    cell = overlapping_cell(seed)
    scores = score_run(
        cell["runs"], cell["queries"], cell["chunks"], metrics=["span_IoU_sum@10", "span_precision_sum@10"]
    )
    extent = {
        row["chunk_id"]: (row["doc_id"], row["start"], row["end"]) for row in cell["chunks"].iter_rows(named=True)
    }
    top = cell["runs"].filter(pl.col("rank") <= 10).group_by("qid").agg(pl.col("chunk_id").sort_by("rank"))
    retrieved = dict(zip(top["qid"], top["chunk_id"].to_list()))
    for row, query in zip(scores.iter_rows(named=True), cell["queries"].sort("qid").iter_rows(named=True)):
        gold = {x for a, b in query["spans"] for x in range(a, b)}
        ranked = [extent[c] for c in retrieved.get(query["qid"], [])]
        found = {x for doc, a, b in ranked if doc == query["doc_id"] for x in range(a, b)} & gold
        summed = sum(b - a for _, a, b in ranked)  # Chroma's sum_of_ranges, never merged
        iou = len(found) / (summed + len(gold) - len(found)) if summed else 0.0
        precision = len(found) / summed if summed else 0.0
        assert (row["span_IoU_sum@10"], row["span_precision_sum@10"]) == pytest.approx((iou, precision), abs=1e-12)


@pytest.mark.parametrize(
    "text, chunk, placed",
    [
        ("aaaa bbbb", (0, 5), (0, 4)),  # the whitespace after a chunk is not Chroma's
        ("ab ab", (3, 5), (0, 2)),  # repeated text lands on its first occurrence
        ("  x  y ", (0, 7), (2, 6)),
    ],
)
def test_chroma_placement_finds_the_stripped_text(text, chunk, placed):
    assert chroma_placement(text, *chunk) == placed


def test_precision_omega_with_chromas_extents_hand_worked():
    # "aaaa bbbb": own chunks [0,5) [5,9), span [5,9): touching on own extents 4/9, on Chroma's [0,4) [5,9) 4/4
    documents = pl.DataFrame({"doc_id": ["d"], "text": ["aaaa bbbb"]})
    chunks = make_chunks([(0, "d", 0, 5), (1, "d", 5, 9)])
    placed = chroma_extents(chunks, documents)
    assert placed.select("start", "end").rows() == [(0, 4), (5, 9)] and placed["chunk_id"].to_list() == [0, 1]
    names = ["span_precision_omega_touching", "span_precision_omega_chroma"]
    scores = score_run(
        make_runs({}), make_queries([("q", "d", [(5, 9)])]), chunks, metrics=names, inputs={"chroma_chunks": placed}
    )
    assert scores.row(0)[3:] == pytest.approx((4 / 9, 1.0))
    with pytest.raises(ValueError, match="needs input 'chroma_chunks'"):
        score_run(make_runs({}), make_queries([("q", "d", [(5, 9)])]), chunks, metrics=names)


def test_union_length_kernel_equals_character_sets():
    rng = np.random.default_rng(4)
    group = rng.integers(0, 7, 300)
    lo = rng.integers(0, 500, 300)
    hi = lo + rng.integers(1, 80, 300)
    expected = [len({x for g, a, b in zip(group, lo, hi) if g == q for x in range(a, b)}) for q in range(8)]
    assert kernels.union_length_by(group, lo, hi, 8).tolist() == expected  # group 7 is empty: 0
    assert expected[7] == 0 and kernels.union_length_by(group[:0], lo[:0], hi[:0], 3).tolist() == [0, 0, 0]


def reference_span_scores(cell, ks):
    queries, rankings, by_doc = ref.reference_inputs(cell)
    rows = []
    for qid, doc_id, spans in queries:
        rows.append({"qid": qid, **ref.span_scores(rankings.get(qid, []), by_doc[doc_id], doc_id, spans, ks=ks)})
    return pl.DataFrame(rows)


def assert_equals_reference(cell, ks):
    names = span_names(*ks)
    fast = score_run(cell["runs"], cell["queries"], cell["chunks"], cell["texts"], metrics=names)
    slow = reference_span_scores(cell, ks)
    assert fast["qid"].to_list() == slow["qid"].to_list()
    for name in names:
        # integer counts, one division: equal to the last bit
        np.testing.assert_array_equal(fast[name].to_numpy(), slow[name].to_numpy(), err_msg=name)
    return fast


@pytest.mark.parametrize("mean_spans", [1.0, 2.1])  # one span per query: the disjoint fast path; else unions
def test_vectorized_equals_the_character_set_reference_on_synthetic_cells(mean_spans):
    cell = synthetic_cell(
        n_docs=40, n_queries=120, top_k=30, own_doc_chunks=8, chars_per_chunk=300, mean_spans=mean_spans, seed=21
    )
    fast = assert_equals_reference(cell, ks=(1, 5, 30, 60))  # 60 > the run's 30 rows
    assert 0.0 < fast["span_IoU@5"].mean() < fast["span_recall@30"].mean() <= 1.0  # not trivially zero
    assert (fast["span_precision_omega"] > 0).all()  # the chunk sets tile: every query has Ω > 0
    # recall never falls with k; precision-Ω is a property of the chunking, not the run
    assert (fast["span_recall@5"] <= fast["span_recall@30"]).all()
    assert (fast["span_recall@30"] == fast["span_recall@60"]).all()


@pytest.mark.parametrize("seed", [0, 1])
def test_vectorized_equals_the_reference_with_overlapping_chunks(seed):
    cell = overlapping_cell(seed)
    assert_equals_reference(cell, ks=(3, 10))


def test_precision_omega_ignores_the_run():
    cell = synthetic_cell(n_docs=10, n_queries=30, top_k=10, seed=3)
    tables_ = cell["queries"], cell["chunks"], cell["texts"]
    shuffled = cell["runs"].with_columns(pl.col("chunk_id").shuffle(seed=1).over("qid"))
    a = score_run(cell["runs"], *tables_, metrics=["span_precision_omega", "span_IoU@10"])
    b = score_run(shuffled, *tables_, metrics=["span_precision_omega", "span_IoU@10"])
    assert a["span_precision_omega"].to_list() == b["span_precision_omega"].to_list()
    assert a["span_IoU@10"].to_list() == b["span_IoU@10"].to_list()  # same top 10 as a set
    empty = cell["runs"].clear()
    c = score_run(empty, *tables_, metrics=["span_precision_omega", "span_IoU@10"])
    assert c["span_precision_omega"].to_list() == a["span_precision_omega"].to_list()
    assert (c["span_IoU@10"] == 0).all()


def test_registered_with_labels_outside_the_default_set():
    assert registered_metrics()[-8:] == [
        "span_IoU",
        "span_precision",
        "span_IoU_sum",
        "span_precision_sum",
        "span_recall",
        "span_precision_omega",
        "span_precision_omega_touching",
        "span_precision_omega_chroma",
    ]
    assert metric_label("span_IoU_sum@5") == "span IoU@5 (sum: Chroma's rule)"
    assert not set(metric_names()) & set(span_names(10))
    assert metric_label("span_IoU@5") == "span IoU@5" and metric_label("span_precision_omega") == "precision-Ω"
    assert "Smith & Troynikov" in parse_metric("span_recall@3").definition.formula
    with pytest.raises(ValueError, match="takes no cutoff"):
        parse_metric("span_precision_omega@10")
    with pytest.raises(ValueError, match="needs a positive integer k"):
        parse_metric("span_IoU")


def test_config_extra_adds_metrics_after_the_study_set():
    block = {"ndcg_k": 10, "recall_k": 50, "budgets": [512]}
    assert metrics_from_config(block) == metrics_from_config(block | {"extra": []}) == metric_names(10, 50, [512])
    names = metrics_from_config(block | {"extra": ["span_IoU@10", "span_precision_omega"]})
    assert names == metric_names(10, 50, [512]) + ["span_IoU@10", "span_precision_omega"]
    with pytest.raises(ValueError, match="metrics.extra: unknown metric 'span_iou@10'"):
        metrics_from_config(block | {"extra": ["span_iou@10"]})
    with pytest.raises(ValueError, match="metrics.extra: metric 'MRR' is listed twice"):
        metrics_from_config(block | {"extra": ["MRR"]})
    with pytest.raises(TypeError, match="list of metric names"):
        metrics_from_config(block | {"extra": "span_IoU@10"})


def test_the_config_schema_accepts_extra_metrics_and_the_primary_may_be_one():
    config = copy.deepcopy(yaml.safe_load((REPO / "config/config.yaml").read_text()))
    validate_config(config, REPO / "workflow/schemas/config.schema.yaml")
    assert "extra" not in config["metrics"]  # no default: the default config is unchanged
    config["metrics"]["extra"] = ["span_IoU@10", "span_precision_omega"]
    config["stats"]["primary_metric"] = "span_IoU@10"
    validate_config(config, REPO / "workflow/schemas/config.schema.yaml")
    assert Study.from_config(config).conditions
    config["metrics"]["extra"] = ["span IoU@10"]
    with pytest.raises(ConfigError, match="metrics.extra"):
        validate_config(config, REPO / "workflow/schemas/config.schema.yaml")


def test_the_ladder_shows_span_metrics_with_labels_and_legend():
    runs, queries, chunks = tiling_case()
    names = ["cov_nDCG@10", *span_names(3)]
    cell = {"corpus": "c", "embedder": "e", "reranker": "none"}
    scores = pl.concat(
        [
            score_run(runs, queries, chunks, make_texts(dict.fromkeys(range(5), 0)), metrics=names).with_columns(
                condition=pl.lit(condition), **{key: pl.lit(value) for key, value in cell.items()}
            )
            for condition in ("A", "B")
        ]
    )
    axes = {"boundaries": "structural", "structure": "gold", "prefix": "none", "retrieval": "flat"}
    ladder = ladder_table(
        ReportInputs(
            scores=scores, contrasts=pl.DataFrame(), conditions={"A": axes, "B": axes}, primary_metric="cov_nDCG@10"
        )
    )
    frame = ladder.blocks[0].frame
    assert frame.columns == [
        "condition",
        "coverage-nDCG@10",
        "span IoU@3",
        "span precision@3",
        "span recall@3",
        "precision-Ω",
    ]
    # means over q1 and q3 (which has no run rows): IoU (0.4 + 0)/2, Ω (0.5 + 0.1)/2
    assert frame["span IoU@3"].to_list() == pytest.approx([0.2, 0.2])
    assert frame["precision-Ω"].to_list() == pytest.approx([0.3, 0.3])
    assert any(line.startswith("**precision-Ω** (`span_precision_omega`)") for line in ladder.notes)


def test_the_span_table_sets_each_rule_beside_the_other():
    # a = [0,100), b = [50,150) of f, span [25,125), ranking a, b: union 2/3, sum 1/2 at k = 2; k = 1 agrees
    chunks = make_chunks([(0, "f", 0, 100), (1, "f", 50, 150)])
    queries = make_queries([("q", "f", [(25, 125)])])
    names = ["span_precision_sum@2", "span_IoU@2", "span_IoU_sum@2", "span_IoU@1", "span_precision_omega"]
    scores = score_run(make_runs({"q": [0, 1]}), queries, chunks, metrics=names).with_columns(
        condition=pl.lit("A"), corpus=pl.lit("c"), embedder=pl.lit("e"), reranker=pl.lit("none")
    )
    axes = {"boundaries": "structural", "structure": "gold", "prefix": "none", "retrieval": "flat"}
    table = span_rules_table(
        ReportInputs(scores=scores, contrasts=pl.DataFrame(), conditions={"A": axes}, primary_metric="span_IoU@2")
    )
    frame = table.blocks[0].frame
    # IoU@1 has no sum twin and span_precision@2 no union twin: neither is shown
    assert frame.columns == ["condition", "span IoU@2 (union)", "span IoU@2 (sum: Chroma's rule)", "precision-Ω"]
    assert frame.row(0)[1:] == pytest.approx((2 / 3, 0.5, 2 / 3))
    with pytest.raises(Omit, match="sum rule"):
        span_rules_table(
            ReportInputs(
                scores=scores.drop("span_IoU_sum@2"),
                contrasts=pl.DataFrame(),
                conditions={"A": axes},
                primary_metric="span_IoU@2",
            )
        )
