import numpy as np
import polars as pl
import pytest

from structbench.retrieval.search import flat_search, order_candidates, runs_from_arrays


def normalized(rows):
    rows = np.asarray(rows, dtype=np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def test_flat_search_matches_exact_inner_product_ranking():
    rng = np.random.default_rng(0)
    chunks = normalized(rng.normal(size=(200, 16)))
    queries = normalized(rng.normal(size=(7, 16)))
    runs = flat_search(chunks, queries, [f"q{i}" for i in range(7)], top_k=20)
    expected = np.argsort(-(queries @ chunks.T), axis=1, kind="stable")[:, :20]
    for i in range(7):
        got = runs.filter(pl.col("qid") == f"q{i}").sort("rank")
        assert got["rank"].to_list() == list(range(1, 21))
        assert got["chunk_id"].to_list() == expected[i].tolist()
        assert np.all(np.diff(got["score"].to_numpy()) <= 1e-6)


def test_ties_are_broken_by_chunk_id_ascending():
    # Five identical chunk vectors: every score ties, so the order must be chunk_id 0..4.
    chunks = normalized([[1.0, 0.0]] * 5 + [[0.0, 1.0]])
    queries = normalized([[1.0, 0.0]])
    runs = flat_search(chunks, queries, ["q"], top_k=3)
    assert runs["chunk_id"].to_list() == [0, 1, 2]


def test_faiss_padding_sorts_last_and_never_reaches_a_run():
    # FAISS pads a row with id -1 when fewer than k candidates exist: ordering puts padding last,
    # and the runs table drops it, so a ranking never holds a chunk id of -1.
    scores = np.array([[0.5, 0.9, -np.inf]], dtype=np.float32)
    ids = np.array([[3, 1, -1]])
    kept_scores, kept_ids = order_candidates(scores, ids, 3)
    assert kept_ids.tolist() == [[1, 3, -1]]
    runs = runs_from_arrays(["q"], kept_scores, kept_ids, stage="flat")
    assert runs["chunk_id"].to_list() == [1, 3]
    assert runs["rank"].to_list() == [1, 2]


def test_top_k_larger_than_corpus_returns_every_chunk_once():
    chunks = normalized(np.eye(4))
    runs = flat_search(chunks, normalized([[1, 1, 0, 0]]), ["q"], top_k=100)
    assert sorted(runs["chunk_id"].to_list()) == [0, 1, 2, 3]
    assert runs.schema["chunk_id"] == pl.Int64


class FakeFaiss:
    """A stand-in for the faiss module's GPU probe (no GPU here); the real module is checked below."""

    def __init__(self, n_gpus, gpu_build=True):
        self.n_gpus = n_gpus
        if gpu_build:
            self.StandardGpuResources = object

    def get_num_gpus(self):
        return self.n_gpus


def test_faiss_gpu_selection():
    from structbench.retrieval.search import use_faiss_gpu

    # This machine: faiss-cpu, no GPU -> auto searches on the CPU, true is an error naming the key.
    assert use_faiss_gpu("auto") is False and use_faiss_gpu(False) is False
    with pytest.raises(RuntimeError, match="retrieval.use_gpu = true"):
        use_faiss_gpu(True)
    assert use_faiss_gpu("auto", FakeFaiss(1)) is True
    assert use_faiss_gpu(True, FakeFaiss(2)) is True
    assert use_faiss_gpu(False, FakeFaiss(1)) is False
    assert use_faiss_gpu("auto", FakeFaiss(0)) is False
    assert use_faiss_gpu("auto", FakeFaiss(1, gpu_build=False)) is False
    with pytest.raises(ValueError, match="expected auto, true or false"):
        use_faiss_gpu("cuda")


def test_auto_gives_the_cpu_ranking_here():
    rng = np.random.default_rng(1)
    chunks = normalized(rng.normal(size=(50, 8)))
    queries = normalized(rng.normal(size=(3, 8)))
    assert flat_search(chunks, queries, ["a", "b", "c"], 10, use_gpu="auto").equals(
        flat_search(chunks, queries, ["a", "b", "c"], 10, use_gpu=False)
    )


def test_top_k_by_score_keeps_the_lowest_chunk_ids_of_a_straddling_tie():
    from structbench.retrieval.search import top_k_by_score

    scores = np.array([0.5, 0.9, 0.5, 0.1, 0.5, 0.9])
    kept_scores, kept_ids = top_k_by_score(scores, 3)
    assert kept_ids.tolist() == [1, 5, 0] and kept_scores.tolist() == [0.9, 0.9, 0.5]
    assert top_k_by_score(scores, 10)[1].tolist() == [1, 5, 0, 2, 4, 3]
