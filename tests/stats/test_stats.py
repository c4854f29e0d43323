"""Tests of structbench.stats: bootstrap against a per-iteration loop, Holm against statsmodels,
MixedLM against the statsmodels formula API, and the contrasts table."""

from __future__ import annotations

import io

import numpy as np
import polars as pl
import pytest
from report_testing import CONDITIONS as REPORT_CONDITIONS
from report_testing import CONTRAST_SPECS, synthetic_scores

from structbench.stats import (
    CONTRAST_COLUMNS,
    DRAW_BLOCK,
    bootstrap_draws,
    bootstrap_p,
    bootstrap_replicates,
    cluster_bootstrap,
    cluster_sums,
    cohens_dz,
    contrast_table,
    depth_slopes,
    holm,
    iter_bootstrap_draws,
    mixedlm_treatment_p,
    paired_deltas,
    win_tie_loss,
)
from structbench.stats.means import (
    CONDITION_MEANS,
    DOSE_RESPONSE,
    DoseSeries,
    condition_mean_cis,
    dose_response_slopes,
    dose_series,
)

# --------------------------------------------------------------------------- helpers


def clustered_deltas(n_queries=300, n_docs=90, effect=0.02, seed=0, dyadic=False):
    rng = np.random.default_rng(seed)
    doc = np.sort(rng.integers(0, n_docs, n_queries))
    doc_effect = rng.normal(0, 0.05, n_docs)[doc]
    delta = effect + doc_effect + rng.normal(0, 0.1, n_queries)
    if dyadic:  # multiples of 1/64: every sum is exact, so any summation order gives the same bits
        delta = np.round(delta * 64) / 64
    return delta, np.array([f"doc{d:03d}" for d in doc])


def slow_bootstrap(deltas, doc_ids, n_boot, seed):
    """Per-iteration reference: replay the published draws one replicate at a time."""
    docs = sorted(set(doc_ids))
    per_doc = {d: [x for x, dd in zip(deltas, doc_ids) if dd == d] for d in docs}
    draws = bootstrap_draws(len(docs), n_boot, seed)
    means = []
    for row in draws:
        total, count = 0.0, 0
        for index in row:
            values = per_doc[docs[index]]
            total += sum(values)
            count += len(values)
        means.append(total / count)
    means = np.array(means)
    low, high = np.percentile(means, [2.5, 97.5])
    p = min(1.0, 2 * min(np.mean(means <= 0), np.mean(means >= 0)))
    return low, high, p, means


def long_scores(conditions: dict[str, float], n_queries=240, n_docs=80, seed=0, metrics=("cov_nDCG@10", "MRR")):
    rng = np.random.default_rng(seed)
    doc = np.sort(rng.integers(0, n_docs, n_queries))
    base = rng.random(n_queries)
    frames = []
    for name, effect in conditions.items():
        columns = {m: np.clip(base + effect + rng.normal(0, 0.05, n_queries), 0, 1) for m in metrics}
        frames.append(
            pl.DataFrame(
                {
                    "qid": [f"q{i:04d}" for i in range(n_queries)],
                    "doc_id": [f"d{d:03d}" for d in doc],
                    "condition": name,
                    **columns,
                }
            )
        )
    return pl.concat(frames)


# --------------------------------------------------------------------------- bootstrap


def test_draws_are_reproducible_blocks():
    blocks = list(iter_bootstrap_draws(37, 2 * DRAW_BLOCK + 5, seed=3))
    assert [len(b) for b in blocks] == [DRAW_BLOCK, DRAW_BLOCK, 5]
    assert np.array_equal(np.concatenate(blocks), bootstrap_draws(37, 2 * DRAW_BLOCK + 5, seed=3))
    assert np.array_equal(bootstrap_draws(37, 100, seed=3), bootstrap_draws(37, 100, seed=3))
    assert not np.array_equal(bootstrap_draws(37, 100, seed=3), bootstrap_draws(37, 100, seed=4))
    draws = bootstrap_draws(37, 1000, seed=0)
    assert draws.min() == 0 and draws.max() == 36


def test_vectorized_bootstrap_equals_per_iteration_loop_exactly():
    delta, doc = clustered_deltas(n_queries=120, n_docs=40, effect=0.01, dyadic=True)
    low, high, p, means = slow_bootstrap(delta, doc, n_boot=700, seed=9)  # 700: crosses draw blocks
    docs, sums, counts = cluster_sums(delta, doc)
    replicates = bootstrap_replicates(sums, counts, n_boot=700, seed=9)
    assert np.array_equal(replicates[:, 0], means)
    result = cluster_bootstrap(delta, doc, n_boot=700, seed=9)
    assert (result.ci_low[0], result.ci_high[0], result.p[0]) == (low, high, p)
    assert result.n_queries == 120 and result.n_docs == len(docs)
    assert 0 < p < 1  # the case exercises both tails


def test_vectorized_bootstrap_matches_loop_on_general_floats():
    delta, doc = clustered_deltas(n_queries=150, n_docs=50, effect=0.0, seed=4)
    low, high, p, means = slow_bootstrap(delta, doc, n_boot=500, seed=2)
    docs, sums, counts = cluster_sums(delta, doc)
    np.testing.assert_allclose(bootstrap_replicates(sums, counts, n_boot=500, seed=2)[:, 0], means, rtol=0, atol=1e-14)
    result = cluster_bootstrap(delta, doc, n_boot=500, seed=2)
    assert result.ci_low[0] == pytest.approx(low, abs=1e-14) and result.ci_high[0] == pytest.approx(high, abs=1e-14)
    assert result.p[0] == pytest.approx(p)


def test_several_contrasts_share_draws():
    a, doc = clustered_deltas(seed=1)
    b = a * 0.5 - 0.01
    together = cluster_bootstrap(np.column_stack([a, b]), doc, n_boot=2000, seed=5)
    alone_a = cluster_bootstrap(a, doc, n_boot=2000, seed=5)
    alone_b = cluster_bootstrap(b, doc, n_boot=2000, seed=5)
    np.testing.assert_allclose(together.ci_low, [alone_a.ci_low[0], alone_b.ci_low[0]], atol=1e-14)
    np.testing.assert_allclose(together.p, [alone_a.p[0], alone_b.p[0]])


def test_bootstrap_definition_edge_cases():
    doc = np.array(["a", "a", "b", "c"])
    constant = cluster_bootstrap(np.full(4, 0.25), doc, n_boot=300, seed=0)
    assert (constant.ci_low[0], constant.ci_high[0], constant.p[0]) == (0.25, 0.25, 0.0)
    zero = cluster_bootstrap(np.zeros(4), doc, n_boot=300, seed=0)
    assert zero.p[0] == 1.0  # 2 * min(1, 1) clipped
    assert bootstrap_p(np.array([-1.0, 1.0, 2.0, 3.0])) == pytest.approx(0.5)
    with pytest.raises(ValueError):
        bootstrap_replicates(np.ones(3), np.array([1.0, 0.0, 2.0]), n_boot=10, seed=0)


def test_cluster_bootstrap_is_wider_than_query_bootstrap_under_clustering():
    delta, doc = clustered_deltas(n_queries=600, n_docs=60, seed=8)  # strong document effect
    clustered = cluster_bootstrap(delta, doc, n_boot=3000, seed=1)
    per_query = cluster_bootstrap(delta, np.arange(len(delta)).astype(str), n_boot=3000, seed=1)
    assert clustered.ci_high[0] - clustered.ci_low[0] > 1.3 * (per_query.ci_high[0] - per_query.ci_low[0])


# --------------------------------------------------------------------------- Holm, dz, paired deltas


@pytest.mark.parametrize("seed", range(5))
def test_holm_matches_statsmodels(seed):
    from statsmodels.stats.multitest import multipletests

    rng = np.random.default_rng(seed)
    p = rng.random(int(rng.integers(1, 9))) ** 3
    if len(p) > 2:
        p[1] = p[0]  # a tie
    assert np.allclose(holm(p), multipletests(p, method="holm")[1])


def test_holm_ignores_nan_members():
    from statsmodels.stats.multitest import multipletests

    p = np.array([0.01, np.nan, 0.04, 0.03])
    adjusted = holm(p)
    assert np.isnan(adjusted[1])
    assert np.allclose(adjusted[[0, 2, 3]], multipletests(p[[0, 2, 3]], method="holm")[1])
    assert np.isnan(holm([np.nan])).all()


def test_cohens_dz():
    x = np.array([0.1, 0.3, -0.05, 0.2])
    assert cohens_dz(x) == pytest.approx(x.mean() / x.std(ddof=1))
    assert np.isnan(cohens_dz([0.5])) and np.isnan(cohens_dz([0.2, 0.2]))


def test_paired_deltas_drop_and_count():
    a = pl.DataFrame({"qid": ["q1", "q2", "q3"], "doc_id": ["d", "d", "e"], "m": [0.5, 0.7, 0.1]})
    b = pl.DataFrame({"qid": ["q3", "q2", "q4"], "doc_id": ["e", "d", "f"], "m": [0.3, 0.2, 0.9]})
    paired = paired_deltas(a, b, "m")
    assert paired.qid.tolist() == ["q2", "q3"]
    assert paired.delta == pytest.approx([0.5, -0.2])
    assert paired.n_dropped == 2 and paired.n_docs == 2 and paired.mean == pytest.approx(0.15)
    with pytest.raises(ValueError, match="different documents"):
        paired_deltas(a, b.with_columns(pl.lit("x").alias("doc_id")), "m")


# --------------------------------------------------------------------------- MixedLM


def mixed_data(n_queries=60, n_docs=15, seed=0):
    rng = np.random.default_rng(seed)
    doc = np.sort(rng.integers(0, n_docs, n_queries))
    base = 0.4 + rng.normal(0, 0.1, n_docs)[doc] + rng.normal(0, 0.15, n_queries)
    score = np.concatenate([base + rng.normal(0, 0.05, n_queries), base + 0.03 + rng.normal(0, 0.05, n_queries)])
    treated = np.r_[np.zeros(n_queries), np.ones(n_queries)]
    docs = np.r_[doc, doc].astype(str)
    qids = np.r_[np.arange(n_queries), np.arange(n_queries)].astype(str)
    return score, treated, docs, qids


def test_mixedlm_matches_statsmodels_formula_api():
    import warnings

    import pandas as pd
    import statsmodels.formula.api as smf

    score, treated, docs, qids = mixed_data()
    data = pd.DataFrame({"score": score, "treated": treated, "doc": docs, "qid": qids})
    data = data.sort_values(["doc", "qid", "treated"]).reset_index(drop=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # boundary warnings of the reference fits
        plain = smf.mixedlm("score ~ treated", data, groups="doc").fit(reml=True)
        # statsmodels' default bfgs stops short on this model; lbfgs reaches the optimum ours reaches
        nested = smf.mixedlm(
            "score ~ treated", data, groups="doc", re_formula="1", vc_formula={"query": "0 + C(qid)"}
        ).fit(reml=True, method="lbfgs")
    ours_plain = mixedlm_treatment_p(score, treated, docs, qids, nested=False)
    ours_nested = mixedlm_treatment_p(score, treated, docs, qids, nested=True)
    assert ours_plain.p == pytest.approx(plain.pvalues["treated"], rel=1e-4)
    assert ours_nested.p == pytest.approx(nested.pvalues["treated"], rel=1e-3)
    assert ours_nested.p < ours_plain.p  # the query effect removes baseline variance from the residual


def test_mixedlm_degenerate_inputs_return_nan_with_a_reason():
    score, treated, docs, qids = mixed_data()
    flat = mixedlm_treatment_p(np.full(len(score), 0.5), treated, docs, qids, nested=True)
    assert np.isnan(flat.p) and flat.note
    one_doc = mixedlm_treatment_p(score, treated, np.full(len(score), "d"), qids)
    assert np.isnan(one_doc.p) and "documents" in one_doc.note
    one_condition = mixedlm_treatment_p(score, np.zeros(len(score)), docs, qids)
    assert np.isnan(one_condition.p) and one_condition.note


# --------------------------------------------------------------------------- contrasts table

CONTRASTS = [
    {"name": "C1", "treatment": "A3", "control": "A1", "family": "primary"},
    {"name": "C2", "treatment": "A3", "control": "P", "family": "primary"},
    {"name": "C4", "treatment": "A4", "control": "A3", "family": "primary"},
    {"name": "S1", "treatment": "A2", "control": "A1", "family": "secondary"},
    {"name": "depth", "conditions": ["A2", "A3-d1", "A3-d2", "A3"], "family": "exploratory"},
]
CONDITIONS = {"A1": 0.0, "A2": 0.01, "A3-d1": 0.015, "A3-d2": 0.02, "A3": 0.03, "P": 0.02, "A4": -0.02}


def test_contrast_table_columns_values_and_holm():
    scores = long_scores(CONDITIONS)
    table = contrast_table(scores, CONTRASTS, ["cov_nDCG@10", "MRR"], B=2000, seed=7, mixedlm=False)
    assert table.schema == pl.Schema(CONTRAST_COLUMNS)
    assert list(table.columns[:19]) == [
        "contrast", "treatment", "control", "metric", "delta", "ci_low", "ci_high", "p", "p_holm", "dz",
        "p_mixedlm", "p_mixedlm_nested", "n_queries", "n_docs", "n_dropped", "wins", "ties", "losses", "label",
    ]  # fmt: skip
    assert table.height == len(CONTRASTS) * 2
    assert table["contrast"].to_list() == ["C1", "C1", "C2", "C2", "C4", "C4", "S1", "S1", "depth", "depth"]
    row = table.filter((pl.col("contrast") == "C1") & (pl.col("metric") == "MRR")).row(0, named=True)
    a3 = scores.filter(pl.col("condition") == "A3").sort("qid")["MRR"].to_numpy()
    a1 = scores.filter(pl.col("condition") == "A1").sort("qid")["MRR"].to_numpy()
    assert row["delta"] == pytest.approx((a3 - a1).mean())
    assert row["dz"] == pytest.approx(cohens_dz(a3 - a1))
    assert row["ci_low"] < row["delta"] < row["ci_high"]
    assert row["n_queries"] == 240 and row["n_dropped"] == 0
    for metric in ("cov_nDCG@10", "MRR"):
        primary = table.filter((pl.col("label") == "primary") & (pl.col("metric") == metric))
        assert np.allclose(primary["p_holm"].to_numpy(), holm(primary["p"].to_numpy()))
        secondary = table.filter((pl.col("label") == "secondary") & (pl.col("metric") == metric))
        assert secondary["p_holm"].to_list() == secondary["p"].to_list()  # a family of one
    assert table.filter(pl.col("label") == "exploratory")["p_holm"].is_nan().all()
    assert table["p_mixedlm"].is_nan().all()


def test_win_tie_loss_counts_strict_signs_and_exact_ties():
    assert win_tie_loss([0.25, 0.0, -0.5, 0.0, 1e-300, -0.0]) == (2, 3, 1)  # a tiny delta is a win, -0.0 a tie
    assert win_tie_loss([]) == (0, 0, 0)
    with pytest.raises(ValueError, match="NaN"):
        win_tie_loss([0.1, float("nan")])


def test_contrast_table_counts_wins_ties_and_losses_per_query():
    # Six queries over three documents, worked by hand: T beats C on q1 and q4, equals it on q2, q3 and q6
    # (q6 through two different float paths to the same value), loses on q5; q7 is scored under T only.
    control = [0.5, 0.25, 1.0, 0.0, 0.75, 0.1 + 0.2]
    treatment = [0.75, 0.25, 1.0, 0.5, 0.5, 0.30000000000000004]
    rows = [
        {"qid": f"q{i + 1}", "doc_id": f"d{i // 2}", "condition": name, "MRR": value}
        for name, values in (("C", control), ("T", treatment))
        for i, value in enumerate(values)
    ]
    rows.append({"qid": "q7", "doc_id": "d3", "condition": "T", "MRR": 1.0})
    rows += [{**row, "condition": "M"} for row in rows if row["condition"] == "C"]
    contrasts = [
        {"name": "T-C", "treatment": "T", "control": "C", "family": "primary"},
        {"name": "C-T", "treatment": "C", "control": "T", "family": "primary"},
        {"name": "slope", "conditions": ["C", "M", "T"], "family": "exploratory"},
    ]
    table = contrast_table(pl.DataFrame(rows), contrasts, ["MRR"], B=200, seed=0, mixedlm=False)
    counts = table.select("contrast", "wins", "ties", "losses", "n_queries", "n_dropped").rows()
    assert counts == [("T-C", 2, 3, 1, 6, 1), ("C-T", 1, 3, 2, 6, 1), ("slope", None, None, None, 6, 1)]


def test_contrast_table_bootstrap_uses_the_documented_draws():
    scores = long_scores(CONDITIONS)
    table = contrast_table(scores, CONTRASTS[:1], ["MRR"], B=1500, seed=11, mixedlm=False)
    a = scores.filter(pl.col("condition") == "A3").select("qid", "doc_id", "MRR")
    b = scores.filter(pl.col("condition") == "A1").select("qid", "doc_id", "MRR")
    paired = paired_deltas(a, b, "MRR")
    direct = cluster_bootstrap(paired.delta, paired.doc_id, n_boot=1500, seed=11)
    row = table.row(0, named=True)
    assert (row["ci_low"], row["ci_high"], row["p"]) == pytest.approx(
        (direct.ci_low[0], direct.ci_high[0], direct.p[0]), abs=1e-14
    )


def test_contrast_table_is_byte_identical_across_calls():
    scores = long_scores(CONDITIONS, n_queries=80, n_docs=30)
    contrasts = CONTRASTS[:2]

    def parquet_bytes():
        buffer = io.BytesIO()
        contrast_table(scores, contrasts, ["MRR"], B=1000, seed=3, mixedlm=True).write_parquet(buffer, statistics=False)
        return buffer.getvalue()

    assert parquet_bytes() == parquet_bytes()


def test_contrast_table_mixedlm_columns_and_dropped_queries():
    scores = long_scores(CONDITIONS, n_queries=90, n_docs=30)
    scores = scores.filter(~((pl.col("condition") == "A1") & pl.col("qid").is_in(["q0000", "q0001", "q0002"])))
    table = contrast_table(scores, CONTRASTS[:1], ["MRR"], B=500, seed=0, mixedlm=True)
    row = table.row(0, named=True)
    assert row["n_queries"] == 87 and row["n_dropped"] == 3
    assert 0 <= row["p_mixedlm"] <= 1 and 0 <= row["p_mixedlm_nested"] <= 1
    only_primary = contrast_table(
        scores, CONTRASTS[:1], ["MRR", "cov_nDCG@10"], B=200, seed=0, mixedlm=True, mixedlm_metrics=["MRR"]
    )
    assert only_primary["p_mixedlm"].is_nan().to_list() == [False, True]


def test_depth_slope_equals_slope_of_means():
    scores = long_scores(CONDITIONS)
    conditions = ["A2", "A3-d1", "A3-d2", "A3"]
    slopes = depth_slopes(scores, conditions, "MRR")
    means = [scores.filter(pl.col("condition") == c)["MRR"].mean() for c in conditions]
    assert slopes.mean == pytest.approx(np.polyfit([0, 1, 2, 3], means, 1)[0], abs=1e-12)
    assert depth_slopes(scores, conditions, "MRR", depths=[0, 2, 4, 6]).mean == pytest.approx(slopes.mean / 2)
    q = scores.filter(pl.col("qid") == "q0005").sort("condition")
    y = [q.filter(pl.col("condition") == c)["MRR"].item() for c in conditions]
    assert slopes.delta[5] == pytest.approx(np.polyfit([0, 1, 2, 3], y, 1)[0], abs=1e-12)


def test_contrast_table_rejects_unknown_conditions_and_families():
    scores = long_scores({"A1": 0.0, "A3": 0.01}, n_queries=20, n_docs=5)
    with pytest.raises(ValueError, match="no scores"):
        contrast_table(scores, [{"name": "X", "treatment": "A9", "control": "A1", "family": "primary"}], ["MRR"], B=10)
    with pytest.raises(ValueError, match="family"):
        contrast_table(scores, [{"name": "X", "treatment": "A3", "control": "A1", "family": "main"}], ["MRR"], B=10)


# --------------------------------------------------------------------------- per-condition statistics (stats.means)


def test_condition_mean_cis_match_an_independent_cluster_bootstrap():
    scores = synthetic_scores(corpora=("alpha",))
    cis = condition_mean_cis(scores, "cov_nDCG@10", n_boot=300, seed=5)
    row = cis.filter(pl.col("condition") == "G2").row(0, named=True)
    g2 = scores.filter(pl.col("condition") == "G2").sort("qid")
    assert row["mean"] == pytest.approx(g2["cov_nDCG@10"].mean()) and row["n_docs"] == 12 and row["n_queries"] == 48
    # the same draws, by hand: per-document sums and counts, replicate mean = drawn sums / drawn counts
    docs = sorted(g2["doc_id"].unique().to_list())
    sums = np.array([g2.filter(pl.col("doc_id") == d)["cov_nDCG@10"].sum() for d in docs])
    counts = np.array([g2.filter(pl.col("doc_id") == d).height for d in docs])
    draws = bootstrap_draws(len(docs), 300, seed=5)
    replicates = sums[draws].sum(axis=1) / counts[draws].sum(axis=1)
    assert (row["ci_low"], row["ci_high"]) == pytest.approx(tuple(np.percentile(replicates, [2.5, 97.5])))
    assert row["ci_low"] < row["mean"] < row["ci_high"]


def test_dose_series_are_declared_contrasts_then_conditions_that_differ_only_in_depth():
    series = dose_series(REPORT_CONDITIONS, CONTRAST_SPECS)
    assert [(s.name, s.conditions, s.depths, s.declared) for s in series] == [
        ("depth", ("G2", "G3-d1", "G3"), (0.0, 1.0, 3.0), True)
    ]  # the derived G2/G3-d1/G3 group is the same one
    undeclared = dose_series(REPORT_CONDITIONS, [])
    assert [(s.name, s.conditions, s.depths) for s in undeclared] == [
        ("G2 → G3-d1 → G3", ("G2", "G3-d1", "G3"), (0.0, 1.0, 3.0))
    ]  # placebo and two-stage are not on the path axis
    assert (
        dose_series({"F0": REPORT_CONDITIONS["F0"], "G2": REPORT_CONDITIONS["G2"]}, []) == []
    )  # one depth per group: no series
    two_levels = {name: REPORT_CONDITIONS[name] for name in ("G2", "G3")}
    assert dose_series(two_levels, []) == []  # two depths are a contrast, not a slope


def test_condition_means_table_is_a_direct_cluster_bootstrap_per_condition():
    scores = synthetic_scores()
    table = condition_mean_cis(scores, "cov_nDCG@10", n_boot=500, seed=3)
    assert dict(table.schema) == CONDITION_MEANS and table.height == 2 * len(REPORT_CONDITIONS)
    for row in table.iter_rows(named=True):
        group = scores.filter((pl.col("corpus") == row["corpus"]) & (pl.col("condition") == row["condition"]))
        group = group.sort("qid")
        direct = cluster_bootstrap(group["cov_nDCG@10"].to_numpy(), group["doc_id"].to_numpy(), n_boot=500, seed=3)
        assert (row["mean"], row["ci_low"], row["ci_high"]) == (direct.estimate[0], direct.ci_low[0], direct.ci_high[0])
        assert (row["n_queries"], row["n_docs"]) == (direct.n_queries, direct.n_docs)


def test_dose_response_slopes_are_one_bootstrapped_slope_per_cell_and_series_and_match_the_contrast_table():
    scores = synthetic_scores()
    series = dose_series(REPORT_CONDITIONS, CONTRAST_SPECS) + dose_series(REPORT_CONDITIONS, [])  # declared, derived
    table = dose_response_slopes(scores, series, "cov_nDCG@10", n_boot=400, seed=7)
    assert dict(table.schema) == DOSE_RESPONSE and table.height == 2 * 2 * 3  # corpora x series x members
    assert set(table["metric"]) == {"cov_nDCG@10"}
    for (corpus, name), rows in table.group_by(["corpus", "series"], maintain_order=True):
        one = next(s for s in series if s.name == name)
        # one row per member, in the series' order and with its depths, all carrying the series' one slope
        assert rows["condition"].to_list() == list(one.conditions) and rows["depth"].to_list() == list(one.depths)
        assert set(rows["declared"]) == {one.declared}
        slopes = depth_slopes(scores.filter(pl.col("corpus") == corpus), one.conditions, "cov_nDCG@10", one.depths)
        boot = cluster_bootstrap(slopes.delta, slopes.doc_id, n_boot=400, seed=7)
        expected = (boot.estimate[0], boot.ci_low[0], boot.ci_high[0], boot.p[0], slopes.n_queries)
        for row in rows.iter_rows(named=True):
            assert (
                row["slope"],
                row["slope_ci_low"],
                row["slope_ci_high"],
                row["slope_p"],
                row["slope_n_queries"],
            ) == expected
    for corpus in ("alpha", "beta"):
        cell = scores.filter(pl.col("corpus") == corpus)
        contrast = contrast_table(cell, CONTRAST_SPECS[3:], ["cov_nDCG@10"], B=400, seed=7, mixedlm=False)
        row = table.filter((pl.col("corpus") == corpus) & pl.col("declared")).row(0, named=True)
        assert (row["slope"], row["slope_ci_low"], row["slope_ci_high"], row["slope_p"]) == pytest.approx(
            tuple(contrast.row(0, named=True)[c] for c in ("delta", "ci_low", "ci_high", "p")), abs=1e-14
        )  # Table 1's declared slope: the same depth_slopes, the same draws


def test_dose_series_travel_through_the_workflows_params():
    for one in dose_series(REPORT_CONDITIONS, CONTRAST_SPECS) + dose_series(REPORT_CONDITIONS, []):
        assert DoseSeries.from_params(one.as_params()) == one


def test_per_condition_statistics_of_nothing_scored_are_empty_tables():
    assert dict(condition_mean_cis(pl.DataFrame(), "MRR", 10, 0).schema) == CONDITION_MEANS
    assert dose_response_slopes(pl.DataFrame(), [], "MRR", 10, 0).is_empty()
