"""The learned inducer's features: what it measures at each gap between paragraphs, and of each section
whose recurring title it may name (docs/method.md §5, "Learned inducer"; the list and why each is there are in
:mod:`.learned`'s docstring)."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

import numpy as np

from structbench.structure.model_free import STOPWORDS
from structbench.structure.segmentation import depth_scores, gap_similarities
from structbench.vectors import unit_length

SHORT_WORDS = 25  # a paragraph of fewer words is "short" (a caption, a list item, a heading-like line)

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


def normal_title(title: str) -> str:
    """A section title as a class: numbering stripped ("3.1 Results" -> "results"), lower case, spaces
    collapsed."""
    return " ".join(title_without_numbering(title).lower().split())


def title_without_numbering(title: str) -> str:
    """A section title without its leading numbering ("3.1 Results" -> "Results"), stripped."""
    return _TITLE_NUMBER.sub("", title).strip()


TITLE_POSITION = ("start", "end", "first", "last", "deeper")  # a title row's features after its two vectors


def title_feature_width(dimensions: int) -> int:
    """How many features :func:`title_features` gives a section with vectors of ``dimensions``: the title
    classifier's width, which names the embedder a model was trained with."""
    return 2 * dimensions + len(TITLE_POSITION)


def title_features(vectors: np.ndarray, spans: Sequence[tuple[int, int, int]], n_paragraphs: int) -> np.ndarray:
    """One row per section ``(first, end, level)`` (0-based paragraph range ``first..end - 1`` of its own and
    its subsections' paragraphs): first-paragraph vector, mean vector, then :data:`TITLE_POSITION`: relative
    start and end, first and last section, level (deeper than 1)."""
    rows = []
    for index, (first, end, level) in enumerate(spans):
        mean = vectors[first:end].sum(axis=0)
        extra = [first / n_paragraphs, end / n_paragraphs, float(index == 0), float(index == len(spans) - 1)]
        extra.append(float(level > 1))
        rows.append(np.concatenate([vectors[first], unit_length(mean), extra]))
    return np.asarray(rows, np.float64)
