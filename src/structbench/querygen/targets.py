"""Gold spans for generated queries, sampled by the pipeline (Kuehlkamp et al., appendix F: the model that writes
a query never reports its evidence).

Definitions, per document, over its gold section tree (``corpus.build`` conventions):

- A **top-level section** is a level-1 section row together with every row whose ``top_section_id``
  names it; its extent is ``[start of its first row, end of its last row)``, which is contiguous because
  sections tile the paragraphs in order. The lead (text before the first heading) is a top-level
  section of its own (docs/method.md §17). A paragraph lies in the top-level section of the section row
  whose paragraph range holds it.
- A paragraph is **eligible** as a span when it has at least ``min_span_words`` words (whitespace
  separated): a one-line caption or list item is no evidence for a question. A top-level section is
  eligible for ``structural`` when its whole extent has at least ``min_span_words`` words.
- ``factoid`` and ``underspecified``: one eligible paragraph each; ``multihop``: two eligible paragraphs
  in two different top-level sections; ``structural``: the extent of one eligible top-level section.
  The paragraph is the unit because it is the flat text's own unit (its offsets are recorded when the
  text is built, never searched for) and the evidence unit of QASPER, the other corpus.

**Sampling.** Each (document, type) pair draws from its own ``random.Random(f"{seed}/{doc_id}/{qtype}")``
(string seeds are hashed with SHA-512, independent of ``PYTHONHASHSEED``), so a document's targets do
not depend on the other documents, on how the corpus is sharded, or on which other types are generated.
Up to ``per_document`` targets per type are drawn without replacement: paragraphs (``factoid``,
``underspecified``); pairs of distinct top-level sections, then one eligible paragraph in each
(``multihop``: uniform over section pairs, so long sections do not dominate); top-level sections
(``structural``). A document with fewer candidates gives fewer targets (the funnel counts
``generated`` = targets actually sampled). Targets are numbered in reading order of their first span.

A target's ``qid`` is ``<doc_id>#<qtype>-<ordinal>``, the document id written as one field
(:func:`structbench.datamodel.as_one_field`: a space is ``%20``), so a WikiText title's qid is one field of
a TREC line.
"""

from __future__ import annotations

import bisect
import random
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import combinations

import polars as pl

from structbench.datamodel import as_one_field, document_texts
from structbench.querygen.settings import QUERY_TYPES


@dataclass(frozen=True)
class GoldTarget:
    """What one generated query must be about: sorted, disjoint ``spans`` (content offsets) and the
    top-level section each span lies in (``top_section_ids``, one per span)."""

    doc_id: str
    qtype: str
    ordinal: int  # 0-based within (doc_id, qtype), in reading order
    spans: tuple[tuple[int, int], ...]
    top_section_ids: tuple[int, ...]

    @property
    def qid(self) -> str:
        return f"{as_one_field(self.doc_id)}#{self.qtype}-{self.ordinal}"


@dataclass(frozen=True)
class DocumentLayout:
    """The span candidates of one document: eligible paragraphs as ``(start, end, top_section_id)`` and
    eligible top-level sections as ``(top_section_id, start, end)``, both in reading order."""

    doc_id: str
    paragraphs: tuple[tuple[int, int, int], ...]
    top_sections: tuple[tuple[int, int, int], ...]


def word_count(text: str) -> int:
    return len(text.split())


def top_section_extents(sections: pl.DataFrame) -> pl.DataFrame:
    """``doc_id, top_section_id, start, end`` of every top-level section (module docstring), sorted."""
    return (
        sections.group_by("doc_id", "top_section_id")
        .agg(pl.col("start").min(), pl.col("end").max())
        .sort("doc_id", "top_section_id")
    )


def document_layouts(
    documents: pl.DataFrame, paragraphs: pl.DataFrame, sections: pl.DataFrame, min_span_words: int
) -> list[DocumentLayout]:
    """One :class:`DocumentLayout` per document of ``documents`` (in ``doc_id`` order).

    ``paragraphs`` and ``sections`` are the corpus tables (``sections`` the gold tree); a paragraph that
    no section holds is a ``ValueError`` naming it (the corpus step verifies the tiling, so this means
    the tables do not belong together)."""
    texts = document_texts(documents)
    owner_rows = sections.filter(pl.col("para_start") < pl.col("para_end")).select(
        "doc_id", "para_start", "para_end", "top_section_id"
    )
    owners: dict[str, list[tuple[int, int, int]]] = {}
    for doc_id, para_start, para_end, top in owner_rows.sort("doc_id", "para_start").iter_rows():
        owners.setdefault(doc_id, []).append((para_start, para_end, top))
    extents: dict[str, list[tuple[int, int, int]]] = {}
    for doc_id, top, start, end in top_section_extents(sections).iter_rows():
        extents.setdefault(doc_id, []).append((top, start, end))
    by_doc: dict[str, list[tuple[int, int, int]]] = {}
    for doc_id, para_idx, start, end in (
        paragraphs.sort("doc_id", "para_idx").select("doc_id", "para_idx", "start", "end").iter_rows()
    ):
        by_doc.setdefault(doc_id, []).append((para_idx, start, end))

    layouts = []
    for doc_id in sorted(texts):
        text = texts[doc_id]
        ranges = owners.get(doc_id, [])
        range_starts = [first for first, _, _ in ranges]
        eligible_paragraphs = []
        for para_idx, start, end in by_doc.get(doc_id, []):
            at = bisect.bisect_right(range_starts, para_idx) - 1
            top = ranges[at][2] if at >= 0 and para_idx < ranges[at][1] else None
            if top is None:
                raise ValueError(f"{doc_id}: paragraph {para_idx} lies in no section of the gold structure")
            if word_count(text[start:end]) >= min_span_words:
                eligible_paragraphs.append((start, end, top))
        eligible_sections = [
            (top, start, end)
            for top, start, end in extents.get(doc_id, [])
            if start < end and word_count(text[start:end]) >= min_span_words
        ]
        layouts.append(DocumentLayout(doc_id, tuple(eligible_paragraphs), tuple(eligible_sections)))
    return layouts


def document_rng(seed: int, doc_id: str, qtype: str) -> random.Random:
    """The random stream of one (document, type) pair (module docstring)."""
    return random.Random(f"{seed}/{doc_id}/{qtype}")


def _single_paragraphs(layout: DocumentLayout, rng: random.Random, n: int) -> list[tuple]:
    picked = rng.sample(layout.paragraphs, min(n, len(layout.paragraphs)))
    return [(((start, end),), (top,)) for start, end, top in picked]


def _paragraph_pairs(layout: DocumentLayout, rng: random.Random, n: int) -> list[tuple]:
    groups: dict[int, list[tuple[int, int]]] = {}
    for start, end, top in layout.paragraphs:
        groups.setdefault(top, []).append((start, end))
    pairs = list(combinations(sorted(groups), 2))
    picked = []
    for first_top, second_top in rng.sample(pairs, min(n, len(pairs))):
        first, second = rng.choice(groups[first_top]), rng.choice(groups[second_top])
        picked.append(((first, second), (first_top, second_top)))  # first_top < second_top: reading order
    return picked


def _whole_sections(layout: DocumentLayout, rng: random.Random, n: int) -> list[tuple]:
    picked = rng.sample(layout.top_sections, min(n, len(layout.top_sections)))
    return [(((start, end),), (top,)) for top, start, end in picked]


SAMPLERS = {
    "factoid": _single_paragraphs,
    "underspecified": _single_paragraphs,
    "multihop": _paragraph_pairs,
    "structural": _whole_sections,
}
assert set(SAMPLERS) == set(QUERY_TYPES)


def sample_targets(layout: DocumentLayout, qtype: str, per_document: int, seed: int) -> list[GoldTarget]:
    """Up to ``per_document`` targets of one type in one document (module docstring), in reading order."""
    if qtype not in SAMPLERS:
        raise ValueError(f"unknown query type {qtype!r}; known: {list(QUERY_TYPES)}")
    drawn = SAMPLERS[qtype](layout, document_rng(seed, layout.doc_id, qtype), per_document)
    drawn.sort(key=lambda item: item[0])
    return [GoldTarget(layout.doc_id, qtype, ordinal, spans, tops) for ordinal, (spans, tops) in enumerate(drawn)]


def sample_corpus_targets(
    layouts: Iterable[DocumentLayout], types: Iterable[str], per_document: int, seed: int
) -> list[GoldTarget]:
    """Every target of every document and type, ordered by document, then type (in ``types`` order)."""
    types = list(types)
    return [
        target for layout in layouts for qtype in types for target in sample_targets(layout, qtype, per_document, seed)
    ]
