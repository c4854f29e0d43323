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

**Model file.** A pickle (format :data:`FORMAT`) of the fitted estimators, the feature names, the chosen
thresholds and the training summary without its timings; its fingerprint is the sha256 of these bytes.
Same training data, options and seed give a byte-identical file (same scikit-learn and numpy versions).
Unpickling runs code: load only model files you trained or trust.
"""

from __future__ import annotations

import hashlib
import inspect
import io
import logging
import math
import pickle
import re
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import polars as pl

from structbench.datamodel import SectionSpec
from structbench.logs import with_progress
from structbench.structure.agreement import match_boundaries, pk, section_boundaries, windowdiff
from structbench.structure.sections import InducedSection, check_sections, paragraph_texts
from structbench.structure.segmentation import (
    STOPWORDS,
    depth_scores,
    gap_similarities,
    induced_tables,
    keyphrase_titles,
    paragraph_vectors,
    status_row,
    subtree_ends,
    tiling,
)

log = logging.getLogger(__name__)

Encode = Callable[[list[str]], np.ndarray]

FORMAT = "structbench-learned-inducer/1"
INNER_FOLDS = 3  # out-of-fold probabilities for choosing the thresholds
THRESHOLD_GRID = tuple(round(0.05 * i, 2) for i in range(2, 19))  # 0.10 .. 0.90
SHORT_WORDS = 25  # a paragraph of fewer words is "short" (a caption, a list item, a heading-like line)
MAX_TITLE_CLASSES = 50  # the most frequent recurring titles a model learns

FEATURES = (
    "cos_adjacent",
    "cos_window2",
    "cos_window3",
    "cos_adjacent_z",
    "cos_local_valley",
    "depth_window2",
    "novelty_max_cos3",
    "lexical_jaccard",
    "lexical_jaccard2",
    "log_chars_before",
    "log_chars_after",
    "short_before",
    "short_after",
    "relative_position",
    "gap_index",
    "gaps_to_end",
    "log_paragraphs",
    "after_opens_digit",
    "after_opening_phrase",
    "after_concluding_phrase",
    "after_connective",
    "before_ends_colon",
    "before_list_item",
    "after_list_item",
    "before_table_or_float",
    "after_table_or_float",
)

_WORDS = re.compile(r"[^\W\d_][\w'-]+")
_OPENING = re.compile(
    r"(in this (section|chapter|part|paper|work|study|article)|this (section|chapter|paper|work)|we |our |"
    r"here,? we|in order to|the (goal|aim) of)",
    re.IGNORECASE,
)
_CONCLUDING = re.compile(
    r"(in this (paper|work|study|article),? we (have )?(presented|proposed|introduced|described|studied|showed)|"
    r"in conclusion|to conclude|to summari[sz]e|in summary|we (have )?presented|future work)",
    re.IGNORECASE,
)
_CONNECTIVE = re.compile(
    r"(however|moreover|furthermore|in addition|additionally|also|then|for example|for instance|similarly|"
    r"therefore|thus|hence|besides|finally|specifically|instead|in contrast|on the other hand|note that)\b",
    re.IGNORECASE,
)
_LIST_ITEM = re.compile(r"([-*•]\s|\(?\d{1,2}[.)]\s|\(?[a-z][.)]\s)")
_FLOAT = re.compile(r"(table|figure|fig\.|algorithm)\s*\d", re.IGNORECASE)
_TITLE_NUMBER = re.compile(r"^\s*([0-9ivxIVX]+[.)]?)+(\.[0-9]+)*\s+")


# ------------------------------------------------------------------------------------------- features


def _content_words(text: str) -> frozenset[str]:
    return frozenset(word for word in (w.lower() for w in _WORDS.findall(text)) if word not in STOPWORDS)


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    union = len(a | b)
    return len(a & b) / union if union else 0.0


def _is_list_item(text: str) -> bool:
    return bool(_LIST_ITEM.match(text))


def _is_table_or_float(text: str) -> bool:
    return text.count("|") >= 2 or bool(_FLOAT.match(text))


def gap_features(texts: Sequence[str], vectors: np.ndarray) -> np.ndarray:
    """The :data:`FEATURES` of a document's ``n - 1`` gaps (row ``g - 1``: the gap before paragraph ``g``),
    float64; an empty array of shape ``(0, len(FEATURES))`` for one paragraph."""
    n = len(texts)
    if n < 2:
        return np.zeros((0, len(FEATURES)))
    adjacent = np.einsum("ij,ij->i", vectors[:-1], vectors[1:]).astype(np.float64)
    window2 = gap_similarities(vectors, 2)
    window3 = gap_similarities(vectors, 3)
    spread = adjacent.std()
    z = (adjacent - adjacent.mean()) / spread if spread > 1e-9 else np.zeros_like(adjacent)
    padded = np.concatenate([[-np.inf], adjacent, [-np.inf]])
    neighbours = np.maximum(padded[:-2], padded[2:])
    valley = np.where(np.isfinite(neighbours), adjacent - neighbours, 0.0)
    depth = depth_scores(window2)
    words = [_content_words(text) for text in texts]
    lengths = np.array([len(text) for text in texts], np.float64)
    n_words = np.array([len(text.split()) for text in texts])
    rows = []
    for g in range(1, n):
        before, after = texts[g - 1], texts[g]
        novelty = float(np.max(vectors[max(0, g - 3) : g] @ vectors[g]))
        pair_before = words[g - 1] | (words[g - 2] if g >= 2 else frozenset())
        pair_after = words[g] | (words[g + 1] if g + 1 < n else frozenset())
        stripped = after.lstrip()
        rows.append(
            (
                adjacent[g - 1],
                window2[g - 1],
                window3[g - 1],
                z[g - 1],
                valley[g - 1],
                depth[g - 1],
                novelty,
                _jaccard(words[g - 1], words[g]),
                _jaccard(pair_before, pair_after),
                math.log1p(lengths[g - 1]),
                math.log1p(lengths[g]),
                float(n_words[g - 1] < SHORT_WORDS),
                float(n_words[g] < SHORT_WORDS),
                g / n,
                g,
                n - g,
                math.log(n),
                float(stripped[:1].isdigit()),
                float(bool(_OPENING.match(stripped))),
                float(bool(_CONCLUDING.search(stripped[:200]))),
                float(bool(_CONNECTIVE.match(stripped))),
                float(before.rstrip().endswith(":")),
                float(_is_list_item(before.lstrip())),
                float(_is_list_item(stripped)),
                float(_is_table_or_float(before.lstrip())),
                float(_is_table_or_float(stripped)),
            )
        )
    return np.asarray(rows, np.float64)


def _gold_starts(sections: pl.DataFrame) -> dict[str, tuple[set[int], set[int]]]:
    """Per document: the paragraphs where any gold section starts, and where a level-1 section starts."""
    result: dict[str, tuple[set[int], set[int]]] = {}
    for doc_id, start, level in sections.select("doc_id", "para_start", "level").iter_rows():
        every, top = result.setdefault(doc_id, (set(), set()))
        every.add(int(start))
        if level == 1:
            top.add(int(start))
    return result


# -------------------------------------------------------------------------------------------- titles


def normal_title(title: str) -> str:
    """A section title as a class: numbering stripped ("3.1 Results" -> "results"), lower case, spaces
    collapsed."""
    return " ".join(_TITLE_NUMBER.sub("", title).lower().split())


def title_features(vectors: np.ndarray, spans: Sequence[tuple[int, int, int]], n_paragraphs: int) -> np.ndarray:
    """One row per section ``(first, end, level)`` (0-based paragraph range ``first..end - 1`` of its own and
    its subsections' paragraphs): first-paragraph vector, mean vector, relative start and end, first and
    last section, level."""
    rows = []
    for index, (first, end, level) in enumerate(spans):
        mean = vectors[first:end].sum(axis=0)
        norm = np.linalg.norm(mean)
        extra = [first / n_paragraphs, end / n_paragraphs, float(index == 0), float(index == len(spans) - 1)]
        extra.append(float(level > 1))
        rows.append(np.concatenate([vectors[first], mean / norm if norm > 0 else mean, extra]))
    return np.asarray(rows, np.float64)


# ---------------------------------------------------------------------------------------------- model


@dataclass
class LearnedInducer:
    """A trained learned inducer: the fitted estimators (``boundary``, ``level``: a classifier or a
    constant probability; ``titles``: a classifier or None), the canonical ``title_names`` of its classes,
    the chosen thresholds, and the JSON-able ``training`` summary. :attr:`fingerprint` is the sha256 of
    the model file's bytes."""

    boundary: object
    level: object
    titles: object | None
    title_names: list[str]
    threshold: float
    level_threshold: float
    training: dict
    features: tuple[str, ...] = FEATURES
    _payload: bytes = field(default=b"", repr=False)

    @property
    def fingerprint(self) -> str:
        return hashlib.sha256(self.payload()).hexdigest()

    def payload(self) -> bytes:
        """The model file's bytes: the pickle of the estimators, settings and the summary without timings."""
        if not self._payload:
            state = {
                "format": FORMAT,
                "features": list(self.features),
                "boundary": self.boundary,
                "level": self.level,
                "titles": self.titles,
                "title_names": list(self.title_names),
                "threshold": self.threshold,
                "level_threshold": self.level_threshold,
                "training": {k: v for k, v in self.training.items() if k not in TIMING_KEYS},
            }
            buffer = io.BytesIO()
            pickle.Pickler(buffer, protocol=4).dump(state)
            self._payload = buffer.getvalue()
        return self._payload

    def save(self, path: str | Path) -> None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_bytes(self.payload())


TIMING_KEYS = ("seconds", "fit_seconds", "embedding_seconds")


def load_learned_inducer(path: str | Path) -> LearnedInducer:
    """A model file written by :meth:`LearnedInducer.save`. It is a pickle: load only files you trust."""
    data = Path(path).read_bytes()
    state = pickle.loads(data)  # noqa: S301 - a model file is trusted input (module docstring)
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        found = state.get("format") if isinstance(state, dict) else type(state).__name__
        raise ValueError(f"{path}: not a learned inducer model of format {FORMAT!r} (found {found!r})")
    if tuple(state["features"]) != FEATURES:
        raise ValueError(f"{path}: trained on features {state['features']}, this code computes {list(FEATURES)}")
    return LearnedInducer(
        boundary=state["boundary"],
        level=state["level"],
        titles=state["titles"],
        title_names=state["title_names"],
        threshold=state["threshold"],
        level_threshold=state["level_threshold"],
        training=state["training"],
        _payload=data,
    )


@dataclass(frozen=True)
class ConstantProbability:
    """A stand-in classifier for a label with one class in training: ``predict_proba`` gives ``p`` for 1."""

    p: float

    def predict_proba(self, x: np.ndarray) -> np.ndarray:
        return np.tile([1.0 - self.p, self.p], (len(x), 1))


def one_thread():
    """scikit-learn's OpenMP (and BLAS) pools held to one thread: on shared cores OpenMP's busy waiting made a
    boosting fit 15-35x slower than one thread (0.19 s against 7 s for 150 gaps, 3.8 s against 58 s for 40,000)."""
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1)


def _fit_binary(x: np.ndarray, y: np.ndarray, seed: int):
    if len(y) == 0 or y.min() == y.max():
        return ConstantProbability(float(y[0]) if len(y) else 0.0)
    from sklearn.ensemble import HistGradientBoostingClassifier

    model = HistGradientBoostingClassifier(
        max_iter=200, learning_rate=0.1, max_leaf_nodes=31, min_samples_leaf=20, early_stopping=False, random_state=seed
    )
    with one_thread():
        return model.fit(x, y)


def _positive(model, x: np.ndarray) -> np.ndarray:
    if not len(x):
        return np.zeros(0)
    with one_thread():
        return model.predict_proba(x)[:, 1]


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
    *,
    seed: int = 0,
    min_section_paragraphs: int = 1,
    title_min_docs: int = 5,
) -> LearnedInducer:
    """Fit the boundary, level and title models on documents with their gold ``sections`` (module
    docstring). ``min_section_paragraphs`` is the decoder's, used when choosing the thresholds;
    ``title_min_docs`` the documents a title must head a section in to become a learned title."""
    from sklearn.linear_model import LogisticRegression

    started = time.perf_counter()
    texts_by_doc = paragraph_texts(documents, paragraphs)
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
                titles_model = LogisticRegression(C=1.0, max_iter=1000).fit(np.concatenate(title_rows), labels)
    names = []
    for key in classes:
        spellings = sorted(((-c, s) for (k, s), c in surfaces.items() if k == key))
        names.append(_TITLE_NUMBER.sub("", spellings[0][1]).strip() if spellings else key)
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
    return LearnedInducer(boundary, level, titles_model, names, threshold, level_threshold, training)


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
        probabilities = model.titles.predict_proba(title_features(vectors, spans, len(vectors)))
    classes = list(model.titles.classes_)
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
