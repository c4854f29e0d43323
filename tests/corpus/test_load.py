"""load_corpus: spec validation and dispatch; corpus statistics; the light half stays light."""

import json
from pathlib import Path

import pytest
from conftest import SHARED_DATA, TESTS

from structbench.corpus import load_corpus
from structbench.corpus.corpus_stats import corpus_statistics
from structbench.corpus.verify import verify_corpus
from structbench.corpus.wikitext import parse_wikitext

FIXTURES = TESTS / "fixtures" / "corpus" / "kb_small"
RAW = SHARED_DATA / "wikitext/wikitext-2-raw-test/wiki.test.raw"
HF10 = SHARED_DATA / "qasper/sample-train10/qasper-original-sample.hf.json"


@pytest.mark.parametrize(
    "spec, message",
    [
        ({"kind": "pdf"}, "'kind' must be one of"),
        ({"path": "x"}, "'kind' must be one of"),
        ({"kind": "markdown"}, "missing required key 'path'"),
        ({"kind": "markdown", "path": "x", "questoins": None}, r"unknown key\(s\) \['questoins'\]"),
        ({"kind": "qasper", "paths": []}, "missing required key 'paths'"),
        ({"kind": "qasper", "paths": ["x"], "fuzzy_threshold": 150}, "'fuzzy_threshold' must be a number"),
        ({"kind": "wikitext", "path": "x", "min_words": -1}, "'min_words' must be a non-negative integer"),
        ({"kind": "wikitext", "path": "x", "n_docs": "ten"}, "'n_docs' must be a non-negative integer"),
        ({"kind": "wikitext", "path": "/nonexistent/wiki.raw"}, "does not exist"),
        ({"kind": "qasper", "paths": ["/nonexistent.json"]}, "does not exist"),
        ({"kind": "markdown", "path": "/nonexistent"}, "does not exist"),
    ],
)
def test_bad_specs_name_the_key(spec, message):
    with pytest.raises(ValueError, match=message):
        load_corpus(spec)


def test_each_kind_loads_verifies_and_reports_json():
    specs = [
        {"kind": "markdown", "path": str(FIXTURES), "questions": str(FIXTURES / "questions.jsonl"), "name": "small"},
        {"kind": "qasper", "paths": [str(HF10)]},
        {"kind": "wikitext", "path": str(RAW), "n_docs": 5, "min_words": 0, "min_depth": 0, "min_sections": 0},
    ]
    for spec in specs:
        if not Path(spec.get("path") or spec["paths"][0]).exists():
            continue
        tables = load_corpus(spec)
        assert verify_corpus(tables) == []
        assert set(tables.documents["corpus"]) == {spec.get("name", spec["kind"])}
        stats = corpus_statistics(tables)
        assert json.loads(json.dumps(stats)) == stats
        assert stats["documents"] == tables.documents.height
        assert sum(stats["depth_histogram"].values()) == tables.documents.height
        assert stats["queries"] == sum(stats["queries_by_qtype"].values())
        assert stats["funnel"] == tables.funnel.to_dicts()


def test_statistics_of_the_fixture_kb():
    tables = load_corpus({"kind": "markdown", "path": str(FIXTURES), "questions": str(FIXTURES / "questions.jsonl")})
    stats = corpus_statistics(tables)
    assert stats["documents"] == 3 and stats["skipped"] == 1 and stats["skipped_by_reason"] == {"no_paragraphs": 1}
    assert stats["queries_by_qtype"] == {"factoid": 2, "multihop": 1, "structural": 1}
    assert stats["depth_histogram"] == {"1": 1, "3": 2}  # beta_notes has no heading; the others nest twice
    assert stats["span_steps"] == {"exact": 5, "normalized": 1}


def test_wikitext_with_blank_lines_and_lf_and_bad_bytes(tmp_path):
    text = (
        " \n = Alpha = \n \n Lead of Alpha . \n \n = = Part = = \n \n Body @-@ text . \n"
        " \n = Beta = \n \n Beta lead . \n"
    )
    docs = parse_wikitext(text)
    assert [(d.title, d.paragraphs) for d in docs] == [
        ("Alpha", ["Lead of Alpha.", "Body-text."]),
        ("Beta", ["Beta lead."]),
    ]
    bad = tmp_path / "wiki.raw"
    bad.write_bytes(b" = T = \r\n caf\xe9 \r\n")
    with pytest.raises(ValueError, match=r"wiki\.raw: not valid UTF-8"):
        load_corpus({"kind": "wikitext", "path": str(bad)})


def test_source_files_name_a_missing_or_empty_markdown_folder(tmp_path):
    from structbench.corpus import has_queries, source_files

    with pytest.raises(ValueError, match=r"markdown corpus folder .*absent does not exist"):
        source_files({"kind": "markdown", "path": str(tmp_path / "absent")})
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match=r"empty has no \.md files"):
        source_files({"kind": "markdown", "path": str(tmp_path / "empty")})
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "b.md").write_text("# B\n\ntext\n")
    (tmp_path / "docs" / "a.md").write_text("# A\n\ntext\n")
    spec = {"kind": "markdown", "path": str(tmp_path / "docs"), "questions": str(tmp_path / "q.jsonl")}
    assert source_files(spec) == [str(tmp_path / "docs/a.md"), str(tmp_path / "docs/b.md"), str(tmp_path / "q.jsonl")]
    assert has_queries(spec) and not has_queries({**spec, "questions": None})
    assert has_queries({"kind": "qasper", "paths": ["x.json"]})
    assert not has_queries({"kind": "wikitext", "path": "w.raw"})
