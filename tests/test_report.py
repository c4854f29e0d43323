import numpy as np
import polars as pl
import pytest

from structbench.metrics import metric_names, parse_metric
from structbench.report import (
    bm25_section,
    condition_means,
    contrasts_section,
    format_p,
    ladder_section,
    markdown_table,
    metric_columns,
    metric_legend,
    render_report,
)
from structbench.stats import contrast_table


def scores_frame():
    rows = []
    for condition, offset in (("A", 0.0), ("B", 0.1)):
        for i, doc in enumerate(["d1", "d1", "d2"]):
            rows.append(
                {"qid": f"q{i}", "doc_id": doc, "qtype": "factoid", "cov_nDCG@10": 0.5 + offset + 0.1 * i,
                 "MRR": 1.0 / (i + 1), "corpus": "c", "condition": condition, "embedder": "e", "reranker": "none"}
            )
    return pl.DataFrame(rows)


def test_condition_means_are_unweighted_per_query_means_with_counts():
    means = condition_means(scores_frame())
    row = means.filter(pl.col("condition") == "B").row(0, named=True)
    assert row["n_queries"] == 3 and row["n_docs"] == 2
    assert abs(row["cov_nDCG@10"] - (0.6 + 0.7 + 0.8) / 3) < 1e-12
    assert "qid" not in means.columns


def test_report_has_every_table_and_formats_p_values():
    contrasts = pl.DataFrame(
        [{"corpus": "c", "embedder": "e", "reranker": "none", "contrast": "B-A", "treatment": "B", "control": "A",
          "metric": "cov_nDCG@10", "label": "primary", "delta": 0.1, "ci_low": 0.1, "ci_high": 0.1,
          "p_holm": 0.0001, "dz": float("inf"), "p_mixedlm": float("nan"), "p_mixedlm_nested": 0.04,
          "n_queries": 3, "n_docs": 2}]
    )
    conditions = {name: {"boundaries": "structural", "structure": "gold", "prefix": "none", "retrieval": "flat"}
                  for name in "AB"}
    text, means = render_report(scores_frame(), contrasts, {"c": {"documents": 2, "funnel": []}}, conditions, "cov_nDCG@10")
    for heading in ("## Contrasts", "## Per-condition means", "## Metric ladder", "## Corpora"):
        assert heading in text
    assert "| B-A | B − A | cov_nDCG@10 | primary | 0.1 [0.1, 0.1] | <0.001 |" in text
    assert "n/a" in text  # the NaN MixedLM p is shown, not hidden
    assert means.height == 2


def test_markdown_table_and_p_formatting():
    assert markdown_table(pl.DataFrame({"a": [1.23456], "b": [None]})) == "| a | b |\n|---|---|\n| 1.235 | – |"
    assert format_p(0.0004) == "<0.001" and format_p(0.0123) == "0.012" and format_p(float("nan")) == "n/a"


def test_a_run_with_no_scored_corpus_still_reports_the_corpora():
    text, means = render_report(pl.DataFrame(), pl.DataFrame(), {"w": {"documents": 4}}, {}, "cov_nDCG@10")
    assert "nothing was scored" in text and "| statistic | w |" in text


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


def test_a_zero_bootstrap_p_from_stats_is_reported_as_below_one_over_B():
    # treatment beats control on every query: no replicate of the mean delta reaches zero, so p = 0
    scores = scores_frame()
    B = 2_000
    contrasts = contrast_table(scores, [{"name": "B-A", "treatment": "B", "control": "A", "family": "primary"}],
                               ["cov_nDCG@10"], B=B, seed=1, mixedlm=False)
    assert contrasts["p"].item() == 0.0 and contrasts["p_holm"].item() == 0.0
    assert "bootstrap_iters" not in contrasts.columns  # B reaches the report as a parameter
    contrasts = contrasts.with_columns(corpus=pl.lit("c"), embedder=pl.lit("e"), reranker=pl.lit("none"))
    section = contrasts_section(contrasts, bootstrap_iters=B)
    assert "| < 0.0005 |" in section and "<0.001" not in section
    assert "| <0.001 |" in contrasts_section(contrasts)  # the old signature still works, as before
    conditions = {name: {"boundaries": "structural", "structure": "gold", "prefix": "none", "retrieval": "flat"} for name in "AB"}
    text, _ = render_report(scores, contrasts, {}, conditions, "cov_nDCG@10", bootstrap_iters=B)
    assert "| < 0.0005 |" in text and "B = 2000 replicates" in text


def test_metric_columns_come_from_the_registry():
    scores = scores_frame().with_columns(pl.lit(3.5).alias("latency_ms"), pl.lit(1).alias("n_chunks"))
    assert metric_columns(scores) == ["cov_nDCG@10", "MRR"]  # numeric but unregistered columns are not metrics
    means = condition_means(scores)
    assert "latency_ms" not in means.columns and means.columns[-2:] == ["cov_nDCG@10", "MRR"]


def test_ladder_is_labelled_and_explained_by_the_registry():
    means = condition_means(scores_frame())
    ladder = ladder_section(means)
    assert "| condition | coverage-nDCG@10 | MRR |" in ladder
    a_mean = means.filter(pl.col("condition") == "A")["cov_nDCG@10"].item()
    assert f"| A | {a_mean:.3f} | {np.mean([1, 1 / 2, 1 / 3]):.3f} |" in ladder
    assert f"- **coverage-nDCG@10** (`cov_nDCG@10`): {parse_metric('cov_nDCG@10').description}" in ladder
    assert "- **MRR** (`MRR`)" in ladder


def test_the_legend_lists_a_family_once():
    legend = metric_legend(metric_names())
    assert legend.count("\n") == 5  # six families for eight columns
    assert "- **budget coverage@512, budget coverage@1024, budget coverage@2048** (`budget_cov@512`, `budget_cov@1024`, `budget_cov@2048`): " in legend


def test_bm25_section_uses_registry_labels():
    bm25 = pl.DataFrame(
        {"corpus": ["c"] * 4, "condition": ["bm25:structural/gold"] * 4, "qid": list("abcd"),
         "gold_top1": [1.0, 0.0, 0.0, 1.0], "MRR": [1.0, 0.5, 0.25, 1.0], "cov_nDCG@10": [0.9, 0.1, 0.2, 0.6]}
    )
    section = bm25_section(bm25, "cov_nDCG@10")
    assert "| corpus | chunk set | n_queries | BM25 gold top-1 | BM25 MRR | BM25 coverage-nDCG@10 |" in section
    assert "| c | structural/gold | 4 | 0.500 | 0.688 | 0.450 |" in section
    # a primary metric that is already shown is not shown twice
    assert bm25_section(bm25, "MRR").count("BM25 MRR") == 1


def test_every_default_metric_has_a_label_for_the_report():
    labels = [parse_metric(name).label for name in metric_names()]
    assert labels == ["coverage-nDCG@10", "binary nDCG@10", "MRR", "recall@50", "budget coverage@512",
                      "budget coverage@1024", "budget coverage@2048", "gold top-1"]


def test_routing_section_gives_section_recall_per_routed_condition_and_query_type():
    from structbench.report import routing_section

    cell = {"corpus": "c", "embedder": "e", "reranker": "none", "doc_id": "d1"}
    qtypes = ["factoid", "factoid", "multihop"]
    flat = pl.DataFrame([{**cell, "qid": f"q{i}", "qtype": t, "condition": "A", "cov_nDCG@10": 0.5}
                         for i, t in enumerate(qtypes)])
    two_stage = pl.DataFrame([{**cell, "qid": f"q{i}", "qtype": t, "condition": "R", "cov_nDCG@10": 0.3,
                               "section_recall": r} for i, (t, r) in enumerate(zip(qtypes, [1.0, 0.0, 1.0]))])
    toc = pl.DataFrame([{**cell, "qid": f"q{i}", "qtype": t, "condition": "T", "cov_nDCG@10": 0.4,
                         "section_recall": r, "toc_fallback": f}
                        for i, (t, r, f) in enumerate(zip(qtypes, [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]))])
    scores = pl.concat([flat, two_stage, toc], how="diagonal_relaxed")
    conditions = {"A": {"retrieval": "flat"}, "R": {"retrieval": "two_stage"}, "T": {"retrieval": "toc"}}
    text = routing_section(scores, conditions, "cov_nDCG@10")
    assert "| condition | retrieval | qtype | n_queries | section recall | TOC fallback | coverage-nDCG@10 |" in text
    rows = [line for line in text.splitlines() if line.startswith("| R ") or line.startswith("| T ")]
    assert rows == [
        "| R | two_stage | factoid | 2 | 0.500 | – | 0.300 |",
        "| R | two_stage | multihop | 1 | 1.000 | – | 0.300 |",
        "| R | two_stage | all | 3 | 0.667 | – | 0.300 |",
        "| T | toc | factoid | 2 | 0.000 | 0.500 | 0.400 |",
        "| T | toc | multihop | 1 | 1.000 | 0.000 | 0.400 |",
        "| T | toc | all | 3 | 0.333 | 0.333 | 0.400 |",
    ]
    assert "| A " not in text  # flat conditions have no router
    assert routing_section(flat, conditions, "cov_nDCG@10") == ""
