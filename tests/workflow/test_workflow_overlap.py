"""End to end: an overlapping fixed-window condition beside its tiling twin on the knowledge base (gold arm, no
LLM), through the report's index-cost table (docs/method.md §6, "Overlap")."""

from __future__ import annotations

import json

import polars as pl

from structbench.chunking.tiling import assert_covering, assert_tiling
from structbench.datamodel import read_table


def test_an_overlapping_fixed_window_condition_runs_end_to_end_and_reports_its_index_cost(knobs_run):
    """conftest's knobs run: F0o (fixed_overlap:0.5) beside F0, its tiling twin."""
    results = knobs_run.workdir / "results"
    documents = read_table(results / "kb/corpus/documents.parquet", "documents")
    tiling = read_table(results / "kb/chunks/fixed/gold.parquet", "chunks")
    overlapping = read_table(results / "kb/chunks/fixed_overlap-0.5/gold.parquet", "chunks")
    assert_tiling(documents, tiling)
    assert_covering(documents, overlapping)
    # half-window overlap: about twice the windows, each of about the same size (both size-matched to G2)
    assert 1.6 * tiling.height <= overlapping.height <= 2.4 * tiling.height
    assert abs(overlapping["n_tokens"].mean() - tiling["n_tokens"].mean()) < 0.15 * tiling["n_tokens"].mean()
    bounds = json.loads((results / "kb/chunks/fixed_overlap-0.5/gold.bounds.json").read_text())
    assert (bounds["tiles"], bounds["overlap"]) == (False, "0.5") and bounds["over_t_max"] == 0
    assert json.loads((results / "kb/chunks/fixed/gold.bounds.json").read_text())["tiles"] is True
    assert (results / "kb/chunks/fixed_overlap-0.5/gold.size_match.json").exists()

    cost = pl.read_csv(results / "report/tables/index_cost.csv")
    by_set = {row["text set"]: row for row in cost.iter_rows(named=True)}
    assert by_set["fixed/gold/none"]["tiles"] == "yes" and by_set["fixed/gold/none"]["indexed / text"] == 1.0
    row = by_set["fixed_overlap-0.5/gold/none"]
    assert (row["tiles"], row["chunks"]) == ("overlap 0.5", overlapping.height)
    assert row["vector bytes"] == overlapping.height * 384 * 4  # MiniLM: 384 float32 per vector
    assert row["embedded tokens"] == int(overlapping["n_tokens"].sum()) > by_set["fixed/gold/none"]["embedded tokens"]
    assert 1.6 <= row["indexed / text"] <= 2.4
    report = (results / "report/report.md").read_text()
    assert "## Index cost" in report and "overlap 0.5" in report

    contrasts = pl.read_parquet(results / "contrasts/kb/minilm/none/contrasts.parquet")
    overlap_rows = contrasts.filter(pl.col("contrast") == "F0o-F0")
    assert overlap_rows.height >= 1 and set(overlap_rows["label"]) == {"overlap"}
    scores = pl.read_parquet(results / "kb/scores/minilm/none/F0o.parquet")
    assert scores["cov_nDCG@10"].is_finite().all() and scores["span_precision@5"].is_between(0, 1).all()
