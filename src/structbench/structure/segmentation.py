"""A model-free structure inducer: TextTiling over embeddings, hierarchical, with keyphrase titles.

docs/method.md §5's model-free arm (its own condition, never a silent substitute for the LLM inducer). It
takes what the LLM inducer takes, the ``documents`` and ``paragraphs`` tables, plus an injected
``encode(texts) -> np.ndarray`` (L2-normalised float32 rows; the workflow passes the configured
embedder with its cache), and returns the same ``(sections, status)`` pair as
:func:`structbench.structure.induction.induce_structure`. This module imports no model library.

**Segmentation** (Hearst 1997, "TextTiling: segmenting text into multi-paragraph subtopic passages",
Computational Linguistics 23(1), with embeddings for term vectors), per document of ``n`` paragraphs:

1. Paragraph vectors: ``encode`` of each paragraph (``unit="paragraph"``), or the renormalised mean of
   its sentences' vectors (``unit="sentence"``, sentences from :mod:`structbench.sentences`).
2. Gap similarity at each of the ``n - 1`` gaps: cosine of the renormalised means of the ``window``
   paragraphs before and the ``window`` paragraphs after the gap (fewer at the document's edges).
3. Depth score at each gap (Hearst): ``(left peak - s) + (right peak - s)``, the peaks found by climbing
   from the gap while the similarity keeps rising. A gap with depth above ``DEPTH_EPSILON`` is a valley.
4. Boundaries: valleys whose depth is at least ``mean - depth_cutoff * std`` of all valley depths of the
   document, accepted strongest first (ties: the earlier gap) whenever every section stays at least
   ``min_section_paragraphs`` long. A flat curve (identical paragraphs) has no valley: one section.
5. Hierarchy: the accepted boundaries are split by depth into ``max_levels`` tiers. Level 1 takes the
   boundaries at least ``mean + level_cutoff * std`` of their depths; the rest are split the same way
   into level 2, and so on; the last level takes what remains. So top-level sections come from the
   strongest boundaries and subsections, nested inside long top-level sections, from the weaker ones.
   A level that would rise by more than one over the previous section is lowered (the LLM's rule); the
   first section is level 1.

Titles (keyphrase titles of each section) and status rows are :mod:`.model_free`'s, shared with the learned
inducer.

**Defaults** (``window=3, depth_cutoff=0.5, min_section_paragraphs=2, max_levels=2, level_cutoff=0.0,
unit="paragraph"``) were chosen on QASPER *train* papers only (never dev, never WikiText) with the packaged MiniLM,
by ``benchmarks/tune_segmentation.py``: the best hierarchical setting on paragraph vectors by its objective, since
docs/method.md §5 asks for a hierarchy and sentence vectors cost several times the encoder inputs for a difference
inside the noise (measured: docs/benchmarks.md, "The model-free inducer's defaults on QASPER train").
"""

from __future__ import annotations

import inspect
import logging
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import polars as pl

from structbench.datamodel import SectionSpec
from structbench.logs import with_progress
from structbench.structure.model_free import (
    Encode,
    induced_tables,
    keyphrase_titles,
    paragraph_vectors,
    status_row,
    subtree_ends,
)
from structbench.structure.sections import InducedSection, check_sections, paragraph_texts
from structbench.vectors import unit_length

log = logging.getLogger(__name__)

DEPTH_EPSILON = 1e-4  # depths below this are float noise on a flat curve, not valleys


# -------------------------------------------------------------------------------------- segmentation


def gap_similarities(vectors: np.ndarray, window: int) -> np.ndarray:
    """Cosine at each gap ``g - 1`` (before paragraph ``g``, ``1 <= g < n``) between the renormalised means
    of paragraphs ``g - window .. g - 1`` and ``g .. g + window - 1`` (clipped to the document)."""
    if window < 1:
        raise ValueError(f"window must be at least 1, not {window}")
    n = len(vectors)
    cumulative = np.concatenate([np.zeros((1, vectors.shape[1]), np.float64), np.cumsum(vectors, axis=0)])
    gaps = np.arange(1, n)
    left = cumulative[gaps] - cumulative[np.maximum(gaps - window, 0)]
    right = cumulative[np.minimum(gaps + window, n)] - cumulative[gaps]
    return np.einsum("ij,ij->i", unit_length(left), unit_length(right))


def depth_scores(similarities: np.ndarray) -> np.ndarray:
    """Hearst's depth at each gap: ``(left peak - s) + (right peak - s)``, each peak the highest value
    reached by climbing away from the gap while the curve rises (a flat step stops the climb)."""
    n = len(similarities)
    depths = np.zeros(n)
    for gap in range(n):
        left = gap
        while left > 0 and similarities[left - 1] > similarities[left]:
            left -= 1
        right = gap
        while right < n - 1 and similarities[right + 1] > similarities[right]:
            right += 1
        depths[gap] = (similarities[left] - similarities[gap]) + (similarities[right] - similarities[gap])
    return depths


def select_boundaries(depths: np.ndarray, depth_cutoff: float, min_section_paragraphs: int) -> list[int]:
    """Boundary paragraphs (a section starts there), sorted: valleys at least ``mean - depth_cutoff * std``
    of the valley depths, strongest first (ties: earlier), each kept only if every section stays at
    least ``min_section_paragraphs`` long. ``depths[g - 1]`` is the depth before paragraph ``g``."""
    n = len(depths) + 1
    valleys = np.flatnonzero(depths > DEPTH_EPSILON)
    if not len(valleys):
        return []
    threshold = depths[valleys].mean() - depth_cutoff * depths[valleys].std()
    chosen: list[int] = []  # sorted boundary paragraphs
    for gap in sorted(valleys[depths[valleys] >= threshold], key=lambda g: (-depths[g], g)):
        boundary = int(gap) + 1
        position = bisect_left(chosen, boundary)
        before = chosen[position - 1] if position else 0
        after = chosen[position] if position < len(chosen) else n
        if boundary - before >= min_section_paragraphs and after - boundary >= min_section_paragraphs:
            chosen.insert(position, boundary)
    return chosen


def boundary_levels(strengths: Sequence[float], max_levels: int, level_cutoff: float) -> list[int]:
    """A level per boundary: tier by tier, those at least ``mean + level_cutoff * std`` of the strengths
    still unassigned take the tier's level; the last level takes the rest."""
    levels = [max_levels] * len(strengths)
    remaining = list(range(len(strengths)))
    for level in range(1, max_levels):
        if not remaining:
            break
        values = np.array([strengths[i] for i in remaining])
        threshold = values.mean() + level_cutoff * values.std()
        # the tolerance keeps boundaries of equal depth on one tier despite float rounding in the mean
        strong = [i for i in remaining if strengths[i] >= threshold - 1e-12]
        for i in strong:
            levels[i] = level
        taken = set(strong)
        remaining = [i for i in remaining if i not in taken]
    return levels


def tiling(boundaries: Sequence[int], levels: Sequence[int], n_paragraphs: int) -> list[InducedSection]:
    """Untitled sections (1-based ``first..last``) from sorted boundaries and their levels; the first
    section is level 1 and a level rises by at most one (a deeper one is lowered)."""
    starts = [0, *boundaries]
    wanted = [1, *levels]
    sections: list[InducedSection] = []
    for index, start in enumerate(starts):
        end = starts[index + 1] if index + 1 < len(starts) else n_paragraphs
        level = min(wanted[index], sections[-1].level + 1) if sections else 1
        sections.append(InducedSection("", level, start + 1, end))
    return sections


def segment(
    vectors: np.ndarray,
    *,
    window: int,
    depth_cutoff: float,
    max_levels: int,
    min_section_paragraphs: int,
    level_cutoff: float,
) -> tuple[list[InducedSection], str]:
    """One document's untitled tiling and, when it is a single section, the reason ("" otherwise)."""
    n = len(vectors)
    if n == 1:
        return tiling([], [], 1), "one paragraph: nothing to segment"
    if n < 2 * min_section_paragraphs:
        return tiling([], [], n), f"{n} paragraphs: too short for two sections of {min_section_paragraphs}"
    depths = depth_scores(gap_similarities(vectors, window))
    boundaries = select_boundaries(depths, depth_cutoff, min_section_paragraphs)
    if not boundaries:
        return tiling([], [], n), "no valley in the similarity curve passes the depth cutoff"
    levels = boundary_levels([depths[b - 1] for b in boundaries], max_levels, level_cutoff)
    return tiling(boundaries, levels, n), ""


def induce_segmentation(
    documents: pl.DataFrame,
    paragraphs: pl.DataFrame,
    encode: Encode,
    *,
    window: int = 3,
    depth_cutoff: float = 0.5,
    max_levels: int = 2,
    min_section_paragraphs: int = 2,
    level_cutoff: float = 0.0,
    unit: str = "paragraph",
    title_words: int = 6,
    max_candidates: int = 30,
    diversity: float = 0.3,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Induce a section tree for every document without an LLM: ``(sections, status)``.

    ``sections`` has exactly the gold schema (``datamodel.SECTIONS``), is built like gold and LLM sections
    (``corpus.build.build_tables``) and passes ``verify_sections``; ``status`` has the columns of
    ``induction.STATUS`` (semantics in the module docstring). The parameters are those of the module
    docstring; ``encode`` is called once for all paragraphs (or sentences) and once per document for its
    title candidates."""
    if max_levels < 1 or min_section_paragraphs < 1 or title_words < 1:
        raise ValueError("max_levels, min_section_paragraphs and title_words must be at least 1")
    texts_by_doc = paragraph_texts(documents, paragraphs)
    vectors_by_doc = paragraph_vectors(texts_by_doc, encode, unit)
    specs, status_rows = {}, []
    for doc_id, texts in with_progress(texts_by_doc.items(), log, "segmented", len(texts_by_doc), "documents"):
        vectors = vectors_by_doc[doc_id]
        sections, reason = segment(
            vectors,
            window=window,
            depth_cutoff=depth_cutoff,
            max_levels=max_levels,
            min_section_paragraphs=min_section_paragraphs,
            level_cutoff=level_cutoff,
        )
        problems = check_sections(sections, 1, len(texts))
        if problems:  # legal by construction; reaching this is a bug
            raise AssertionError(f"{doc_id}: segmentation is not a legal tiling: {problems[:3]}")
        titles = keyphrase_titles(
            texts,
            vectors,
            sections,
            subtree_ends(sections),
            encode,
            title_words=title_words,
            max_candidates=max_candidates,
            diversity=diversity,
        )
        sections = [replace(s, title=title) for s, title in zip(sections, titles)]
        specs[doc_id] = [SectionSpec(s.title, s.level, s.first - 1, s.last) for s in sections]
        status_rows.append(status_row(doc_id, sections, reason))
    return induced_tables(documents, paragraphs, texts_by_doc, specs, status_rows, "segmentation")


# The inducer's options, as config keys (inducers.<name> of kind segmentation; the schema states the same
# defaults, checked by tests/structure/test_segmentation.py).
OPTIONS = tuple(
    name for name, p in inspect.signature(induce_segmentation).parameters.items() if p.kind == p.KEYWORD_ONLY
)
