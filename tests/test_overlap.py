"""Declared overlap (docs/method.md §6, "Overlap"; §10): overlapping fixed windows by hand, the declaration's
named errors, the covering check, peer chunkers' overlap, and how the metrics treat repeated characters
(coverage credits each gold character once, span metrics take the union of the retrieved ranges, token
budgets charge every retrieved token)."""

from __future__ import annotations

import math

import polars as pl
import pytest
from test_chunking import TOK, build
from test_config import GOLD, checked, layered
from test_metrics import make_chunks, make_queries, make_runs, one

from structbench.chunking.fixed import fixed_chunks
from structbench.chunking.tiling import assert_covering, assert_tiling, bounds_file, check_chunk_set
from structbench.conditions import fixed_overlap, parse_conditions
from structbench.config import ConfigError
from structbench.metrics import align_run, score_run
from structbench.metrics.measures import coverage_dcg
from structbench.overlap import Overlap, OverlapError, parse_overlap
from structbench.plan.study import Study

RIVER = " ".join(["river"] * 30)  # 30 one-token words, no sentence boundary: word i starts at character 6i


def river_windows(overlap, *, t_min=0, target=10, words=RIVER):
    tables = build([("d1", "T", [("A", 1, [words])])])
    reference = pl.DataFrame({"doc_id": ["d1"], "n_tokens": [target]})
    chunks = fixed_chunks(*tables, TOK, reference_chunks=reference, snap_tokens=0, t_min=t_min, overlap=overlap)
    return tables[0], chunks


# ---- the declaration


@pytest.mark.parametrize(
    ("value", "expected"),
    [(50, Overlap(tokens=50)), ("50", Overlap(tokens=50)), (0.5, Overlap(share=0.5)), ("0.25", Overlap(share=0.25))],
)
def test_an_overlap_is_tokens_or_a_share(value, expected):
    assert parse_overlap(value, "x") == expected
    assert parse_overlap(0, "x") is None and parse_overlap("0", "x") is None  # 0: the tiling set


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (-5, "x = -5: an overlap cannot be negative"),
        ("-0.5", "cannot be negative"),
        (1.0, "x = 1.0: a share of the chunk's size must be below 1"),
        (1.5, "must be below 1"),
        (50.0, "must be below 1"),  # a decimal is a share; 50 tokens are written 50
        ("half", "a token count (e.g. 50) or a share below 1"),
        (True, "a token count"),
        (float("nan"), "a token count"),
    ],
)
def test_a_bad_overlap_is_a_named_error(value, message):
    with pytest.raises(OverlapError, match=r"^x = ") as error:
        parse_overlap(value, "x")
    assert message in str(error.value)


def test_a_share_always_leaves_a_stride_and_tokens_must_stay_below_the_size():
    assert [Overlap(share=0.5).tokens_at(n) for n in (1, 2, 7, 200)] == [0, 1, 3, 100]  # floor(share * size)
    assert Overlap(share=0.99).tokens_at(2) == 1
    Overlap(tokens=9).check_size(10, "w")
    with pytest.raises(OverlapError, match="w = 10: an overlap of 10 tokens leaves no stride in a chunk of 10"):
        Overlap(tokens=10).check_size(10, "w")


# ---- fixed windows by hand


def test_overlapping_fixed_windows_by_hand():
    # target 10, overlap 4: stride 6 -> token windows [0,10) [6,16) [12,22) [18,28) [24,30); word i at char 6i
    documents, chunks = river_windows(Overlap(tokens=4))
    assert chunks.select("start", "end", "n_tokens", "cut").rows() == [
        (0, 60, 10, "word"),
        (36, 96, 10, "word"),
        (72, 132, 10, "word"),
        (108, 168, 10, "word"),
        (144, 179, 6, "end"),
    ]
    assert chunks["chunk_id"].to_list() == [0, 1, 2, 3, 4]
    assert_covering(documents, chunks)
    with pytest.raises(ValueError, match=r"chunks overlap on \[36, 60\)"):
        assert_tiling(documents, chunks)
    # the 6-token tail is under t_min = 7: the window before it runs to the end instead ([18,30), 12 tokens)
    _, merged = river_windows(Overlap(tokens=4), t_min=7)
    assert merged.select("start", "end", "n_tokens").rows()[-2:] == [(72, 132, 10), (108, 179, 12)]
    # a share of the window: floor(0.5 * 10) = 5 tokens, stride 5
    _, half = river_windows(Overlap(share=0.5))
    # (the window at token 20 reaches the end: [0,10) [5,15) [10,20) [15,25) [20,30))
    assert half["start"].to_list() == [0, 30, 60, 90, 120] and half["end"].to_list() == [60, 90, 120, 150, 179]


def test_without_overlap_the_windows_tile_as_before():
    documents, chunks = river_windows(None)
    assert chunks.select("start", "end", "n_tokens").rows() == [(0, 60, 10), (60, 120, 10), (120, 179, 10)]
    assert_tiling(documents, chunks)


def test_an_overlap_start_moves_back_to_a_word_start():
    # "xylophonic" is 5 WordPiece tokens, so a group "xylophonic river x" is 7 (tokens 7g..7g+6). Target 14,
    # overlap 4: the first window [0,14) ends where group 2 starts; token 14 - 4 = 10 lies inside group 1's
    # "xylophonic" (tokens 7..11), so the next window starts at its first token, 7: a realized overlap of 7
    # tokens (more than declared, by less than the word), and so on every 7 tokens
    words = " ".join(["xylophonic", "river", "x"] * 10)  # 70 tokens; group g starts at character 19g
    tables = build([("d1", "T", [("A", 1, [words])])])
    reference = pl.DataFrame({"doc_id": ["d1"], "n_tokens": [14]})
    chunks = fixed_chunks(*tables, TOK, reference_chunks=reference, snap_tokens=0, t_min=0, overlap=Overlap(4))
    assert chunks["start"].to_list() == [19 * g for g in range(9)]
    assert chunks["n_tokens"].to_list() == [14] * 9  # the last, from token 56, reaches the end at 70
    assert_covering(tables[0], chunks)


def test_a_token_overlap_at_or_above_a_documents_window_is_an_error_naming_it():
    with pytest.raises(OverlapError, match="document 'd1': fixed_overlap .* leaves no stride in a chunk of 10"):
        river_windows(Overlap(tokens=10))


def test_bounds_file_records_which_sets_tile_and_which_overlap():
    documents, chunks = river_windows(Overlap(tokens=4))
    bounds = bounds_file(chunks, t_max=350, t_min=0, overlap="4")
    assert (bounds["tiles"], bounds["overlap"], bounds["overlapping_pairs"]) == (False, "4", 4)
    assert bounds["overlap_chars_mean"] == 24.0  # each pair shares 4 words of 6 characters
    assert (bounds["indexed_chars"], bounds["document_chars"]) == (60 * 4 + 35, 179)
    tiling = bounds_file(river_windows(None)[1], t_max=350, t_min=0)
    assert tiling["tiles"] is True and "overlap" not in tiling


# ---- the covering check


def covering_case(rows, text="aaaa bbbb cccc dddd"):
    documents = pl.DataFrame({"doc_id": ["d"], "text": [text], "n_chars": [len(text)]})
    return documents, make_chunks([(i, "d", a, b) for i, (a, b) in enumerate(rows)])


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([(0, 9), (12, 19)], r"gap \[9, 12\) between chunks"),
        ([(0, 9), (5, 14), (5, 14), (10, 19)], r"chunk 2 \[5, 14\) is out of order"),
        ([(0, 9), (5, 14), (3, 19)], "out of order"),
        ([(0, 9), (5, 14)], "chunks end at 14, not at n_chars=19"),
        ([(0, 19), (4, 5)], "holds only whitespace"),
        ([(0, 9), (5, 25)], r"\[5, 25\) is empty or outside \[0, 19\)"),
        ([(1, 19)], r"gap \[0, 1\)"),
    ],
)
def test_the_covering_check_names_what_is_wrong(rows, message):
    documents, chunks = covering_case(rows)
    with pytest.raises(ValueError, match=message):
        assert_covering(documents, chunks)


def test_covering_accepts_overlap_and_a_chunk_inside_another_and_tiling_declares_its_own_check():
    documents, chunks = covering_case([(0, 14), (5, 9), (5, 19)])
    assert_covering(documents, chunks)
    check_chunk_set(documents, chunks, "0.5")
    with pytest.raises(ValueError, match="chunks overlap"):
        check_chunk_set(documents, chunks, None)  # declared tiling: the tiling check stays enforced


# ---- config: named errors before any job


def with_condition(boundaries, prefix="none", retrieval="flat", **extra):
    conditions = dict(GOLD["conditions"]) | {
        "O": {"boundaries": boundaries, "structure": "gold", "prefix": prefix, "retrieval": retrieval}
    }
    return checked(GOLD, conditions=conditions, **extra)


@pytest.mark.parametrize(
    ("boundaries", "message"),
    [
        ("fixed_overlap:350", r"conditions\.O\.boundaries = 'fixed_overlap:350', overlap = 350: an overlap of 350"),
        ("fixed_overlap:1.5", r"conditions\.O\.boundaries = 'fixed_overlap:1\.5', overlap = '1\.5': a share of"),
        ("fixed_overlap:1.0", "a share of the chunk's size must be below 1"),
        ("fixed_overlap:-5", r"conditions\.O\.boundaries = 'fixed_overlap:-5', overlap = '-5': an overlap cannot"),
        ("fixed_overlap:0", "an overlap of 0 is the tiling windows: write boundaries: fixed"),
    ],
)
def test_fixed_overlap_config_errors(boundaries, message):
    with pytest.raises(ConfigError, match=message):
        with_condition(boundaries)


def test_fixed_overlap_parses_and_keys_its_own_chunk_set():
    conditions, _ = with_condition("fixed_overlap:0.5")
    assert conditions["O"].chunkset == "fixed_overlap-0.5/gold"
    assert fixed_overlap("fixed_overlap:50") == Overlap(tokens=50) and fixed_overlap("fixed") is None
    with pytest.raises(ValueError, match="not a boundaries value"):
        parse_conditions(
            {"O": {"boundaries": "fixed_overlap", "structure": "gold", "prefix": "none", "retrieval": "flat"}}
        )


def test_an_overlapping_set_refuses_late_chunking_and_read_time_modes():
    with pytest.raises(
        ConfigError, match=r"conditions\.O: late chunking \(prefix 'late'\) needs a chunk set that tiles"
    ):
        with_condition("fixed_overlap:0.5", prefix="late")
    with pytest.raises(ConfigError, match=r"a read-time mode \(retrieval 'parent:1'\) needs a chunk set that tiles"):
        with_condition("fixed_overlap:50", retrieval="parent:1")


def test_a_chunker_overlap_at_or_above_t_max_is_refused():
    chunkers = {"lc": {"library": "langchain", "kind": "recursive", "options": {"chunk_overlap": 350}}}
    with pytest.raises(ConfigError, match=r"overlap = 350: an overlap of 350 tokens leaves no stride .*t_max = 350"):
        with_condition("external:lc", chunkers=chunkers)
    chunkers["lc"]["options"]["chunk_overlap"] = 0.5
    conditions, _ = with_condition("external:lc", chunkers=chunkers)
    assert "O" in conditions


def test_the_chroma_config_declares_its_overlap_grid_points():
    config = layered("chroma.yaml")
    study = Study.from_config(config)
    conditions, contrasts = study.conditions, study.contrasts
    assert conditions["F0o"].boundaries == "fixed_overlap:0.5"
    overlap_contrasts = {name for name, c in contrasts.items() if c.family == "overlap"}
    assert overlap_contrasts == {"F0o-F0"} | {
        f"{o}-{t}{size}" for o, t in (("LCo0", "LC0"), ("Wo0", "W0")) for size in ("", "-400", "-800")
    }
    # half the size at each of Chroma's sizes: a share, 100, 200 and 400 tokens at 200, 400 and 800
    for chunker in ("chroma_recursive_overlap", "word_windows_overlap"):
        assert config["chunkers"][chunker]["options"]["chunk_overlap"] == 0.5
    sizes = [
        config["conditions"][name].get("t_max", config["chunking"]["t_max"])
        for name in ("LCo0", "LCo0-400", "LCo0-800")
    ]
    assert sizes == [200, 400, 800]


# ---- metrics on overlapping chunks


def overlap_case():
    """One 100-character span of d; overlapping chunks a = [0,60), b = [40,100), c = [20,80) of 10 tokens each,
    and e = [0,50) of another document."""
    queries = make_queries([("q", "d", [(0, 100)])])
    chunks = make_chunks([(0, "d", 0, 60), (1, "d", 40, 100), (2, "d", 20, 80), (3, "e", 0, 50)])
    return queries, chunks


def test_coverage_credits_each_gold_character_once():
    # run c, a, b: c covers [20,80) -> 0.6; a adds only [0,20) -> 0.2 (not its 0.6); b adds only [80,100) -> 0.2
    #   DCG = 0.6 + 0.2/log2(3) + 0.2/log2(4) = 0.826186; the gains add up to 1.0, each character once
    # ideal (greedy, ties to the smaller chunk_id): a (0.6), then b (+0.4), then nothing adds coverage
    #   IDCG = 0.6 + 0.4/log2(3) = 0.852372; cov-nDCG = 0.969279
    queries, chunks = overlap_case()
    runs = make_runs({"q": [2, 0, 1]})
    dcg = 0.6 + 0.2 / math.log2(3) + 0.2 / math.log2(4)
    assert coverage_dcg(align_run(runs, queries, chunks))[0] == pytest.approx(dcg, abs=1e-12)
    ideal = 0.6 + 0.4 / math.log2(3)
    scores = score_run(runs, queries, chunks, metrics=["cov_nDCG@10", "R@50"])
    assert one(scores, "q", "cov_nDCG@10") == pytest.approx(dcg / ideal, abs=1e-12)
    assert one(scores, "q", "R@50") == 1.0
    # a repeat that adds nothing: c after a and b gains 0 (its 60 characters were covered)
    again = score_run(make_runs({"q": [0, 1, 2]}), queries, chunks, metrics=["cov_nDCG@10"])
    assert one(again, "q", "cov_nDCG@10") == pytest.approx(1.0, abs=1e-12)


def test_span_metrics_take_the_union_of_the_retrieved_ranges():
    # top 3 = c, a, e: t_r = [0,80) of d ∪ [0,50) of e = 80 + 50 = 130 (Chroma's sum: 60 + 60 + 50 = 170)
    #   ∩ = [0,80) = 80 -> precision 80/130, recall 0.8, IoU 80/(100 + 130 - 80) = 80/150
    queries, chunks = overlap_case()
    runs = make_runs({"q": [2, 0, 3, 1]})
    scores = score_run(runs, queries, chunks, metrics=["span_precision@3", "span_recall@3", "span_IoU@3"])
    assert one(scores, "q", "span_precision@3") == pytest.approx(80 / 130, abs=1e-15)
    assert one(scores, "q", "span_recall@3") == pytest.approx(0.8, abs=1e-15)
    assert one(scores, "q", "span_IoU@3") == pytest.approx(80 / 150, abs=1e-15)
    # every chunk of the run: t_r = [0,100) + [0,50) = 150, so precision 100/150 (Chroma's sum: 100/230)
    every = score_run(runs, queries, chunks, metrics=["span_precision@4"])
    assert one(every, "q", "span_precision@4") == pytest.approx(100 / 150, abs=1e-15)


def test_token_budgets_charge_every_retrieved_token_repeats_included():
    # run c, a, b at 10 tokens each: 20 tokens take c and a ([0,80) -> 0.8); b would bring the walk to 30
    # although only its 20 new characters [80,100) are new: at 29 it does not fit, at 30 it does
    queries, chunks = overlap_case()
    runs = make_runs({"q": [2, 0, 1]})
    scores = score_run(runs, queries, chunks, budgets=(19, 20, 29, 30))
    assert [one(scores, "q", f"budget_cov@{b}") for b in (19, 20, 29, 30)] == [
        pytest.approx(v) for v in (0.6, 0.8, 0.8, 1.0)
    ]


# ---- the report's index-cost table


def test_index_cost_counts_chunks_tokens_and_vector_bytes_per_text_set():
    from structbench.report.index_cost import index_cost_rows

    tiling = make_chunks([(0, "d", 0, 60, 10), (1, "d", 60, 100, 7)])
    overlapping = make_chunks([(0, "d", 0, 60, 10), (1, "d", 40, 100, 10), (2, "d", 80, 100, 4)])
    chunk_sets = {("kb", "fixed/gold"): tiling, ("kb", "fixed_overlap-0.5/gold"): overlapping}
    bounds = {
        ("kb", "fixed/gold"): {"tiles": True},
        ("kb", "fixed_overlap-0.5/gold"): {"tiles": False, "overlap": "0.5", "t_max": 41},
    }
    texts = [
        {"corpus": "kb", "boundaries": "fixed", "structure": "gold", "prefix": "path:3", "mean_prefix_tokens": 4.5},
        {
            "corpus": "kb",
            "boundaries": "fixed_overlap-0.5",
            "structure": "gold",
            "prefix": "none",
            "mean_prefix_tokens": 0,
        },
    ]
    embedded = [
        {"corpus": "kb", "embedder": "m", "text set": "fixed/gold/path-3", "vector_bytes": 2 * 384 * 4},
        {"corpus": "kb", "embedder": "m", "text set": "fixed_overlap-0.5/gold/none", "vector_bytes": 3 * 384 * 4},
        {"corpus": "kb", "embedder": "m", "text set": "queries", "vector_bytes": 4},  # not an index of chunks
    ]
    rows = index_cost_rows(embedded, texts, chunk_sets, bounds).rows(named=True)
    assert [(r["text set"], r["tiles"], r["chunks"], r["embedded tokens"], r["vector bytes"]) for r in rows] == [
        ("fixed/gold/path-3", "yes", 2, 17 + 9, 3072),  # content 10 + 7, prefix 4.5 per chunk
        ("fixed_overlap-0.5/gold/none", "overlap 0.5", 3, 24, 4608),  # repeated tokens embedded again
    ]
    assert [r["indexed / text"] for r in rows] == [1.0, 1.4]  # (60 + 60 + 20) / 100
    # declared floor(0.5 · 41) = 20 tokens; realized: pairs share 20 and 20 characters at 24/140 tokens per character
    assert [(r["declared tokens"], r["no share"]) for r in rows] == [(0, 1.0), (20, 0.0)]
    assert [r["shared tokens"] for r in rows] == [0.0, pytest.approx(20 * 24 / 140)]


def test_realized_overlap_counts_pairs_that_share_nothing():
    from structbench.report.index_cost import realized_overlap

    # d: [0,50) [40,90) [90,100) share 10 and 0 characters; e: one chunk, no pair; 1 token per 2 characters
    chunks = make_chunks([(0, "d", 0, 50, 25), (1, "d", 40, 90, 25), (2, "d", 90, 100, 5), (3, "e", 0, 20, 10)])
    assert realized_overlap(chunks) == (pytest.approx(5 * 65 / 130), 0.5)
    assert realized_overlap(make_chunks([(0, "d", 0, 50, 25)])) == (None, None)


def test_an_overlapping_chunk_in_repeated_text_is_placed_where_it_overlaps_the_one_before():
    from structbench.chunking.external.adapters import _searched

    # three-word chunks overlapping by one word over "P Q Q Q Q R": the second chunk "Q Q Q" also occurs at 2,
    # inside the first chunk; its place is 4, the last occurrence starting no later than the first chunk's end
    source, chunks = "P Q Q Q Q R", ["P Q Q", "Q Q Q", "Q R"]
    assert _searched(source, chunks, overlapping=True) == [(0, 5), (4, 9), (8, 11)]
    # a chunk that starts after whitespace past the previous end (no overlap there) is found forward
    assert _searched("a b\n\nc d", ["a b", "c d"], overlapping=True) == [(0, 3), (5, 8)]


@pytest.mark.parametrize(
    ("library", "kind", "options"),
    [
        ("langchain", "recursive", {"chunk_overlap": 0.5}),
        ("semchunk", "chunkerify", {"overlap": 0.5}),
        ("text_splitter", "text", {"overlap": 40}),
    ],
)
def test_peer_chunkers_overlap_through_their_own_parameter_and_cover_the_text(library, kind, options):
    from structbench.chunking.external.chunker_spec import ChunkerSpec
    from structbench.chunking.external.locate import external_chunks

    sentences = " ".join(f"Sentence number {i} tells the river's story once more." for i in range(60))
    tables = build([("d1", "T", [("A", 1, [sentences, sentences[::-1].capitalize()])])])
    tiling, _ = external_chunks(*tables, TOK, spec=ChunkerSpec("t", library, kind), t_max=80)
    chunks, report = external_chunks(*tables, TOK, spec=ChunkerSpec("o", library, kind, options=options), t_max=80)
    assert_tiling(tables[0], tiling)
    assert_covering(tables[0], chunks)
    assert chunks.height > tiling.height and report["overlap"] == str(next(iter(options.values())))
    shared = [a - b for a, b in zip(chunks["end"].to_list()[:-1], chunks["start"].to_list()[1:])]
    assert max(shared) > 0  # consecutive chunks share text


@pytest.mark.parametrize(
    ("end", "kind"),
    [(9, "sentence"), (8, "sentence"), (20, "paragraph"), (22, "paragraph"), (3, "word"), (4, "word"), (2, "token")],
)
def test_an_overlapping_chunk_ending_before_whitespace_is_cut_where_a_tiling_one_would_end(end, kind):
    from structbench.chunking.external.locate import _cut_kind
    from structbench.chunking.external.markdown import _Document

    # an overlapping chunk ends at its last non-space character (8, 20, 3); a tiling one after the whitespace
    text = "One two. Three four.\n\nFive six."
    doc = _Document("d", "T", text, [0, 22], [20, 31], [0], [0], [[]], [])
    assert _cut_kind(doc, end) == kind
