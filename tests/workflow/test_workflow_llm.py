"""The LLM steps in the workflow: structure induction (A2) and situating contexts (A1) end to end on three
KB documents with a tiny random-weight model, then a second workdir on the same cache asks the model
nothing."""

import json
import shutil

import polars as pl
import pytest
from conftest import REPO, run_snakemake
from llm_testing import build_tiny_model

from structbench.corpus.verify import verify_sections

pytestmark = pytest.mark.workflow

DOCS = ("home-sourdough-bakery", "kellbrook-weir-hydro", "rooftop-beekeeping")
INDUCED = "results/kb/structure/induced-llm"
CONTEXTS = "results/kb/contexts/fixed/induced-llm"


def three_document_kb(root):
    """Three KB documents and their questions, copied so the corpus stays small."""
    docs = root / "docs"
    docs.mkdir(parents=True)
    for stem in DOCS:
        shutil.copy(REPO / "data/kb/docs" / f"{stem}.md", docs / f"{stem}.md")
    lines = [
        line
        for line in (REPO / "data/kb/questions.jsonl").read_text().splitlines()
        if json.loads(line)["doc_id"] in DOCS
    ]
    (root / "questions.jsonl").write_text("\n".join(lines) + "\n")
    return docs, root / "questions.jsonl"


def llm_config(workdir, docs, questions, model, cache, extra=""):
    path = workdir / "config.yaml"
    path.write_text(
        f"corpora:\n  kb: {{kind: markdown, path: '{docs}', questions: '{questions}'}}\n"
        f"cache: '{cache}'\n"
        f"llms:\n  tiny: {{backend: transformers, model: '{model}', threads: 1, max_new_tokens: 24, batch_size: 8}}\n"
        "inducers:\n  llm: {llm: tiny}\n"
        "contexts: {llm: tiny, max_new_tokens: 24}\n"
        "llm_shards: 2\n"
        "select: {conditions: [A1, A2, G2]}\n"
        "stats: {bootstrap_iters: 1000, primary_metric: cov_nDCG@10, mixedlm: false}\n"
        "conditions:\n"
        "  A1: {boundaries: fixed, structure: 'induced:llm', prefix: context, retrieval: flat}\n"
        "  A2: {boundaries: structural, structure: 'induced:llm', prefix: none, retrieval: flat}\n"
        "contrasts:\n  A2-G2: {treatment: A2, control: G2, family: primary}\n" + extra
    )
    return path


def shard_usages(workdir):
    paths = sorted((workdir / INDUCED / "shards").glob("*.usage.json")) + sorted(
        (workdir / CONTEXTS / "shards").glob("*.usage.json")
    )
    return {str(path.relative_to(workdir)): json.loads(path.read_text()) for path in paths}


def tiny_llm_study(root):
    """Three KB documents, a tiny random-weight model and a cache folder (docs, questions, model, cache)."""
    docs, questions = three_document_kb(root / "kb")
    return docs, questions, build_tiny_model(root / "model", context=16384), root / "cache"


def test_induced_structure_and_contexts_end_to_end_then_all_from_cache(tmp_path, tiny_llm_run):
    # The first run: conftest's session run (also test_slurm's reference), on a cache of its own.
    run = tiny_llm_run
    docs, questions, model, cache = run.docs, run.questions, run.model, run.cache
    first, second = run.workdir, tmp_path / "second"
    second.mkdir()

    # Induced sections tile every document (the merge verified them; re-checked here independently).
    paragraphs = pl.read_parquet(first / "results/kb/corpus/paragraphs.parquet")
    sections = pl.read_parquet(first / INDUCED / "sections.parquet")
    assert verify_sections(paragraphs, sections) == []
    assert sorted(sections["doc_id"].unique().to_list()) == sorted(DOCS)
    status = pl.read_parquet(first / INDUCED / "status.parquet")
    assert sorted(status["doc_id"].to_list()) == sorted(DOCS)
    assert set(status["status"].to_list()) <= {"usable", "repaired", "failed"}

    # Two shards of three documents: 2 + 1, each document in one shard; every shard asked the model.
    first_usage = shard_usages(first)
    induction_shards = [u for name, u in first_usage.items() if "structure" in name]
    assert sorted(u["documents"] for u in induction_shards) == [1, 2]
    # Every request was answered (none over the context: a failed request is not cached, so it would be
    # asked again on the second run) and none came from the cache, which was empty.
    assert all(u["generated"] > 0 and u["failed"] == 0 and u["served_from_cache"] == 0 for u in first_usage.values()), (
        first_usage
    )

    # One context per fixed/induced chunk, capped at contexts.max_tokens, and rendered into the A1 texts.
    chunks = pl.read_parquet(first / "results/kb/chunks/fixed/induced-llm.parquet")
    contexts = pl.read_parquet(first / f"{CONTEXTS}.parquet")
    assert contexts["chunk_id"].to_list() == sorted(chunks["chunk_id"].to_list())
    assert contexts["context_tokens"].max() <= 80
    texts = pl.read_parquet(first / "results/kb/texts/fixed/induced-llm/context.parquet").sort("chunk_id")
    for (context,), text in zip(contexts.select("context").iter_rows(), texts["text_for_embedding"].to_list()):
        assert context in text

    stats = json.loads((first / INDUCED / "stats.json").read_text())
    assert stats["documents"] == 3 and stats["usable"] + stats["repaired"] + stats["failed"] == 3
    assert stats["mean_sections_induced"] == pytest.approx(sections.height / 3)
    assert 0.0 <= stats["identical_span_share"] <= 1.0

    report = (first / "results/report/report.md").read_text()
    for needle in ("## Structure induction", "## Situating contexts", "## LLM calls", "A2-G2", "A2 − G2"):
        assert needle in report, needle

    # Another workdir, the same cache: the LLM steps rerun but every answer comes from the cache.
    targets = [f"{INDUCED}/sections.parquet", f"{CONTEXTS}.parquet"]
    result = run_snakemake(
        second, *targets, "--cores", "2", "--configfile", str(llm_config(second, docs, questions, model, cache))
    )
    assert result.returncode == 0, result.stderr[-4000:]
    second_usage = shard_usages(second)
    assert second_usage.keys() == first_usage.keys()
    for name, usage in second_usage.items():
        assert usage["generated"] == usage["failed"] == usage["backend_calls"] == 0, (name, usage)
        assert usage["served_from_cache"] == first_usage[name]["generated"], name
    assert (second / INDUCED / "sections.parquet").read_bytes() == (first / INDUCED / "sections.parquet").read_bytes()
    assert (second / f"{CONTEXTS}.parquet").read_bytes() == (first / f"{CONTEXTS}.parquet").read_bytes()

    # A new chunk bound on the completed run: chunking and everything downstream of it is planned again
    # (the contexts are of chunks, so they too), nothing upstream: not the corpus, not structure induction.
    from test_workflow import planned_jobs, planned_outputs

    config = llm_config(tmp_path, docs, questions, model, cache, extra="chunking: {t_max: 300}\n")  # not into first
    result = run_snakemake(first, "-n", "--configfile", str(config))
    out = result.stdout + result.stderr
    assert result.returncode == 0, out[-3000:]
    assert planned_jobs(out) == {
        "structural_chunks": 2,
        "fixed_chunks": 1,
        "chunk_contexts": 2,
        "merge_contexts": 1,  # gold + induced
        # four text sets: the three conditions' and the BM25 probe's unprefixed text of A1's chunk set
        "texts": 4,
        "embed_texts": 3,
        "retrieve": 3,
        "score": 3,
        "bm25": 3,
        "score_bm25": 3,
        "induction_stats": 1,
        "contrasts": 1,
        "condition_stats": 1,
        "decisive_questions": 1,  # A2 − G2's rankings
        "report": 1,
        "all": 1,
    }
    assert f"{INDUCED}/sections.parquet" not in planned_outputs(out)


def test_the_default_plans_one_llm_job_per_shard(tmp_path):
    """The default config on the KB: one induction and one context job per shard, each merged once."""
    from conftest import kb_config
    from test_workflow import planned_jobs

    for shards in (1, 3):
        config = kb_config(tmp_path, f"llm_shards: {shards}\n", whole_default=True)
        result = run_snakemake(tmp_path, "-n", "--configfile", str(config))
        assert result.returncode == 0, result.stderr[-3000:]
        jobs = planned_jobs(result.stdout + result.stderr)
        assert jobs["induce_structure"] == jobs["chunk_contexts"] == shards
        assert jobs["merge_structure"] == jobs["merge_contexts"] == 1
        # the LLM inducer and the two model-free ones (one job each, not sharded: they run no LLM)
        assert jobs["induction_stats"] == 3 and jobs["segment_structure"] == jobs["learned_structure"] == 1
        # The twenty-five conditions of the default: nineteen text sets (A4, G4, M4 and L4 rank the vectors of
        # A3, G3, M3 and L3 by two-stage routing; B2 and B3 rank G2's and G3's texts by BM25), 25 cells, four
        # stage-1 routing jobs.
        assert jobs["texts"] == jobs["embed_texts"] == 19 and jobs["score"] == 25
        assert jobs["route_sections"] == 4
