"""Evidence by source offsets (structbench.corpus.sourcemap, the questions' {start, end} ranges), Chroma's
benchmark as a corpus (kind: chroma) and precision-Ω under Chroma's touching rule."""

from __future__ import annotations

import csv
import json
import re
from collections import Counter
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from conftest import REPO
from test_metrics import make_chunks, make_queries, make_runs

from structbench.config import validate_config
from structbench.configfiles import layer_configs
from structbench.corpus import has_queries, load_corpus, source_files
from structbench.corpus.markdown import load_markdown_folder, parse_markdown_lines
from structbench.corpus.questions import QuestionsError
from structbench.corpus.sourcemap import SourceMap, SourceRangeError
from structbench.metrics import align_run, precision_omega, score_run
from structbench.metrics.spans import chroma_extents, precision_omega_touching
from structbench.plan.study import Study

CHROMA = REPO.parent / "shared" / "data" / "chroma"
SOURCE = (
    "\ufeff---\ntitle: T\n---\n# Head\n\nAlpha beta.   \r\ngamma delta.\n\n## Sub\n\n- one\n\n- two\n\nLast para.\n"
)


def write_kb(tmp_path: Path, evidence: list) -> tuple[Path, Path]:
    folder = tmp_path / "docs"
    folder.mkdir(exist_ok=True)
    (folder / "a.md").write_bytes(SOURCE.encode())
    questions = tmp_path / "q.jsonl"
    questions.write_text(json.dumps({"qid": "q1", "doc_id": "a", "question": "what?", "evidence": evidence}) + "\n")
    return folder, questions


def test_every_flat_character_maps_back_to_its_source_character():
    doc, rows = parse_markdown_lines(SOURCE, "a")
    source_map = SourceMap(SOURCE, doc.paragraphs, rows)
    flat = "\n\n".join(doc.paragraphs)
    assert flat == "Alpha beta.\ngamma delta.\n\n- one\n- two\n\nLast para."
    # each mapped flat character is its source character (the inner line break: the line's end, here "\r"
    # after the trailing spaces were cut, or "\n")
    for flat_at, source_at in zip(source_map.flat_at, source_map.source_at):
        assert flat[flat_at] == SOURCE[source_at] or (flat[flat_at] == "\n" and SOURCE[source_at] in " \r\n")
    assert len(source_map.flat_at) == len(flat) - 2 * 2  # the two paragraph separators have no source
    assert np.all(np.diff(source_map.source_at) > 0)


@pytest.mark.parametrize(
    "quote, flat",
    [
        ("Alpha beta.", "Alpha beta."),
        ("beta.   \r\ngamma", "beta.\ngamma"),  # trailing spaces and CRLF are not flat text
        ("- one\n\n- two", "- one\n- two"),  # a loose list's blank line is dropped
        ("Last para.\n", "Last para."),
    ],
)
def test_a_source_range_maps_to_the_flat_range_of_its_characters(tmp_path, quote, flat):
    start = SOURCE.index(quote)
    folder, questions = write_kb(tmp_path, [{"start": start, "end": start + len(quote), "quote": quote}])
    tables = load_markdown_folder(folder, questions_path=questions)
    text = tables.documents["text"][0]
    (span,) = tables.queries["spans"][0]
    assert text[span[0] : span[1]] == flat
    assert json.loads(tables.queries["meta"][0])["span_steps"] == ["offsets"]
    assert tables.funnel.filter(step="matched", reason="offsets")["count"].item() == 1


def test_a_range_places_a_repeated_quote_where_the_quote_alone_cannot(tmp_path):
    source = "Same words.\n\nOther.\n\nSame words.\n"
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.md").write_text(source)
    second = source.rindex("Same words.")
    lines = [
        {"qid": "by-quote", "doc_id": "a", "question": "x?", "evidence": ["Same words."]},
        {"qid": "by-range", "doc_id": "a", "question": "x?", "evidence": [{"start": second, "end": second + 11}]},
    ]
    (tmp_path / "q.jsonl").write_text("\n".join(json.dumps(line) for line in lines))
    tables = load_markdown_folder(folder, questions_path=tmp_path / "q.jsonl")
    spans = dict(zip(tables.queries["qid"], tables.queries["spans"].to_list()))
    assert spans["by-quote"] == [[0, 11]] and spans["by-range"] == [[21, 32]]


@pytest.mark.parametrize(
    "item, message",
    [
        ({"start": 0, "end": 10_000}, "not inside the source text"),
        ({"start": 30, "end": 20}, "not inside the source text"),
        (
            {"start": SOURCE.index("Alpha"), "end": SOURCE.index("Alpha") + 5, "quote": "Gamma"},
            "does not match its quote",
        ),
        ({"start": SOURCE.index("# Head"), "end": SOURCE.index("# Head") + 6}, "holds no document text"),
        ({"start": SOURCE.index("delta"), "end": SOURCE.index("one")}, "not document text"),  # crosses "## Sub"
        ({"start": SOURCE.index("beta.") + 5, "end": SOURCE.index("beta.") + 8}, "only whitespace"),  # trailing spaces
        ({"start": 1.5, "end": 9}, "integer 'start' and 'end'"),
        ({"start": 1, "end": 9, "text": "x"}, "unknown key"),
    ],
)
def test_a_bad_range_is_a_named_error(tmp_path, item, message):
    folder, questions = write_kb(tmp_path, [item])
    with pytest.raises(ValueError, match=message) as error:
        load_markdown_folder(folder, questions_path=questions)
    assert "q.jsonl, line 1, question 'q1'" in str(error.value)
    if "quote" in message:
        assert isinstance(error.value, SourceRangeError)


def test_quotes_only_questions_keep_their_funnel(tmp_path):
    folder, questions = write_kb(tmp_path, ["Alpha beta."])
    funnel = load_markdown_folder(folder, questions_path=questions).funnel
    assert "offsets" not in funnel["reason"].to_list()


@pytest.mark.skipif(not CHROMA.exists(), reason="Chroma's benchmark is not in ../shared/data")
def test_chromas_benchmark_loads_with_every_excerpt_at_its_offsets():
    spec = {"kind": "chroma", "path": str(CHROMA)}
    assert has_queries(spec)
    assert sorted(Path(path).name for path in source_files(spec))[-1] == "wikitexts.md"
    tables = load_corpus(spec)
    assert tables.queries.height == 472
    texts = dict(zip(tables.documents["doc_id"], tables.documents["text"]))
    sources = {doc: (CHROMA / "corpora" / f"{doc}.md").read_text() for doc in texts}
    rows = list(csv.DictReader((CHROMA / "questions_df.csv").open(encoding="utf-8")))
    n_excerpts = 0
    for row, query in zip(rows, tables.queries.sort("qid").iter_rows(named=True)):
        refs = json.loads(row["references"])
        n_excerpts += len(refs)
        assert query["doc_id"] == row["corpus_id"]
        # the excerpts' non-blank characters are exactly the spans' (the offsets are placed, not searched)
        source, text = sources[query["doc_id"]], texts[query["doc_id"]]
        assert all(source[ref["start_index"] : ref["end_index"]] == ref["content"] for ref in refs)
        in_source = {i for ref in refs for i in range(ref["start_index"], ref["end_index"]) if not source[i].isspace()}
        visible = "".join(source[i] for i in sorted(in_source))
        assert "".join("".join(text[a:b] for a, b in query["spans"]).split()) == visible
    assert n_excerpts == 790
    assert tables.funnel.filter(step="matched", reason="offsets")["count"].item() == 790


def test_missing_chroma_files_are_named(tmp_path):
    with pytest.raises(ValueError, match="questions_df.csv"):
        (tmp_path / "corpora").mkdir()
        load_corpus({"kind": "chroma", "path": str(tmp_path)})


def test_a_chroma_question_keeps_a_raw_line_separator_and_one_of_no_tokens_is_named(tmp_path):
    """Chroma's CSV as pandas writes it: a field with U+2028 is not quoted (only a delimiter, quote or line end
    is), so reading rows with ``str.splitlines`` would cut the row there; a question of a NUL alone is 0 tokens."""
    (tmp_path / "corpora").mkdir()
    (tmp_path / "corpora" / "a.md").write_text("# A\n\nAlpha beta gamma.\n")
    refs = json.dumps([{"content": "Alpha beta", "start_index": 5, "end_index": 15}])

    def load(question: str):
        with (tmp_path / "questions_df.csv").open("w", encoding="utf-8", newline="") as out:
            writer = csv.writer(out)
            writer.writerows([["question", "references", "corpus_id"], [question, refs, "a"]])
        return load_corpus({"kind": "chroma", "path": str(tmp_path)})

    queries = load("What\u2028is alpha?").queries
    assert "\nWhat\u2028is alpha?," in (tmp_path / "questions_df.csv").read_text()  # the field is not quoted
    assert queries["text"].to_list() == ["What\u2028is alpha?"] and queries["qid"].to_list() == ["chroma-0000"]
    with pytest.raises(QuestionsError, match=r"questions_df\.csv, row 0, question 'chroma-0000': question has no"):
        load("\x00")


def chroma_omega(chunks: list[tuple[int, int]], spans: list[tuple[int, int]]) -> float:
    """Chroma's _full_precision_score for one question, on character sets (intersect_two_ranges: start <= end)."""
    numerator, chunk_chars, unused = set(), set(), set()
    for a, b in spans:
        unused |= set(range(a, b))
    for c0, c1 in chunks:
        for a, b in spans:
            lo, hi = max(c0, a), min(c1, b)
            if lo <= hi:
                numerator |= set(range(lo, hi))
                chunk_chars |= set(range(c0, c1))
    unused -= numerator
    return len(numerator) / len(chunk_chars | unused)


def test_touching_rule_equals_chromas_code_on_random_tilings():
    rng = np.random.default_rng(31)
    for trial in range(40):
        cuts = np.unique(np.concatenate(([0, 400], rng.integers(1, 400, 8))))
        tiles = list(zip(cuts[:-1].tolist(), cuts[1:].tolist()))
        # spans that start or end exactly on a cut are where the two rules differ
        spans = []
        for _ in range(rng.integers(1, 3)):
            a = int(rng.choice(cuts[:-1])) if rng.random() < 0.5 else int(rng.integers(0, 390))
            spans.append((a, min(400, a + int(rng.integers(1, 80)))))
        chunks = make_chunks([(i, "d", a, b) for i, (a, b) in enumerate(tiles)])
        evidence = align_run(make_runs({"q": [0]}), make_queries([("q", "d", spans)]), chunks)
        assert precision_omega_touching(evidence)[0] == pytest.approx(chroma_omega(tiles, spans), abs=1e-12), trial
        assert precision_omega_touching(evidence)[0] <= precision_omega(evidence)[0]


def test_touching_rule_hand_worked():
    # span [100,200) over [0,100) [100,200) [200,300): both neighbours touch, U = [0,300): 100/300
    chunks = make_chunks([(0, "d", 0, 100), (1, "d", 100, 200), (2, "d", 200, 300), (3, "e", 0, 100)])
    queries = make_queries([("q", "d", [(100, 200)]), ("r", "e", [(10, 20)])])
    scores = score_run(
        make_runs({"q": [1], "r": [3]}),
        queries,
        chunks,
        metrics=["span_precision_omega", "span_precision_omega_touching"],
    ).sort("qid")
    assert scores["span_precision_omega"].to_list() == [1.0, 0.1]
    assert scores["span_precision_omega_touching"].to_list() == [pytest.approx(1 / 3), 0.1]


def test_every_knowledge_base_file_maps_character_for_character():
    """The shipped knowledge base, whatever Markdown it holds: every paragraph
    line is its source line, and a range over any whole paragraph maps back to exactly that paragraph."""
    files = sorted((REPO / "data" / "kb" / "docs").rglob("*.md"))
    assert files
    for path in files:
        source = path.read_text(encoding="utf-8")
        doc, rows = parse_markdown_lines(source, path.stem)
        source_map = SourceMap(source, doc.paragraphs, rows)  # raises if a line is not its source line
        flat = "\n\n".join(doc.paragraphs)
        cursor = 0
        for paragraph, lines in zip(doc.paragraphs, rows):
            first = lines[0]
            begin = int(source_map.source_at[np.searchsorted(source_map.flat_at, cursor)])
            end = int(source_map.source_at[np.searchsorted(source_map.flat_at, cursor + len(paragraph) - 1)]) + 1
            assert source_map.to_flat(begin, end) == (cursor, cursor + len(paragraph)), (path.name, first)
            assert flat[cursor : cursor + len(paragraph)] == paragraph
            cursor += len(paragraph) + 2


@pytest.mark.workflow
@pytest.mark.skipif(not CHROMA.exists(), reason="Chroma's benchmark is not in ../shared/data")
def test_dry_run_of_the_chroma_config_plans_chromas_grid_beside_the_study_arms(tmp_path):
    from conftest import kb_config, run_snakemake
    from test_workflow import planned_jobs

    config = kb_config(tmp_path, whole_default=True)
    here = tmp_path / "chroma_path.yaml"  # the run lives in tmp_path: the benchmark's folder, absolutely
    here.write_text(f"corpora:\n  chroma: {{kind: chroma, path: '{CHROMA}'}}\n")
    result = run_snakemake(tmp_path, "-n", "--configfile", str(config), str(REPO / "config/chroma.yaml"), str(here))
    assert result.returncode == 0, result.stderr
    jobs = planned_jobs(result.stdout + result.stderr)
    # Chroma's twelve grid points (the recursive splitter and word windows at 200, 400 and 800, tiling and half
    # overlapping: twelve external chunk sets) and LangChain's splitter size-matched to G2; G2 at the three
    # sizes, F0 and F0's windows overlapping by half: eighteen conditions, each its own chunk set
    assert jobs["corpus"] == 1 and jobs["external_chunks"] == 13 and jobs["score"] == 18 and jobs["embed_texts"] == 18
    assert jobs["structural_chunks"] == 3 and jobs["fixed_chunks"] == 2 and "induce_structure" not in jobs


def word_tiles(text: str, size: int) -> list[tuple[int, int]]:
    """Tiles of about ``size`` characters cut after a run of whitespace, each holding the whitespace after it
    (structbench's extents)."""
    cuts, at = [0], size
    while at < len(text):
        while at < len(text) and not text[at].isspace():
            at += 1
        while at < len(text) and text[at].isspace():
            at += 1
        if at < len(text):
            cuts.append(at)
        at += size
    return list(zip(cuts, cuts[1:] + [len(text)]))


def chroma_ranges(text: str, chunks: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Chroma's _get_chunks_and_metadata, written out: the chunk's text stripped, then str.find in the document."""
    placed = []
    for a, b in chunks:
        stripped = text[a:b].strip()
        placed.append((text.find(stripped), text.find(stripped) + len(stripped)))
    return placed


def chroma_iou_precision(retrieved: list[tuple[str, int, int]], doc_id: str, spans) -> tuple[float, float]:
    """Chroma's _scores_from_dataset_and_retrievals for one question, on character sets: the numerator is the
    merged intersections (intersect_two_ranges: start <= end), the denominators sum the retrieved ranges."""
    gold = {x for a, b in spans for x in range(a, b)}
    numerator = set()
    for doc, c0, c1 in retrieved:
        for a, b in spans:
            if doc == doc_id and max(c0, a) <= min(c1, b):
                numerator |= set(range(max(c0, a), min(c1, b)))
    summed = sum(c1 - c0 for _, c0, c1 in retrieved)
    return len(numerator) / (summed + len(gold - numerator)), len(numerator) / summed


@pytest.mark.skipif(not CHROMA.exists(), reason="Chroma's benchmark is not in ../shared/data")
def test_span_metrics_reproduce_chromas_code_on_its_benchmark():
    """Chroma's own questions and documents, tiles of ~1,500 characters (structbench extents: whitespace after)
    and overlapping pairs of them; 60 questions. precision-Ω with Chroma's extents and the sum rule equal Chroma's
    formulas (written out above) per question; the own-extents touching rule and the union rule do not."""
    tables = load_corpus({"kind": "chroma", "path": str(CHROMA)})
    texts = dict(zip(tables.documents["doc_id"], tables.documents["text"]))
    rng = np.random.default_rng(43)
    queries = tables.queries.sort("qid")[np.sort(rng.choice(472, 60, replace=False)).tolist()]
    tiles = {doc: word_tiles(text, 1500) for doc, text in texts.items()}
    pairs = {doc: [(a, b) for (a, _), (_, b) in zip(ranges, ranges[1:])] for doc, ranges in tiles.items()}
    for extents, overlapping in ((tiles, False), (pairs, True)):
        rows = [(doc, a, b) for doc in sorted(extents) for a, b in extents[doc]]
        chunks = make_chunks([(i, doc, a, b) for i, (doc, a, b) in enumerate(rows)])
        placed = chroma_extents(chunks, tables.documents)
        placed_start, placed_end = placed["start"].to_list(), placed["end"].to_list()
        first = {doc: rows.index((doc, *extents[doc][0])) for doc in extents}
        rankings = {}
        for query in queries.iter_rows(named=True):  # the chunk holding the gold, its successor, another document's
            own = [first[query["doc_id"]] + i for i, (a, b) in enumerate(extents[query["doc_id"]])]
            hold = next(c for c in own if rows[c][1] <= query["spans"][0][0] < rows[c][2])
            other = first[sorted(set(texts) - {query["doc_id"]})[0]]
            rankings[query["qid"]] = list(dict.fromkeys([hold, min(hold + 1, own[-1]), other, own[0]]))
        names = ["span_IoU_sum@4", "span_precision_sum@4", "span_IoU@4", "span_precision_omega_touching"]
        scores = score_run(
            make_runs(rankings),
            queries,
            placed,
            metrics=[*names, "span_precision_omega_chroma"],
            inputs={"chroma_chunks": placed},
        )
        own_extents = score_run(make_runs(rankings), queries, chunks, metrics=["span_precision_omega_touching"])
        expected_omega, expected_iou, expected_precision = [], [], []
        for query in queries.iter_rows(named=True):
            doc = query["doc_id"]
            chroma_chunks = chroma_ranges(texts[doc], extents[doc])
            expected_omega.append(chroma_omega(chroma_chunks, query["spans"]))
            retrieved = [(rows[c][0], placed_start[c], placed_end[c]) for c in rankings[query["qid"]]]
            iou, precision = chroma_iou_precision(retrieved, doc, query["spans"])
            expected_iou.append(iou)
            expected_precision.append(precision)
        np.testing.assert_allclose(scores["span_precision_omega_chroma"], expected_omega, rtol=0, atol=1e-12)
        np.testing.assert_allclose(scores["span_IoU_sum@4"], expected_iou, rtol=0, atol=1e-12)
        np.testing.assert_allclose(scores["span_precision_sum@4"], expected_precision, rtol=0, atol=1e-12)
        # the whitespace after a chunk makes the touching rule fire: own extents are not Chroma's
        assert (own_extents["span_precision_omega_touching"] < scores["span_precision_omega_chroma"]).any()
        assert (scores["span_IoU@4"] != scores["span_IoU_sum@4"]).any() == overlapping


# ---- markup: wikitext (Chroma's wikitexts read as WikiText articles) -------------------------------------------

WIKI = (
    " stray words before any title \n"
    " = Alpha = \n"
    " Alpha is a letter . It comes first . \n"
    " = = History = = \n"
    " Its value is k \n"
    " = 1 ohm and c = \n"  # a false title: the sentence goes on, and the next line does not name "ohm"
    " 2 farad , as before . \n"
    " = = = Old @-@ style = = = \n"
    " More text here . \n"
    " = Beta = \n"
    " Beta is second . \n"
)


def wiki_ref(text: str, start: int | None = None) -> dict:
    """A Chroma reference to ``text`` in WIKI (at ``start``, else its first occurrence)."""
    start = WIKI.index(text) if start is None else start
    return {"content": WIKI[start : start + len(text)], "start_index": start, "end_index": start + len(text)}


def write_wiki(tmp_path: Path, questions: list[tuple[str, list[dict]]]) -> Path:
    """A Chroma-shaped folder: corpora/wiki.md (WIKI), corpora/other.md, and the questions CSV."""
    (tmp_path / "corpora").mkdir(exist_ok=True)
    (tmp_path / "corpora" / "wiki.md").write_text(WIKI, encoding="utf-8")
    (tmp_path / "corpora" / "other.md").write_text("Plain text, no titles.\n", encoding="utf-8")
    with (tmp_path / "questions_df.csv").open("w", encoding="utf-8", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(["question", "references", "corpus_id"])
        for number, (corpus_id, refs) in enumerate(questions):
            writer.writerow([f"question {number}?", json.dumps(refs), corpus_id])
    return tmp_path


def test_a_wikitext_file_is_read_as_articles_and_each_question_given_to_its_article(tmp_path):
    folder = write_wiki(
        tmp_path,
        [
            ("wiki", [wiki_ref(" Alpha is a letter . ")]),  # 0: Alpha's lead, a leading space as Chroma cuts them
            ("wiki", [wiki_ref("value is k \n = 1 ohm and c = \n 2 farad")]),  # 1: over the glued false title
            ("wiki", [wiki_ref("Beta is second .")]),  # 2
            ("wiki", [wiki_ref("first . \n = = History = = \n Its")]),  # 3: holds a heading line
            ("wiki", [wiki_ref("here . \n = Beta = \n Beta")]),  # 4: runs into the next article
            ("wiki", [wiki_ref("It comes first"), wiki_ref("Beta is")]),  # 5: one excerpt in each article
            ("wiki", [wiki_ref("stray words")]),  # 6: before the first title
            ("other", [{"content": "Plain", "start_index": 0, "end_index": 5}]),  # 7: a file not selected
            ("wiki", [wiki_ref("More text"), wiki_ref("Alpha is")]),  # 8: two excerpts, one article
        ],
    )
    spec = {"kind": "chroma", "path": str(folder), "corpus_ids": ["wiki"], "markup": "wikitext"}
    assert [Path(path).name for path in source_files(spec)] == ["wiki.md", "questions_df.csv"]
    tables = load_corpus(spec)
    texts = dict(zip(tables.documents["doc_id"], tables.documents["text"]))
    assert texts == {
        "Alpha": "Alpha is a letter . It comes first .\n\nIts value is k = 1 ohm and c = 2 farad , as before ."
        "\n\nMore text here .",
        "Beta": "Beta is second .",
    }
    sections = tables.sections.filter(doc_id="Alpha")
    assert sections["path"].to_list() == [["Alpha"], ["Alpha", "History"], ["Alpha", "History", "Old @-@ style"]]
    assert sections["level"].to_list() == [1, 1, 2]
    queries = {row["qid"]: row for row in tables.queries.iter_rows(named=True)}
    assert sorted(queries) == ["chroma-0000", "chroma-0001", "chroma-0002", "chroma-0008"]
    shown = {qid: [texts[row["doc_id"]][a:b] for a, b in row["spans"]] for qid, row in queries.items()}
    assert shown == {
        "chroma-0000": ["Alpha is a letter . "],  # the line's leading space is not flat text, the inner one is
        "chroma-0001": ["value is k = 1 ohm and c = 2 farad"],  # each line break read as the glue's space
        "chroma-0002": ["Beta is second ."],
        "chroma-0008": ["Alpha is", "More text"],
    }
    assert [queries[qid]["doc_id"] for qid in sorted(queries)] == ["Alpha", "Alpha", "Beta", "Alpha"]
    funnel = {(row["unit"], row["step"], row["reason"]): row["count"] for row in tables.funnel.iter_rows(named=True)}
    assert funnel == {
        ("documents", "in", ""): 2,
        ("documents", "skipped", "no_paragraphs"): 0,
        ("documents", "out", ""): 2,
        ("headings", "glued", "false_title"): 1,
        ("paragraphs", "dropped", "before_first_title"): 1,
        ("questions", "not_selected", "other_corpus_id"): 1,
        ("questions", "in", ""): 8,
        ("questions", "skipped", "before_first_title"): 1,
        ("questions", "skipped", "across_articles"): 2,
        ("questions", "skipped", "on_heading"): 1,
        ("questions", "out", ""): 4,
        ("spans", "out", ""): 5,
        ("spans", "matched", "exact"): 0,
        ("spans", "matched", "normalized"): 0,
        ("spans", "matched", "offsets"): 5,
        ("evidence", "in", ""): 10,
        ("evidence", "matched", "offsets"): 5,
        ("evidence", "unmapped", "before_first_title"): 1,
        ("evidence", "unmapped", "across_articles"): 3,  # question 4's, and both of question 5's
        ("evidence", "unmapped", "on_heading"): 1,
        ("evidence", "dropped", "question_skipped"): 0,
    }
    assert tables.skipped.select("record", "reason").rows() == [
        ("chroma-0003", "on_heading"),
        ("chroma-0004", "across_articles"),
        ("chroma-0005", "across_articles"),
        ("chroma-0006", "before_first_title"),
    ]
    assert tables.skipped["source"][0].endswith("questions_df.csv, row 3")


def test_the_markdown_reading_of_the_same_file_is_one_document_without_headings(tmp_path):
    """What markup: wikitext is for: read as Markdown (the default), the file is one paragraph (no blank line) of one
    document with no section, its title and heading lines body text."""
    folder = write_wiki(tmp_path, [("wiki", [wiki_ref("first . \n = = History = = \n Its")])])
    tables = load_corpus({"kind": "chroma", "path": str(folder), "corpus_ids": ["wiki"]})
    assert tables.documents["doc_id"].to_list() == ["wiki"] and tables.paragraphs.height == 1
    assert tables.sections["path"].to_list() == [["wiki"]]
    (span,) = tables.queries["spans"].item()
    assert tables.documents["text"].item()[span[0] : span[1]] == "first .\n = = History = =\n Its"


@pytest.mark.parametrize(
    "spec, message",
    [
        ({"markup": "mediawiki"}, r"'markup' must be one of \['markdown', 'wikitext'\], got 'mediawiki'"),
        ({"corpus_ids": "wiki"}, "'corpus_ids' must be a list of distinct file stems"),
        ({"corpus_ids": ["wiki", "wiki"]}, "'corpus_ids' must be a list of distinct file stems"),
        ({"corpus_ids": ["wikitext"]}, r"corpus_ids \['wikitext'\] have no file corpora/<id>.md .*\['other', 'wiki'\]"),
        ({"markup": "wikitext"}, r"other.md: no ' = Title = ' line, so no WikiText article"),
    ],
)
def test_bad_chroma_reading_options_are_named(tmp_path, spec, message):
    folder = write_wiki(tmp_path, [("wiki", [wiki_ref("Alpha is")])])
    with pytest.raises(ValueError, match=message):
        load_corpus({"kind": "chroma", "path": str(folder)} | spec)


def test_a_wikitext_excerpt_that_does_not_hold_its_content_is_still_an_error(tmp_path):
    reference = wiki_ref("Alpha is") | {"content": "Gamma is"}
    folder = write_wiki(tmp_path, [("wiki", [wiki_ref("Beta is")]), ("wiki", [reference])])
    spec = {"kind": "chroma", "path": str(folder), "corpus_ids": ["wiki"], "markup": "wikitext"}
    with pytest.raises(SourceRangeError, match=r"questions_df\.csv, row 1, question 'chroma-0001'.*does not match"):
        load_corpus(spec)


WIKITEXTS = CHROMA / "corpora" / "wikitexts.md"
WIKITEXTS_TITLES = [
    "Valkyria Chronicles III",
    "Tower Building of the Little Rock Arsenal",
    "Cicely Mary Barker",
    "Gambia women 's national football team",
    "Plain maskray",
    "2011 – 12 Columbus Blue Jackets season",
    "Gregorian Tower",
    "There 's Got to Be a Way",
    "Nebraska Highway 88",
    "USS Atlanta ( 1861 )",
]


@pytest.mark.skipif(not WIKITEXTS.exists(), reason="Chroma's benchmark is not in ../shared/data")
def test_chromas_wikitexts_are_ten_articles_with_their_headings_and_every_excerpt_mapped():
    """wikitexts.md has 84 heading-like lines, 17 of them "= X =" titles; seven of those are the split legend of the
    Columbus Blue Jackets season's statistics table (false titles, glued back), so it is 10 articles and 67 section
    headings (44 at level 2, 22 at level 3, one at level 4). All 144 questions and 249 excerpts map."""
    source = WIKITEXTS.read_text(encoding="utf-8")
    heading = re.compile(r" *(=(?: =)*) (.+?) (=(?: =)*) *")
    levels = Counter(match.group(1).count("=") for line in source.split("\n") if (match := heading.fullmatch(line)))
    assert sum(levels.values()) == 84 and levels == {1: 17, 2: 44, 3: 22, 4: 1}
    assert "\n\n" not in source and source.count("\n") == 338

    spec = {"kind": "chroma", "path": str(CHROMA), "corpus_ids": ["wikitexts"], "markup": "wikitext"}
    tables = load_corpus(spec)
    assert tables.documents["doc_id"].to_list() == WIKITEXTS_TITLES
    titled = tables.sections.filter(pl.col("title") != "")
    assert titled.height == 67 and tables.sections.height == 77  # each article has lead text
    assert Counter(titled["level"].to_list()) == {1: 44, 2: 22, 3: 1}
    # a paragraph per line, less the 77 heading lines; the two legends (7 and 9 lines, 3 and 4 of them false titles)
    # are one paragraph each
    assert tables.paragraphs.height == 338 - 77 - (7 + 9) + 2
    blue_jackets = tables.documents.filter(pl.col("doc_id").str.starts_with("2011"))
    assert json.loads(blue_jackets["meta"].item())["glued_fragments"] == 7
    assert "Note : Pos = Position ; GP = Games played in ; G = Goals ; A = Assists ; Pts = Points" in (
        blue_jackets["text"].item()
    )
    funnel = {(row["unit"], row["step"], row["reason"]): row["count"] for row in tables.funnel.iter_rows(named=True)}
    assert funnel[("headings", "glued", "false_title")] == 7
    assert funnel[("questions", "not_selected", "other_corpus_id")] == 472 - 144
    assert funnel[("questions", "in", "")] == funnel[("questions", "out", "")] == 144
    assert funnel[("evidence", "in", "")] == funnel[("evidence", "matched", "offsets")] == 249
    assert tables.skipped.is_empty()

    # every question keeps its CSV row's qid and sits in the article whose lines hold its excerpts, its spans
    # holding exactly the excerpts' visible characters
    rows = list(csv.DictReader((CHROMA / "questions_df.csv").open(encoding="utf-8")))
    title_at = sorted((source.index(f" = {title} = \n"), title) for title in WIKITEXTS_TITLES)
    texts = dict(zip(tables.documents["doc_id"], tables.documents["text"]))
    for query in tables.queries.iter_rows(named=True):
        row = rows[int(query["qid"].removeprefix("chroma-"))]
        refs = json.loads(row["references"])
        assert row["corpus_id"] == "wikitexts" and row["question"] == query["text"]
        homes = {max((at, title) for at, title in title_at if at <= ref["start_index"])[1] for ref in refs}
        assert homes == {query["doc_id"]}
        visible = "".join("".join(ref["content"].split()) for ref in sorted(refs, key=lambda ref: ref["start_index"]))
        text = texts[query["doc_id"]]
        assert "".join("".join(text[a:b].split()) for a, b in query["spans"]) == visible


def test_the_wikitexts_config_checks_and_runs_the_source_studys_wikipedia_conditions():
    """config/wikitexts.yaml over the default: check-config passes with no warning, and the study it describes is
    the Wikipedia-FA row's conditions and the main study's families on the one corpus."""
    from test_checkconfig import check_config

    status, lines = check_config("--snakemake-args", "-n", "--configfile", REPO / "config/wikitexts.yaml")
    assert (status, lines) == (0, [])
    config = layer_configs([REPO / "config/config.yaml", REPO / "config/wikitexts.yaml"]).config
    validate_config(config, REPO / "workflow/schemas/config.schema.yaml")
    study = Study.from_config(config)
    assert study.corpora == ["wikitexts"]
    assert config["corpora"]["wikitexts"] | {"path": None} == {
        "kind": "chroma",
        "path": None,
        "corpus_ids": ["wikitexts"],
        "markup": "wikitext",
    }
    assert sorted(study.conditions) == ["B2", "F0", "G2", "G3", "G4", "L3", "LP", "P3"]
    families = {name: contrast.family for name, contrast in study.contrasts.items()}
    assert families == {
        "G3-P3": "primary",
        "G3-F0": "primary",
        "G2-F0": "primary",
        "G3-G2": "primary",
        "G4-G3": "secondary",
        "G3-B2": "secondary",
        "L3-LP": "model_free",
        "G3-L3": "model_free",
    }
    assert config["inducers"]["learned"]["train"]["corpus"] == "self"  # cross-fitted on the articles' own headings
