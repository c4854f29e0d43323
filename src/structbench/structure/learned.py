"""A learned structure inducer: boundaries, levels and recurring titles learned from documents with headings.

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

**Features** (:data:`FEATURES`, per gap before paragraph ``g`` of ``n``), chosen because each measures a
cue a reader or TextTiling uses, all cheap given the paragraph vectors:

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
items), and boosted trees need neither scaling nor tuning to do well on such data; it fits tens of
thousands of gaps in seconds on a CPU, is deterministic with early stopping off and a fixed
``random_state``, and is already a dependency (no LightGBM). One model scores boundaries, a second, fitted
on the boundary gaps only, scores "top-level" against "deeper".

**Decoding.** Gaps whose boundary probability reaches ``threshold`` are accepted strongest first (ties:
the earlier gap) whenever every section keeps at least ``min_section_paragraphs`` paragraphs (the
segmentation's rule). A boundary is top-level when its level probability reaches ``level_threshold``,
else level 2 (``max_levels: 1`` keeps every section top-level); a level never rises by more than one over
the section before, the first section is level 1 (:func:`.segmentation.tiling`). Both thresholds default
to the model's own, chosen at training on out-of-fold probabilities (``INNER_FOLDS`` document folds by a
seeded hash of the ids) from :data:`THRESHOLD_GRID`: the boundary threshold maximising the training
documents' mean ``1 - Pk - WindowDiff`` plus boundary F1 (all levels), the level threshold the same over
top-level boundaries (:mod:`.agreement`'s conventions). In-sample probabilities of boosted trees are
overconfident, so thresholds chosen on them would cut too few sections.

**Titles.** Each section is titled from its own words by segmentation's keyphrase titler (bounded in
words and characters), unless the training corpus has recurring section names: titles (lower-cased,
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

import hashlib
import inspect
import logging
import math
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import replace

import numpy as np
import polars as pl

from structbench.datamodel import SectionSpec
from structbench.structure.agreement import match_boundaries, pk, section_boundaries, windowdiff
from structbench.structure.learned_features import (
    FEATURES,
    gap_features,
    normal_title,
    title_features,
    title_without_numbering,
)
from structbench.structure.learned_model import (
    ConstantProbability,
    LearnedInducer,
    Probability,
    TitleClassifier,
    TreeEnsemble,
)
from structbench.structure.sections import InducedSection, check_sections, paragraph_texts
from structbench.structure.segmentation import (
    induced_tables,
    keyphrase_titles,
    paragraph_vectors,
    status_row,
    subtree_ends,
    tiling,
)

log = logging.getLogger(__name__)

Encode = Callable[[list[str]], np.ndarray]

INNER_FOLDS = 3  # out-of-fold probabilities for choosing the thresholds
THRESHOLD_GRID = tuple(round(0.05 * i, 2) for i in range(2, 19))  # 0.10 .. 0.90
MAX_TITLE_CLASSES = 50  # the most frequent recurring titles a model learns


def _gold_starts(sections: pl.DataFrame) -> dict[str, tuple[set[int], set[int]]]:
    """Per document: the paragraphs where any gold section starts, and where a level-1 section starts."""
    result: dict[str, tuple[set[int], set[int]]] = {}
    for doc_id, start, level in sections.select("doc_id", "para_start", "level").iter_rows():
        every, top = result.setdefault(doc_id, (set(), set()))
        every.add(int(start))
        if level == 1:
            top.add(int(start))
    return result


def one_thread():
    """scikit-learn's OpenMP (and BLAS) pools held to one thread: on shared cores OpenMP's busy waiting made a
    boosting fit 15-35x slower than one thread (0.19 s against 7 s for 150 gaps, 3.8 s against 58 s for 40,000)."""
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1)


def fit_boosted_trees(x: np.ndarray, y: np.ndarray, seed: int):
    """scikit-learn's fitted ``HistGradientBoostingClassifier`` of ``y`` (0/1, both present) on ``x``."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    model = HistGradientBoostingClassifier(
        max_iter=200, learning_rate=0.1, max_leaf_nodes=31, min_samples_leaf=20, early_stopping=False, random_state=seed
    )
    with one_thread():
        return model.fit(x, y)


def _fit_binary(x: np.ndarray, y: np.ndarray, seed: int) -> Probability:
    """The probability of label 1 learned from ``x``: boosted trees as arrays, or a constant when ``y`` has
    one class (or none)."""
    if len(y) == 0 or y.min() == y.max():
        return ConstantProbability(float(y[0]) if len(y) else 0.0)
    return TreeEnsemble.from_fitted(fit_boosted_trees(x, y, seed))


def _positive(model: Probability, x: np.ndarray) -> np.ndarray:
    return model.probability(x) if len(x) else np.zeros(0)


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


def _score(gold: set[int], ours: set[int], n: int) -> float:
    """One document's decoding objective: ``1 - Pk - WindowDiff`` plus boundary F1 (tolerance one)."""
    return 1 - pk(gold, ours, n) - windowdiff(gold, ours, n) + match_boundaries(gold, ours).f1


def _best_threshold(documents: list[tuple[np.ndarray, set[int], int]], min_section_paragraphs: int) -> float:
    """The :data:`THRESHOLD_GRID` value maximising the mean :func:`_score` (ties: the lower threshold)."""
    best, best_value = THRESHOLD_GRID[0], -math.inf
    for threshold in THRESHOLD_GRID:
        values = [
            _score(gold, set(decode_boundaries(p, threshold, min_section_paragraphs)), n)
            for p, gold, n in documents
            if n > 1
        ]
        value = float(np.mean(values)) if values else 0.0
        if value > best_value + 1e-12:
            best, best_value = threshold, value
    return best


def _best_level_threshold(documents: list[tuple[list[int], np.ndarray, set[int], int]]) -> float:
    """The level threshold maximising the mean top-level :func:`_score` over documents decoded with the
    boundary threshold (``(boundaries, level probabilities, gold top-level starts, n)``)."""
    best, best_value = THRESHOLD_GRID[0], -math.inf
    for threshold in THRESHOLD_GRID:
        values = []
        for boundaries, q, gold_top, n in documents:
            sections = tiling(boundaries, [1 if p >= threshold else 2 for p in q], n)
            top = {s.first - 1 for s in sections if s.level == 1}
            values.append(_score(gold_top, section_boundaries(top, n), n))
        value = float(np.mean(values)) if values else 0.0
        if value > best_value + 1e-12:
            best, best_value = threshold, value
    return best


# ------------------------------------------------------------------------------------------- training


def check_boundary_classes(
    texts_by_doc: dict[str, list[str]], starts: dict[str, tuple[set[int], set[int]]], source: str
) -> None:
    """A named ValueError when the gaps of ``source`` are all section starts or none is (a boundary model
    needs both); a warning when their section starts are all top-level or none is (the level model is then
    that one class: every induced section top-level, or every one deeper)."""
    gaps = sum(len(texts) - 1 for texts in texts_by_doc.values())
    every = sum(len(starts.get(d, (set(), set()))[0] & set(range(1, len(t)))) for d, t in texts_by_doc.items())
    top = sum(len(starts.get(d, (set(), set()))[1] & set(range(1, len(t)))) for d, t in texts_by_doc.items())
    if every in (0, gaps):
        raise ValueError(
            f"{source}: {'every one' if every else 'none'} of the {gaps} gaps between paragraphs of "
            f"{len(texts_by_doc)} document(s) starts a section, so there is no {'non-' if every else ''}boundary "
            "to learn from: train on documents whose sections have several paragraphs"
        )
    if top in (0, every):
        log.warning(
            "%s: %s of the %d section starts is top-level, so the model learns one level: every section it "
            "induces is %s",
            source,
            "every one" if top else "none",
            every,
            "top-level" if top else "deeper than the first",
        )


def _inner_folds(doc_ids: Sequence[str], seed: int) -> list[int]:
    """Each document's inner fold, by ``sha256(seed:inner:doc_id)`` rank (independent of corpus order)."""
    ranked = sorted(doc_ids, key=lambda d: hashlib.sha256(f"{seed}:inner:{d}".encode()).hexdigest())
    folds = {doc_id: position % INNER_FOLDS for position, doc_id in enumerate(ranked)}
    return [folds[doc_id] for doc_id in doc_ids]


def train_learned_inducer(
    documents: pl.DataFrame,
    paragraphs: pl.DataFrame,
    sections: pl.DataFrame,
    encode: Encode,
    source: str = "the training documents",
    *,
    seed: int = 0,
    min_section_paragraphs: int = 1,
    title_min_docs: int = 5,
) -> LearnedInducer:
    """Fit the boundary, level and title models on documents with their gold ``sections`` (module
    docstring). ``min_section_paragraphs`` is the decoder's, used when choosing the thresholds;
    ``title_min_docs`` the documents a title must head a section in to become a learned title. ``source``
    names the documents in errors and warnings: a ValueError when every gap starts a section or none does
    (nothing to learn boundaries from), a warning when every boundary is top-level or none is."""
    from sklearn.linear_model import LogisticRegression

    started = time.perf_counter()
    texts_by_doc = paragraph_texts(documents, paragraphs)
    check_boundary_classes(texts_by_doc, _gold_starts(sections), source)
    vectors_by_doc = paragraph_vectors(texts_by_doc, encode, "paragraph")
    embedded = time.perf_counter()
    starts = _gold_starts(sections)
    doc_ids = list(texts_by_doc)
    per_doc = []  # (doc_id, features, boundary labels, top labels)
    for doc_id in doc_ids:
        texts, vectors = texts_by_doc[doc_id], vectors_by_doc[doc_id]
        every, top = starts.get(doc_id, (set(), set()))
        gaps = np.arange(1, len(texts))
        per_doc.append(
            (doc_id, gap_features(texts, vectors), np.isin(gaps, list(every)).astype(int), np.isin(gaps, list(top)))
        )
    x = np.concatenate([f for _, f, _, _ in per_doc]) if per_doc else np.zeros((0, len(FEATURES)))
    y = np.concatenate([b for _, _, b, _ in per_doc]).astype(int) if per_doc else np.zeros(0, int)
    y_top = np.concatenate([t for _, _, _, t in per_doc]).astype(int) if per_doc else np.zeros(0, int)
    owner = np.concatenate([[i] * len(b) for i, (_, _, b, _) in enumerate(per_doc)]).astype(int)
    positive = y == 1

    # out-of-fold probabilities choose the thresholds; with fewer than INNER_FOLDS documents, in-sample ones
    fold_of_doc = np.array(_inner_folds(doc_ids, seed))
    p_oof, q_oof = np.zeros(len(y)), np.zeros(len(y))
    if len(doc_ids) >= INNER_FOLDS:
        fold = fold_of_doc[owner] if len(owner) else np.zeros(0, int)
        for k in range(INNER_FOLDS):
            train, held = fold != k, fold == k
            p_oof[held] = _positive(_fit_binary(x[train], y[train], seed), x[held])
            level_rows = train & positive
            q_oof[held] = _positive(_fit_binary(x[level_rows], y_top[level_rows], seed), x[held])
    boundary = _fit_binary(x, y, seed)
    level = _fit_binary(x[positive], y_top[positive], seed)
    if len(doc_ids) < INNER_FOLDS:
        p_oof, q_oof = _positive(boundary, x), _positive(level, x)
    oof_docs, offset = [], 0
    for _, _, labels, top_labels in per_doc:
        rows = slice(offset, offset + len(labels))
        gold = {int(g) + 1 for g in np.flatnonzero(labels)}
        gold_top = {int(g) + 1 for g in np.flatnonzero(top_labels)}
        oof_docs.append((p_oof[rows], q_oof[rows], gold, gold_top, len(labels) + 1))
        offset += len(labels)
    threshold = _best_threshold([(p, gold, n) for p, _, gold, _, n in oof_docs], min_section_paragraphs)
    level_docs = []
    for p, q, _, gold_top, n in oof_docs:
        bounds = decode_boundaries(p, threshold, min_section_paragraphs)
        level_docs.append((bounds, [q[b - 1] for b in bounds], gold_top, n))
    level_threshold = _best_level_threshold(level_docs)

    # recurring titles
    title_rows, title_labels, surfaces = [], [], Counter()
    heads = Counter()
    per_doc_sections = {doc_id: [] for doc_id in doc_ids}
    for doc_id, title, level_of, start, end in (
        sections.sort("doc_id", "section_id").select("doc_id", "title", "level", "para_start", "para_end").iter_rows()
    ):
        if doc_id in per_doc_sections:
            per_doc_sections[doc_id].append((title or "", int(level_of), int(start), int(end)))
    for doc_id in doc_ids:
        heads.update({normal_title(t) for t, _, s, e in per_doc_sections[doc_id] if normal_title(t) and e > s})
    frequent = [
        name for name, count in sorted(heads.items(), key=lambda kv: (-kv[1], kv[0])) if count >= title_min_docs
    ]
    classes = frequent[:MAX_TITLE_CLASSES]
    class_index = {name: i + 1 for i, name in enumerate(classes)}  # 0: any other title
    for doc_id in doc_ids:
        own = [(t, lv, s, e) for t, lv, s, e in per_doc_sections[doc_id] if e > s]
        if not own:
            continue
        n = len(texts_by_doc[doc_id])
        spans = []
        for index, (_, lv, s, _) in enumerate(own):
            end = next((s2 for _, lv2, s2, _ in own[index + 1 :] if lv2 <= lv), n)
            spans.append((s, end, lv))
        title_rows.append(title_features(vectors_by_doc[doc_id], spans, n))
        for t, *_ in own:
            key = normal_title(t)
            title_labels.append(class_index.get(key, 0))
            if key in class_index:
                surfaces[(key, t.strip())] += 1
    titles_model = None
    if classes and title_rows:
        labels = np.array(title_labels)
        if len(set(labels.tolist())) > 1:
            with one_thread():
                fitted = LogisticRegression(C=1.0, max_iter=1000).fit(np.concatenate(title_rows), labels)
            titles_model = TitleClassifier.from_fitted(fitted)
    names = []
    for key in classes:
        spellings = sorted(((-c, s) for (k, s), c in surfaces.items() if k == key))
        names.append(title_without_numbering(spellings[0][1]) if spellings else key)
    finished = time.perf_counter()
    training = {
        "documents": len(doc_ids),
        "paragraphs": int(sum(len(t) for t in texts_by_doc.values())),
        "gaps": len(y),
        "positives": int(y.sum()),
        "top_level_positives": int(y_top.sum()),
        "skipped": 0,
        "features": list(FEATURES),
        "threshold": threshold,
        "level_threshold": level_threshold,
        "min_section_paragraphs": min_section_paragraphs,
        "recurring_titles": names,
        "title_min_docs": title_min_docs,
        "seed": seed,
        "seconds": round(finished - started, 3),
        "embedding_seconds": round(embedded - started, 3),
        "fit_seconds": round(finished - embedded, 3),
    }
    log.info("trained a learned inducer on %d documents, %d gaps (%d boundaries)", len(doc_ids), len(y), y.sum())
    return LearnedInducer(boundary, level, titles_model, tuple(names), threshold, level_threshold, training)


TRAIN_OPTIONS = tuple(
    name for name, p in inspect.signature(train_learned_inducer).parameters.items() if p.kind == p.KEYWORD_ONLY
)


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
    features = {doc_id: gap_features(texts, vectors_by_doc[doc_id]) for doc_id, texts in texts_by_doc.items()}
    stacked = np.concatenate(list(features.values()))
    p_all, q_all = _positive(model.boundary, stacked), _positive(model.level, stacked)
    specs, status_rows, offset = {}, [], 0
    for doc_id, texts in texts_by_doc.items():
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
