"""The decision of a cell (structbench.stats.decision), worked by hand: ranking, the tie rule, the minimum
detectable effect, the ceiling share, the reading and the leader as a call."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

from structbench.stats.decision import (
    MDE_MULTIPLIER,
    ceiling_share,
    cell_decision,
    decision_metric,
    decision_table,
    leader_call,
    minimum_detectable_effect,
    needs_workflow,
    paired_bootstrap,
    rank_conditions,
    tied,
)

GOLD = {"boundaries": "structural", "structure": "gold", "prefix": "path:3", "retrieval": "flat"}


def test_conditions_rank_by_descending_mean_equal_means_in_declared_order_nan_last():
    means = {"A": 0.3, "B": 0.5, "C": 0.5, "D": float("nan"), "E": 0.7}
    assert rank_conditions(means, ["C", "B", "A", "D", "E"]) == ["E", "C", "B", "A", "D"]
    assert rank_conditions(means, ["B", "C"]) == ["E", "B", "C", "A", "D"]
    assert rank_conditions({"b": 0.5, "a": 0.5}) == ["a", "b"]  # undeclared: by name


def test_tied_with_the_leader_is_a_holm_p_at_or_above_alpha():
    assert tied(0.05) and tied(0.9) and tied(float("nan"))
    assert not tied(0.0499) and not tied(0.0)
    assert tied(0.02, alpha=0.01) and not tied(0.02, alpha=0.05)


def test_minimum_detectable_effect_is_2_80_standard_errors():
    assert MDE_MULTIPLIER == 2.80
    assert minimum_detectable_effect(0.01) == pytest.approx(0.028)
    assert minimum_detectable_effect(0.0125) == pytest.approx(0.035)
    # 2.80 = z_.975 + z_.80 (two-sided alpha .05, power .80), to two decimals
    from statistics import NormalDist

    z = NormalDist().inv_cdf
    assert round(z(0.975) + z(0.80), 2) == MDE_MULTIPLIER


def test_ceiling_share_counts_queries_at_the_maximum_and_skips_missing_scores():
    assert ceiling_share([1.0, 0.5, 1.0, float("nan"), 0.2]) == 0.5
    assert ceiling_share([0.25, 0.5]) == 0.0
    assert ceiling_share([2.0, 0.5], maximum=2.0) == 0.5
    assert math.isnan(ceiling_share([]))


def test_the_reading_is_the_smallest_budget_when_a_read_time_condition_runs():
    metrics = ["qid", "cov_nDCG@10", "budget_cov@1024", "budget_cov@512", "MRR"]
    assert decision_metric(["flat", "parent:2"], metrics, "cov_nDCG@10") == "budget_cov@512"
    assert decision_metric(["flat", "window:256"], metrics, "cov_nDCG@10") == "budget_cov@512"
    assert decision_metric(["flat", "two_stage"], metrics, "cov_nDCG@10") == "cov_nDCG@10"
    assert decision_metric(["parent:2"], ["cov_nDCG@10"], "cov_nDCG@10") == "cov_nDCG@10"  # no budget scored


def test_paired_bootstrap_standard_error_of_two_documents():
    # two documents of one query each, deltas 0 and 1: a replicate mean is 0, 1/2 or 1 with probabilities
    # 1/4, 1/2, 1/4, so its standard deviation is sqrt(1/8)
    result = paired_bootstrap([0.0, 1.0], ["a", "b"], n_boot=40_000, seed=3)
    assert result.estimate == 0.5 and result.n_queries == 2 and result.n_docs == 2
    assert result.se == pytest.approx(math.sqrt(1 / 8), abs=0.005)
    constant = paired_bootstrap([0.1] * 6, list("aabbcc"), n_boot=200, seed=0)
    assert constant.se == pytest.approx(0.0, abs=1e-12) and constant.p == 0.0
    assert constant.ci_low == pytest.approx(0.1) and constant.ci_high == pytest.approx(0.1)


def cell_scores() -> pl.DataFrame:
    """20 documents of one query: A's scores, B = A − 0.1 on every query, C = A − 0.02 on even documents and
    A + 0.018 on odd ones (mean A − 0.001); A scores 1 on 5 of the 20."""
    base = np.array([1.0] * 5 + [0.3 + 0.02 * i for i in range(15)])
    shift = np.where(np.arange(20) % 2 == 0, -0.02, 0.018)
    rows = []
    for condition, scores in (("A", base), ("B", base - 0.1), ("C", base + shift)):
        rows += [
            {"qid": f"q{i:02d}", "doc_id": f"d{i:02d}", "condition": condition, "m": float(s)}
            for i, s in enumerate(scores)
        ]
    return pl.DataFrame(rows)


def test_a_cell_is_ranked_with_ties_said_as_ties():
    decision = cell_decision(cell_scores(), "m", order=["B", "C", "A"], n_boot=2000, seed=1)
    assert decision["condition"].to_list() == ["A", "C", "B"] and decision["rank"].to_list() == [1, 2, 3]
    leader, c, b = decision.rows(named=True)
    assert leader["delta"] == 0.0 and leader["tied"] is None and leader["p_holm"] is None
    assert leader["at_ceiling"] == 0.25 and leader["n_queries"] == 20 and leader["n_docs"] == 20
    assert (leader["cluster"], leader["n_clusters"]) == ("document", 20)
    assert b["delta"] == pytest.approx(0.1) and b["p"] == 0.0 and b["tied"] is False
    assert b["se"] == pytest.approx(0.0, abs=1e-12)  # the same difference on every query
    assert c["delta"] == pytest.approx(0.001) and c["p_holm"] > 0.5 and c["tied"] is True
    # Holm over the two comparisons with the leader: C's p is the larger, so its adjusted p is its own
    assert c["p_holm"] == pytest.approx(c["p"])
    assert c["mde"] == pytest.approx(2.80 * c["se"])
    # the per-query differences are +0.02 / -0.018 on alternate documents: SE about sd / sqrt(20)
    sd = np.std(np.where(np.arange(20) % 2 == 0, 0.02, -0.018))
    assert c["se"] == pytest.approx(sd / math.sqrt(20), rel=0.15)
    # each condition's own mean and CI
    assert leader["mean"] == pytest.approx(cell_scores().filter(pl.col("condition") == "A")["m"].mean())
    assert leader["ci_low"] <= leader["mean"] <= leader["ci_high"]


def test_the_decision_table_ranks_each_cell_on_its_reading():
    scores = cell_scores().with_columns(
        corpus=pl.lit("kb"), embedder=pl.lit("e5"), reranker=pl.lit("none"), **{"budget_cov@512": -pl.col("m")}
    )
    conditions = dict.fromkeys("ABC", GOLD)
    flat = decision_table(scores, conditions, "m", n_boot=200, seed=0)
    assert flat["metric"].unique().to_list() == ["m"] and flat["condition"][0] == "A"
    readtime = conditions | {"C": GOLD | {"retrieval": "parent:2"}}
    budget = decision_table(scores, readtime, "m", n_boot=200, seed=0)
    assert budget["metric"].unique().to_list() == ["budget_cov@512"] and budget["condition"][0] == "B"
    assert budget.columns[:3] == ["corpus", "embedder", "reranker"]
    assert decision_table(scores.clear(), conditions, "m", n_boot=10, seed=0).is_empty()


def test_the_leader_as_one_call_of_the_public_api():
    call = "structbench.chunk_markdown_file(path{})"
    assert leader_call(GOLD) == call.format(", depth=3")
    assert leader_call(GOLD | {"prefix": "none"}) == call.format(", depth=0")
    assert leader_call(GOLD | {"boundaries": "fixed_overlap:0.5"}) == call.format(", depth=3, overlap=0.5")
    assert leader_call(GOLD | {"t_max": 200}) == call.format(", depth=3, t_max=200")
    assert leader_call(GOLD, t_max=500, t_min=30) == call.format(", depth=3, t_max=500, t_min=30")
    assert leader_call(GOLD | {"t_max": 200}, t_max=500) == call.format(", depth=3, t_max=200")
    for other in (
        {"retrieval": "two_stage"},
        {"retrieval": "parent:2"},
        {"prefix": "placebo:3"},
        {"prefix": "context"},
        {"structure": "induced:llm"},
        {"boundaries": "fixed"},
    ):
        assert leader_call(GOLD | other) is None
        ((axis, value),) = other.items()
        assert needs_workflow(GOLD | other) == f"{axis} {value}"
    assert needs_workflow(GOLD | {"prefix": "context", "retrieval": "toc"}) == "prefix context, retrieval toc"
    assert needs_workflow(GOLD) == ""
