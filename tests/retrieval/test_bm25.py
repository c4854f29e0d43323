import json

import numpy as np
import polars as pl
import pytest

from structbench.retrieval.bm25 import BM25Index, bm25_search, english_tokens, word_tokens


def test_bm25_ranks_the_keyword_match_first_and_breaks_ties_by_chunk_id():
    chunks = [
        "the weir has a fish pass",
        "sourdough starter needs flour",
        "bees overwinter in a cluster",
        "a totally unrelated text",
        "another unrelated text",
    ]
    for analyzer in ("words", "english"):
        runs = bm25_search(
            chunks, ["how does the fish pass work", "zebra"], ["q1", "q2"], top_k=5, analyzer_name=analyzer
        )
        q1 = runs.filter(pl.col("qid") == "q1").sort("rank")
        assert q1["chunk_id"][0] == 0
        assert q1["score"][0] > q1["score"][1]
        # No query word occurs anywhere: every score ties at 0, so the order is chunk_id ascending.
        assert runs.filter(pl.col("qid") == "q2").sort("rank")["chunk_id"].to_list() == [0, 1, 2, 3, 4]
        assert runs.schema["rank"] == pl.Int32 and set(runs["stage"]) == {"bm25"}


def test_tokens_are_lowercased_words():
    assert word_tokens("Run-of-river, 50 mm!") == ["run", "of", "river", "50", "mm"]


def test_english_analyzer_drops_stopwords_and_possessives_and_stems():
    # "The", "are", "the" are Lucene stopwords ("than" is not); "3.5", "e.g" and "don't" stay whole.
    assert english_tokens("The model's runs are 3.5 times faster than the encoders, e.g. BERT; don't.") == [
        "model",
        "run",
        "3.5",
        "time",
        "faster",
        "than",
        "encod",
        "e.g",
        "bert",
        "don't",
    ]


def test_the_english_analyzer_matches_inflected_forms_the_word_analyzer_misses():
    chunks = ["we trained several models on parsing", "the weather was nice", "a cat sat"]
    query = ["which model was trained to parse"]
    words = bm25_search(chunks, query, ["q"], top_k=3, analyzer_name="words")
    english = bm25_search(chunks, query, ["q"], top_k=3, analyzer_name="english")
    # words: only "trained" hits chunk 0, and the stopword "was" puts the shorter chunk 1 first.
    # english: "was" is dropped and model/train/pars all hit chunk 0, the only chunk that scores.
    assert words["chunk_id"].to_list() == [1, 0, 2]
    assert english["chunk_id"].to_list() == [0, 1, 2]
    assert english["score"].to_list()[1:] == [0.0, 0.0]


def test_unknown_analyzer_is_named():
    with pytest.raises(ValueError, match="unknown BM25 analyzer 'porter'"):
        bm25_search(["a"], ["a"], ["q"], analyzer_name="porter")


@pytest.mark.parametrize("analyzer", ["words", "english"])
def test_bm25s_ranks_exactly_as_rank_bm25_with_the_same_formula(shared_data, analyzer):
    """The independent implementation: rank-bm25's BM25Okapi with epsilon = 0 (negative idf clamped at 0,
    structbench.retrieval.bm25's formula) gives the same scores up to its constant factor k1 + 1, so the same
    rankings, on real QASPER paragraphs and questions."""
    from rank_bm25 import BM25Okapi

    from structbench.retrieval.bm25 import ANALYZERS

    path = shared_data / "qasper" / "sample-train10" / "qasper-train-first10.official-format.json"
    papers = json.loads(path.read_text())
    paragraphs = [p for paper in papers.values() for section in paper["full_text"] for p in section["paragraphs"] if p]
    questions = [qa["question"] for paper in papers.values() for qa in paper["qas"]][:20]
    analyze = ANALYZERS[analyzer]
    reference = BM25Okapi([analyze(p) for p in paragraphs], k1=1.5, b=0.75, epsilon=0.0)
    index = BM25Index(paragraphs, analyzer)
    for question in questions:
        theirs = reference.get_scores(analyze(question)) / (1.5 + 1)
        np.testing.assert_allclose(index.scores(question), theirs, rtol=1e-9, atol=1e-12)
    runs = bm25_search(
        paragraphs, questions, [f"q{i}" for i in range(len(questions))], top_k=10, analyzer_name=analyzer
    )
    for i, question in enumerate(questions):
        theirs = reference.get_scores(analyze(question))
        expected = sorted(range(len(paragraphs)), key=lambda c: (-theirs[c], c))[:10]
        assert runs.filter(pl.col("qid") == f"q{i}").sort("rank")["chunk_id"].to_list() == expected
