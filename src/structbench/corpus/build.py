"""Flat documents, paragraph offsets and gold sections from parsed documents (docs/method.md §3).

``build_tables`` is the one place where content offsets come into being: it joins each document's
paragraphs with ``PARAGRAPH_SEPARATOR`` and records every paragraph's ``[start, end)`` as it appends
it. Section offsets are then read from that paragraph table, never found by searching the text, so an
off-by-N drift cannot enter (Kuehlkamp et al., appendix E.2).

Section conventions shared by every loader:

- ``SectionSpec.level`` is the true depth below the document title (1 = top level). A section's
  ancestors are found from levels alone: the parent of a section is the nearest preceding section
  with a smaller level. ``path`` is ``[document title] + ancestor titles + own title``; the lead
  section (the first section, level 1, title "") has path ``[document title]`` (docs/method.md §17).
- The stored ``level`` is clamped to ``1..MAX_LEVEL``; ``path`` keeps the true depth.
- A heading with no paragraphs of its own (e.g. a section whose text all sits in subsections) is a
  section with ``para_start == para_end``; its ``start == end`` is the offset where its successor's
  text starts (``n_chars`` at the end of a document). Keeping it keeps every path and
  ``top_section_id`` pointing at a real row. Consumers locating "the section an offset starts in"
  should take the last section whose ``start`` is at or before the offset.
- ``top_section_id`` is the ``section_id`` of the level-1 section that contains a section (itself
  for a level-1 section).
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import polars as pl

from structbench.datamodel import (
    MAX_LEVEL,
    PARAGRAPH_SEPARATOR,
    ParsedDocument,
    SectionSpec,
    conform,
    empty,
)

FUNNEL = {"unit": pl.String, "step": pl.String, "reason": pl.String, "count": pl.Int64}
SKIPPED = {"source": pl.String, "record": pl.String, "reason": pl.String}


@dataclass
class CorpusTables:
    """Everything a corpus loader produces.

    ``funnel`` has columns ``unit`` (documents, questions, evidence, spans), ``step`` (in, dropped,
    matched, out, ...), ``reason`` ("" where none) and ``count``; ``skipped`` lists each counted skip
    as ``source`` (file or URL), ``record`` (its id within the source) and ``reason``.
    """

    documents: pl.DataFrame
    paragraphs: pl.DataFrame
    sections: pl.DataFrame
    queries: pl.DataFrame = field(default_factory=lambda: empty("queries"))
    funnel: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=FUNNEL))
    skipped: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=SKIPPED))

    def as_dict(self) -> dict[str, pl.DataFrame]:
        return {
            "documents": self.documents,
            "paragraphs": self.paragraphs,
            "sections": self.sections,
            "queries": self.queries,
            "funnel": self.funnel,
            "skipped": self.skipped,
        }


def section_paths(title: str, sections: Sequence[SectionSpec]) -> tuple[list[list[str]], list[int]]:
    """Paths and top-level ancestor ordinals of ``sections``, from their levels alone."""
    paths: list[list[str]] = []
    tops: list[int] = []
    stack: list[tuple[int, int]] = []  # (level, section ordinal) of the open ancestors
    for ordinal, section in enumerate(sections):
        while stack and stack[-1][0] >= section.level:
            stack.pop()
        own = [] if is_lead(ordinal, section) else [section.title]
        paths.append([title] + [sections[i].title for _, i in stack] + own)
        tops.append(stack[0][1] if stack else ordinal)
        stack.append((section.level, ordinal))
    return paths, tops


def build_tables(corpus: str, docs: Iterable[ParsedDocument]) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """``(documents, paragraphs, sections)`` conforming to :mod:`structbench.datamodel` for ``docs``.

    Raises ``ValueError`` for a duplicate ``doc_id`` or an empty paragraph (loaders skip those
    before they get here). Section specs are taken as given; ``verify.verify_sections`` judges them.
    """
    doc_rows: dict[str, list] = {column: [] for column in ("corpus", "doc_id", "title", "text", "n_chars", "meta")}
    para_rows: dict[str, list] = {column: [] for column in ("doc_id", "para_idx", "start", "end")}
    section_rows: dict[str, list] = {
        column: []
        for column in (
            "doc_id",
            "section_id",
            "title",
            "level",
            "path",
            "para_start",
            "para_end",
            "start",
            "end",
            "top_section_id",
        )
    }
    seen: set[str] = set()
    for doc in docs:
        if doc.doc_id in seen:
            raise ValueError(f"duplicate doc_id {doc.doc_id!r} in corpus {corpus!r}")
        seen.add(doc.doc_id)
        for index, paragraph in enumerate(doc.paragraphs):
            if not paragraph.strip():
                raise ValueError(f"{doc.doc_id}: paragraph {index} is empty")
        text, starts, ends = flat_text(doc.paragraphs)
        doc_rows["corpus"].append(corpus)
        doc_rows["doc_id"].append(doc.doc_id)
        doc_rows["title"].append(doc.title)
        doc_rows["text"].append(text)
        doc_rows["n_chars"].append(len(text))
        doc_rows["meta"].append(json.dumps(doc.meta, sort_keys=True, ensure_ascii=False))
        n = len(doc.paragraphs)
        para_rows["doc_id"].extend([doc.doc_id] * n)
        para_rows["para_idx"].extend(range(n))
        para_rows["start"].extend(starts)
        para_rows["end"].extend(ends)
        paths, tops = section_paths(doc.title, doc.sections)
        for ordinal, section in enumerate(doc.sections):
            section_rows["doc_id"].append(doc.doc_id)
            section_rows["section_id"].append(ordinal)
            section_rows["title"].append(section.title)
            section_rows["level"].append(min(section.level, MAX_LEVEL))
            section_rows["path"].append(paths[ordinal])
            section_rows["para_start"].append(section.para_start)
            section_rows["para_end"].append(section.para_end)
            start, end = _section_offsets(section, starts, ends, len(text))
            section_rows["start"].append(start)
            section_rows["end"].append(end)
            section_rows["top_section_id"].append(tops[ordinal])
    documents = conform(pl.DataFrame(doc_rows, schema_overrides={"n_chars": pl.Int64}), "documents")
    paragraphs = conform(pl.DataFrame(para_rows, schema_overrides={"para_idx": pl.Int32}), "paragraphs")
    sections = conform(
        pl.DataFrame(section_rows, schema_overrides={"path": pl.List(pl.String), "level": pl.Int64}),
        "sections",
    )
    return documents, paragraphs, sections


def flat_text(paragraphs: Sequence[str]) -> tuple[str, list[int], list[int]]:
    """The flat text and each paragraph's ``start``/``end``, recorded as the paragraphs are laid down."""
    starts: list[int] = []
    ends: list[int] = []
    cursor = 0
    for index, paragraph in enumerate(paragraphs):
        if index:
            cursor += len(PARAGRAPH_SEPARATOR)
        starts.append(cursor)
        cursor += len(paragraph)
        ends.append(cursor)
    text = PARAGRAPH_SEPARATOR.join(paragraphs)
    if len(text) != cursor:
        raise AssertionError("flat text length disagrees with the recorded offsets")
    return text, starts, ends


def _section_offsets(section: SectionSpec, starts: list[int], ends: list[int], n_chars: int) -> tuple[int, int]:
    """Offsets from the paragraph table; ``-1`` marks an out-of-range reference for the verifier."""
    n = len(starts)
    if not 0 <= section.para_start <= section.para_end <= n:
        return -1, -1
    if section.para_start == section.para_end:
        at = starts[section.para_start] if section.para_start < n else n_chars
        return at, at
    return starts[section.para_start], ends[section.para_end - 1]


def sections_from_headings(
    n_paragraphs: int, headings: Sequence[tuple[int, str, int]], lead_title: str = ""
) -> list[SectionSpec]:
    """Tile ``n_paragraphs`` with the sections opened by ``headings``.

    ``headings`` are ``(raw_level, title, first_paragraph)`` in reading order, where ``raw_level``
    is any monotone heading rank (Markdown ``#`` count, WikiText ``=`` count, MediaWiki ``==`` level)
    and ``first_paragraph`` is the index of the first paragraph after the heading. A section's true
    depth is one more than its parent's, the parent being the nearest preceding heading with a
    smaller raw level; so skipped ranks (``##`` straight to ``####``) never make a level rise by more
    than one. Paragraphs before the first heading form the lead section (title ``lead_title``),
    omitted when there are none.
    """
    specs: list[SectionSpec] = []
    first_heading_at = headings[0][2] if headings else n_paragraphs
    if first_heading_at > 0:
        specs.append(SectionSpec(lead_title, 1, 0, first_heading_at))
    stack: list[tuple[int, int]] = []  # (raw level, depth)
    for index, (raw_level, title, first) in enumerate(headings):
        while stack and stack[-1][0] >= raw_level:
            stack.pop()
        depth = stack[-1][1] + 1 if stack else 1
        stack.append((raw_level, depth))
        end = headings[index + 1][2] if index + 1 < len(headings) else n_paragraphs
        specs.append(SectionSpec(title, depth, first, end))
    return specs


def union_spans(spans: Iterable[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """Merge overlapping ``(start, end, step)`` spans into their union, sorted by start.

    A merged span takes the step of its longest constituent (ties: the earliest in ``STEP_ORDER``),
    so a section-fallback span that contains exact paragraph spans stays a "section" span.
    """
    ordered = sorted(spans, key=lambda span: (span[0], -span[1]))
    merged: list[list] = []
    for start, end, step in ordered:
        if merged and start < merged[-1][1]:
            current = merged[-1]
            current[1] = max(current[1], end)
            current[2].append((start, end, step))
        else:
            merged.append([start, end, [(start, end, step)]])
    result = []
    for start, end, parts in merged:
        longest = min(parts, key=lambda part: (-(part[1] - part[0]), STEP_ORDER.index(part[2])))
        result.append((start, end, longest[2]))
    return result


STEP_ORDER = ("offsets", "exact", "normalized", "fuzzy", "section")  # offsets: an exact source range


def funnel_frame(rows: Iterable[tuple[str, str, str, int]]) -> pl.DataFrame:
    """A funnel table from ``(unit, step, reason, count)`` rows."""
    rows = list(rows)
    return pl.DataFrame(
        {
            "unit": [row[0] for row in rows],
            "step": [row[1] for row in rows],
            "reason": [row[2] for row in rows],
            "count": [int(row[3]) for row in rows],
        },
        schema=FUNNEL,
    )


def skipped_frame(rows: Iterable[tuple[str, str, str]]) -> pl.DataFrame:
    rows = list(rows)
    return pl.DataFrame(
        {
            "source": [row[0] for row in rows],
            "record": [row[1] for row in rows],
            "reason": [row[2] for row in rows],
        },
        schema=SKIPPED,
    )


def queries_frame(rows: Sequence[dict]) -> pl.DataFrame:
    """A QUERIES table from dicts with the QUERIES keys (``meta`` a dict, ``spans`` a list of pairs)."""
    if not rows:
        return empty("queries")
    frame = pl.DataFrame(
        {
            "qid": [row["qid"] for row in rows],
            "corpus": [row["corpus"] for row in rows],
            "doc_id": [row["doc_id"] for row in rows],
            "text": [row["text"] for row in rows],
            "qtype": [row["qtype"] for row in rows],
            "spans": [[[int(s), int(e)] for s, e in row["spans"]] for row in rows],
            "meta": [json.dumps(row["meta"], sort_keys=True, ensure_ascii=False) for row in rows],
        },
        schema_overrides={"spans": pl.List(pl.List(pl.Int64))},
    )
    return conform(frame, "queries")


# Two characters the tokenizer drops although their category is read: U+FFFD, what a decoder leaves for bytes it
# could not read, and U+1734, a spacing mark in Python's Unicode tables and a combining one in the tokenizer's.
_UNREAD_CHARACTERS = frozenset({"\ufffd", "\u1734"})


def is_readable(character: str) -> bool:
    """Whether ``character`` stands for something by itself: a letter, number, punctuation or symbol (Unicode
    categories L*, N*, P*, S*) or a mark that takes space (Mc), outside :data:`_UNREAD_CHARACTERS`. Not
    whitespace (Z*), a control (Cc: NUL), a format character (Cf: U+200B, joiners, BOM), a combining mark
    (Mn, Me: an accent without its letter), a private-use (Co), surrogate (Cs) or unassigned (Cn) code point:
    the study's WordPiece tokenizer reads each of those as no token (its normalizer drops controls, format
    and private-use characters and strips accents) or as [UNK]."""
    category = unicodedata.category(character)
    return (category[0] in "LNPS" or category == "Mc") and character not in _UNREAD_CHARACTERS


def has_visible_text(text: str) -> bool:
    """Whether ``text`` holds a readable character (:func:`is_readable`). ``str.strip`` keeps NUL, U+200B, a lone
    combining accent and private-use characters, so a question of only those would pass a strip test and reach
    the embedder as 0 tokens."""
    return any(is_readable(character) for character in text)


def word_count(paragraphs: Iterable[str]) -> int:
    """Whitespace-separated words over a document's body paragraphs (the filter's ``min_words``)."""
    return sum(len(paragraph.split()) for paragraph in paragraphs)


def document_depth(sections: Sequence[SectionSpec]) -> int:
    """Heading depth counting the document title as 1: a flat list of sections has depth 2.

    This is the MediaWiki heading level (``== A ==`` is 2, ``=== B ===`` is 3), the WikiText ``=``
    count and ``len(path)``, so the paper's ``min_depth 3`` asks for at least one subsection.
    """
    return 1 + max((section.level for index, section in enumerate(sections) if not is_lead(index, section)), default=0)


def heading_count(sections: Sequence[SectionSpec]) -> int:
    """Sections opened by a heading (the lead section does not count): the filter's ``min_sections``."""
    return sum(1 for index, section in enumerate(sections) if not is_lead(index, section))


def is_lead(ordinal: int, section: SectionSpec) -> bool:
    """The lead section: the first section, level 1, untitled (docs/method.md §17)."""
    return ordinal == 0 and section.level == 1 and section.title == ""
