"""Query generation in the workflow: a Markdown folder without a questions file, `queries: generated`, three
KB documents and a tiny random-weight model; the generated queries are scored and contrasted. (A corpus
where no query survives is carried through the measured half by tests/querygen/test_querygen.py, step by step.)"""

import json
import shutil

import polars as pl
import pytest
from conftest import REPO, run_snakemake
from llm_testing import build_tiny_model
from test_workflow import F0

from structbench.corpus.verify import verify_queries
from structbench.querygen.leakage import normalized_tokens

pytestmark = pytest.mark.workflow

DOCS = ("home-sourdough-bakery", "kellbrook-weir-hydro", "rooftop-beekeeping")
QUERIES = "results/kb/queries"


def lcs(a, b):
    table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            table[i + 1][j + 1] = table[i][j] + 1 if x == y else max(table[i][j + 1], table[i + 1][j])
    return table[-1][-1]


def rouge_tokens(text):
    """rouge-score's default tokenization, restated: lower-case, runs of [a-z0-9]."""
    import re

    return re.findall(r"[a-z0-9]+", text.lower())


def config(workdir, docs, model):
    path = workdir / "config.yaml"
    path.write_text(
        f"corpora:\n  kb: {{kind: markdown, path: '{docs}', questions: null, queries: generated}}\n"
        f"llms:\n  tiny: {{backend: transformers, model: '{model}', threads: 1, batch_size: 8}}\n"
        # A random-weight model writes a few garbled words: min_query_words 1 and require_question false let
        # them through the sanity checks, so the filter, the balancing and the scoring have queries to work on.
        "querygen: {llm: tiny, per_document: 1, per_type: 2, max_new_tokens: 24, min_query_words: 1, "
        "require_question: false}\n"
        "llm_shards: 2\n"
        "stats: {bootstrap_iters: 1000, primary_metric: cov_nDCG@10, mixedlm: false}\n"
        # the gold arm with fixed windows: the default's induced-structure arm is not under test here
        "select: {conditions: [F0, G2, G3]}\n" + F0
    )
    return path


def test_generated_queries_are_sampled_screened_balanced_and_scored(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    for stem in DOCS:
        shutil.copy(REPO / "data/kb/docs" / f"{stem}.md", docs / f"{stem}.md")
    model = build_tiny_model(tmp_path / "model", context=16384)
    work = tmp_path / "work"
    work.mkdir()

    result = run_snakemake(work, "--cores", "2", "--configfile", str(config(work, docs, model)))
    assert result.returncode == 0, result.stderr[-4000:]

    documents = pl.read_parquet(work / "results/kb/corpus/documents.parquet")
    candidates = pl.read_parquet(work / f"{QUERIES}/candidates.parquet")
    queries = pl.read_parquet(work / f"{QUERIES}/queries.parquet")
    stats = json.loads((work / f"{QUERIES}/stats.json").read_text())
    # One target per document and type where the document has one (every KB document has two top-level
    # sections, so all four types), each with its own qid, in two shards of 2 + 1 documents.
    assert candidates.group_by("doc_id").len().sort("doc_id").rows() == [(doc, 4) for doc in DOCS]
    assert sorted(
        u["documents"] for u in (json.loads(p.read_text()) for p in (work / QUERIES / "shards").glob("*.usage.json"))
    ) == [1, 2]
    assert verify_queries(documents, candidates.drop("top_section_ids")) == []
    # The shipped queries are the balanced survivors (at most per_type = 2 of each type), and every one of
    # them passes the filter when checked again here, independently of the library's filter.
    survivors = candidates.filter(pl.col("rejected_at") == "")
    balanced = sum(min(2, count) for count in survivors.group_by("qtype").len()["len"].to_list())
    assert queries.height == stats["by_type"][-1]["finals"] == balanced > 0
    assert set(queries["qid"].to_list()) <= set(survivors["qid"].to_list())
    assert all(count <= 2 for count in queries.group_by("qtype").len()["len"].to_list())
    texts = dict(documents.select("doc_id", "text").iter_rows())
    for query, doc_id, spans in queries.select("text", "doc_id", "spans").iter_rows():
        for start, end in spans:
            span = texts[doc_id][start:end]
            q, s = rouge_tokens(query), rouge_tokens(span)
            assert 2 * lcs(q, s) / (len(q) + len(s)) <= 0.35
            tokens, span_tokens = normalized_tokens(query), normalized_tokens(span)
            grams = {tuple(span_tokens[i : i + 4]) for i in range(len(span_tokens) - 3)}
            assert not any(tuple(tokens[i : i + 4]) in grams for i in range(len(tokens) - 3))
    total = stats["by_type"][-1]
    assert total["generated"] == 12 == total["rejected_question"] + total["rejected_paraphrase"] + total["survivors"]

    # The conditions score exactly the shipped queries, and the contrasts test them.
    for condition in ("F0", "G2", "G3"):
        scores = pl.read_parquet(work / f"results/kb/scores/minilm/none/{condition}.parquet")
        assert sorted(scores["qid"].to_list()) == sorted(queries["qid"].to_list())
    contrasts = pl.read_parquet(work / "results/contrasts/kb/minilm/none/contrasts.parquet")
    assert contrasts.height == 2 and set(contrasts["n_queries"].to_list()) == {queries.height}
    corpus_stats = json.loads((work / "results/kb/corpus/stats.json").read_text())
    assert corpus_stats["queries"] == queries.height  # the corpus reports the queries it is scored on
    report = (work / "results/report/report.md").read_text()
    assert "## Query generation" in report and "Kuehlkamp et al. (all)" in report
