"""Seed 004's retrieval-layer comparison as a report table (report.compare_runs)."""

import polars as pl
import pytest

from structbench.metrics import run_comparison_table
from structbench.report import render_report, run_comparisons_section
from structbench.tables import conform


def run(rankings: dict[str, list[int]]) -> pl.DataFrame:
    rows = [(qid, rank, chunk, 1.0 / rank) for qid, chunks in rankings.items() for rank, chunk in enumerate(chunks, 1)]
    frame = pl.DataFrame(rows, schema=["qid", "rank", "chunk_id", "score"], orient="row")
    return conform(frame.with_columns(pl.lit("flat").alias("stage")), "runs")


PREFIXED = run({"q1": [1, 2, 3, 4, 5], "q2": [1, 2, 3, 4, 5], "q3": [1, 2, 3, 4, 5], "q4": [1, 2, 3, 4, 5]})
# q1 same top-5 in another order; q2 fully different; q3 same rank 1, 2 of 5 shared; q4 shares 4 of 5
UNPREFIXED = run({"q1": [2, 1, 3, 4, 5], "q2": [6, 7, 8, 9, 10], "q3": [1, 6, 7, 2, 8], "q4": [1, 2, 3, 4, 9]})


def test_the_table_holds_seed_004s_four_numbers_per_pair():
    labels = {"corpus": "kb", "embedder": "minilm", "reranker": "none", "run_a": "G3", "run_b": "G2"}
    table = run_comparison_table([(labels, PREFIXED, UNPREFIXED), (labels | {"run_b": "G3"}, PREFIXED, PREFIXED)])
    first, same = table.row(0, named=True), table.row(1, named=True)
    assert {key: first[key] for key in labels} == labels
    assert first["n_queries"] == 4 and first["n_dropped"] == 0 and first["depth"] == 5
    assert first["top1_changed"] == pytest.approx(2 / 4)  # q1 (2 vs 1) and q2
    assert first["mean_overlap"] == pytest.approx((5 + 0 + 2 + 4) / 4)
    assert first["fully_different"] == pytest.approx(1 / 4) and first["identical"] == pytest.approx(1 / 4)
    # a run against itself: nothing changes
    assert (same["top1_changed"], same["mean_overlap"], same["fully_different"], same["identical"]) == (0.0, 5.0, 0.0, 1.0)
    assert run_comparison_table([]).is_empty()


def test_the_report_shows_the_table_only_when_pairs_are_configured():
    labels = {"corpus": "kb", "embedder": "minilm", "reranker": "none", "run_a": "G3", "run_b": "G2"}
    table = run_comparison_table([(labels, PREFIXED, UNPREFIXED)])
    section = run_comparisons_section(table)
    assert section.startswith("## Retrieval-layer comparison")
    assert "G3 vs G2" in section and "0.500" in section and "2.750" in section
    text, _ = render_report(pl.DataFrame(), pl.DataFrame(), {}, {}, "cov_nDCG@10", run_comparisons=table)
    assert "## Retrieval-layer comparison" in text
    text, _ = render_report(pl.DataFrame(), pl.DataFrame(), {}, {}, "cov_nDCG@10")
    assert "Retrieval-layer comparison" not in text
