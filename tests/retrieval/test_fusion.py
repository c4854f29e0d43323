from fractions import Fraction

import numpy as np
import polars as pl
import pytest

from structbench.datamodel import conform
from structbench.defaults import RRF_K
from structbench.retrieval.bm25 import bm25_search
from structbench.retrieval.fusion import fusion_sources, reciprocal_rank_fusion
from structbench.retrieval.search import flat_search, retrieve


def run(rankings: dict[str, list[int]], stage: str = "flat") -> pl.DataFrame:
    rows = [(qid, rank, chunk, 1.0 / rank) for qid, chunks in rankings.items() for rank, chunk in enumerate(chunks, 1)]
    frame = pl.DataFrame(rows, schema=["qid", "rank", "chunk_id", "score"], orient="row")
    return conform(frame.with_columns(pl.lit(stage).alias("stage")), "runs")


def ranking(runs: pl.DataFrame, qid: str) -> list[int]:
    return runs.filter(pl.col("qid") == qid).sort("rank")["chunk_id"].to_list()


def test_rrf_equals_a_hand_computation():
    dense = run({"q1": [3, 1, 2, 7], "q2": [5, 6]})
    lexical = run({"q1": [1, 4, 3], "q2": [6, 5]})
    fused = reciprocal_rank_fusion([dense, lexical], k=60)
    # q1: chunk 1 = 1/62 + 1/61, chunk 3 = 1/61 + 1/63, chunk 4 = 1/62, chunk 2 = 1/63, chunk 7 = 1/64.
    expected = {
        1: Fraction(1, 62) + Fraction(1, 61),
        3: Fraction(1, 61) + Fraction(1, 63),
        4: Fraction(1, 62),
        2: Fraction(1, 63),
        7: Fraction(1, 64),
    }
    assert ranking(fused, "q1") == sorted(expected, key=lambda c: (-expected[c], c)) == [1, 3, 4, 2, 7]
    q1 = fused.filter(pl.col("qid") == "q1").sort("rank")
    assert q1["score"].to_list() == pytest.approx([float(expected[c]) for c in [1, 3, 4, 2, 7]], rel=1e-6)
    # q2: 5 and 6 swap ranks between the runs, so both score 1/61 + 1/62: the tie goes to chunk_id 5.
    assert ranking(fused, "q2") == [5, 6]
    assert set(fused["stage"]) == {"rrf"} and fused.schema == conform(fused, "runs").schema
    # k sets how much agreement counts against a single top rank: chunk 12 is third in both runs.
    # k = 60: 12 scores 2/63 > 1/61 of the two rank-1 chunks; k = 0: 2/3 < 1 (10 and 13 tie, 10 first).
    pair = [run({"q3": [10, 11, 12]}), run({"q3": [13, 14, 12]})]
    assert ranking(reciprocal_rank_fusion(pair, k=60), "q3") == [12, 10, 13, 11, 14]
    assert ranking(reciprocal_rank_fusion(pair, k=0), "q3") == [10, 13, 12, 11, 14]
    assert ranking(reciprocal_rank_fusion([dense, lexical], k=60, top_k=2), "q1") == [1, 3]


def test_rrf_agrees_with_ranx_on_random_runs():
    from ranx import Run, fuse

    rng = np.random.default_rng(7)
    runs = [run({f"q{q}": rng.choice(40, size=15, replace=False).tolist() for q in range(6)}) for _ in range(3)]
    ours = reciprocal_rank_fusion(runs, k=60)

    def as_ranx(frame):
        # ranx ranks by score: giving each chunk -rank reproduces our ranks exactly
        return Run.from_dict(
            {qid: {str(c): -float(r) for c, r in zip(g["chunk_id"], g["rank"])} for (qid,), g in frame.group_by("qid")}
        )

    theirs = fuse(runs=[as_ranx(r) for r in runs], method="rrf", norm=None, params={"k": 60}).to_dict()
    for qid, scores in theirs.items():
        expected = sorted(scores, key=lambda c: (-scores[c], int(c)))
        got = ours.filter(pl.col("qid") == qid).sort("rank")
        assert got["chunk_id"].to_list() == [int(c) for c in expected]
        assert got["score"].to_list() == pytest.approx([scores[c] for c in expected], rel=1e-6)


def test_fusion_sources_parse_and_refuse_a_run_fused_with_itself():
    assert fusion_sources("bm25", "path:2") == ["bm25"]
    assert fusion_sources("none+bm25", "path:3") == ["none", "bm25"]
    assert fusion_sources("path3+placebo3", "none") == ["path:3", "placebo:3"]
    with pytest.raises(ValueError, match="own prefix 'path:3'"):
        fusion_sources("path3", "path:3")
    with pytest.raises(ValueError, match="twice"):
        fusion_sources("bm25+bm25", "none")
    with pytest.raises(ValueError, match="expected"):
        fusion_sources("path:3", "none")


def test_rrf_search_fuses_two_dense_indexes_and_bm25_on_cpu():
    rng = np.random.default_rng(3)
    texts = ["weir fish pass", "sourdough starter flour", "bees cluster in winter", "river weir height", "hive bees"]
    prefixed = rng.normal(size=(5, 8)).astype(np.float32)
    unprefixed = rng.normal(size=(5, 8)).astype(np.float32)
    prefixed /= np.linalg.norm(prefixed, axis=1, keepdims=True)
    unprefixed /= np.linalg.norm(unprefixed, axis=1, keepdims=True)
    queries = rng.normal(size=(2, 8)).astype(np.float32)
    qids = ["q1", "q2"]
    lexical = bm25_search(texts, ["weir on the river", "bees"], qids, top_k=5)
    fused = retrieve(
        "rrf:none+bm25",
        prefixed,
        queries,
        qids,
        top_k=4,
        partner_vectors=[unprefixed],
        partner_runs=[lexical],
        rrf_k=RRF_K,
    )
    expected = reciprocal_rank_fusion(
        [flat_search(prefixed, queries, qids, 4), flat_search(unprefixed, queries, qids, 4), lexical], k=RRF_K, top_k=4
    )
    assert fused.equals(expected)
    assert fused.group_by("qid").len().sort("qid")["len"].to_list() == [4, 4]
    with pytest.raises(ValueError, match="at least one partner"):
        retrieve("rrf:none", prefixed, queries, qids, top_k=4)
