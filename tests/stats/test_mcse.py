"""Monte-Carlo honesty (docs/method.md §11): each bootstrap p's standard error, the Holm-adjusted p's,
and the fragile mark, on hand-worked numbers."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from statsmodels.stats.multitest import multipletests

from structbench.stats import bootstrap_p, bootstrap_p_mcse, contrast_table, fragile_decision, holm, holm_mcse


def test_p_mcse_is_twice_the_binomial_error_of_the_smaller_tail():
    # B = 1000 replicates, 25 of them at or below zero: p = 2 * 25 / 1000 = 0.05, the tail share 0.025
    replicates = np.concatenate((np.full(25, -1.0), np.full(975, 1.0)))
    p = bootstrap_p(replicates)
    assert p == pytest.approx(0.05)
    assert bootstrap_p_mcse(p, 1000) == pytest.approx(2 * math.sqrt(0.025 * 0.975 / 1000))  # 0.009874
    assert bootstrap_p_mcse(0.05, 10_000) == pytest.approx(math.sqrt(0.05 * 1.95 / 10_000))  # 0.0031
    assert bootstrap_p_mcse([0.0, 1.0], 10_000).tolist() == [0.0, 0.01]
    assert math.isnan(bootstrap_p_mcse(float("nan"), 100))


def test_holm_mcse_scales_the_error_of_the_p_that_sets_each_adjusted_value():
    p = [0.01, 0.04, 0.03]
    mcse = [0.001, 0.002, 0.003]
    # sorted 0.01, 0.03, 0.04 times 3, 2, 1: 0.03, 0.06, 0.04 -> running max 0.03, 0.06, 0.06
    assert holm(p) == pytest.approx([0.03, 0.06, 0.06])
    assert holm(p) == pytest.approx(multipletests(p, method="holm")[1])
    # 0.01's own error x 3; 0.03's x 2, which also sets 0.04's adjusted value
    assert holm_mcse(p, mcse) == pytest.approx([0.003, 0.006, 0.006])
    assert np.isnan(holm_mcse([0.01, float("nan")], [0.001, 0.1])).tolist() == [False, True]


def test_a_decision_within_two_errors_of_alpha_is_fragile():
    # |0.03 - 0.05| = 0.02 >= 2 x 0.003; |0.06 - 0.05| = 0.01 < 2 x 0.006
    assert fragile_decision([0.03, 0.06, 0.06], [0.003, 0.006, 0.006], 0.05).tolist() == [False, True, True]
    assert fragile_decision([float("nan")], [float("nan")], 0.05).tolist() == [False]


def test_the_contrast_table_carries_each_error_and_the_fragile_mark():
    rng = np.random.default_rng(0)
    n = 40
    base = rng.random(n)
    scores = pl.DataFrame(
        {
            "qid": [f"q{i}" for i in range(n)] * 3,
            "doc_id": [f"d{i // 2}" for i in range(n)] * 3,
            "condition": ["A"] * n + ["B"] * n + ["C"] * n,
            "m": np.concatenate((base, base + rng.normal(0.05, 0.2, n), base + rng.normal(0.0, 0.2, n))),
        }
    )
    specs = [
        {"name": "B-A", "treatment": "B", "control": "A", "family": "primary"},
        {"name": "C-A", "treatment": "C", "control": "A", "family": "primary"},
    ]
    table = contrast_table(scores, specs, ["m"], B=500, seed=1, mixedlm=False)
    p = table["p"].to_numpy()
    assert table["p_mcse"].to_numpy() == pytest.approx(np.sqrt(p * (2 - p) / 500))
    assert table["p_holm_mcse"].to_numpy() == pytest.approx(holm_mcse(p, table["p_mcse"].to_numpy()))
    expected = fragile_decision(table["p_holm"].to_numpy(), table["p_holm_mcse"].to_numpy(), 0.05)
    assert table["holm_fragile"].to_list() == expected.tolist()
