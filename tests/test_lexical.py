import polars as pl

from structbench.lexical import bm25_search, bm25_tokens


def test_bm25_ranks_the_keyword_match_first_and_breaks_ties_by_chunk_id():
    chunks = ["the weir has a fish pass", "sourdough starter needs flour", "bees overwinter in a cluster",
              "a totally unrelated text", "another unrelated text"]
    runs = bm25_search(chunks, ["how does the fish pass work", "zebra"], ["q1", "q2"], top_k=5)
    q1 = runs.filter(pl.col("qid") == "q1").sort("rank")
    assert q1["chunk_id"][0] == 0
    assert q1["score"][0] > q1["score"][1]
    # No query word occurs anywhere: every score ties at 0, so the order is chunk_id ascending.
    assert runs.filter(pl.col("qid") == "q2").sort("rank")["chunk_id"].to_list() == [0, 1, 2, 3, 4]
    assert runs.schema["rank"] == pl.Int32 and set(runs["stage"]) == {"bm25"}


def test_tokens_are_lowercased_words():
    assert bm25_tokens("Run-of-river, 50 mm!") == ["run", "of", "river", "50", "mm"]
