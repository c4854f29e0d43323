"""Routed retrieval: two-stage section routing and TOC routing (structbench.retrieval.routing, .toc, .retrieval).

One hand-built corpus serves every test: two documents, five routing units (a document plus a top-level
heading), six chunks, and vectors chosen so that each result can be worked out by hand."""

import inspect

import numpy as np
import polars as pl
import pytest
from llm_testing import ScriptedBackend, build_tiny_model

from structbench.conditions import AXES, retrieval_kind, routed_kinds
from structbench.datamodel import CHUNKS, QUERIES, ROUTING, SECTIONS
from structbench.llm import LLM, LLMSpec, load_llm, load_prompt
from structbench.metrics import score_run, section_recall
from structbench.metrics.registry import REGISTRY, parse_metric
from structbench.retrieval.routing import (
    choose_entry,
    chunk_units,
    nearest_title,
    parse_section_number,
    route_two_stage,
    section_centroids,
    section_units,
    toc_contents,
    top_rows,
)
from structbench.retrieval.search import RETRIEVERS, compose_ranking, flat_search, retrieve
from structbench.retrieval.toc import REPLY_TOKENS, route_toc

# doc a "Alpha": lead [0,100), Methods [102,200) with subsection Setup [202,300), Results [302,400)
# doc b "Beta":  Intro [0,150), Data [152,300)
SECTION_ROWS = [
    ("a", 0, "", 1, ["Alpha"], 0, 1, 0, 100, 0),
    ("a", 1, "Methods", 1, ["Alpha", "Methods"], 1, 2, 102, 200, 1),
    ("a", 2, "Setup", 2, ["Alpha", "Methods", "Setup"], 2, 3, 202, 300, 1),
    ("a", 3, "Results", 1, ["Alpha", "Results"], 3, 4, 302, 400, 3),
    ("b", 0, "Intro", 1, ["Beta", "Intro"], 0, 1, 0, 150, 0),
    ("b", 1, "Data", 1, ["Beta", "Data"], 1, 2, 152, 300, 1),
]
SECTIONS_TABLE = pl.DataFrame(SECTION_ROWS, schema=SECTIONS, orient="row")
# one chunk per section; chunk_id i lies in the section of row i, so the units are [0, 1, 1, 2, 3, 4]
CHUNKS_TABLE = pl.DataFrame(
    [
        (i, doc, start, end, 20, sid, path, "section")
        for i, (doc, sid, _, _, path, _, _, start, end, _) in enumerate(SECTION_ROWS)
    ],
    schema=CHUNKS,
    orient="row",
)


def unit(i, extra=0.0, dims=6):
    """Unit direction e_i, optionally tilted along the spare axis e_5 (it tells a unit's chunks apart)."""
    v = np.zeros(dims, dtype=np.float32)
    v[i], v[5] = 1.0, extra
    return v / np.linalg.norm(v)


def mix(*weighted):
    v = sum(w * unit(i) for i, w in weighted)
    return (v / np.linalg.norm(v)).astype(np.float32)


# units 0..4 point along e_0..e_4; unit 1's two chunks tilt either way along e_5, so their centroid is e_1
CHUNK_VECTORS = np.stack([unit(0), unit(1, 0.5), unit(1, -0.5), unit(2), unit(3), unit(4)])
QUERIES_TABLE = pl.DataFrame(
    [
        ("q1", "t", "a", "How is the rig set up?", "factoid", [[210, 250]], "{}"),  # in Setup: unit 1
        ("q2", "t", "a", "What opens the guide?", "underspecified", [[10, 20]], "{}"),  # in a's lead: unit 0
        ("q3", "t", "b", "Which data and intro?", "multihop", [[5, 10], [160, 170]], "{}"),  # units 3 and 4
    ],
    schema=QUERIES,
    orient="row",
)
QIDS = QUERIES_TABLE["qid"].to_list()
# q1 -> unit 1; q2 -> doc b's units 3, 4 (a miss: its gold lies in doc a); q3 -> unit 4, then unit 0
QUERY_VECTORS = np.stack([unit(1), mix((3, 1.0), (4, 0.9)), mix((4, 1.0), (0, 0.8))])


def test_units_are_a_document_plus_a_top_level_heading_with_subsections():
    units = section_units(SECTIONS_TABLE)
    assert units.select("unit", "doc_id", "top_section_id", "start", "end").rows() == [
        (0, "a", 0, 0, 100),
        (1, "a", 1, 102, 300),
        (2, "a", 3, 302, 400),
        (3, "b", 0, 0, 150),
        (4, "b", 1, 152, 300),
    ]
    # the lead text is a unit of its own, titled by the document title alone
    assert units["title"].to_list() == ["Alpha", "Alpha > Methods", "Alpha > Results", "Beta > Intro", "Beta > Data"]
    assert chunk_units(CHUNKS_TABLE, SECTIONS_TABLE, units).tolist() == [0, 1, 1, 2, 3, 4]


def test_chunks_of_another_structure_are_refused_by_name():
    stray = CHUNKS_TABLE.with_columns(
        pl.when(pl.col("chunk_id") == 5).then(9).otherwise(pl.col("section_id")).cast(pl.Int32).alias("section_id")
    )
    with pytest.raises(ValueError, match=r"chunk 5 of 'b', section_id 9"):
        chunk_units(stray, SECTIONS_TABLE, section_units(SECTIONS_TABLE))


def test_centroid_is_the_renormalized_mean_of_the_flat_vectors():
    rng = np.random.default_rng(3)
    vectors = rng.normal(size=(6, 6)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    centroids, has_chunks = section_centroids(vectors, np.array([0, 1, 1, 2, 3, 4]), 6)
    expected = (vectors[1] + vectors[2]) / 2
    np.testing.assert_allclose(centroids[1], expected / np.linalg.norm(expected), rtol=1e-6)
    np.testing.assert_allclose(centroids[4], vectors[5], rtol=1e-6)
    assert has_chunks.tolist() == [True] * 5 + [False] and not centroids[5].any()


def test_top_rows_is_exact_with_ties_by_row():
    rng = np.random.default_rng(0)
    rows = rng.normal(size=(40, 8)).astype(np.float32)
    rows[9] = rows[30]  # an exact tie: row 9 must come first
    queries = np.concatenate([rows[30:31], rng.normal(size=(300, 8)).astype(np.float32)])
    scores, found = top_rows(queries, rows, 5, block=64)
    expected = np.argsort(-(queries @ rows.T), axis=1, kind="stable")[:, :5]
    assert (found == expected).all() and found[0, :2].tolist() == [9, 30]
    assert (np.diff(scores, axis=1) <= 0).all()


def routed_by_two_stage(top_sections=2):
    return route_two_stage(
        CHUNK_VECTORS, QUERY_VECTORS, QIDS, chunks=CHUNKS_TABLE, sections=SECTIONS_TABLE, top_sections=top_sections
    )


def test_stage_one_keeps_the_nearest_centroids_ties_by_unit():
    routing = routed_by_two_stage()
    assert routing.schema == pl.Schema(ROUTING)
    # q1 scores 1 on unit 1 and 0 on the rest: the tie among those goes to the lowest unit, the lead
    assert routing.select("qid", "route_rank", "doc_id", "top_section_id").rows() == [
        ("q1", 1, "a", 1),
        ("q1", 2, "a", 0),
        ("q2", 1, "b", 0),
        ("q2", 2, "b", 1),
        ("q3", 1, "b", 1),
        ("q3", 2, "a", 0),
    ]
    assert routing["chunk_ids"].to_list()[:2] == [[1, 2], [0]]
    assert routing["source"].unique().to_list() == ["centroid"]
    np.testing.assert_allclose(
        routing["score"].to_list()[2:4], [1 / np.hypot(1, 0.9), 0.9 / np.hypot(1, 0.9)], rtol=1e-6
    )


def test_section_recall_on_a_hand_built_case():
    """q1: a kept unit holds its span; q2: the kept units of doc b overlap [10, 20) by offsets but belong to
    another document, so they never count; q3: one of its two spans lies in a kept unit."""
    routing = routed_by_two_stage()
    assert section_recall(routing, QUERIES_TABLE).rows() == [("q1", 1.0), ("q2", 0.0), ("q3", 1.0)]
    # the registered metric reads the same table through score_run, beside the run's scores
    runs = retrieve("two_stage", CHUNK_VECTORS, QUERY_VECTORS, QIDS, top_k=6, routing=routing)
    scores = score_run(
        runs, QUERIES_TABLE, CHUNKS_TABLE, metrics=["MRR", "section_recall"], inputs={"kept_sections": routing}
    )
    assert scores["section_recall"].to_list() == [1.0, 0.0, 1.0]
    # with one kept section q3 still scores: its first unit, doc b's Data, holds the span [160, 170)
    one_kept = section_recall(routed_by_two_stage(top_sections=1), QUERIES_TABLE)
    assert one_kept["section_recall"].to_list() == [1.0, 0.0, 1.0]


@pytest.mark.parametrize("kind", [k for k in AXES["retrieval"] if not k.lexical], ids=lambda kind: kind.name)
def test_a_retrieval_kinds_facts_match_its_retriever_and_what_the_scorer_computes(kind):
    """``Kind.routed``: its retriever takes the routing table; ``Kind.metrics``: registered metrics that read
    that table (``kept_sections``), which the scorer computes from it beside the configured ones."""
    takes_routing = "routing" in inspect.signature(RETRIEVERS[kind.name]).parameters
    assert kind.routed == takes_routing
    assert bool(kind.metrics) == kind.routed  # a routed kind's scores carry its routing diagnostics
    for metric in kind.metrics:
        assert [extra.name for extra in parse_metric(metric).definition.requires] == ["kept_sections"]
    if kind.routed:
        routing = routed_by_two_stage()
        if "toc_fallback" in kind.metrics:
            fell_back = pl.when(pl.col("qid") == "q2").then(pl.lit("fallback")).otherwise(pl.col("source"))
            routing = routing.with_columns(fell_back.alias("source"))
        runs = retrieve("two_stage", CHUNK_VECTORS, QUERY_VECTORS, QIDS, top_k=6, routing=routing)
        scores = score_run(
            runs, QUERIES_TABLE, CHUNKS_TABLE, metrics=["MRR", *kind.metrics], inputs={"kept_sections": routing}
        )
        assert scores.columns == ["qid", "doc_id", "qtype", "MRR", *kind.metrics]
        assert scores["section_recall"].to_list() == [1.0, 0.0, 1.0]
        if "toc_fallback" in kind.metrics:
            assert scores["toc_fallback"].to_list() == [0.0, 1.0, 0.0]


def test_every_metric_that_reads_the_routing_table_belongs_to_a_routed_kind():
    reads_routing = {name for name, d in REGISTRY.items() if any(e.name == "kept_sections" for e in d.requires)}
    assert reads_routing == {m for kind in AXES["retrieval"] for m in kind.metrics}
    assert routed_kinds() == ("two_stage", "toc")
    assert retrieval_kind("rrf:bm25").name == "rrf" and not retrieval_kind("rrf:bm25").routed


def test_two_stage_ranks_kept_chunks_first_then_backfills():
    runs = retrieve("two_stage", CHUNK_VECTORS, QUERY_VECTORS, QIDS, top_k=5, routing=routed_by_two_stage())
    q1 = runs.filter(pl.col("qid") == "q1")
    # kept: unit 1 (chunks 1, 2 tie at 1/sqrt(1.25): chunk_id order) and the lead (chunk 0, score 0);
    # then the flat ranking's other chunks, all scoring 0, by chunk_id
    assert q1["chunk_id"].to_list() == [1, 2, 0, 3, 4]
    assert q1["stage"].to_list() == ["stage2"] * 3 + ["backfill"] * 2
    assert q1["rank"].to_list() == [1, 2, 3, 4, 5]
    q2 = runs.filter(pl.col("qid") == "q2")
    assert q2["chunk_id"].to_list()[:2] == [4, 5]  # doc b's chunks: the gold chunk 0 only comes back as backfill


def test_backfill_fills_to_k_with_no_duplicates():
    rng = np.random.default_rng(7)
    for trial in range(50):
        n, k = int(rng.integers(1, 40)), int(rng.integers(1, 50))
        flat_ids = rng.permutation(n)
        flat_scores = np.sort(rng.normal(size=n))[::-1]
        routed_ids = rng.choice(n, size=int(rng.integers(0, n + 1)), replace=False)
        routed_scores = rng.normal(size=routed_ids.size).round(1)  # rounding makes ties
        ids, scores, routed = compose_ranking(routed_ids, routed_scores, flat_ids, flat_scores, k)
        assert ids.size == min(k, n) and np.unique(ids).size == ids.size, trial
        head = ids[routed]
        assert routed[: head.size].all() and head.size == min(k, routed_ids.size)
        # routed chunks by score descending, then chunk_id ascending
        assert list(zip(-scores[: head.size], head)) == sorted(zip(-scores[: head.size], head))
        # the rest follows the flat ranking's order, skipping routed chunks
        assert ids[head.size :].tolist() == [c for c in flat_ids if c not in set(routed_ids)][: ids.size - head.size]


def test_every_query_gets_k_rows_from_a_routed_search():
    rng = np.random.default_rng(1)
    chunks = rng.normal(size=(60, 8)).astype(np.float32)
    chunks /= np.linalg.norm(chunks, axis=1, keepdims=True)
    queries = chunks[:4] + 0.1
    routing = pl.DataFrame({"qid": ["q0", "q0", "q2"], "chunk_ids": [[5, 6, 7], [7, 8], list(range(40))]})
    runs = retrieve("toc", chunks, queries, ["q0", "q1", "q2", "q3"], top_k=25, routing=routing)
    counts = runs.group_by("qid").agg(pl.len(), pl.col("chunk_id").n_unique().alias("distinct")).sort("qid")
    assert counts["len"].to_list() == [25] * 4 and counts["distinct"].to_list() == [25] * 4
    q0 = runs.filter(pl.col("qid") == "q0")
    assert set(q0["chunk_id"].to_list()[:4]) == {5, 6, 7, 8} and q0["stage"].to_list()[4] == "backfill"
    # a query without routing rows is ranked exactly as flat search ranks it
    flat = flat_search(chunks, queries, ["q0", "q1", "q2", "q3"], top_k=25).filter(pl.col("qid") == "q1")
    assert runs.filter(pl.col("qid") == "q1")["chunk_id"].to_list() == flat["chunk_id"].to_list()
    assert (runs.filter(pl.col("qid") == "q2")["stage"] == "toc").all()  # 40 routed chunks: no backfill


def test_retrieve_names_a_missing_or_foreign_input():
    with pytest.raises(ValueError, match=r"'two_stage' takes the inputs \['routing'\]; missing \['routing'\]"):
        retrieve("two_stage", CHUNK_VECTORS, QUERY_VECTORS, QIDS, top_k=5)
    with pytest.raises(ValueError, match=r"not taken \['routing'\]"):
        retrieve("flat", CHUNK_VECTORS, QUERY_VECTORS, QIDS, top_k=5, routing=routed_by_two_stage())


# ---- TOC routing -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "reply, expected",
    [
        ("3", 3),
        ("Section 3", 3),
        ("3. Alpha > Results", 3),
        (" 5\n", 5),
        ("1 or 2", 1),
        ("three", None),
        ("", None),
        (None, None),
        ("0", None),
        ("6", None),
        ("-2", None),
        ("99", None),
    ],
)
def test_reply_parser_takes_the_first_integer_in_range(reply, expected):
    assert parse_section_number(reply, 5) == expected


def test_a_reply_that_is_not_a_number_in_range_falls_back_to_the_nearest_title():
    titles = np.stack([unit(0), unit(3), unit(4)])
    query = mix((4, 1.0), (3, 0.5))
    assert choose_entry("2", query, titles) == (1, "llm")
    assert choose_entry("the Data section", query, titles) == (2, "fallback")  # not a number
    assert choose_entry("4", query, titles) == (2, "fallback")  # out of range
    assert choose_entry(None, query, titles) == (2, "fallback")  # the request failed
    assert nearest_title(unit(1), titles) == 0  # all cosines 0: the first entry


def scripted_llm(replies, context_tokens=100_000):
    """An LLM whose reply to each question comes from ``replies`` (question -> text)."""

    def answer(request):
        question = request.messages[-1][1].split("Question: ", 1)[1].split("\n", 1)[0]
        return replies[question]

    backend = ScriptedBackend(answer, context_tokens=context_tokens)
    return LLM(backend, LLMSpec("transformers", "scripted")), backend


TITLE_VECTORS = np.stack([unit(u) for u in range(5)])  # title of unit u along e_u


def test_toc_routes_the_named_section_and_falls_back_otherwise():
    replies = {"How is the rig set up?": "2", "What opens the guide?": "Beta, I think", "Which data and intro?": "99"}
    llm, backend = scripted_llm(replies)
    routing = route_toc(
        CHUNK_VECTORS,
        QUERY_VECTORS,
        QUERIES_TABLE,
        chunks=CHUNKS_TABLE,
        sections=SECTIONS_TABLE,
        title_vectors=TITLE_VECTORS,
        llm=llm,
        candidate_hits=6,
    )
    assert routing.schema == pl.Schema(ROUTING)
    # q1's best hit is in doc a, so a's units are numbered first and "2" names Alpha > Methods (unit 1);
    # q2's reply holds no number and q3's is out of range: the nearest titles, Beta > Intro and Beta > Data
    assert routing.select("qid", "doc_id", "top_section_id", "source", "toc_entries", "reply").rows() == [
        ("q1", "a", 1, "llm", 5, "2"),
        ("q2", "b", 0, "fallback", 5, "Beta, I think"),
        ("q3", "b", 1, "fallback", 5, "99"),
    ]
    contents = backend.requests[0].messages[-1][1]
    assert "1. Alpha\n2. Alpha > Methods\n3. Alpha > Results\n4. Beta > Intro\n5. Beta > Data" in contents
    assert backend.requests[1].messages[-1][1].count("1. Beta > Intro") == 1  # q2's best hit is in doc b
    assert backend.requests[0].prompt_version == load_prompt("toc_route").version_id
    # the routed section's chunks lead; section recall is the routed-section hit rate; fallbacks are counted
    runs = retrieve("toc", CHUNK_VECTORS, QUERY_VECTORS, QIDS, top_k=6, routing=routing)
    assert runs.filter(pl.col("qid") == "q1")["chunk_id"].to_list()[:2] == [1, 2]
    scores = score_run(
        runs, QUERIES_TABLE, CHUNKS_TABLE, metrics=["section_recall", "toc_fallback"], inputs={"kept_sections": routing}
    )
    assert scores.select("section_recall", "toc_fallback").rows() == [(1.0, 0.0), (0.0, 1.0), (1.0, 1.0)]


def test_toc_contents_lose_their_lowest_ranked_documents_to_fit_the_context():
    question = "How is the rig set up?"
    titles = section_units(SECTIONS_TABLE)["title"].to_list()
    llm, backend = scripted_llm({question: "1"})
    # room for doc a's three entries and the reply's token cap, not for doc b's two entries as well
    doc_a_only = load_prompt("toc_route").render(contents=toc_contents(titles[:3]), question=question)
    backend.context_tokens = backend.count_tokens(doc_a_only) + REPLY_TOKENS
    routing = route_toc(
        CHUNK_VECTORS,
        QUERY_VECTORS[:1],
        QUERIES_TABLE.head(1),
        chunks=CHUNKS_TABLE,
        sections=SECTIONS_TABLE,
        title_vectors=TITLE_VECTORS,
        llm=llm,
        candidate_hits=6,
    )
    assert routing["toc_entries"].to_list() == [3]  # doc a only (doc b ranked lower)
    assert "Beta" not in backend.requests[0].messages[-1][1]


def test_toc_refuses_title_vectors_of_another_structure():
    llm, _ = scripted_llm({})
    with pytest.raises(ValueError, match="4 title vectors for 5 sections"):
        route_toc(
            CHUNK_VECTORS,
            QUERY_VECTORS,
            QUERIES_TABLE,
            chunks=CHUNKS_TABLE,
            sections=SECTIONS_TABLE,
            title_vectors=TITLE_VECTORS[:4],
            llm=llm,
        )


def test_toc_end_to_end_with_a_real_tiny_model_then_from_the_cache(tmp_path):
    """A random-weight Llama answers whatever it answers; each reply is either a number in range, routed
    as named, or a fallback to the nearest title. The second run asks the model nothing."""
    model = build_tiny_model(tmp_path / "model", context=1024)
    spec = {"backend": "transformers", "model": str(model), "threads": 1, "max_new_tokens": 8}

    def run():
        llm = load_llm(spec, tmp_path / "llm")
        table = route_toc(
            CHUNK_VECTORS,
            QUERY_VECTORS,
            QUERIES_TABLE,
            chunks=CHUNKS_TABLE,
            sections=SECTIONS_TABLE,
            title_vectors=TITLE_VECTORS,
            llm=llm,
            candidate_hits=6,
        )
        return table, llm.usage()

    routing, usage = run()
    assert routing["qid"].to_list() == QIDS and usage["generated"] == 3
    units = section_units(SECTIONS_TABLE)
    for row, entry in zip(routing.iter_rows(named=True), [[0, 1, 2, 3, 4], [3, 4, 0, 1, 2], [3, 4, 0, 1, 2]]):
        number = parse_section_number(row["reply"], row["toc_entries"])
        assert row["source"] == ("llm" if number else "fallback")
        qv = QUERY_VECTORS[QIDS.index(row["qid"])]
        chosen = entry[number - 1] if number else entry[nearest_title(qv, TITLE_VECTORS[entry])]
        assert (row["doc_id"], row["top_section_id"]) == units.select("doc_id", "top_section_id").row(chosen)
    again, usage = run()
    assert usage["generated"] == 0 and usage["served_from_cache"] == 3 and again.equals(routing)
