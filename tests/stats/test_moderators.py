"""The subgroup analysis's moderators (structbench.stats.moderators), each computed by hand on tiny corpus tables:
a document's heading depth, lexical anchoring under the BM25 analyzer, the question type's split and the number of
evidence spans."""

import polars as pl
import pytest

from structbench.datamodel import QUERIES, SECTIONS
from structbench.retrieval.bm25 import analyzer
from structbench.stats.moderators import (
    MODERATORS,
    anchoring_labels,
    document_depths,
    evidence_sections,
    evidence_span_labels,
    moderator,
    moderator_labels,
    qtype_labels,
    qtype_reference,
    tree_depth_labels,
)


def section(doc, section_id, title, level, path, start, end):
    return {
        "doc_id": doc,
        "section_id": section_id,
        "title": title,
        "level": level,
        "path": path,
        "para_start": section_id,
        "para_end": section_id + 1,
        "start": start,
        "end": end,
        "top_section_id": 0,
    }


# "deep": a lead, a top-level section and a subsection (depth 2); "flat": a lead and two top-level sections (depth 1),
# the second empty (a heading without text of its own); "lead": nothing but its untitled lead (no heading at all).
SECTIONS_TABLE = pl.DataFrame(
    [
        section("deep", 0, "", 1, ["Bread Notes"], 0, 50),
        section("deep", 1, "Feeding Schedules", 1, ["Bread Notes", "Feeding Schedules"], 50, 120),
        section("deep", 2, "Rye Starters", 2, ["Bread Notes", "Feeding Schedules", "Rye Starters"], 120, 200),
        section("flat", 0, "", 1, ["Tide Pools"], 0, 40),
        section("flat", 1, "Safety", 1, ["Tide Pools", "Safety"], 40, 90),
        section("flat", 2, "Closures", 1, ["Tide Pools", "Closures"], 90, 90),
        section("lead", 0, "", 1, ["Library Rules"], 0, 80),
    ],
    schema=SECTIONS,
)


def question(qid, doc, text, spans, qtype="factoid"):
    return {"qid": qid, "corpus": "c", "doc_id": doc, "text": text, "qtype": qtype, "spans": spans, "meta": "{}"}


QUERIES_TABLE = pl.DataFrame(
    [
        # evidence in the subsection: its path:3 is Bread Notes > Feeding Schedules > Rye Starters; "fed" stems
        # like nothing there, "schedule" meets "Schedules" under Porter stemming
        question("q1", "deep", "When is the schedule for rye?", [[130, 150]]),
        question("q2", "deep", "How warm should the kitchen be?", [[130, 150]], "multihop"),
        # evidence in the lead alone: only the document title can anchor it ("notes" -> "note")
        question("q3", "deep", "Where are the notes kept?", [[10, 20]], "structural"),
        # two spans, in the top-level section and the subsection: the union of both paths' tokens
        question("q4", "deep", "Which feed ratio applies?", [[60, 70], [140, 160]]),
        # a span ending exactly where Safety starts holds none of its characters; the empty section holds none
        question("q5", "flat", "Is the safety rope required?", [[10, 40]]),
        question("q6", "flat", "Is the safety rope required?", [[40, 41], [90, 91]], "underspecified"),
        question("q7", "lead", "Can rules be waived?", [[5, 9]]),
    ],
    schema=QUERIES,
)
ENGLISH = analyzer("english")


def labels_of(frame: pl.DataFrame) -> dict[str, tuple[str, str]]:
    return {qid: (level, group) for qid, level, group in frame.iter_rows()}


def test_tree_depth_is_the_deepest_headed_level_and_a_document_without_a_heading_is_left_out():
    assert document_depths(SECTIONS_TABLE).sort("doc_id").rows() == [("deep", 2), ("flat", 1)]
    labels = labels_of(tree_depth_labels(QUERIES_TABLE, SECTIONS_TABLE))
    assert labels == {
        "q1": ("depth ≥ 2", "A"),
        "q2": ("depth ≥ 2", "A"),
        "q3": ("depth ≥ 2", "A"),
        "q4": ("depth ≥ 2", "A"),
        "q5": ("depth 1", "B"),
        "q6": ("depth 1", "B"),
    }  # q7's document has only its untitled lead: no heading, no depth


def test_evidence_sections_are_the_sections_holding_a_character_of_a_span():
    held = evidence_sections(QUERIES_TABLE, SECTIONS_TABLE)
    paths = {}
    for qid, path in held.iter_rows():
        paths.setdefault(qid, []).append(path)
    assert paths == {
        "q1": [["Bread Notes", "Feeding Schedules", "Rye Starters"]],
        "q2": [["Bread Notes", "Feeding Schedules", "Rye Starters"]],
        "q3": [["Bread Notes"]],
        "q4": [["Bread Notes", "Feeding Schedules"], ["Bread Notes", "Feeding Schedules", "Rye Starters"]],
        "q5": [["Tide Pools"]],  # [10, 40) ends where Safety starts
        "q6": [["Tide Pools", "Safety"]],  # [90, 91) falls in no non-empty section: Closures is empty at 90
        "q7": [["Library Rules"]],
    }


def test_anchoring_shares_an_analyzer_token_with_the_heading_path_of_an_evidence_section():
    labels = labels_of(anchoring_labels(QUERIES_TABLE, SECTIONS_TABLE, ENGLISH))
    # hand-analyzed (lower-case, Lucene's stop words out, Porter stems):
    #   q1 {when, schedul, rye}        vs {bread, note, feed, schedul, rye, starter}: schedul, rye
    #   q2 {how, warm, should, kitchen} vs the same path: nothing
    #   q3 {where, note, kept}         vs {bread, note}: note (the title is part of the path)
    #   q4 {which, feed, ratio, appli} vs the union of both paths: feed (from Feeding)
    #   q5 {safeti, rope, requir}      vs {tide, pool}: nothing (Safety holds none of its evidence)
    #   q6 the same question           vs {tide, pool, safeti}: safeti
    #   q7 {can, rule, waiv}           vs {librari, rule}: rule
    assert labels == {
        "q1": ("anchored", "A"),
        "q2": ("not anchored", "B"),
        "q3": ("anchored", "A"),
        "q4": ("anchored", "A"),
        "q5": ("not anchored", "B"),
        "q6": ("anchored", "A"),
        "q7": ("anchored", "A"),
    }
    # the analyzer is the BM25 one: the plain words analyzer does not stem, so q4's "feed" misses "Feeding", and
    # q1 keeps "rye"
    words = labels_of(anchoring_labels(QUERIES_TABLE, SECTIONS_TABLE, analyzer("words")))
    assert words["q1"] == ("anchored", "A") and words["q4"] == ("not anchored", "B")


def test_anchoring_reads_the_path_to_depth_three_only():
    # a section three levels down: path:3 renders Doc > Alpha > Beta, its own title Gamma cut off
    deep = pl.DataFrame([section("d", 0, "Gamma", 3, ["Doc", "Alpha", "Beta", "Gamma"], 0, 10)], schema=SECTIONS)
    asked = pl.DataFrame(
        [question("g", "d", "What about gamma?", [[0, 5]]), question("b", "d", "What about beta?", [[0, 5]])],
        schema=QUERIES,
    )
    assert labels_of(anchoring_labels(asked, deep, ENGLISH)) == {"b": ("anchored", "A"), "g": ("not anchored", "B")}


def test_qtype_is_the_corpus_kinds_reference_against_the_rest():
    assert qtype_reference("qasper") == "extractive"
    assert {qtype_reference(kind) for kind in ("markdown", "chroma", "wikitext", "wikipedia")} == {"factoid"}
    labels = labels_of(qtype_labels(QUERIES_TABLE, "factoid"))
    assert labels["q1"] == ("factoid", "A") and labels["q2"] == ("multihop", "B") and labels["q6"][1] == "B"
    assert sum(group == "A" for _, group in labels.values()) == 4
    qasper = QUERIES_TABLE.with_columns(
        qtype=pl.Series(["extractive", "abstractive", "yes_no", "extractive", "abstractive", None, ""])
    )
    labels = labels_of(qtype_labels(qasper, qtype_reference("qasper")))
    assert labels == {
        "q1": ("extractive", "A"),
        "q2": ("abstractive", "B"),
        "q3": ("yes_no", "B"),
        "q4": ("extractive", "A"),
        "q5": ("abstractive", "B"),
    }  # a question without a type is left out


def test_evidence_spans_count_one_against_two_or_more():
    spans = QUERIES_TABLE.with_columns(
        spans=pl.Series([[[1, 2]], [[1, 2], [3, 4]], [], [[1, 2]] * 3, None, [[5, 9]], [[0, 1]]])
    )
    labels = labels_of(evidence_span_labels(spans))
    assert labels == {
        "q1": ("1 span", "A"),
        "q2": ("≥ 2 spans", "B"),
        "q4": ("≥ 2 spans", "B"),
        "q6": ("1 span", "A"),
        "q7": ("1 span", "A"),
    }  # no span: left out


def test_moderator_labels_in_the_order_asked_and_an_unknown_one_named():
    labellings = moderator_labels(list(reversed(MODERATORS)), QUERIES_TABLE, SECTIONS_TABLE, tokenize=ENGLISH)
    assert [labelling.moderator.name for labelling in labellings] == list(reversed(MODERATORS))
    assert labellings[1].moderator == moderator("qtype", "factoid")
    assert moderator("tree_depth").interaction == "depth ≥ 2 − depth 1"  # the pre-registered sign
    with pytest.raises(ValueError, match=r"unknown moderators \['depth'\]; moderators are"):
        moderator_labels(["depth"], QUERIES_TABLE, SECTIONS_TABLE, tokenize=ENGLISH)
