"""The Markdown knowledge base: a folder of ``.md`` files read into documents with their heading structure,
plus an optional questions file (:mod:`structbench.corpus.questions`).

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
- **Front matter.** A ``---`` line at the margin on the first line, up to the next ``---`` or ``...`` line,
  holding a YAML mapping (or nothing): read with the bounded reader (:mod:`structbench.yamlsafe`) and kept
  in ``meta["front_matter"]``. Anything else there (a list, a scalar, ``# Guide`` and a paragraph, text that
  is not YAML) is body text as CommonMark reads it (the ``---`` a thematic break, a line above the closing
  ``---`` a setext heading); an indented ``    ---`` is a code block, never front matter.
- **Title.** Front matter gives the title when it has ``title:``. When the first heading is an H1 and
  the only H1, it is the document's title heading (the title when front matter has none), not a section;
  then ``##`` is level 1, ``###`` level 2 and so on. With several H1s they are level-1 sections. With
  neither, the title is the fallback (``title`` argument; the loader passes the file stem with ``-``/``_``
  read as spaces).
- **Levels.** A section's level is one more than its parent's, the parent being the nearest
  preceding heading of smaller rank, so ``##`` straight to ``####`` nests one level down.
  Paragraphs before the first section heading form the lead section (title "", path
  ``[title]``). A heading with no text of its own is an empty section (see ``build``).

Files: every ``*.md`` under the folder, recursively, in path order; ``doc_id`` is the file stem
(unique, else an error).

Questions file (``questions_path``): read by :mod:`structbench.corpus.questions` (its layout, the
evidence locator and its errors are there).

Bad input: a file that is not UTF-8 is a ``ValueError`` naming the file and byte offset (decoding
with replacement would silently break verbatim quotes); a file with no body paragraphs (empty, or
headings only) is skipped and counted (``no_paragraphs``); front matter past the YAML reader's bounds (an
alias bomb, nesting deeper than its bound, a key written twice) is a ``RefusedYAMLError`` (a ``ValueError``)
naming the file and line; there is no size limit on a paragraph.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml
from markdown_it import MarkdownIt

from structbench.corpus.build import (
    CorpusTables,
    build_tables,
    funnel_frame,
    queries_frame,
    sections_from_headings,
    skipped_frame,
)
from structbench.corpus.questions import jsonl_records, question_funnel, question_rows
from structbench.corpus.verify import assert_verified
from structbench.datamodel import ParsedDocument, document_texts
from structbench.yamlsafe import load_yaml

MAX_HEADING_CHARS = 200  # longer "heading" text is a paragraph that happens to be underlined or start with #
# CommonMark's block structure only: inline markup is kept as written, so its parsing is skipped.
_BLOCKS = MarkdownIt("commonmark").disable("inline")
_VERBATIM = {"fence", "code_block"}  # blocks whose lines keep their trailing whitespace
_LISTS = {"bullet_list", "ordered_list"}  # one paragraph each, the blank lines between items dropped


def read_utf8(path: str | Path) -> str:
    """A file's text; ``ValueError`` naming the file and byte offset when it is not UTF-8."""
    path = Path(path)
    return decode_utf8(path.read_bytes(), str(path), "re-encode the file as UTF-8")


def decode_utf8(data: bytes, where: str, remedy: str) -> str:
    """``data`` as UTF-8 text; a ``ValueError`` naming ``where`` (a file, standard input), the offset and line of
    the first byte that is not UTF-8, and the ``remedy``."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise ValueError(
            f"{where}: not valid UTF-8 (byte {error.start}: {data[error.start : error.start + 4]!r}, line {line}); "
            f"{remedy}"
        ) from None


def front_matter(lines: list[str], source: str) -> tuple[dict, int]:
    """``(front matter, index of the first body line)``; ``({}, 0)`` when there is none.

    Front matter is the lines between a first line ``---`` and the next ``---`` or ``...`` line, both at the
    margin (an indented ``    ---`` is a code block), when they hold a YAML mapping or nothing at all. What
    else they may hold (a heading and a paragraph, since ``#`` starts a YAML comment; plain text; a list;
    text that is not YAML) is the body, read as CommonMark reads it: the ``---`` a thematic break, the lines
    its blocks, a line just above the closing ``---`` a setext heading. The YAML is read with the bounds of
    :mod:`structbench.yamlsafe`: an alias bomb, nesting past the bound or a key written twice is a
    :class:`~structbench.yamlsafe.RefusedYAMLError` naming ``source`` and the file line."""
    if not lines or lines[0].rstrip() != "---":
        return {}, 0
    for index in range(1, len(lines)):
        if lines[index].rstrip() in ("---", "..."):
            block = lines[1:index]
            try:
                loaded = load_yaml("\n".join(block), source, first_line=2)
            except yaml.YAMLError:
                return {}, 0  # not YAML: body text
            if isinstance(loaded, dict) and loaded:
                return loaded, index + 1
            if loaded is None and not any(line.strip() for line in block):
                return {}, index + 1  # an empty block
            return {}, 0  # a list, a scalar, only comments (#-headings): body text
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


def parse_markdown_lines(
    text: str, doc_id: str, title: str | None = None, source: str | None = None
) -> tuple[ParsedDocument, list[list[int]]]:
    """:func:`parse_markdown` and, per paragraph, the source line (0-based, after a BOM, any line ending)
    of each of its lines: what :class:`structbench.corpus.sourcemap.SourceMap` maps offsets with. Errors
    name ``source`` (the file; default: ``doc_id``)."""
    text = text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")
    source = doc_id if source is None else source
    front, first_line = front_matter(lines, source)
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
            f"{source}: front matter title is a {type(front_title).__name__} ({front_title!r}), not text: "
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


def parse_folder(
    folder: Path, files: list[Path] | None = None
) -> tuple[list[Path], list[ParsedDocument], list, dict[str, Path], dict]:
    """``(files, documents, skipped, stem -> file, doc_id -> (source, paragraphs, paragraph rows))`` of a
    folder of ``*.md`` files (``files``: some of them, else all); two files with the same stem are a
    ``ValueError`` naming both."""
    files = markdown_files(folder) if files is None else files
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
        doc, rows = parse_markdown_lines(source, path.stem, title=title_from_stem(path.stem), source=str(path))
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
        records = jsonl_records(read_utf8(questions_path), questions_path)
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
