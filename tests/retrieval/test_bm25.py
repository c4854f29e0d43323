import json

import numpy as np
import polars as pl
import pytest

from structbench.retrieval.bm25 import K1, B, BM25Index, bm25_run, bm25_search, english_tokens, word_tokens


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


# A hand-made chunk set of four chunks: their content, and their heading paths rendered as path:3 renders them.
CONTENTS = [
    "The pump draws water through the intake.",
    "Valves regulate pressure in the system.",
    "Seals keep the housing dry.",
    "Filters remove grit before the pump.",
]
PATHS = ["[Pumps > Intake]", "[Pumps > Valves]", "[Maintenance > Lubrication]", "[Pumps > Filters]"]


def texts_table(prefixes: list[str]) -> pl.DataFrame:
    """A texts table (structbench.datamodel TEXTS) of the four chunks under one prefix, rows out of chunk_id order."""
    rows = [
        {
            "chunk_id": chunk_id,
            "prefix": prefix,
            "text_for_embedding": f"{prefix}\n\n{content}" if prefix else content,
            "prefix_tokens": len(prefix.split()),
        }
        for chunk_id, (prefix, content) in enumerate(zip(prefixes, CONTENTS, strict=True))
    ]
    return pl.DataFrame(
        rows[::-1],
        schema={"chunk_id": pl.Int64, "prefix": pl.String, "text_for_embedding": pl.String, "prefix_tokens": pl.Int32},
    )


def test_bm25_over_the_prefixed_texts_ranks_a_chunk_by_a_word_of_its_heading_path_alone():
    """B3 against B2: a question whose one content word is in chunk 2's heading path (and in no chunk's content)
    puts chunk 2 first over the path:3 texts; over the content alone nothing matches, every score ties at 0 and
    chunk 2 keeps its chunk_id place. The score is Okapi BM25 of the module docstring, worked here by hand."""
    queries = pl.DataFrame({"qid": ["q1", "q2"], "text": ["How is lubrication done?", "How is grit removed?"]})
    b2 = bm25_run(texts_table([""] * 4), queries, top_k=4)
    b3 = bm25_run(texts_table(PATHS), queries, top_k=4)
    b2_q1, b3_q1 = (run.filter(pl.col("qid") == "q1").sort("rank") for run in (b2, b3))
    assert b2_q1["chunk_id"].to_list() == [0, 1, 2, 3] and b2_q1["score"].to_list() == [0.0] * 4
    assert b3_q1["chunk_id"].to_list() == [2, 0, 1, 3] and b3_q1["score"].to_list()[1:] == [0.0] * 3
    # "lubric" occurs once, in chunk 2 of N = 4; lengths in analyzed tokens (english analyzer) of the prefixed texts
    lengths = [len(english_tokens(f"{path} {content}")) for path, content in zip(PATHS, CONTENTS, strict=True)]
    assert lengths[2] == 6  # maintain, lubric, seal, keep, hous, dry
    idf = np.log((4 - 1 + 0.5) / (1 + 0.5))
    expected = idf * 1 / (1 + K1 * (1 - B + B * lengths[2] / np.mean(lengths)))
    assert b3_q1["score"][0] == pytest.approx(expected, rel=1e-6)  # the run stores float32
    # a question on words of one chunk's content ranks it first under both
    for run in (b2, b3):
        assert run.filter(pl.col("qid") == "q2").sort("rank")["chunk_id"][0] == 3
    assert b3.schema == b2.schema and set(b3["stage"]) == {"bm25"}


def test_a_texts_table_whose_chunk_ids_are_not_the_chunk_sets_ordinals_is_refused():
    table = texts_table(PATHS).filter(pl.col("chunk_id") != 1)  # ids 0, 2, 3: row 1 would be ranked as chunk 1
    with pytest.raises(ValueError, match=r"texts table: chunk_id must take each of 0\.\.2 once .* from 0 to 3"):
        bm25_run(table, pl.DataFrame({"qid": ["q"], "text": ["pump"]}))


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
