"""build_tables and the verifier: offsets recorded while the text is built, sections tiling paragraphs."""

import json

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from structbench.corpus.build import (
    build_tables,
    document_depth,
    heading_count,
    queries_frame,
    sections_from_headings,
    union_spans,
)
from structbench.corpus.verify import (
    assert_verified,
    verify_paragraphs,
    verify_queries,
    verify_sections,
)
from structbench.datamodel import MAX_LEVEL, SCHEMAS, ParsedDocument, SectionSpec


def _doc(doc_id="d", title="Doc", paragraphs=None, headings=()):
    paragraphs = paragraphs if paragraphs is not None else ["p0", "p1", "p2", "p3", "p4", "p5"]
    return ParsedDocument(doc_id, title, paragraphs, sections_from_headings(len(paragraphs), list(headings)))


def test_flat_text_offsets_and_schema():
    doc = _doc(paragraphs=["Alpha.", "Beta\nline two.", "Gamma"], headings=[(2, "S", 1)])
    documents, paragraphs, sections = build_tables("c", [doc])
    for frame, name in ((documents, "documents"), (paragraphs, "paragraphs"), (sections, "sections")):
        assert dict(frame.schema) == SCHEMAS[name]
    text = documents["text"][0]
    assert text == "Alpha.\n\nBeta\nline two.\n\nGamma"
    assert documents["n_chars"][0] == len(text)
    for start, end, paragraph in zip(paragraphs["start"], paragraphs["end"], doc.paragraphs):
        assert text[start:end] == paragraph
    assert json.loads(documents["meta"][0]) == {}


def test_paths_levels_and_top_sections():
    # raw ranks: ## A, ### B, ##### C (skips a rank), ## D with no text, ###### E (deep), ## F
    headings = [
        (2, "A", 1),
        (3, "B", 2),
        (5, "C", 3),
        (2, "D", 4),
        (3, "E1", 4),
        (4, "E2", 4),
        (5, "E3", 4),
        (6, "E4", 4),
        (2, "F", 5),
    ]
    doc = _doc(headings=headings)
    _, paragraphs, sections = build_tables("c", [doc])
    rows = sections.to_dicts()
    assert [row["title"] for row in rows] == ["", "A", "B", "C", "D", "E1", "E2", "E3", "E4", "F"]
    assert rows[0]["path"] == ["Doc"]  # lead: the title alone
    assert rows[3]["path"] == ["Doc", "A", "B", "C"]
    assert rows[3]["level"] == 3  # ##### under ### nests one level down
    assert rows[8]["path"] == ["Doc", "D", "E1", "E2", "E3", "E4"]  # true depth 5 kept in the path
    assert rows[8]["level"] == MAX_LEVEL  # stored level clamped
    assert [row["top_section_id"] for row in rows] == [0, 1, 1, 1, 4, 4, 4, 4, 4, 9]
    # D has no paragraphs of its own: an empty section at the offset where E1 starts
    assert rows[4]["para_start"] == rows[4]["para_end"] == 4
    assert rows[4]["start"] == rows[4]["end"] == rows[5]["start"]
    assert rows[-1]["para_end"] == 6
    assert verify_sections(paragraphs, sections) == []
    assert document_depth(doc.sections) == 6 and heading_count(doc.sections) == 9


def test_trailing_empty_section_sits_at_the_end():
    doc = _doc(paragraphs=["a", "b"], headings=[(2, "A", 0), (2, "End", 2)])
    documents, paragraphs, sections = build_tables("c", [doc])
    last = sections.row(-1, named=True)
    assert last["start"] == last["end"] == documents["n_chars"][0]
    assert verify_sections(paragraphs, sections) == []


def test_duplicate_doc_and_empty_paragraph_are_errors():
    with pytest.raises(ValueError, match="duplicate doc_id 'd'"):
        build_tables("c", [_doc(), _doc()])
    with pytest.raises(ValueError, match="paragraph 1 is empty"):
        build_tables("c", [_doc(paragraphs=["a", "  ", "b"])])


def _tables_with(sections_specs, paragraphs=("a", "b", "c", "d")):
    doc = ParsedDocument("doc-x", "T", list(paragraphs), list(sections_specs))
    return build_tables("c", [doc])


@pytest.mark.parametrize(
    "specs, problem",
    [
        ([SectionSpec("", 1, 0, 2), SectionSpec("A", 1, 3, 4)], "gap after the previous section"),
        ([SectionSpec("", 1, 0, 3), SectionSpec("A", 1, 2, 4)], "overlaps the previous section"),
        ([SectionSpec("", 1, 1, 4)], "first section does not start at paragraph 0"),
        ([SectionSpec("", 1, 0, 3)], "last section does not end at the last paragraph"),
        ([SectionSpec("", 1, 0, 2), SectionSpec("A", 3, 2, 4)], "level rises by more than one"),
        ([SectionSpec("A", 2, 0, 4)], "first section is not level 1"),
        ([SectionSpec("", 1, 0, 2), SectionSpec("A", 1, 2, 9)], "out of bounds"),
    ],
)
def test_verifier_names_document_and_violation(specs, problem):
    _, paragraphs, sections = _tables_with(specs)
    violations = verify_sections(paragraphs, sections)
    assert any(v.startswith("doc-x: ") and problem in v for v in violations), violations
    with pytest.raises(ValueError, match=problem):
        assert_verified(paragraphs, sections)


def test_verifier_catches_offset_drift_and_bad_tops_and_missing_sections():
    _, paragraphs, sections = _tables_with([SectionSpec("", 1, 0, 2), SectionSpec("A", 2, 2, 4)])
    shifted = sections.with_columns(
        pl.when(pl.col("section_id") == 1).then(pl.col("start") + 1).otherwise(pl.col("start")).alias("start")
    )
    assert any("char offsets disagree with paragraph table" in v for v in verify_sections(paragraphs, shifted))
    wrong_top = sections.with_columns(pl.lit(1, pl.Int32).alias("top_section_id"))
    assert any("top_section_id" in v for v in verify_sections(paragraphs, wrong_top))
    assert verify_sections(paragraphs, sections.head(0)) == ["doc-x: has paragraphs but no sections"]
    bad_level = sections.with_columns(pl.lit(0, pl.Int8).alias("level"))
    assert any("level outside 1..4" in v for v in verify_sections(paragraphs, bad_level))


def test_verify_paragraphs_catches_text_drift():
    documents, paragraphs, _ = build_tables("c", [_doc()])
    assert verify_paragraphs(documents, paragraphs) == []
    drifted = paragraphs.with_columns(
        pl.when(pl.col("para_idx") == 2).then(pl.col("start") - 1).otherwise(pl.col("start")).alias("start")
    )
    assert any("separator" in v for v in verify_paragraphs(documents, drifted))
    longer = documents.with_columns((pl.col("text") + "x").alias("text"))
    assert any("n_chars" in v for v in verify_paragraphs(longer, paragraphs))


def test_union_spans_and_query_checks():
    assert union_spans([(10, 20, "exact"), (0, 5, "exact"), (8, 30, "section"), (12, 14, "fuzzy")]) == [
        (0, 5, "exact"),
        (8, 30, "section"),
    ]
    assert union_spans([(0, 5, "fuzzy"), (0, 5, "exact")]) == [(0, 5, "exact")]
    documents, _, _ = build_tables("c", [_doc()])
    good = queries_frame(
        [
            {
                "qid": "q",
                "corpus": "c",
                "doc_id": "d",
                "text": "?",
                "qtype": "factoid",
                "spans": [(0, 2), (4, 6)],
                "meta": {},
            }
        ]
    )
    assert dict(good.schema) == SCHEMAS["queries"]
    assert verify_queries(documents, good) == []
    bad = queries_frame(
        [
            {
                "qid": "q",
                "corpus": "c",
                "doc_id": "d",
                "text": "?",
                "qtype": "factoid",
                "spans": [(4, 6), (0, 99)],
                "meta": {},
            }
        ]
    )
    assert len(verify_queries(documents, bad)) == 1
    spaced = good.with_columns(pl.Series("qid", ["q 1"]))  # a loader that let it through: named at load_corpus
    assert verify_queries(documents, spaced) == [
        "query 'q 1': qid is empty or holds whitespace (not one field of a TREC line)"
    ]


_paragraph = st.text(alphabet="ab \n.é", min_size=1, max_size=12).filter(lambda s: s.strip() != "")


@settings(max_examples=150, deadline=None)
@given(
    paragraphs=st.lists(_paragraph, min_size=1, max_size=15),
    heading_data=st.lists(st.tuples(st.integers(1, 7), st.integers(0, 15)), max_size=12),
)
def test_any_heading_sequence_tiles_and_verifies(paragraphs, heading_data):
    n = len(paragraphs)
    positions = sorted(min(position, n) for _, position in heading_data)
    ranks = [rank for rank, _ in heading_data]
    headings = [(rank, f"H{index}", position) for index, (rank, position) in enumerate(zip(ranks, positions))]
    doc = ParsedDocument("d", "T", paragraphs, sections_from_headings(n, headings))
    documents, paragraph_table, sections = build_tables("c", [doc])
    assert verify_paragraphs(documents, paragraph_table) == []
    assert verify_sections(paragraph_table, sections) == []
    text = documents["text"][0]
    for start, end, paragraph in zip(paragraph_table["start"], paragraph_table["end"], paragraphs):
        assert text[start:end] == paragraph
    for row in sections.iter_rows(named=True):
        assert text[row["start"] : row["end"]] == "\n\n".join(paragraphs[row["para_start"] : row["para_end"]])
        if row["section_id"] == 0 and row["title"] == "":
            assert row["path"] == ["T"] and row["level"] == 1
        else:
            assert row["path"][-1] == row["title"]
            assert row["level"] == min(len(row["path"]) - 1, MAX_LEVEL)


def test_damaged_or_missing_tables_and_vectors_name_the_file(tmp_path):
    from structbench.datamodel import DamagedInput, read_table, read_vectors

    damaged = tmp_path / "chunks.parquet"
    damaged.write_bytes(b"not parquet at all")
    with pytest.raises(DamagedInput, match=r"chunks\.parquet: not a readable Parquet chunks"):
        read_table(damaged, "chunks")
    with pytest.raises(FileNotFoundError, match=r"absent\.parquet does not exist"):
        read_table(tmp_path / "absent.parquet", "chunks")
    vectors = tmp_path / "v.npy"
    vectors.write_bytes(b"\x93NUMPY garbage")
    with pytest.raises(DamagedInput, match=r"v\.npy: not a readable \.npy"):
        read_vectors(vectors)
