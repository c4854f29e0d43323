import polars as pl

from structbench.report import condition_means, format_p, markdown_table, render_report


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
