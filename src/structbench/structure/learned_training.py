"""Training the learned inducer (docs/method.md §5, "Learned inducer"; the method is in :mod:`.learned`'s
docstring): examples from documents with gold headings, the boundary and level models, thresholds chosen out
of fold, and the recurring-title classifier, each a named step of :func:`train_learned_inducer`.
scikit-learn is imported inside the steps that fit, never at import time."""

from __future__ import annotations

import hashlib
import inspect
import logging
import math
import time
from collections import Counter
from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np
import polars as pl

from structbench.structure.agreement import match_boundaries, pk, section_boundaries, windowdiff
from structbench.structure.learned import decode_boundaries
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
    one_thread,
    printable_title,
)
from structbench.structure.model_free import Encode, paragraph_vectors
from structbench.structure.sections import paragraph_texts
from structbench.structure.segmentation import tiling

log = logging.getLogger(__name__)

INNER_FOLDS = 3  # out-of-fold probabilities for choosing the thresholds
THRESHOLD_GRID = tuple(round(0.05 * i, 2) for i in range(2, 19))  # 0.10 .. 0.90
MAX_TITLE_CLASSES = 50  # the most frequent recurring titles a model learns


class GoldStarts(NamedTuple):
    """One document's gold section starts (0-based paragraphs): of every section, and of level-1 ones."""

    every: set[int]
    top: set[int]


class DocumentGaps(NamedTuple):
    """One training document's gaps: their :data:`FEATURES` rows, and per gap whether a gold section starts
    after it (``boundary``) and whether that section is top-level (``top``), as 0/1."""

    doc_id: str
    features: np.ndarray
    boundary: np.ndarray
    top: np.ndarray


class HeldOutDocument(NamedTuple):
    """One training document's out-of-fold boundary (``p``) and level (``q``) probabilities per gap, its
    gold boundaries (all levels, top level) and its number of paragraphs."""

    p: np.ndarray
    q: np.ndarray
    gold: set[int]
    gold_top: set[int]
    n: int


class GoldSection(NamedTuple):
    """A gold section as the title step reads it: title, level and paragraph range ``start..end - 1``."""

    title: str
    level: int
    start: int
    end: int


def seeded_order(doc_ids: Sequence[str], seed: int | str) -> list[str]:
    """``doc_ids`` in the order of ``sha256(seed:doc_id)``: a document's place depends on the seed and its id
    alone, never on the corpus order."""
    return sorted(doc_ids, key=lambda doc_id: hashlib.sha256(f"{seed}:{doc_id}".encode()).hexdigest())


def gold_starts(sections: pl.DataFrame) -> dict[str, GoldStarts]:
    """Per document: the paragraphs where any gold section starts, and where a level-1 section starts."""
    result: dict[str, GoldStarts] = {}
    for doc_id, start, level in sections.select("doc_id", "para_start", "level").iter_rows():
        starts = result.setdefault(doc_id, GoldStarts(set(), set()))
        starts.every.add(int(start))
        if level == 1:
            starts.top.add(int(start))
    return result


def check_boundary_classes(texts_by_doc: dict[str, list[str]], starts: dict[str, GoldStarts], source: str) -> None:
    """A named ValueError when the gaps of ``source`` are all section starts or none is (a boundary model
    needs both); a warning when their section starts are all top-level or none is (the level model is then
    that one class: every induced section top-level, or every one deeper)."""
    none = GoldStarts(set(), set())
    gaps = sum(len(texts) - 1 for texts in texts_by_doc.values())
    every = sum(len(starts.get(d, none).every & set(range(1, len(t)))) for d, t in texts_by_doc.items())
    top = sum(len(starts.get(d, none).top & set(range(1, len(t)))) for d, t in texts_by_doc.items())
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


def gap_examples(
    texts_by_doc: dict[str, list[str]], vectors_by_doc: dict[str, np.ndarray], starts: dict[str, GoldStarts]
) -> list[DocumentGaps]:
    """Every document's gaps as examples: features and the two labels (module docstring, "Examples")."""
    examples = []
    for doc_id, texts in texts_by_doc.items():
        gold = starts.get(doc_id, GoldStarts(set(), set()))
        gaps = np.arange(1, len(texts))
        examples.append(
            DocumentGaps(
                doc_id,
                gap_features(texts, vectors_by_doc[doc_id]),
                np.isin(gaps, list(gold.every)).astype(int),
                np.isin(gaps, list(gold.top)).astype(int),
            )
        )
    return examples


def fit_boosted_trees(x: np.ndarray, y: np.ndarray, seed: int):
    """scikit-learn's fitted ``HistGradientBoostingClassifier`` of ``y`` (0/1, both present) on ``x``."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    model = HistGradientBoostingClassifier(
        max_iter=200, learning_rate=0.1, max_leaf_nodes=31, min_samples_leaf=20, early_stopping=False, random_state=seed
    )
    with one_thread():
        return model.fit(x, y)


def fit_probability(x: np.ndarray, y: np.ndarray, seed: int) -> Probability:
    """The probability of label 1 learned from ``x``: boosted trees as arrays, or a constant when ``y`` has
    one class (or none)."""
    if len(y) == 0 or y.min() == y.max():
        return ConstantProbability(float(y[0]) if len(y) else 0.0)
    return TreeEnsemble.from_fitted(fit_boosted_trees(x, y, seed))


def probability_of(model: Probability, x: np.ndarray) -> np.ndarray:
    return model.probability(x) if len(x) else np.zeros(0)


def out_of_fold_probabilities(
    examples: list[DocumentGaps], seed: int, boundary: Probability, level: Probability
) -> list[HeldOutDocument]:
    """Each document's boundary and level probabilities from models fitted on the other :data:`INNER_FOLDS`
    folds of documents (by ``sha256(seed:inner:doc_id)`` rank); with fewer documents than folds, the final
    models' in-sample probabilities."""
    x, y, y_top = stacked(examples)
    owner = np.repeat(np.arange(len(examples)), [len(e.boundary) for e in examples])
    if len(examples) >= INNER_FOLDS:
        rank = {doc_id: i for i, doc_id in enumerate(seeded_order([e.doc_id for e in examples], f"{seed}:inner"))}
        fold = np.array([rank[e.doc_id] % INNER_FOLDS for e in examples], int)[owner]
        p, q = np.zeros(len(y)), np.zeros(len(y))
        for k in range(INNER_FOLDS):
            train, held = fold != k, fold == k
            p[held] = probability_of(fit_probability(x[train], y[train], seed), x[held])
            level_rows = train & (y == 1)
            q[held] = probability_of(fit_probability(x[level_rows], y_top[level_rows], seed), x[held])
    else:
        p, q = probability_of(boundary, x), probability_of(level, x)
    held_out, offset = [], 0
    for example in examples:
        rows = slice(offset, offset + len(example.boundary))
        offset += len(example.boundary)
        gold = {int(g) + 1 for g in np.flatnonzero(example.boundary)}
        gold_top = {int(g) + 1 for g in np.flatnonzero(example.top)}
        held_out.append(HeldOutDocument(p[rows], q[rows], gold, gold_top, len(example.boundary) + 1))
    return held_out


def stacked(examples: list[DocumentGaps]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """All documents' gaps in one ``(features, boundary labels, top labels)``."""
    if not examples:
        return np.zeros((0, len(FEATURES))), np.zeros(0, int), np.zeros(0, int)
    return (
        np.concatenate([e.features for e in examples]),
        np.concatenate([e.boundary for e in examples]).astype(int),
        np.concatenate([e.top for e in examples]).astype(int),
    )


def decoding_score(gold: set[int], ours: set[int], n: int) -> float:
    """One document's decoding objective: ``1 - Pk - WindowDiff`` plus boundary F1 (tolerance one)."""
    return 1 - pk(gold, ours, n) - windowdiff(gold, ours, n) + match_boundaries(gold, ours).f1


def best_of_grid(score: Callable[[float], list[float]]) -> float:
    """The :data:`THRESHOLD_GRID` value with the highest mean of ``score(threshold)`` (ties: the lower)."""
    best, best_value = THRESHOLD_GRID[0], -math.inf
    for threshold in THRESHOLD_GRID:
        values = score(threshold)
        value = float(np.mean(values)) if values else 0.0
        if value > best_value + 1e-12:
            best, best_value = threshold, value
    return best


def choose_thresholds(held_out: list[HeldOutDocument], min_section_paragraphs: int) -> tuple[float, float]:
    """The boundary threshold maximising the mean :func:`decoding_score` over all levels, then the level
    threshold maximising it over top-level boundaries of the documents decoded with the first."""
    threshold = best_of_grid(
        lambda t: [
            decoding_score(d.gold, set(decode_boundaries(d.p, t, min_section_paragraphs)), d.n)
            for d in held_out
            if d.n > 1
        ]
    )
    decoded = [decode_boundaries(d.p, threshold, min_section_paragraphs) for d in held_out]

    def top_level_scores(level_threshold: float) -> list[float]:
        values = []
        for document, boundaries in zip(held_out, decoded):
            levels = [1 if document.q[b - 1] >= level_threshold else 2 for b in boundaries]
            top = {s.first - 1 for s in tiling(boundaries, levels, document.n) if s.level == 1}
            values.append(decoding_score(document.gold_top, section_boundaries(top, document.n), document.n))
        return values

    return threshold, best_of_grid(top_level_scores)


def recurring_titles(
    sections: pl.DataFrame,
    texts_by_doc: dict[str, list[str]],
    vectors_by_doc: dict[str, np.ndarray],
    title_min_docs: int,
) -> tuple[TitleClassifier | None, tuple[str, ...]]:
    """The title classifier and its class names (module docstring, "Titles"): titles heading sections in at
    least ``title_min_docs`` documents, at most :data:`MAX_TITLE_CLASSES`; None when fewer than two classes
    occur. A name is one line within the induced titles' bound (:func:`.learned_model.printable_title`), as
    loading a model requires."""
    from sklearn.linear_model import LogisticRegression

    own_sections: dict[str, list[GoldSection]] = {doc_id: [] for doc_id in texts_by_doc}
    columns = ("doc_id", "title", "level", "para_start", "para_end")
    for doc_id, title, level, start, end in sections.sort("doc_id", "section_id").select(columns).iter_rows():
        if doc_id in own_sections and end > start:
            own_sections[doc_id].append(GoldSection(title or "", int(level), int(start), int(end)))
    heads = Counter()
    for doc_id in texts_by_doc:
        heads.update({key for s in own_sections[doc_id] if printable_title(key := normal_title(s.title))})
    frequent = [
        name for name, count in sorted(heads.items(), key=lambda kv: (-kv[1], kv[0])) if count >= title_min_docs
    ]
    classes = frequent[:MAX_TITLE_CLASSES]
    class_index = {name: i + 1 for i, name in enumerate(classes)}  # 0: any other title
    title_rows, title_labels, surfaces = [], [], Counter()
    for doc_id, own in own_sections.items():
        if not own:
            continue
        n = len(texts_by_doc[doc_id])
        spans = []
        for index, section in enumerate(own):
            end = next((later.start for later in own[index + 1 :] if later.level <= section.level), n)
            spans.append((section.start, end, section.level))
        title_rows.append(title_features(vectors_by_doc[doc_id], spans, n))
        for section in own:
            key = normal_title(section.title)
            title_labels.append(class_index.get(key, 0))
            if key in class_index:
                surfaces[(key, section.title.strip())] += 1
    classifier = None
    if classes and title_rows and len(set(title_labels)) > 1:
        with one_thread():
            fitted = LogisticRegression(C=1.0, max_iter=1000).fit(np.concatenate(title_rows), np.array(title_labels))
        classifier = TitleClassifier.from_fitted(fitted)
    names = []
    for key in classes:
        spellings = sorted((-count, surface) for (k, surface), count in surfaces.items() if k == key)
        names.append(printable_title(title_without_numbering(spellings[0][1]) if spellings else key))
    return classifier, tuple(names)


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
    started = time.perf_counter()
    texts_by_doc = paragraph_texts(documents, paragraphs)
    starts = gold_starts(sections)
    check_boundary_classes(texts_by_doc, starts, source)
    vectors_by_doc = paragraph_vectors(texts_by_doc, encode, "paragraph")
    embedded = time.perf_counter()
    examples = gap_examples(texts_by_doc, vectors_by_doc, starts)
    x, y, y_top = stacked(examples)
    boundary = fit_probability(x, y, seed)
    level = fit_probability(x[y == 1], y_top[y == 1], seed)
    held_out = out_of_fold_probabilities(examples, seed, boundary, level)
    threshold, level_threshold = choose_thresholds(held_out, min_section_paragraphs)
    titles, names = recurring_titles(sections, texts_by_doc, vectors_by_doc, title_min_docs)
    finished = time.perf_counter()
    training = {
        "documents": len(texts_by_doc),
        "paragraphs": int(sum(len(t) for t in texts_by_doc.values())),
        "gaps": len(y),
        "positives": int(y.sum()),
        "top_level_positives": int(y_top.sum()),
        "features": list(FEATURES),
        "threshold": threshold,
        "level_threshold": level_threshold,
        "min_section_paragraphs": min_section_paragraphs,
        "recurring_titles": list(names),
        "title_min_docs": title_min_docs,
        "seed": seed,
        "seconds": round(finished - started, 3),
        "embedding_seconds": round(embedded - started, 3),
        "fit_seconds": round(finished - embedded, 3),
    }
    log.info("trained a learned inducer on %d documents, %d gaps (%d boundaries)", len(texts_by_doc), len(y), y.sum())
    return LearnedInducer(boundary, level, titles, names, threshold, level_threshold, training)


TRAIN_OPTIONS = tuple(
    name for name, p in inspect.signature(train_learned_inducer).parameters.items() if p.kind == p.KEYWORD_ONLY
)
