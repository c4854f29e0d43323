"""A learned structure inducer: boundaries, levels and recurring titles learned from documents with headings.

This module decodes a trained model's probabilities into sections and induces documents' section trees; the
gap and section features are in :mod:`.learned_features`, training in :mod:`.learned_training`, the trained
model and its file in :mod:`.learned_model`.

docs/method.md §5's learned arm, beside the LLM inducer and TextTiling (:mod:`.segmentation`): no LLM, and
the same ``(sections, status)`` tables. It trains on documents whose gold section trees are known (QASPER's
train papers; a Markdown folder's documents that have headings) and states the sections of documents
without headings, or with them stripped as the study's induction arm does. Like segmentation it takes an
injected ``encode(texts) -> np.ndarray`` (L2-normalised float32 rows; the workflow passes the configured
embedder with its cache), called once for all paragraphs of a call, and once per document for keyphrase
title candidates. scikit-learn is imported inside the functions that fit or predict, never at import time
(the workflow imports :data:`OPTIONS` on every dry run).

**Examples.** Every gap between adjacent paragraphs of a training document is one example: label 1 when a
gold section starts after the gap (any level; an empty parent heading starts where its first child does),
and, for those, a second label: the section starting there is top-level (level 1) or deeper.

**Features** (:data:`.learned_features.FEATURES`, per gap before paragraph ``g`` of ``n``), chosen because
each measures a cue a reader or TextTiling uses, all cheap given the paragraph vectors:

- vector similarity: cosine of the adjacent paragraphs; of the renormalised means of 2 and 3 paragraphs on
  each side; the adjacent cosine standardised within the document, and minus the larger of its two
  neighbouring gaps' (a local valley); TextTiling's depth score over the 2-window curve; the largest cosine
  of paragraph ``g`` with any of the three before it (is it new?);
- lexical cohesion: Jaccard overlap of the content words of the paragraphs on each side, and of the two
  paragraphs on each side;
- lengths: log characters of the paragraphs before and after, and whether each is short (under 25 words);
- position: ``g / n``, ``g``, ``n - g`` and ``log n``;
- cues of the paragraph after: opens with a digit, with a section-opening phrase ("In this section", "We",
  "This paper", ...), with a concluding phrase ("In this paper we presented", "In conclusion", ...), or
  with a connective that continues the argument ("However", "Moreover", "For example", ...); the
  paragraph before ends with a colon (a lead-in); list, table and float markers on either side (``|``,
  ``- ``/``* ``/``1.`` items, "Table", "Figure").

**Learner.** scikit-learn's ``HistGradientBoostingClassifier``: the features are tabular and of mixed
scales (cosines, counts, flags), their interactions matter (a low cosine matters less between two list
items), and boosted trees need neither scaling nor tuning to do well on such data; it fits quickly on a
CPU (fit times: docs/benchmarks.md), is deterministic with early stopping off and a fixed
``random_state``, and is already a dependency (no LightGBM). One model scores boundaries, a second, fitted
on the boundary gaps only, scores "top-level" against "deeper".

**Decoding.** Gaps whose boundary probability reaches ``threshold`` are accepted strongest first (ties:
the earlier gap) whenever every section keeps at least ``min_section_paragraphs`` paragraphs (the
segmentation's rule). A boundary is top-level when its level probability reaches ``level_threshold``,
else level 2 (``max_levels: 1`` keeps every section top-level); a level never rises by more than one over
the section before, the first section is level 1 (:func:`.segmentation.tiling`). Both thresholds default
to the model's own, chosen at training on out-of-fold probabilities (``INNER_FOLDS`` document folds by
a seeded hash of the ids) from :data:`.learned_training.THRESHOLD_GRID`: the boundary threshold maximising
the training documents' mean ``1 - Pk - WindowDiff`` plus boundary F1 (all levels), the level threshold the same over
top-level boundaries (:mod:`.agreement`'s conventions). In-sample probabilities of boosted trees are
overconfident, so thresholds chosen on them would cut too few sections.

**Titles.** Each section is titled from its own words by the keyphrase titler of :mod:`.model_free`
(bounded in words and characters), unless the training corpus has recurring section names: titles (lower-cased,
numbering stripped) that head sections in at least ``title_min_docs`` training documents become classes
of a multinomial logistic regression over the section's first-paragraph and mean vectors and its
position (relative start and end, first and last section, level). A section takes the learned name (its
most frequent spelling in training) when its probability is at least ``title_confidence``, at most once per
document (the most probable section wins); otherwise the keyphrase title.

**Model file.** Arrays and JSON, never a pickle (:mod:`.learned_model`): the trees' node arrays, the title
classifier's coefficients, the thresholds and the training summary without its timings, checked against
their sha256 (the model's fingerprint) before use. Same training data, options and seed give a
byte-identical file (same scikit-learn and numpy versions).
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import polars as pl

from structbench.datamodel import SectionSpec
from structbench.logs import with_progress
from structbench.structure.learned_features import (
    gap_features,
    title_features,
)
from structbench.structure.learned_model import LearnedInducer, one_thread
from structbench.structure.model_free import (
    Encode,
    induced_tables,
    keyphrase_titles,
    paragraph_vectors,
    status_row,
    subtree_ends,
)
from structbench.structure.sections import InducedSection, check_sections, paragraph_texts
from structbench.structure.segmentation import tiling

log = logging.getLogger(__name__)

# ------------------------------------------------------------------------------------------- decoding


def decode_boundaries(probabilities: np.ndarray, threshold: float, min_section_paragraphs: int) -> list[int]:
    """Sorted boundary paragraphs: gaps with probability at least ``threshold``, strongest first (ties:
    earlier), each kept only if every section keeps at least ``min_section_paragraphs`` paragraphs.
    ``probabilities[g - 1]`` belongs to the gap before paragraph ``g``."""
    n = len(probabilities) + 1
    chosen: list[int] = []
    candidates = [g for g in range(len(probabilities)) if probabilities[g] >= threshold]
    for gap in sorted(candidates, key=lambda g: (-probabilities[g], g)):
        boundary = gap + 1
        position = int(np.searchsorted(chosen, boundary))
        before = chosen[position - 1] if position else 0
        after = chosen[position] if position < len(chosen) else n
        if boundary - before >= min_section_paragraphs and after - boundary >= min_section_paragraphs:
            chosen.insert(position, boundary)
    return chosen


# ------------------------------------------------------------------------------------------- inference


def learned_tiling(
    probabilities: np.ndarray,
    level_probabilities: np.ndarray,
    n: int,
    *,
    threshold: float,
    level_threshold: float,
    max_levels: int,
    min_section_paragraphs: int,
) -> tuple[list[InducedSection], str]:
    """One document's untitled sections and, when it is a single section, the reason ("" otherwise)."""
    if n == 1:
        return tiling([], [], 1), "one paragraph: nothing to segment"
    if n < 2 * min_section_paragraphs:
        return tiling([], [], n), f"{n} paragraphs: too short for two sections of {min_section_paragraphs}"
    boundaries = decode_boundaries(probabilities, threshold, min_section_paragraphs)
    if not boundaries:
        return tiling([], [], n), f"no gap's boundary probability reaches {threshold}"
    levels = [1 if max_levels == 1 or level_probabilities[b - 1] >= level_threshold else 2 for b in boundaries]
    return tiling(boundaries, levels, n), ""


def _canonical_titles(
    model: LearnedInducer, vectors: np.ndarray, sections: Sequence[InducedSection], ends: list[int], confidence: float
) -> list[str | None]:
    """The learned recurring title of each section where confident, each name at most once per document."""
    if model.titles is None or confidence > 1:
        return [None] * len(sections)
    spans = [(s.first - 1, end, s.level) for s, end in zip(sections, ends)]
    with one_thread():
        probabilities = model.titles.probabilities(title_features(vectors, spans, len(vectors)))
    classes = model.titles.classes.tolist()
    best = [None] * len(sections)
    claims = []
    for index, row in enumerate(probabilities):
        column = int(np.argmax(row))
        label = int(classes[column])
        if label != 0 and row[column] >= confidence:
            claims.append((-float(row[column]), index, label))
    taken = set()
    for _, index, label in sorted(claims):
        if label not in taken:
            taken.add(label)
            best[index] = model.title_names[label - 1]
    return best


def induce_learned(
    documents: pl.DataFrame,
    paragraphs: pl.DataFrame,
    encode: Encode,
    model: LearnedInducer,
    *,
    threshold: float | None = None,
    level_threshold: float | None = None,
    max_levels: int = 2,
    min_section_paragraphs: int = 1,
    title_confidence: float = 0.5,
    title_words: int = 6,
    max_candidates: int = 30,
    diversity: float = 0.3,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Induce a section tree for every document with a trained ``model``: ``(sections, status)``, the
    tables of :func:`.segmentation.induce_segmentation` (gold schema, ``verify_sections``-clean; status
    as there). ``threshold`` / ``level_threshold``: None takes the model's; ``max_levels`` 1 or 2;
    ``title_confidence`` above 1 turns learned titles off."""
    if max_levels not in (1, 2):
        raise ValueError(f"max_levels must be 1 or 2, not {max_levels}")
    if min_section_paragraphs < 1 or title_words < 1:
        raise ValueError("min_section_paragraphs and title_words must be at least 1")
    threshold = model.threshold if threshold is None else threshold
    level_threshold = model.level_threshold if level_threshold is None else level_threshold
    texts_by_doc = paragraph_texts(documents, paragraphs)
    vectors_by_doc = paragraph_vectors(texts_by_doc, encode, "paragraph")
    first = next(iter(vectors_by_doc.values()), None)
    if first is not None:  # the first point the encoder's width is known: before any title is predicted
        model.check_vector_width(first.shape[1], "the encoder")
    features = {doc_id: gap_features(texts, vectors_by_doc[doc_id]) for doc_id, texts in texts_by_doc.items()}
    stacked = np.concatenate(list(features.values()))
    p_all, q_all = model.boundary.probability(stacked), model.level.probability(stacked)
    specs, status_rows, offset = {}, [], 0
    for doc_id, texts in with_progress(texts_by_doc.items(), log, "induced", len(texts_by_doc), "documents"):
        vectors, n = vectors_by_doc[doc_id], len(texts)
        rows = slice(offset, offset + n - 1)
        offset += n - 1
        sections, reason = learned_tiling(
            p_all[rows],
            q_all[rows],
            n,
            threshold=threshold,
            level_threshold=level_threshold,
            max_levels=max_levels,
            min_section_paragraphs=min_section_paragraphs,
        )
        problems = check_sections(sections, 1, n)
        if problems:  # legal by construction; reaching this is a bug
            raise AssertionError(f"{doc_id}: learned sections are not a legal tiling: {problems[:3]}")
        ends = subtree_ends(sections)
        titles = _canonical_titles(model, vectors, sections, ends, title_confidence)
        open_ = [i for i, name in enumerate(titles) if name is None]
        keyphrases = keyphrase_titles(
            texts,
            vectors,
            [sections[i] for i in open_],
            [ends[i] for i in open_],
            encode,
            title_words=title_words,
            max_candidates=max_candidates,
            diversity=diversity,
        )
        for i, title in zip(open_, keyphrases):
            titles[i] = title
        sections = [replace(s, title=title) for s, title in zip(sections, titles)]
        specs[doc_id] = [SectionSpec(s.title, s.level, s.first - 1, s.last) for s in sections]
        status_rows.append(status_row(doc_id, sections, reason))
    return induced_tables(documents, paragraphs, texts_by_doc, specs, status_rows, "learned inducer")


# The inducer's options, as config keys (inducers.<name> of kind learned; the schema states the same
# defaults, checked by tests/structure/test_learned.py).
OPTIONS = tuple(name for name, p in inspect.signature(induce_learned).parameters.items() if p.kind == p.KEYWORD_ONLY)
