"""The subgroup analysis (structbench.stats.subgroups) against independent computations: a plain loop over the same
bootstrap draws, an OLS interaction, the contrast's own bootstrap; Holm over each contrast's moderators, the
not-testable rule, the resamples a subgroup is missing from, dz."""

import numpy as np
import polars as pl
import pytest
import statsmodels.api as sm

from structbench.stats.bootstrap import bootstrap_draws, bootstrap_p, bootstrap_p_mcse, percentile_ci
from structbench.stats.contrasts import contrast_table
from structbench.stats.moderators import LABELS, Labelling, Moderator
from structbench.stats.paired import fragile_decision, holm, holm_mcse
from structbench.stats.subgroups import MIN_SUBGROUP_DOCS, SUBGROUP_COLUMNS, subgroup_table

METRIC = "cov_nDCG@10"
CONTRAST = {"name": "T-C", "treatment": "T", "control": "C", "family": "primary"}


def cell_scores(per_doc: list[int], seed: int = 0, shift=None) -> pl.DataFrame:
    """Scores of conditions T and C: document d holds ``per_doc[d]`` questions; T is C plus noise (plus
    ``shift(d, q)``)."""
    rng = np.random.default_rng(seed)
    rows = []
    for d, count in enumerate(per_doc):
        for q in range(count):
            base = rng.uniform(0.1, 0.8)
            treated = base + rng.normal(0.02, 0.08) + (shift(d, q) if shift else 0.0)
            for condition, value in (("C", base), ("T", treated)):
                rows.append({"qid": f"d{d:02d}-q{q}", "doc_id": f"d{d:02d}", "condition": condition, METRIC: value})
    return pl.DataFrame(rows)


def labelling(name: str, groups: dict[str, str], levels: dict[str, str] | None = None) -> Labelling:
    """A moderator whose question ``qid`` is on side ``groups[qid]`` (A or B; a qid left out is unlabelled)."""
    rows = [(qid, (levels or {}).get(qid, f"side {group}"), group) for qid, group in sorted(groups.items())]
    return Labelling(Moderator(name, "side A", "side B"), pl.DataFrame(rows, schema=LABELS, orient="row"))


def paired(scores: pl.DataFrame) -> pl.DataFrame:
    """qid, doc_id, delta (T − C), sorted by qid."""
    wide = scores.pivot(on="condition", index=["qid", "doc_id"], values=METRIC).sort("qid")
    return wide.select("qid", "doc_id", (pl.col("T") - pl.col("C")).alias("delta"))


def loop_replicates(deltas: pl.DataFrame, groups: dict[str, str], B: int, seed: int):
    """The reference: replay the bootstrap's draws one replicate at a time; each drawn copy of a document brings
    its questions; a side's mean is over the drawn questions on that side (None where it drew none)."""
    docs = sorted(set(deltas["doc_id"].to_list()))
    by_doc = {doc: [] for doc in docs}
    for qid, doc, delta in deltas.iter_rows():
        by_doc[doc].append((groups.get(qid), delta))
    means = []
    for draw in bootstrap_draws(len(docs), B, seed):
        values = {"A": [], "B": []}
        for index in draw:
            for group, delta in by_doc[docs[index]]:
                if group:
                    values[group].append(delta)
        means.append({side: float(np.mean(v)) if v else None for side, v in values.items()})
    return means


def rows_of(table: pl.DataFrame, moderator: str) -> dict[str, dict]:
    picked = table.filter(pl.col("moderator") == moderator)
    return {row["kind"] if row["kind"] == "interaction" else row["group"]: row for row in picked.iter_rows(named=True)}


def test_the_interaction_is_a_plain_loop_over_the_contrasts_own_draws():
    per_doc = [2 + d % 4 for d in range(40)]
    scores = cell_scores(per_doc, seed=1)
    deltas = paired(scores)
    rng = np.random.default_rng(5)
    groups = {qid: "A" if rng.uniform() < 0.4 else "B" for qid in deltas["qid"].to_list()}
    table = subgroup_table(scores, [CONTRAST], [labelling("mixed", groups)], METRIC, B=700, seed=11)
    rows = rows_of(table, "mixed")

    means = loop_replicates(deltas, groups, B=700, seed=11)
    for side in ("A", "B"):
        kept = np.array([m[side] for m in means if m[side] is not None])
        low, high = percentile_ci(kept)
        assert rows[side]["ci_low"] == pytest.approx(low, abs=1e-12)
        assert rows[side]["ci_high"] == pytest.approx(high, abs=1e-12)
        assert rows[side]["n_resamples"] + rows[side]["n_empty_resamples"] == 700
        assert rows[side]["n_resamples"] == len(kept)
    both = np.array([m["A"] - m["B"] for m in means if m["A"] is not None and m["B"] is not None])
    interaction = rows["interaction"]
    low, high = percentile_ci(both)
    assert (interaction["ci_low"], interaction["ci_high"]) == (pytest.approx(low, abs=1e-12), pytest.approx(high))
    assert interaction["p"] == pytest.approx(float(bootstrap_p(both)), abs=1e-12)
    assert interaction["p_mcse"] == pytest.approx(float(bootstrap_p_mcse(interaction["p"], len(both))))
    assert interaction["n_resamples"] == len(both) and interaction["testable"]


def test_the_point_interaction_is_the_ols_interaction_of_the_deltas():
    """delta ~ 1 + [side A]: the coefficient of side A is the difference of the side means (Δ_A − Δ_B)."""
    scores = cell_scores([3] * 24, seed=2, shift=lambda d, q: 0.05 * (q == 0))
    deltas = paired(scores)
    groups = {qid: "A" if qid.endswith("q0") else "B" for qid in deltas["qid"].to_list()}
    rows = rows_of(subgroup_table(scores, [CONTRAST], [labelling("first", groups)], METRIC, B=200, seed=0), "first")
    on_a = np.array([groups[qid] == "A" for qid in deltas["qid"].to_list()], dtype=float)
    fit = sm.OLS(deltas["delta"].to_numpy(), sm.add_constant(on_a)).fit()
    assert rows["interaction"]["delta"] == pytest.approx(fit.params[1], abs=1e-12)
    assert rows["B"]["delta"] == pytest.approx(fit.params[0], abs=1e-12)
    assert rows["interaction"]["delta"] == rows["A"]["delta"] - rows["B"]["delta"]  # exactly
    assert (rows["A"]["n_queries"], rows["B"]["n_queries"], rows["A"]["n_docs"]) == (24, 48, 24)


def test_a_side_holding_every_question_has_the_contrasts_own_interval():
    """Same units, B and seed: the same draws as contrast_table. A side without a question has no Δ, no
    resample and no test, each said in the row."""
    scores = cell_scores([2, 3, 1, 4] * 6, seed=3)
    everyone = dict.fromkeys(paired(scores)["qid"].to_list(), "A")
    rows = rows_of(subgroup_table(scores, [CONTRAST], [labelling("all", everyone)], METRIC, B=900, seed=4), "all")
    contrast = contrast_table(scores, [CONTRAST], [METRIC], B=900, seed=4, mixedlm=False).row(0, named=True)
    assert rows["A"]["delta"] == pytest.approx(contrast["delta"], abs=1e-15)
    assert rows["A"]["ci_low"] == pytest.approx(contrast["ci_low"], abs=1e-12)
    assert rows["A"]["ci_high"] == pytest.approx(contrast["ci_high"], abs=1e-12)
    assert rows["B"]["n_queries"] == 0 and rows["B"]["n_resamples"] == 0 and rows["B"]["n_empty_resamples"] == 900
    assert np.isnan(rows["B"]["delta"]) and rows["B"]["note"].startswith("no question")
    interaction = rows["interaction"]
    assert not interaction["testable"] and np.isnan(interaction["p"]) and np.isnan(interaction["ci_low"])
    assert interaction["n_resamples"] == 0 and "not testable" in interaction["note"]


def test_resamples_missing_a_side_are_counted_and_left_out():
    """Side B in one document of 24: every resample that does not draw it has no B mean."""
    scores = cell_scores([2] * 24, seed=6)
    deltas = paired(scores)
    groups = {qid: "B" if qid.startswith("d07") else "A" for qid in deltas["qid"].to_list()}
    table = subgroup_table(scores, [CONTRAST], [labelling("rare", groups)], METRIC, B=800, seed=9)
    rows = rows_of(table, "rare")
    drawn = sum(7 in draw for draw in bootstrap_draws(24, 800, 9))
    assert 0 < drawn < 800
    assert rows["B"]["n_resamples"] == rows["interaction"]["n_resamples"] == drawn
    assert rows["B"]["n_empty_resamples"] == 800 - drawn and rows["A"]["n_empty_resamples"] == 0
    assert f"{800 - drawn} of 800 resamples drew no question" in rows["B"]["note"]
    assert not rows["B"]["testable"] and not rows["interaction"]["testable"]  # one document
    assert np.isfinite(rows["interaction"]["ci_low"])  # reported, not tested
    assert table.select(pl.all().is_null().any()).row(0) == (False,) * len(SUBGROUP_COLUMNS)


def split_by_documents(deltas: pl.DataFrame, n_a: int) -> dict[str, str]:
    """Side A: the questions of the first ``n_a`` documents; B: the rest."""
    docs = sorted(set(deltas["doc_id"].to_list()))
    return {qid: "A" if docs.index(doc) < n_a else "B" for qid, doc, _ in deltas.iter_rows()}


@pytest.mark.parametrize("n_a, testable", [(MIN_SUBGROUP_DOCS - 1, False), (MIN_SUBGROUP_DOCS, True)])
def test_a_side_in_fewer_than_twenty_documents_is_not_testable(n_a, testable):
    scores = cell_scores([2] * (n_a + 25), seed=7)
    groups = split_by_documents(paired(scores), n_a)
    rows = rows_of(subgroup_table(scores, [CONTRAST], [labelling("docs", groups)], METRIC, B=300, seed=1), "docs")
    assert rows["A"]["n_docs"] == n_a and rows["B"]["n_docs"] == 25
    assert rows["A"]["testable"] is testable and rows["B"]["testable"] and rows["interaction"]["testable"] is testable
    assert bool(np.isfinite(rows["interaction"]["p"])) is testable
    assert bool(np.isfinite(rows["interaction"]["p_holm"])) is testable
    assert np.isfinite(rows["interaction"]["ci_low"])  # the interval is reported either way


def test_holm_runs_over_the_testable_moderators_of_each_contrast_alone():
    scores = cell_scores([2] * 50, seed=8, shift=lambda d, q: 0.15 * (d % 2))
    scores = pl.concat([scores, scores.filter(pl.col("condition") == "T").with_columns(condition=pl.lit("U"))])
    deltas = paired(scores.filter(pl.col("condition") != "U"))
    qids = deltas["qid"].to_list()
    labellings = [
        labelling("odd_docs", {qid: "A" if int(qid[1:3]) % 2 else "B" for qid in qids}),
        labelling("first_question", {qid: "A" if qid.endswith("q0") else "B" for qid in qids}),
        labelling("few_docs", split_by_documents(deltas, 10)),  # 10 documents: not testable
        labelling("early_docs", split_by_documents(deltas, 25)),
    ]
    other = {"name": "U-C", "treatment": "U", "control": "C"}
    table = subgroup_table(scores, [CONTRAST, other], labellings, METRIC, B=1000, seed=3)
    for name in ("T-C", "U-C"):
        interactions = table.filter((pl.col("contrast") == name) & (pl.col("kind") == "interaction"))
        assert interactions["moderator"].to_list() == ["odd_docs", "first_question", "few_docs", "early_docs"]
        p, mcse = interactions["p"].to_numpy(), interactions["p_mcse"].to_numpy()
        assert np.isnan(p[2]) and interactions["testable"].to_list() == [True, True, False, True]
        tested = [0, 1, 3]
        expected = holm(p[tested])
        assert interactions["p_holm"].to_numpy()[tested] == pytest.approx(expected)
        assert interactions["p_holm_mcse"].to_numpy()[tested] == pytest.approx(holm_mcse(p[tested], mcse[tested]))
        fragile = fragile_decision(expected, holm_mcse(p[tested], mcse[tested]), 0.05)
        assert interactions["holm_fragile"].to_numpy()[tested].tolist() == fragile.tolist()
        assert np.isnan(interactions["p_holm"][2]) and not interactions["holm_fragile"][2]
    # the odd documents carry the shift: a clear interaction, Holm-adjusted over the three tested moderators
    first = table.filter((pl.col("contrast") == "T-C") & (pl.col("kind") == "interaction")).row(0, named=True)
    assert first["delta"] == pytest.approx(0.15, abs=0.05) and first["p"] == 0.0 and first["p_holm"] == 0.0


def test_dz_is_the_interaction_over_the_sd_of_every_paired_delta():
    scores = cell_scores([3] * 30, seed=10)
    deltas = paired(scores)
    # the third question of each document is left unlabelled: it still counts in the contrast's sd
    groups = {qid: ("A" if qid.endswith("q0") else "B") for qid in deltas["qid"].to_list() if not qid.endswith("q2")}
    rows = rows_of(subgroup_table(scores, [CONTRAST], [labelling("m", groups)], METRIC, B=200, seed=0), "m")
    sd = deltas["delta"].to_numpy().std(ddof=1)
    assert rows["interaction"]["dz"] == pytest.approx(rows["interaction"]["delta"] / sd, rel=1e-12)
    assert rows["interaction"]["n_excluded"] == rows["A"]["n_excluded"] == 30
    assert rows["interaction"]["n_queries"] == 60


def test_levels_of_a_side_holding_several_are_reported_after_the_sides():
    scores = cell_scores([3] * 22, seed=12)
    qids = paired(scores)["qid"].to_list()
    kinds = {qid: ("extractive", "abstractive", "yes_no")[int(qid[-1])] for qid in qids}
    groups = {qid: "A" if kind == "extractive" else "B" for qid, kind in kinds.items()}
    table = subgroup_table(scores, [CONTRAST], [labelling("qtype", groups, kinds)], METRIC, B=200, seed=0)
    assert table.select("kind", "group", "level").rows() == [
        ("subgroup", "A", "side A"),
        ("subgroup", "B", "side B"),
        ("level", "B", "abstractive"),
        ("level", "B", "yes_no"),
        ("interaction", "A − B", "side A − side B"),
    ]
    deltas = paired(scores)
    yes_no = deltas.filter(pl.col("qid").str.ends_with("q2"))["delta"].mean()
    assert table.row(3, named=True)["delta"] == pytest.approx(yes_no, abs=1e-15)


def test_query_clusters_resample_the_contrasts_query_draws():
    scores = cell_scores([2, 1, 3] * 8, seed=13)
    everyone = dict.fromkeys(paired(scores)["qid"].to_list(), "A")
    table = subgroup_table(scores, [CONTRAST], [labelling("all", everyone)], METRIC, B=400, seed=2, cluster="query")
    contrast = contrast_table(scores, [CONTRAST], [METRIC], B=400, seed=2, mixedlm=False, cluster="query")
    assert table.row(0, named=True)["ci_low"] == pytest.approx(contrast["ci_low"].item(), abs=1e-12)
    assert set(table["cluster"].to_list()) == {"query"}


def test_refusals_and_empty_inputs():
    scores = cell_scores([2] * 3)
    groups = labelling("m", dict.fromkeys(paired(scores)["qid"].to_list(), "A"))
    slope = {"name": "slope", "conditions": ["C", "T"], "family": "exploratory"}
    with pytest.raises(ValueError, match="'slope' is not a pairwise"):
        subgroup_table(scores, [slope], [groups], METRIC)
    with pytest.raises(ValueError, match=r"conditions \['X'\] have no scores"):
        subgroup_table(scores, [{"name": "X-C", "treatment": "X", "control": "C"}], [groups], METRIC)
    with pytest.raises(ValueError, match="stats.cluster"):
        subgroup_table(scores, [CONTRAST], [groups], METRIC, cluster="paragraph")
    assert subgroup_table(scores.clear(), [CONTRAST], [groups], METRIC).schema == pl.Schema(SUBGROUP_COLUMNS)
    first = subgroup_table(scores, [CONTRAST], [groups], METRIC, B=150, seed=5)
    assert first.equals(subgroup_table(scores, [CONTRAST], [groups], METRIC, B=150, seed=5))  # deterministic


def test_contrasts_sharing_their_documents_share_one_pass_and_the_numbers_of_each_alone():
    scores = cell_scores([2, 3] * 12, seed=14)
    shifted = scores.filter(pl.col("condition") == "T").with_columns(
        condition=pl.lit("U"), **{METRIC: pl.col(METRIC) + 0.01 * pl.col("qid").str.len_chars()}
    )
    # V leaves out a document's questions: its contrast resamples other units, so it takes its own pass
    partial = scores.filter((pl.col("condition") == "T") & (pl.col("doc_id") != "d03")).with_columns(
        condition=pl.lit("V")
    )
    scores = pl.concat([scores, shifted, partial])
    groups = labelling("first", {qid: "A" if qid.endswith("q0") else "B" for qid in paired(scores)["qid"].to_list()})
    contrasts = [
        CONTRAST,
        {"name": "U-C", "treatment": "U", "control": "C"},
        {"name": "V-C", "treatment": "V", "control": "C"},
    ]
    together = subgroup_table(scores, contrasts, [groups], METRIC, B=500, seed=6)
    alone = pl.concat([subgroup_table(scores, [c], [groups], METRIC, B=500, seed=6) for c in contrasts])
    # the same draws; a matrix product over more columns may round its last bit differently
    floats = [name for name, dtype in SUBGROUP_COLUMNS.items() if dtype == pl.Float64]
    assert together.drop(floats).equals(alone.drop(floats))
    for name in floats:
        np.testing.assert_allclose(together[name].to_numpy(), alone[name].to_numpy(), rtol=0, atol=1e-14)
