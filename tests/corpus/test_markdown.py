"""The Markdown knowledge base: parser decisions, folder loader, questions, bad input."""

import json
import random
import shutil

import polars as pl
import pytest
from conftest import REPO, TESTS
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from structbench.corpus import load_corpus
from structbench.corpus.build import CorpusTables, build_tables
from structbench.corpus.markdown import load_markdown_folder, markdown_blocks, parse_markdown, parse_markdown_lines
from structbench.corpus.questions import QuestionsError
from structbench.corpus.sourcemap import SourceMap
from structbench.corpus.verify import verify_corpus
from structbench.datamodel import PARAGRAPH_SEPARATOR

FIXTURES = TESTS / "fixtures" / "corpus" / "kb_small"
KB = REPO / "data" / "kb"


def _sections(doc):
    return [(s.title, s.level, s.para_start, s.para_end) for s in doc.sections]


def _check_slices(tables, parsed_by_id):
    """documents.text[p.start:p.end] is each parsed paragraph, for every document."""
    texts = dict(zip(tables.documents["doc_id"], tables.documents["text"]))
    for doc_id, group in tables.paragraphs.group_by("doc_id"):
        doc_id = doc_id[0]
        got = [texts[doc_id][s:e] for s, e in zip(group.sort("para_idx")["start"], group.sort("para_idx")["end"])]
        assert got == parsed_by_id[doc_id].paragraphs


def test_parse_fixture_document_decisions():
    doc = parse_markdown((FIXTURES / "alpha-guide.md").read_text(), "alpha-guide", "alpha guide")
    assert doc.title == "The Alpha Guide"  # front matter; the unique first H1 is the title heading
    assert doc.paragraphs == [
        "This lead paragraph sits before any section\nand keeps its inner line break.",
        "Install the tool first.",
        "- first item\n- second item\n- third item after a blank line\n  with a continuation line",
        "```sh\n# this is a comment, not a heading\nmake install\n\nmake check\n```",
        "The configuration file lives in the home folder.",
        "When the tool fails, read the log.",
        "Run it.",
    ]
    assert _sections(doc) == [
        ("", 1, 0, 1),
        ("Setup", 1, 1, 4),
        ("Configuration", 2, 4, 5),
        ("Troubleshooting", 1, 5, 6),  # a setext "---" heading is an H2: a sibling of Setup
        ("Usage", 1, 6, 7),
    ]
    assert doc.meta["front_matter"] == {"title": "The Alpha Guide", "author": "Test Author"}


def test_no_heading_several_h1_and_title_fallbacks():
    plain = parse_markdown("One.\n\nTwo.\n", "beta_notes", "beta notes")
    assert plain.title == "beta notes" and _sections(plain) == [("", 1, 0, 2)]
    several = parse_markdown("# A\n\nx\n\n## A1\n\ny\n\n# B\n\nz\n", "multi")
    assert several.title == "multi"
    assert _sections(several) == [("A", 1, 0, 1), ("A1", 2, 1, 2), ("B", 1, 2, 3)]
    titled = parse_markdown("---\ntitle: From YAML\n---\n# A\n\nx\n\n# B\n\ny\n", "d")
    assert titled.title == "From YAML" and [s.title for s in titled.sections] == ["A", "B"]
    not_first = parse_markdown("## Intro\n\nx\n\n# Late H1\n\ny\n", "d")
    assert not_first.title == "d" and [s.level for s in not_first.sections] == [1, 1]
    closing = parse_markdown("# T #\n\n## Sec ##\n\ntext\n\n#hashtag is text\n", "d")
    assert closing.title == "T" and closing.paragraphs == ["text", "#hashtag is text"]
    assert [s.title for s in closing.sections] == ["Sec"]


def test_fences_tildes_unclosed_and_setext_rules():
    doc = parse_markdown("~~~\n# no\n```\n~~~\n\n## Real\n\n````\n# still code\n", "d")
    assert doc.paragraphs == ["~~~\n# no\n```\n~~~", "````\n# still code"]  # unclosed: to the end of the file
    assert [s.title for s in doc.sections] == ["", "Real"]
    setext = parse_markdown("Title Line\n===\n\ntext\n\n---\n\nmore\n", "d")
    assert setext.title == "Title Line" and setext.paragraphs == ["text", "more"]


def test_html_comments_are_paragraphs_and_hide_headings_and_fences():
    single = parse_markdown("## A\n\n<!-- # not a heading -->\n# B\n\nx\n", "d")
    assert single.paragraphs == ["<!-- # not a heading -->", "x"]
    assert [s.title for s in single.sections] == ["A", "B"]
    multi = parse_markdown("## A\n\n<!--\n# hidden\n\n## hidden too\n-->\n## B\n\nx\n", "d")
    assert multi.paragraphs == ["<!--\n# hidden\n\n## hidden too\n-->", "x"]  # blank lines kept, as in code
    assert [s.title for s in multi.sections] == ["A", "B"]
    fenced = parse_markdown("## A\n\ntext\n<!-- draft:\n```\n# old -->\n## B\n\nafter\n", "d")
    assert fenced.paragraphs == ["text", "<!-- draft:\n```\n# old -->", "after"]
    assert [s.title for s in fenced.sections] == ["A", "B"]
    closed_then_text = parse_markdown("## A\n\n<!-- a\nb -->\nplain text\n", "d")
    assert closed_then_text.paragraphs == ["<!-- a\nb -->", "plain text"]
    unclosed = parse_markdown("## A\n\n<!-- never closed\n# nope\n", "d")
    assert unclosed.paragraphs == ["<!-- never closed\n# nope"] and [s.title for s in unclosed.sections] == ["A"]


def test_crlf_and_bom_are_normalized():
    doc = parse_markdown("\ufeff# T\r\n\r\n## S\r\n\r\nline one\r\nline two\r\n", "d")
    assert doc.title == "T" and doc.paragraphs == ["line one\nline two"]


def test_fixture_folder_loads_with_questions_and_counted_skip():
    tables = load_markdown_folder(FIXTURES, "small", FIXTURES / "questions.jsonl")
    assert verify_corpus(tables) == []
    assert sorted(tables.documents["doc_id"]) == ["alpha-guide", "beta_notes", "gamma"]
    assert tables.skipped.to_dicts() == [
        {"source": str(FIXTURES / "headings-only.md"), "record": "headings-only", "reason": "no_paragraphs"}
    ]
    funnel = {(r["unit"], r["step"], r["reason"]): r["count"] for r in tables.funnel.to_dicts()}
    assert funnel[("documents", "in", "")] == 4 and funnel[("documents", "out", "")] == 3
    assert funnel[("documents", "skipped", "no_paragraphs")] == 1
    parsed = {
        p.stem: parse_markdown(p.read_text(), p.stem, p.stem.replace("_", " ").replace("-", " "))
        for p in FIXTURES.rglob("*.md")
    }
    _check_slices(tables, parsed)
    queries = {row["qid"]: row for row in tables.queries.to_dicts()}
    texts = dict(zip(tables.documents["doc_id"], tables.documents["text"]))
    q1 = queries["s-1"]
    assert q1["qtype"] == "factoid"
    assert [texts["alpha-guide"][s:e] for s, e in q1["spans"]] == ["The configuration file lives in the home folder."]
    q2 = queries["s-2"]  # the quote spans a source line break: whitespace-normalized match
    assert json.loads(q2["meta"])["span_steps"] == ["normalized"]
    assert texts["alpha-guide"][slice(*q2["spans"][0])] == "sits before any section\nand keeps its inner line break"
    q3 = queries["s-3"]  # two quotes, returned in text order
    assert [texts["beta_notes"][s:e] for s, e in q3["spans"]] == ["no heading at all", "title comes from the file name"]
    assert queries["s-4"]["qtype"] == "multihop" and len(queries["s-4"]["spans"]) == 2
    assert tables.documents.filter(pl.col("doc_id") == "beta_notes")["title"][0] == "beta notes"


def test_default_kb_loads_and_every_quote_maps_exactly():
    if not (KB / "questions.jsonl").exists():
        pytest.skip("the default KB is not in this checkout")
    tables = load_corpus({"kind": "markdown", "path": str(KB / "docs"), "questions": str(KB / "questions.jsonl")})
    assert verify_corpus(tables) == []
    n_questions = sum(1 for line in (KB / "questions.jsonl").read_text().splitlines() if line.strip())
    assert tables.queries.height == n_questions
    texts = dict(zip(tables.documents["doc_id"], tables.documents["text"]))
    for line in (KB / "questions.jsonl").read_text().splitlines():
        if not line.strip():
            continue
        record = json.loads(line)
        row = tables.queries.filter(pl.col("qid") == record["qid"]).row(0, named=True)
        found = sorted(texts[record["doc_id"]][s:e] for s, e in row["spans"])
        assert found == sorted(record["evidence"])  # the KB promises verbatim, non-overlapping quotes
    parsed = {p.stem: parse_markdown(p.read_text(), p.stem) for p in (KB / "docs").glob("*.md")}
    _check_slices(tables, parsed)
    # every KB document is titled by its single H1 and uses ## / ### / #### below it
    assert set(tables.sections["level"].unique().to_list()) <= {1, 2, 3}
    assert tables.sections.filter(pl.col("title") != "")["path"].list.len().min() == 2


# ---------------------------------------------------------------------------------------------- bad input


def _copy_fixtures(tmp_path):
    folder = tmp_path / "kb"
    shutil.copytree(FIXTURES, folder)
    return folder


def test_non_utf8_file_is_an_error_naming_the_file(tmp_path):
    folder = _copy_fixtures(tmp_path)
    (folder / "latin1.md").write_bytes("# Caf\xe9\n\nCr\xe8me br\xfbl\xe9e.\n".encode("latin-1"))
    with pytest.raises(ValueError, match=r"latin1\.md: not valid UTF-8 \(byte 5"):
        load_markdown_folder(folder)


def test_quote_not_in_text_names_question_file_and_quote(tmp_path):
    folder = _copy_fixtures(tmp_path)
    questions = folder / "questions.jsonl"
    questions.write_text(
        questions.read_text()
        + json.dumps({"qid": "s-9", "doc_id": "gamma", "question": "?", "evidence": ["words that are nowhere"]})
        + "\n"
    )
    with pytest.raises(ValueError, match=r"question 's-9'.*not found in .*gamma\.md: 'words that are nowhere'"):
        load_markdown_folder(folder, questions_path=questions)


def test_quotes_are_source_text_with_whitespace_runs_read_as_one_space(tmp_path):
    """A quote is the Markdown as written: a run of whitespace (spaces, tabs, line breaks, the blank line
    between two paragraphs) matches any other run, but markup removed as on the rendered page does not
    match, and neither does a heading line (headings are not body text)."""
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "page.md").write_text("# Page\n\n## Install\n\nRun `pip install x`   then\nstart it.\n\nNext part.\n")

    def load(quote, qtype=None):
        record = {"qid": "q", "doc_id": "page", "question": "?", "evidence": [quote]}
        if qtype is not None:
            record["qtype"] = qtype
        (folder.parent / "q.jsonl").write_text(json.dumps(record) + "\n")
        return load_markdown_folder(folder, questions_path=folder.parent / "q.jsonl").queries

    queries = load("Run `pip install x` then start it. Next part.", "structural")
    assert json.loads(queries["meta"][0])["span_steps"] == ["normalized"] and queries["qtype"][0] == "structural"
    assert load("Run `pip install x`")["qtype"][0] == "factoid"  # no qtype: factoid
    for rendered_or_heading in ("Run pip install x", "Install"):
        with pytest.raises(ValueError, match="not found in"):
            load(rendered_or_heading)


@pytest.mark.parametrize(
    "line, message",
    [
        ('{"qid": "x", "doc_id": "gamma", ', r"line 6: not a JSON object"),
        ('{"qid": "x", "doc_id": "gamma", "question": "?"}', r"line 6: question is missing \['evidence'\]"),
        ('{"qid": "s-1", "doc_id": "gamma", "question": "?", "evidence": ["Detail text."]}', "duplicate qid"),
        ('{"qid": "x", "doc_id": "nope", "question": "?", "evidence": ["a"]}', "'nope' is not a file stem"),
        ('{"qid": "x", "doc_id": "headings-only", "question": "?", "evidence": ["a"]}', "was skipped"),
        ('{"qid": "x", "doc_id": "gamma", "question": "?", "evidence": "Detail text."}', "non-empty list"),
        ('{"qid": "x", "doc_id": "gamma", "question": "", "evidence": ["Detail text."]}', r"question 'x'.*no text"),
        ('{"qid": "x", "doc_id": "gamma", "question": " \\t ", "evidence": ["Detail text."]}', r"'x'.*no text"),
        ('{"qid": "x", "doc_id": "gamma", "question": null, "evidence": ["Detail text."]}', r"'x'.*no text"),
        ('{"qid": "x", "doc_id": "gamma", "question": "\\u200b", "evidence": ["Detail text."]}', r"'x'.*no text"),
        ('{"qid": "x", "doc_id": "gamma", "question": 7, "evidence": ["Detail text."]}', r"'x'.*not a string"),
        ('{"qid": "x", "doc_id": "gamma", "question": "\\u0000", "evidence": ["Detail text."]}', r"'x'.*no text"),
        ('{"qid": "x", "doc_id": "gamma", "question": "\\u0301\\ue000\\ufffd", "evidence": ["a"]}', r"'x'.*no text"),
        ('{"qid": "kb 1", "doc_id": "gamma", "question": "?", "evidence": ["a"]}', r"line 6: qid 'kb 1' is empty or"),
        ('{"qid": "", "doc_id": "gamma", "question": "?", "evidence": ["a"]}', r"line 6: qid '' is empty or holds"),
        ('{"qid": "a\\nb", "doc_id": "gamma", "question": "?", "evidence": ["a"]}', r"qid 'a\\nb' is empty or holds"),
        ('{"qid": "a\\u00a0b", "doc_id": "gamma", "question": "?", "evidence": ["a"]}', r"holds whitespace"),
        ('{"qid": null, "doc_id": "gamma", "question": "?", "evidence": ["a"]}', r"line 6: qid None is not a string"),
        ('{"qid": ["x"], "doc_id": "gamma", "question": "?", "evidence": ["a"]}', r"qid \['x'\] is not a string"),
        (
            '{"qid": "x", "doc_id": "gamma", "question": "?", "qtype": "how-to", "evidence": ["Detail text."]}',
            r"'x': qtype 'how-to' is not one of \['factoid', 'underspecified', 'multihop', 'structural'\]",
        ),
        ('{"qid": "x", "doc_id": "gamma", "question": "?", "qtype": 3, "evidence": ["Detail text."]}', r"qtype 3 is"),
    ],
)
def test_malformed_question_lines_are_errors_naming_file_and_line(tmp_path, line, message):
    folder = _copy_fixtures(tmp_path)
    questions = folder / "questions.jsonl"
    questions.write_text(questions.read_text() + line + "\n")
    with pytest.raises(QuestionsError, match=message) as error:
        load_markdown_folder(folder, questions_path=questions)
    assert "questions.jsonl" in str(error.value)


def _questions(folder, *records, newline="\n"):
    """A questions file beside ``folder`` holding ``records`` as ``json.dumps(ensure_ascii=False)`` writes them."""
    path = folder.parent / "q.jsonl"
    path.write_text("".join(json.dumps(record, ensure_ascii=False) + newline for record in records), newline="")
    return path


def test_a_raw_line_separator_in_a_json_string_does_not_end_the_line(tmp_path):
    """U+2028, U+0085 and the other breaks ``str.splitlines`` knows may stand raw inside a JSON string: the
    question keeps them, and the next line keeps its number (``\\r\\n`` line ends read the same)."""
    folder = _copy_fixtures(tmp_path)
    breaks = "\u2028\u2029\x85\x1c\x0b\x0c"
    first = {"qid": "lsep", "doc_id": "gamma", "question": f"What{breaks}detail?", "evidence": ["Detail text."]}
    second = {"qid": "lsep", "doc_id": "gamma", "question": "Again?", "evidence": ["Detail text."]}
    for newline in ("\n", "\r\n"):
        questions = _questions(folder, first, newline=newline)
        queries = load_markdown_folder(folder, questions_path=questions).queries
        assert queries["qid"].to_list() == ["lsep"] and queries["text"].to_list() == [f"What{breaks}detail?"]
        with pytest.raises(QuestionsError, match=r"q\.jsonl, line 2, question 'lsep': duplicate qid"):
            load_markdown_folder(folder, questions_path=_questions(folder, first, second, newline=newline))


def test_jsonl_lines_split_at_newline_only():
    from structbench.corpus.questions import jsonl_lines

    assert list(jsonl_lines('{"a": "x\u2028y"}\r\n\n{"b": 1}\n')) == ['{"a": "x\u2028y"}\r', "", '{"b": 1}']
    assert list(jsonl_lines("")) == [] and list(jsonl_lines("x")) == ["x"]


def test_an_integer_qid_is_its_digits(tmp_path):
    folder = _copy_fixtures(tmp_path)
    record = {"qid": 7, "doc_id": "gamma", "question": "Which detail?", "evidence": ["Detail text."]}
    assert load_markdown_folder(folder, questions_path=_questions(folder, record)).queries["qid"].to_list() == ["7"]
    with pytest.raises(QuestionsError, match=r"line 1: qid True is not a string"):
        load_markdown_folder(folder, questions_path=_questions(folder, {**record, "qid": True}))


def test_a_lone_surrogate_escape_is_named_and_an_escaped_pair_is_its_character(tmp_path):
    """``json.dumps`` (ASCII) writes 😀 as the pair ``\\ud83d\\ude00``, read back as one character; half a pair
    decodes to a lone surrogate that the corpus tables' UTF-8 cannot hold (a bare UnicodeEncodeError when written)."""
    folder = _copy_fixtures(tmp_path)
    questions = folder.parent / "q.jsonl"
    line = '{"qid": "s", "doc_id": "gamma", "question": "Which detail %s?", "evidence": ["Detail %s"]}\n'
    questions.write_text(line % ("\\ud83d\\ude00", "text."))
    assert load_markdown_folder(folder, questions_path=questions).queries["text"].to_list() == ["Which detail 😀?"]
    for question, quote in (("\\ud83d", "text."), ("", "text.\\udfff")):
        questions.write_text(line % (question, quote))
        with pytest.raises(QuestionsError, match=r"q\.jsonl, line 1: a JSON string holds \\u(d83d|dfff), half of"):
            load_markdown_folder(folder, questions_path=questions)


def test_a_message_about_a_huge_question_or_qid_is_one_short_line(tmp_path):
    folder = _copy_fixtures(tmp_path)
    record = {"qid": "nul", "doc_id": "gamma", "question": "\x00" * 1_000_000, "evidence": ["Detail text."]}
    for bad in (record, {**record, "question": "?", "qid": "q " * 500_000}, {**record, "qid": [[[[[[[["x"]]]]]]]]}):
        with pytest.raises(QuestionsError) as error:
            load_markdown_folder(folder, questions_path=_questions(folder, bad))
        assert len(str(error.value)) < 400 and "\n" not in str(error.value) and "line 1" in str(error.value)


def test_a_line_nested_past_the_json_reader_is_named_with_file_and_line(tmp_path):
    """100,000 nested lists on one line: a :class:`QuestionsError` naming the file and line, not a
    ``RecursionError`` naming neither; the lines before it were read."""
    folder = _copy_fixtures(tmp_path)
    good = {"qid": "ok", "doc_id": "gamma", "question": "Which detail?", "evidence": ["Detail text."]}
    questions = _questions(folder, good)
    deep = "[" * 100_000 + "]" * 100_000
    questions.write_text(questions.read_text() + f'{{"qid": "deep", "evidence": {deep}}}\n')
    with pytest.raises(QuestionsError, match=r"q\.jsonl, line 2: not a JSON object \(nested deeper than") as error:
        load_markdown_folder(folder, questions_path=questions)
    assert error.value.__cause__ is None and error.value.__suppress_context__


def test_every_readable_character_is_a_token_and_the_others_are_none():
    """:func:`has_visible_text` is the tokenizer's emptiness: every character it reads (142,000 or so) is at
    least one token, so a question the tokenizer reads as 0 tokens (NUL, U+200B, a lone accent, a private-use
    character, U+FFFD) is always refused; and over a mixed alphabet a text is refused exactly when it is 0 tokens."""
    from structbench.corpus.build import has_visible_text, is_readable
    from structbench.tokens import load_tokenizer

    counter = load_tokenizer()
    readable = [chr(code) for code in range(0x110000) if not 0xD800 <= code <= 0xDFFF and is_readable(chr(code))]
    counts = counter.count_batch(readable)
    assert len(readable) > 100_000 and min(counts) >= 1, [ch for ch, n in zip(readable, counts) if n == 0][:10]
    unread = ["\x00", "\x07", "\u200b", "\ufeff", "\u0301", "\u064b", "\ue000", "\U000f0000", "\ufffd", "\u1734"]
    assert counter.count_batch(unread) == [0] * len(unread) and not any(map(is_readable, unread))
    rng = random.Random(0)
    alphabet = unread + [" ", "\t", "\u2028", "a", "?", "7", "自", "\u0903", "é"]
    texts = ["".join(rng.choices(alphabet, k=rng.randint(0, 6))) for _ in range(2000)]
    assert [has_visible_text(text) for text in texts] == [n > 0 for n in counter.count_batch(texts)]


def test_huge_paragraph_is_kept_whole(tmp_path):
    folder = tmp_path / "kb"
    folder.mkdir()
    sentence = "The weir gate opens at dawn and closes at dusk. "
    big = (sentence * (1_000_000 // len(sentence) + 1)).strip()
    assert len(big) > 1_000_000
    (folder / "big.md").write_text(f"# Big\n\n## Part\n\n{big}\n\n## Tail\n\nEnd.\n")
    questions = folder.parent / "q.jsonl"
    questions.write_text(json.dumps({"qid": "b", "doc_id": "big", "question": "?", "evidence": ["End."]}) + "\n")
    tables = load_markdown_folder(folder, questions_path=questions)
    assert verify_corpus(tables) == []
    paragraph = tables.paragraphs.row(0, named=True)
    assert paragraph["end"] - paragraph["start"] == len(big)
    assert tables.documents["text"][0][paragraph["start"] : paragraph["end"]] == big
    assert tables.documents["text"][0][slice(*tables.queries["spans"][0][0])] == "End."


def test_duplicate_stems_and_empty_folders_are_errors(tmp_path):
    folder = _copy_fixtures(tmp_path)
    (folder / "nested" / "beta_notes.md").write_text("x\n")
    with pytest.raises(ValueError, match="share the doc_id 'beta_notes'"):
        load_markdown_folder(folder)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ValueError, match="has no .md files"):
        load_markdown_folder(empty)
    (empty / "only.md").write_text("# Just a heading\n")
    with pytest.raises(ValueError, match="no file has body paragraphs"):
        load_markdown_folder(empty)


def test_a_first_line_block_that_is_not_a_yaml_mapping_is_body_text():
    """What CommonMark reads: the ``---`` a thematic break (dropped), the lines their blocks, a paragraph line
    just above the closing ``---`` a setext H2; nothing of the block is lost."""
    guide = parse_markdown("---\n# Guide\n\nInstall the tool first.\n\n---\n\nRun it.\n", "d", "")
    assert guide.title == "Guide"  # the block's only H1, the title heading (YAML read "# Guide" as a comment)
    assert guide.paragraphs == ["Install the tool first.", "Run it."]
    assert _sections(guide) == [("", 1, 0, 2)] and guide.meta == {}
    setext = parse_markdown("---\n# Guide\n\nSome setup notes.\n---\n\nMore.\n", "d", "")
    assert setext.title == "Guide" and setext.paragraphs == ["More."]
    assert _sections(setext) == [("Some setup notes.", 1, 0, 1)]  # an H2 under the title heading: level 1
    plain = parse_markdown("---\nJust plain text\n---\n\nBody.\n", "d", "")
    assert plain.paragraphs == ["Body."] and _sections(plain) == [("Just plain text", 1, 0, 1)]
    listed = parse_markdown("---\n- one\n- two\n---\n\nBody.\n", "d", "")
    assert listed.paragraphs == ["- one\n- two", "Body."] and listed.meta == {}
    not_yaml = parse_markdown("---\ntitle: [unclosed\n---\n\nBody.\n", "d", "")
    assert not_yaml.title == "" and _sections(not_yaml) == [("title: [unclosed", 1, 0, 1)]
    comment_only = parse_markdown("---\n# Draft\n---\n\nBody.\n", "d", "")
    assert comment_only.title == "Draft" and comment_only.paragraphs == ["Body."]


def test_front_matter_is_a_mapping_or_nothing_between_margin_lines():
    mapping = parse_markdown("---\ntitle: Real\ntags: [a, b]\n---\n\nBody.\n", "d", "")
    assert mapping.title == "Real" and mapping.paragraphs == ["Body."]
    assert mapping.meta["front_matter"] == {"title": "Real", "tags": ["a", "b"]}
    empty = parse_markdown("---\n\n---\nBody.\n", "d", "")
    assert empty.paragraphs == ["Body."] and empty.meta == {}
    dotted = parse_markdown("---\ntitle: Dots\n...\nBody.\n", "d", "")
    assert dotted.title == "Dots" and dotted.paragraphs == ["Body."]
    indented = parse_markdown("    ---\n    title: X\n    ---\n\nBody text.\n", "d", "")
    assert indented.title == "" and indented.meta == {}  # indented code, kept verbatim
    assert indented.paragraphs == ["    ---\n    title: X\n    ---", "Body text."]
    unclosed_by_indent = parse_markdown("---\ntitle: X\n    ---\n\nBody.\n", "d", "")
    assert unclosed_by_indent.meta == {}  # no closing line at the margin: no front matter
    assert unclosed_by_indent.paragraphs == ["title: X\n    ---", "Body."]


def test_front_matter_past_the_yaml_bounds_is_a_named_error(tmp_path):
    from structbench.yamlsafe import MAX_DEPTH, RefusedYAMLError

    laughs = ["a0: &a0 [lol]"] + [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 10)]
    folder = tmp_path / "kb"
    folder.mkdir()
    bomb = folder / "bomb.md"
    bomb.write_text("---\n" + "\n".join(laughs) + "\n---\n\nBody.\n")
    with pytest.raises(RefusedYAMLError, match=rf"^{bomb}:7: more than 100,000 YAML nodes") as raised:
        load_markdown_folder(folder)
    # a_i holds 9 copies of a_(i-1): a4 is 13,942 nodes written out, so a5's aliases (file line 7) pass 100,000
    assert (raised.value.source, raised.value.line) == (str(bomb), 7)
    bomb.write_text("---\nx: " + "[" * 5000 + "]" * 5000 + "\n---\n\nBody.\n")
    with pytest.raises(RefusedYAMLError, match=rf"^{bomb}:2: nested deeper than {MAX_DEPTH} levels"):
        load_markdown_folder(folder)
    bomb.write_text("---\ntitle: One\nauthor: A\ntitle: Two\n---\n\nBody.\n")
    with pytest.raises(
        RefusedYAMLError, match=rf"^{bomb}:4: duplicate key 'title' \(first at line 2, again at line 4\)"
    ):
        load_markdown_folder(folder)


# ---------------------------------------------------------------------------------------------- round trip

_word = st.text(alphabet="abcdefgh", min_size=1, max_size=6)
_words = st.lists(_word, min_size=1, max_size=5).map(" ".join)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.tuples(st.integers(1, 4), _words, st.lists(_words, max_size=3)), min_size=1, max_size=10),
    st.lists(_words, max_size=2),
)
def test_generated_markdown_round_trips(sections, lead):
    """Markdown written from a random heading tree parses back to the same paragraphs and depths."""
    lines = ["# Doc Title", ""] + [f"{p}\n" for p in lead]
    expected_headings = []
    depth = 0
    for rise, title, body in sections:
        depth = min(depth + 1, rise)  # a legal level: at most one deeper than the previous
        lines += [f"{'#' * (depth + 1)} {title}", ""] + [f"{p}\n" for p in body]
        expected_headings.append((title, depth))
    doc = parse_markdown("\n".join(lines), "d")
    assert doc.title == "Doc Title"
    assert doc.paragraphs == list(lead) + [p for _, _, body in sections for p in body]
    headed = [(s.title, s.level) for s in doc.sections if not (s.title == "" and s is doc.sections[0])]
    assert headed == expected_headings
    if not doc.paragraphs:
        return  # a document without text is a counted skip in the loader
    documents, paragraphs, built = build_tables("c", [doc])
    assert verify_corpus(CorpusTables(documents, paragraphs, built)) == []


def test_visible_text_ignores_whitespace_and_zero_width_characters():
    from structbench.corpus.build import has_visible_text

    assert not any(map(has_visible_text, ["", " \t\n", "\u200b", "\ufeff\u200d \u200c", "\u2060"]))
    assert all(map(has_visible_text, ["a", "\u200b?", "自然", " 42 "]))


def test_a_heading_longer_than_the_bound_stays_body_text_and_is_counted(tmp_path):
    from structbench.corpus.markdown import MAX_HEADING_CHARS, load_markdown_folder, parse_markdown

    long = "An equation paragraph that goes on " + "and on " * 40 + "until the line"
    assert len(long) > MAX_HEADING_CHARS
    text = f"# Paper\n\n## Methods\n\n{long}\n =\n\nAfter.\n\n## {long}\n\nTail.\n"
    doc = parse_markdown(text, "eq")
    assert doc.title == "Paper" and [s.title for s in doc.sections] == ["Methods"]
    assert doc.paragraphs[0] == f"{long}\n ="  # the underline stays the paragraph's last line
    assert f"## {long}" in doc.paragraphs and doc.meta["demoted_headings"] == 2
    (tmp_path / "eq.md").write_text(text)
    (tmp_path / "plain.md").write_text("# Plain\n\nText.\n")
    funnel = load_markdown_folder(tmp_path).funnel
    row = funnel.filter(funnel["unit"] == "headings").to_dicts()
    assert [(r["step"], r["reason"], r["count"]) for r in row] == [("demoted", "too_long", 2)]
    assert "demoted_headings" not in parse_markdown("# T\n\n## Short\n\nText.", "t").meta


# ---------------------------------------------------------------------------------------------- CommonMark

SPEC_EXAMPLES = TESTS / "fixtures" / "corpus" / "commonmark_block_examples.json"
ORACLE = MarkdownIt("commonmark")  # a CommonMark-compliant parser, inline rules on: the rendered headings


def _oracle_headings(text: str) -> list[tuple[int, str]]:
    """``(level, text)`` of the top-level headings a CommonMark renderer makes (setext lines joined by spaces)."""
    tokens = ORACLE.parse(text)
    return [
        (int(token.tag[1]), " ".join(line.strip() for line in tokens[index + 1].content.split("\n")))
        for index, token in enumerate(tokens)
        if token.type == "heading_open" and token.level == 0
    ]


def _reader_headings(text: str) -> list[tuple[int, str]]:
    return [(level, heading) for kind, _, _, level, heading in markdown_blocks(text.split("\n")) if kind == "heading"]


def test_headings_agree_with_commonmark_on_the_spec_examples_that_decide_them():
    """Every example of the spec sections on headings, breaks, code, HTML blocks, link reference definitions,
    paragraphs, block quotes and lists: the reader's headings are the rendered page's top-level headings."""
    spec = json.loads(SPEC_EXAMPLES.read_text())
    examples = spec["examples"]
    assert len(examples) == 283 and {example["section"] for example in examples} == set(spec["sections"])
    differ = [ex["example"] for ex in examples if _reader_headings(ex["markdown"]) != _oracle_headings(ex["markdown"])]
    assert differ == []
    assert sum(len(_oracle_headings(example["markdown"])) for example in examples) == 52


def test_headings_agree_with_commonmark_on_real_files():
    """The knowledge base and, where ../shared/data has them, Chroma's five corpora (no front matter in either)."""
    files = sorted((KB / "docs").glob("*.md")) + sorted((REPO.parent / "shared/data/chroma/corpora").glob("*.md"))
    if not files:
        pytest.skip("neither the default KB nor Chroma's corpora are here")
    differ = [path.name for path in files if _reader_headings(path.read_text()) != _oracle_headings(path.read_text())]
    assert differ == [] and sum(len(_oracle_headings(path.read_text())) for path in files) >= 100


# Markdown whose headings a line-by-line reader loses or invents: (source, section titles, paragraphs).
CONTAINER_CASES = {
    "fence opened on a list-marker line": (
        "# T\n\n## A\n\n- ```python\n  # comment\n  x = 1\n  ```\n\n## B\n\ntext\n",
        ["A", "B"],
        ["- ```python\n  # comment\n  x = 1\n  ```", "text"],
    ),
    "unclosed fence in a list item ends with the item": (
        "# T\n\n## A\n\n- item\n  ```\n  code\n\nafter the list\n\n## B\n\ntext\n",
        ["A", "B"],
        ["- item\n  ```\n  code", "after the list", "text"],
    ),
    "an HTML block runs to the blank line": (
        "## A\n\n<div>\n# Name\n</div>\n\n## B\n\ntext\n",
        ["A", "B"],
        ["<div>\n# Name\n</div>", "text"],
    ),
    "no setext underline under a block quote": ("## A\n\n> quoted\n---\n\ntext\n", ["A"], ["> quoted", "text"]),
    "no setext underline under indented code": (
        "## A\n\n    indented code\n---\n\ntext\n",
        ["A"],
        ["    indented code", "text"],
    ),
    "a link reference definition is not heading text": (
        "## A\n\n[foo]: /url\nBar\n===\n\ntext\n",
        ["A", "Bar"],
        ["[foo]: /url", "text"],
    ),
    "a heading in a block quote belongs to the quote": ("## A\n\n> # Quoted\n> text\n", ["A"], ["> # Quoted\n> text"]),
}


@pytest.mark.parametrize("case", sorted(CONTAINER_CASES))
def test_container_blocks_keep_and_hide_headings_as_commonmark_does(case):
    source, titles, paragraphs = CONTAINER_CASES[case]
    doc, rows = parse_markdown_lines(source, "d")
    assert [s.title for s in doc.sections] == titles and doc.paragraphs == paragraphs
    assert [text for _, text in _oracle_headings(source)][-len(titles) :] == titles
    source_map = SourceMap(source, doc.paragraphs, rows)  # every paragraph line is its source line
    flat_start = 0
    for paragraph in doc.paragraphs:  # each occurs once in its source here
        at = source.index(paragraph)
        assert source_map.to_flat(at, at + len(paragraph)) == (flat_start, flat_start + len(paragraph))
        flat_start += len(paragraph) + len(PARAGRAPH_SEPARATOR)


def test_an_indented_code_block_keeps_its_blank_lines_and_trailing_spaces():
    doc = parse_markdown("## A\n\n    one  \n\n    two\n\n\ntext\n", "d")
    assert doc.paragraphs == ["    one  \n\n    two", "text"]
