"""The Markdown knowledge base: a folder of ``.md`` files plus an optional questions file.

Parsing decisions (``parse_markdown``):

- **Blocks.** The block structure is CommonMark's (0.31.2; markdown-it-py's block parser, inline parsing
  skipped): fences, HTML blocks, block quotes, indented code and list items open, close and nest as the
  spec says, so a fence opened inside a list item ends with the item and ``<div>`` then ``# Name`` is
  one HTML block. Every top-level block is one paragraph: a paragraph, a block quote (headings inside
  it included), an HTML block or comment, a code block, a list. Its text is its source lines with
  trailing whitespace removed (code keeps it) and inner line breaks kept as in the source, so verbatim
  evidence quotes of up to a paragraph match exactly; inline markup is kept as written. A run of link
  reference definitions (which render as nothing) is a paragraph too, so no source text is lost.
- **Lists.** The items of one top-level list form one paragraph, even when blank lines separate them
  (a "loose" list): its text is the list's non-blank lines joined by single line breaks. A line belongs
  to an item when CommonMark says so (indented to the item's content, or a lazy continuation line).
- **Code and HTML.** A fenced block (closed by a fence of the same character at least as long, or by
  the end of its container: the file, or the list item or block quote it opened in), an indented code
  block and an HTML block (a comment through its ``-->``, ``<div>`` and its kin through the next blank
  line) are one paragraph each, blank lines inside kept (an unclosed one's trailing blank lines
  dropped); ``#`` lines inside are not headings.
- **Headings.** Top-level ATX (``#`` to ``######`` followed by a space or the end of the line, closing
  ``#`` run removed) and setext (a paragraph underlined by ``===`` for level 1 or ``---`` for level 2; its
  lines joined by single spaces). A thematic break (``---`` that underlines no paragraph, ``***``,
  ``___``) is dropped. Heading text is kept as written (inline markup included). A heading whose text
  is longer than ``MAX_HEADING_CHARS`` (200) characters is not one: its lines stay body text as a
  paragraph (a setext underline under a long paragraph — e.g. an equation line `` =`` — is kept as the
  paragraph's last line), counted in ``meta["demoted_headings"]`` and in the funnel (``headings / demoted /
  too_long``), so a paragraph never silently becomes a title that every chunk then carries in its path.
- **Title.** YAML front matter (a ``---`` block on the first line) gives the title when it has
  ``title:``. When the first heading is an H1 and the only H1, it is the document's title heading
  (the title when front matter has none), not a section; then ``##`` is level 1, ``###`` level 2
  and so on. With several H1s they are level-1 sections. With neither, the title is the fallback
  (``title`` argument; the loader passes the file stem with ``-``/``_`` read as spaces).
- **Levels.** A section's level is one more than its parent's, the parent being the nearest
  preceding heading of smaller rank, so ``##`` straight to ``####`` nests one level down.
  Paragraphs before the first section heading form the lead section (title "", path
  ``[title]``). A heading with no text of its own is an empty section (see ``build``).

Files: every ``*.md`` under the folder, recursively, in path order; ``doc_id`` is the file stem
(unique, else an error).

Questions file (``questions_path``): JSONL, one object per line (blank lines allowed)::

    {"qid": "kb-001", "doc_id": "<file stem>", "question": "...", "qtype": "factoid",
     "evidence": ["verbatim quote", ...]}

An evidence item is a verbatim quote or a character range of the document's source file,
``{"start": 120, "end": 180}`` or ``{"start": 120, "end": 180, "quote": "..."}`` (Python string offsets
into the file as written, as Chroma's ``start_index``/``end_index``; ``quote``, when given, must equal
the file's text there). A range places its evidence exactly, where a quote that occurs twice is placed
at its first occurrence; it maps to the flat text through :mod:`structbench.corpus.sourcemap` (span
step ``offsets``). A range outside the file, one that does not match its quote, one holding heading,
front-matter or thematic-break characters (not flat text) or only whitespace is a
``SourceRangeError`` (a ``ValueError``) naming the file, line and question.

``qtype`` is optional (default ``"factoid"``) and one of ``QUERY_TYPES`` (``factoid``, ``underspecified``,
``multihop``, ``structural``: the kinds query generation samples, so the report's per-type tables line up);
any other value is a ``ValueError`` naming the question and listing them. A quote is verbatim *source*
text: the Markdown as written (inline markup, link syntax and escapes included), not the rendered page;
a heading line is not body text and is never found. Each quote maps to content offsets by exact
substring search in the document's flat text (first occurrence; the count is kept in ``meta``), then by
whitespace-normalized search mapped back to original offsets: every run of whitespace (spaces, tabs,
line breaks, the blank line between two paragraphs) in the quote and the text reads as one space.
A quote found neither way, an unknown ``doc_id``, a duplicate ``qid``, a missing key, a question whose
text is empty, whitespace, null or not a string, or a line that is not JSON is a ``ValueError`` naming
the file, the line and the question. ``spans`` is the union of the quotes' spans; ``meta`` holds
``span_steps`` (``exact`` or ``normalized`` per span) and the quotes.

Bad input: a file that is not UTF-8 is a ``ValueError`` naming the file and byte offset (decoding
with replacement would silently break verbatim quotes); a file with no body paragraphs (empty, or
headings only) is skipped and counted (``no_paragraphs``); invalid YAML front matter is a
``ValueError``; there is no size limit on a paragraph.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

import yaml
from markdown_it import MarkdownIt

from structbench.corpus.build import (
    CorpusTables,
    build_tables,
    funnel_frame,
    has_visible_text,
    queries_frame,
    sections_from_headings,
    skipped_frame,
    union_spans,
)
from structbench.corpus.sourcemap import SourceMap, SourceRangeError
from structbench.corpus.verify import assert_verified
from structbench.datamodel import QUERY_TYPES, ParsedDocument, document_texts

MAX_HEADING_CHARS = 200  # longer "heading" text is a paragraph that happens to be underlined or start with #
# CommonMark's block structure only: inline markup is kept as written, so its parsing is skipped.
_BLOCKS = MarkdownIt("commonmark").disable("inline")
_VERBATIM = {"fence", "code_block"}  # blocks whose lines keep their trailing whitespace
_LISTS = {"bullet_list", "ordered_list"}  # one paragraph each, the blank lines between items dropped


def read_utf8(path: str | Path) -> str:
    """A file's text; ``ValueError`` naming the file and byte offset when it is not UTF-8."""
    path = Path(path)
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(
            f"{path}: not valid UTF-8 (byte {error.start}: {data[error.start : error.start + 4]!r}); "
            "re-encode the file as UTF-8"
        ) from None


def _front_matter(lines: list[str], doc_id: str) -> tuple[dict, int]:
    """``(front matter, index of the first body line)``; ``({}, 0)`` when there is none."""
    if not lines or lines[0].strip() != "---":
        return {}, 0
    for index in range(1, len(lines)):
        if lines[index].strip() in ("---", "..."):
            try:
                loaded = yaml.safe_load("\n".join(lines[1:index]))
            except yaml.YAMLError as error:
                raise ValueError(f"{doc_id}: front matter is not valid YAML: {error}") from None
            return (loaded if isinstance(loaded, dict) else {}), index + 1
    return {}, 0


def markdown_blocks(lines: list[str], first_line: int = 0) -> list[tuple[str, int, int, int, str]]:
    """The top-level blocks of the Markdown ``lines[first_line:]`` as CommonMark nests them, in order:
    ``(kind, start, end, heading level, heading text)`` with ``[start, end)`` rows of ``lines``.

    ``kind`` is markdown-it's block name (``heading``, ``paragraph``, ``bullet_list``, ``ordered_list``,
    ``blockquote``, ``fence``, ``code_block``, ``html_block``, ``hr``); a heading inside a block quote or list
    item belongs to that block. Level and text are a heading's (an ATX heading's closing ``#`` run removed,
    a setext heading's lines joined by single spaces), else ``0`` and ``""``. A run of non-blank lines that
    no block holds (link reference definitions, which CommonMark renders as nothing) is a ``reference``
    block, so every non-blank line is in exactly one block."""
    tokens = _BLOCKS.parse("\n".join(lines[first_line:]))
    blocks: list[tuple[str, int, int, int, str]] = []
    row = first_line
    for index, token in enumerate(tokens):
        if token.level or token.map is None:
            continue  # nested blocks and closing tokens
        start, end = token.map[0] + first_line, token.map[1] + first_line
        blocks += _unclaimed_runs(lines, row, start)
        kind, level, heading_text = token.type.removesuffix("_open"), 0, ""
        if kind == "heading":
            level = len(token.markup) if token.markup[0] == "#" else 1 if token.markup[0] == "=" else 2
            heading_text = " ".join(part.strip() for part in tokens[index + 1].content.split("\n"))
        blocks.append((kind, start, end, level, heading_text))
        row = end
    return blocks + _unclaimed_runs(lines, row, len(lines))


def _unclaimed_runs(lines: list[str], start: int, end: int) -> list[tuple[str, int, int, int, str]]:
    """``reference`` blocks of the runs of non-blank lines among rows ``[start, end)``."""
    runs: list[tuple[str, int, int, int, str]] = []
    run_start = None
    for row in range(start, end + 1):
        blank = row == end or not lines[row].strip()
        if blank and run_start is not None:
            runs.append(("reference", run_start, row, 0, ""))
            run_start = None
        elif not blank and run_start is None:
            run_start = row
    return runs


def parse_markdown(text: str, doc_id: str, title: str | None = None) -> ParsedDocument:
    """Parse one Markdown document; ``title`` is the fallback title (default: ``doc_id``; ``""``: none, the
    document is untitled unless it names a title itself)."""
    return parse_markdown_lines(text, doc_id, title)[0]


def parse_markdown_lines(text: str, doc_id: str, title: str | None = None) -> tuple[ParsedDocument, list[list[int]]]:
    """:func:`parse_markdown` and, per paragraph, the source line (0-based, after a BOM, any line ending)
    of each of its lines: what :class:`structbench.corpus.sourcemap.SourceMap` maps offsets with."""
    text = text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")
    front, first_line = _front_matter(lines, doc_id)
    paragraphs: list[str] = []
    paragraph_rows: list[list[int]] = []
    headings: list[tuple[int, str, int]] = []
    demoted = 0  # headings over MAX_HEADING_CHARS, kept as body text
    for kind, start, end, level, heading_text in markdown_blocks(lines, first_line):
        if kind == "hr":
            continue  # a thematic break is not text
        if kind == "heading":
            if len(heading_text) <= MAX_HEADING_CHARS:
                headings.append((level, heading_text, len(paragraphs)))
                continue
            demoted += 1  # too long: its lines (a setext underline included) are a paragraph
        rows = [row for row in range(start, end) if kind not in _LISTS or lines[row].strip()]
        while rows and not lines[rows[-1]].strip():
            rows.pop()  # an unclosed fence or comment runs to the end of the file, blank lines aside
        kept = [lines[row] if kind in _VERBATIM else lines[row].rstrip() for row in rows]
        if any(line.strip() for line in kept):
            paragraphs.append("\n".join(kept))
            paragraph_rows.append(rows)

    front_title = front.get("title")
    if isinstance(front_title, (list, dict)):
        raise ValueError(
            f"{doc_id}: front matter title is a {type(front_title).__name__} ({front_title!r}), not text: "
            "write it as one string"
        )
    front_title = str(front_title).strip() if front_title is not None and str(front_title).strip() else None
    h1_count = sum(1 for level, _, _ in headings if level == 1)
    doc_title = front_title
    if headings and headings[0][0] == 1 and h1_count == 1:
        _, heading_title, _ = headings.pop(0)
        doc_title = doc_title or heading_title or None
    doc_title = doc_title or (title if title is not None else doc_id)
    sections = sections_from_headings(len(paragraphs), headings)
    meta = {"front_matter": {str(key): _jsonable(value) for key, value in front.items()}} if front else {}
    if demoted:
        meta["demoted_headings"] = demoted
    parsed = ParsedDocument(doc_id=doc_id, title=doc_title, paragraphs=paragraphs, sections=sections, meta=meta)
    return parsed, paragraph_rows


def _jsonable(value):
    try:
        json.dumps(value)
        return value
    except TypeError:
        return str(value)


def title_from_stem(stem: str) -> str:
    return re.sub(r"[-_]+", " ", stem).strip() or stem


def markdown_files(folder: str | Path) -> list[Path]:
    """Every ``*.md`` file under ``folder``, recursively, in a fixed order (relative POSIX path).

    A path that does not exist, is not a folder, or holds no ``.md`` file is a ``ValueError`` naming it."""
    folder = Path(folder)
    if not folder.exists():
        raise ValueError(f"markdown corpus folder {folder} does not exist")
    if not folder.is_dir():
        raise ValueError(f"markdown corpus path {folder} is not a folder")
    files = sorted(folder.rglob("*.md"), key=lambda path: path.relative_to(folder).as_posix())
    if not files:
        raise ValueError(f"markdown corpus folder {folder} has no .md files")
    return files


def parse_folder(folder: Path) -> tuple[list[Path], list[ParsedDocument], list, dict[str, Path], dict]:
    """``(files, documents, skipped, stem -> file, doc_id -> (source, paragraphs, paragraph rows))`` of a
    folder of ``*.md`` files; two files with the same stem are a ``ValueError`` naming both."""
    files = markdown_files(folder)
    stems: dict[str, Path] = {}
    for path in files:
        if path.stem in stems:
            raise ValueError(f"markdown corpus: {stems[path.stem]} and {path} share the doc_id {path.stem!r}")
        stems[path.stem] = path
    docs: list[ParsedDocument] = []
    skipped: list[tuple[str, str, str]] = []
    sources: dict[str, tuple[str, list[str], list[list[int]]]] = {}
    for path in files:
        source = read_utf8(path)
        doc, rows = parse_markdown_lines(source, path.stem, title=title_from_stem(path.stem))
        if not doc.paragraphs:
            skipped.append((str(path), path.stem, "no_paragraphs"))
            continue
        doc.meta["source"] = path.relative_to(folder).as_posix()
        docs.append(doc)
        sources[doc.doc_id] = (source, doc.paragraphs, rows)
    if not docs:
        raise ValueError(f"markdown corpus folder {folder}: no file has body paragraphs")
    return files, docs, skipped, stems, sources


def load_markdown_folder(
    folder: str | Path, corpus: str = "markdown", questions_path: str | Path | None = None
) -> CorpusTables:
    """Load every ``*.md`` file under ``folder`` (recursively; ``doc_id`` = file stem) and the questions.

    Two files with the same stem are a ``ValueError`` naming both (the stem is the ``doc_id``).
    """
    folder = Path(folder)
    files, docs, skipped, stems, sources = parse_folder(folder)
    documents, paragraphs, sections = build_tables(corpus, docs)
    assert_verified(paragraphs, sections, documents)
    funnel = [
        ("documents", "in", "", len(files)),
        ("documents", "skipped", "no_paragraphs", len(skipped)),
        ("documents", "out", "", len(docs)),
        ("headings", "demoted", "too_long", sum(doc.meta.get("demoted_headings", 0) for doc in docs)),
    ]
    query_rows: list[dict] = []
    if questions_path is not None:
        texts = document_texts(documents)
        skipped_ids = {record for _, record, _ in skipped}
        records = _jsonl_records(Path(questions_path))
        query_rows = question_rows(records, corpus, texts, skipped_ids, stems, sources)
        funnel += question_funnel(query_rows)
    return CorpusTables(
        documents=documents,
        paragraphs=paragraphs,
        sections=sections,
        queries=queries_frame(query_rows),
        funnel=funnel_frame(funnel),
        skipped=skipped_frame(skipped),
    )


def question_funnel(query_rows: list[dict]) -> list[tuple[str, str, str, int]]:
    """Funnel rows of loaded questions: counts in and out, and how each span was matched."""
    steps = [step for row in query_rows for step in row["meta"]["span_steps"]]
    rows = [
        ("questions", "in", "", len(query_rows)),
        ("questions", "out", "", len(query_rows)),
        ("spans", "out", "", len(steps)),
        ("spans", "matched", "exact", steps.count("exact")),
        ("spans", "matched", "normalized", steps.count("normalized")),
    ]
    # only where ranges were given: a quotes-only corpus keeps the funnel it always had
    return rows + ([("spans", "matched", "offsets", steps.count("offsets"))] if "offsets" in steps else [])


class _NormalizedText:
    """A text with whitespace runs collapsed to one space, and the map back to original offsets."""

    def __init__(self, text: str):
        pieces: list[str] = []
        positions: list[int] = []
        for match in re.finditer(r"\s+|\S+", text):
            if match.group().isspace():
                pieces.append(" ")
                positions.append(match.start())
            else:
                pieces.append(match.group())
                positions.extend(range(match.start(), match.end()))
        self.text = "".join(pieces)
        self.positions = positions

    def find(self, quote: str) -> tuple[int, int] | None:
        needle = " ".join(quote.split())
        at = self.text.find(needle)
        if at < 0:
            return None
        return self.positions[at], self.positions[at + len(needle) - 1] + 1


def locate_quote(text: str, quote: str, normalized: _NormalizedText | None = None) -> tuple[int, int, str, int] | None:
    """``(start, end, step, occurrences)`` of ``quote`` in ``text`` (step ``exact`` or ``normalized``)."""
    at = text.find(quote)
    if at >= 0:
        return at, at + len(quote), "exact", text.count(quote)
    normalized = normalized or _NormalizedText(text)
    found = normalized.find(quote)
    if found is None:
        return None
    return found[0], found[1], "normalized", normalized.text.count(" ".join(quote.split()))


def _jsonl_records(path: Path) -> Iterator[tuple[str, dict]]:
    """``(where, record)`` for every non-blank line of a JSONL questions file."""
    for line_number, line in enumerate(read_utf8(path).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise ValueError(f"{path}, line {line_number}: not a JSON object ({error.msg})") from None
        if not isinstance(record, dict):
            raise ValueError(f"{path}, line {line_number}: not a JSON object")
        yield f"{path}, line {line_number}", record


def _locate_range(item: dict, source_map: SourceMap, text: str, where: str) -> tuple[int, int, str, int]:
    """``(start, end, "offsets", 1)`` of a ``{start, end[, quote]}`` evidence item (source offsets)."""
    unknown = sorted(set(item) - {"start", "end", "quote"})
    if unknown:
        raise ValueError(f"{where}: evidence range {item!r} has unknown key(s) {unknown} (start, end, quote)")
    start, end = item.get("start"), item.get("end")
    if not all(isinstance(value, int) and not isinstance(value, bool) for value in (start, end)):
        raise ValueError(f"{where}: evidence range {item!r} needs integer 'start' and 'end' (source offsets)")
    quote = item.get("quote")
    if quote is not None:
        if not isinstance(quote, str):
            raise ValueError(f"{where}: evidence range {item!r}: 'quote' is not a string")
        found = source_map.source[start:end] if 0 <= start <= end else ""
        if found != quote:
            raise SourceRangeError(
                f"{where}: evidence range [{start}, {end}) does not match its quote: the source has "
                f"{found[:120]!r}, the quote is {quote[:120]!r}"
            )
    try:
        flat_start, flat_end = source_map.to_flat(start, end)
    except SourceRangeError as error:
        raise SourceRangeError(f"{where}: evidence {error}") from None
    if not text[flat_start:flat_end].strip():
        raise SourceRangeError(f"{where}: evidence range [{start}, {end}) holds only whitespace")
    return flat_start, flat_end, "offsets", 1


def _locate_evidence(
    evidence: list,
    doc_id: str,
    where: str,
    texts: dict[str, str],
    normalized_cache: dict[str, _NormalizedText],
    sources: dict[str, tuple[str, list[str], list[list[int]]]],
    maps: dict[str, SourceMap],
    files: dict[str, Path],
) -> tuple[list[tuple[int, int, str]], list[int]]:
    """Flat ``(start, end, step)`` and occurrence count of every evidence item (quote or source range)."""
    text = texts[doc_id]
    located: list[tuple[int, int, str]] = []
    occurrences: list[int] = []
    for item in evidence:
        if isinstance(item, dict):
            if doc_id not in maps:  # built only for documents with ranges: a map holds ints per character
                maps[doc_id] = SourceMap(*sources[doc_id])
            found = _locate_range(item, maps[doc_id], text, where)
        else:
            if not isinstance(item, str) or not item.strip():
                raise ValueError(f"{where}: evidence quote {item!r} is empty or not a string")
            if doc_id not in normalized_cache and item not in text:
                normalized_cache[doc_id] = _NormalizedText(text)
            found = locate_quote(text, item, normalized_cache.get(doc_id))
            if found is None:
                raise ValueError(f"{where}: evidence quote not found in {files[doc_id]}: {item[:200]!r}")
        located.append(found[:3])
        occurrences.append(found[3])
    return located, occurrences


def question_type(value, where: str) -> str:
    """A question's ``qtype``: ``"factoid"`` when absent or null, else one of ``QUERY_TYPES`` (a named error)."""
    if value is None:
        return "factoid"
    if value not in QUERY_TYPES:
        raise ValueError(f"{where}: qtype {value!r} is not one of {list(QUERY_TYPES)}")
    return value


def question_rows(
    records: Iterable[tuple[str, dict]],
    corpus: str,
    texts: dict[str, str],
    skipped_ids: set[str],
    files: dict[str, Path],
    sources: dict[str, tuple[str, list[str], list[list[int]]]],
) -> list[dict]:
    """Query rows of ``(where, record)`` question records (the JSONL layout of the module docstring)."""
    rows: list[dict] = []
    seen: set[str] = set()
    normalized_cache: dict[str, _NormalizedText] = {}
    maps: dict[str, SourceMap] = {}
    for place, record in records:
        missing = [key for key in ("qid", "doc_id", "question", "evidence") if key not in record]
        if missing:
            raise ValueError(f"{place}: question is missing {missing}")
        qid, doc_id = str(record["qid"]), str(record["doc_id"])
        where = f"{place}, question {qid!r}"
        if qid in seen:
            raise ValueError(f"{where}: duplicate qid")
        seen.add(qid)
        question = record["question"]
        if question is not None and not isinstance(question, str):
            raise ValueError(f"{where}: question text is not a string ({question!r})")
        if question is None or not has_visible_text(question):
            raise ValueError(
                f"{where}: question has no text ({question!r}, invisible characters aside); it cannot be embedded"
            )
        if doc_id not in texts:
            why = "was skipped (no paragraphs)" if doc_id in skipped_ids else "is not a file stem in the folder"
            raise ValueError(f"{where}: doc_id {doc_id!r} {why}")
        evidence = record["evidence"]
        if isinstance(evidence, str) or not isinstance(evidence, list) or not evidence:
            raise ValueError(f"{where}: evidence must be a non-empty list of verbatim quotes or {{start, end}} ranges")
        located, occurrences = _locate_evidence(evidence, doc_id, where, texts, normalized_cache, sources, maps, files)
        spans = union_spans(located)
        rows.append(
            {
                "qid": qid,
                "corpus": corpus,
                "doc_id": doc_id,
                "text": question,
                "qtype": question_type(record.get("qtype"), where),
                "spans": [(start, end) for start, end, _ in spans],
                "meta": {
                    "span_steps": [step for _, _, step in spans],
                    "evidence": evidence,
                    "evidence_occurrences": occurrences,
                },
            }
        )
    return rows
