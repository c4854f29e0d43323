"""What every inducer hands downstream: the induced-sections contract shared by the LLM inducer
(:mod:`structbench.structure.induction`) and the model-free one (:mod:`structbench.structure.segmentation`).

Pure and light (no LLM layer, no model library): an inducer states :class:`InducedSection` s over 1-based
paragraph numbers, :func:`check_sections` judges them against the induction constraints, and
:func:`sections_table` builds the sections table exactly like gold (``corpus.build.build_tables``), with
one :data:`STATUS` row per document.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

from structbench.corpus.build import build_tables
from structbench.datamodel import ParsedDocument, SectionSpec, document_texts

TITLE_CHARS = 60  # the longest title an LLM inducer's answer may write (a heading, not a summary)
STATUS = {
    "doc_id": pl.String,
    "status": pl.String,  # usable | repaired | failed
    "reason": pl.String,  # "" when the first answer passed the check
    "rounds": pl.Int8,  # 1, or 2 when any window needed the correction round
    "windows": pl.Int32,
    "sections": pl.Int32,
    "violations_round1": pl.Int32,  # summed over windows
    "violations_round2": pl.Int32,
    "clamped_levels": pl.Int32,  # sections deeper than MAX_LEVEL (stored clamped, paths keep depth)
    "clipped_paragraphs": pl.Int32,  # paragraphs shown to the model cut short
    "shortened_titles": pl.Int32,  # titles over the answer schema's bound, cut to it by the repair
}


@dataclass(frozen=True)
class InducedSection:
    """One section as the model states it: 1-based paragraph numbers ``first..last``, both included.
    After repair, an empty parent heading has ``last == first - 1``."""

    title: str
    level: int
    first: int
    last: int


def check_sections(
    sections: Sequence[InducedSection], first: int, last: int, *, allow_empty: bool = False
) -> list[str]:
    """Violations of the induction constraints for paragraphs ``first..last``; ``[]`` means legal.

    Each violation names the section (1-based, with its title) and the paragraphs involved, in words
    the model can act on; they are quoted back verbatim in the correction round. ``allow_empty``
    accepts empty parent headings (``last == first - 1``), which only the repair produces."""
    if not sections:
        return ["the answer lists no sections"]
    problems: list[str] = []
    previous: InducedSection | None = None
    for number, section in enumerate(sections, start=1):
        name = f"section {number} ({section.title!r})"
        if section.first > section.last + (1 if allow_empty else 0):
            problems.append(f"{name}: its first paragraph {section.first} comes after its last {section.last}")
        if section.first < first or section.last > last:
            problems.append(f"{name}: paragraphs {section.first}..{section.last} are outside {first}..{last}")
        if previous is None:
            if section.first != first:
                problems.append(f"{name}: the first section starts at paragraph {section.first}, not {first}")
            if section.level != 1:
                problems.append(f"{name}: the first section has level {section.level}, not 1")
        else:
            if section.first <= previous.last:
                problems.append(
                    f"{name} overlaps section {number - 1}: both contain paragraphs "
                    f"{section.first}..{min(previous.last, section.last)}"
                )
            elif section.first > previous.last + 1:
                problems.append(
                    f"gap before {name}: paragraphs {previous.last + 1}..{section.first - 1} belong to no section"
                )
            if section.level > previous.level + 1:
                problems.append(
                    f"{name} has level {section.level} right after level {previous.level}: "
                    "a level may rise by at most one"
                )
        if section.level < 1:
            problems.append(f"{name}: level {section.level} is below 1")
        previous = section
    if previous.last < last:
        problems.append(f"paragraphs {previous.last + 1}..{last} after the last section belong to no section")
    return problems


def paragraph_texts(documents: pl.DataFrame, paragraphs: pl.DataFrame) -> dict[str, list[str]]:
    """Each document's paragraph texts, sliced from its flat text by the paragraph table."""
    texts = document_texts(documents)
    ordered = paragraphs.sort("doc_id", "para_idx")
    result: dict[str, list[str]] = {doc_id: [] for doc_id in documents["doc_id"].to_list()}
    for doc_id, start, end in ordered.select("doc_id", "start", "end").iter_rows():
        if doc_id not in result:
            raise ValueError(f"paragraph table names document {doc_id!r}, missing from the documents table")
        result[doc_id].append(texts[doc_id][start:end])
    empty = [doc_id for doc_id, paragraphs_of in result.items() if not paragraphs_of]
    if empty:
        raise ValueError(f"documents without paragraphs cannot be induced: {empty[:5]}")
    return result


def sections_table(
    documents: pl.DataFrame, texts_by_doc: dict[str, list[str]], specs: dict[str, list[SectionSpec]]
) -> pl.DataFrame:
    """Sections built exactly like gold ones (paths, clamped levels, offsets, top_section_id)."""
    titles = dict(zip(documents["doc_id"].to_list(), documents["title"].to_list()))
    flat = document_texts(documents)
    parsed = [ParsedDocument(doc_id, titles[doc_id], texts, specs[doc_id]) for doc_id, texts in texts_by_doc.items()]
    rebuilt, _, sections = build_tables("induced", parsed)
    for doc_id, text in zip(rebuilt["doc_id"].to_list(), rebuilt["text"].to_list()):
        if text != flat[doc_id]:
            raise ValueError(f"{doc_id}: paragraph table does not rebuild the document's flat text")
    return sections
