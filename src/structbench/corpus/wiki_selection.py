"""Document selection shared by the Wikipedia-FA builder and the WikiText adapter (docs/method.md §4).

Kuehlkamp et al., appendix E: shuffle the candidate titles under the seed, walk them, accept a document if
it passes the quality filters and its topic bucket is not full, stop at ``n_docs``. The topic
classifier matches labels (Wikipedia: the non-hidden categories; WikiText, which has none: the
title) against the six-bucket keyword table of appendix E.1; the first bucket in table order with
a matching keyword wins, ``other`` is the fallback.

Keyword matching is case-insensitive over whole words, in singular or plural (``hurricanes``
matches "hurricane", ``cities`` "city", ``war`` "wars"; titles need the singular); the table's
three stems (``biograph``, ``astronom``, ``geolog``) match any word they begin ("Biographies",
"Astronomers"). Whole words keep ``opera`` out of "Operation" and ``war`` out of "Edward", at the
price of "warships" not matching ``war``. The table is the paper's published example keywords
(appendix E.1; its full table was not published).
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from structbench.corpus.build import (
    CorpusTables,
    build_tables,
    document_depth,
    funnel_frame,
    heading_count,
    skipped_frame,
    word_count,
)
from structbench.corpus.verify import assert_verified
from structbench.datamodel import ParsedDocument
from structbench.defaults import SEED

TOPIC_KEYWORDS: dict[str, tuple[str, ...]] = {
    "history_war": ("battle", "war", "military", "campaign", "siege", "history", "empire", "dynasty"),
    "biography": ("births", "deaths", "people", "biograph", "politicians", "writers", "actors", "monarchs"),
    "science_nature": ("species", "birds", "mammals", "physics", "chemistry", "biology", "astronom", "geolog"),
    "arts_media": ("albums", "songs", "films", "novels", "paintings", "opera", "television", "video games"),
    "geo_places": ("geography", "cities", "rivers", "mountains", "roads", "buildings", "hurricanes", "storms"),
}
OTHER_BUCKET = "other"
BUCKETS = (*TOPIC_KEYWORDS, OTHER_BUCKET)

DEFAULT_FILTERS = {
    "min_words": 3000,
    "min_depth": 3,
    "min_sections": 12,
    "n_docs": 200,
    "max_per_bucket": 60,
    "seed": SEED,
}


STEMS = frozenset({"biograph", "astronom", "geolog"})  # the paper's stems: they match any word they begin


def _keyword_pattern(keyword: str) -> str:
    if keyword in STEMS:
        return re.escape(keyword) + r"\w*"
    forms = {keyword}
    if keyword.endswith("ies"):
        forms.add(keyword[:-3] + "y")
    elif keyword.endswith("s"):
        forms.add(keyword[:-1])
    elif keyword.endswith("y") and keyword[-2:-1] not in tuple("aeiou"):
        forms.add(keyword[:-1] + "ies")
    else:
        forms.add(keyword + "s")
    return "|".join(re.escape(form) for form in sorted(forms, key=len, reverse=True))


_BUCKET_PATTERNS = {
    bucket: re.compile(r"\b(?:" + "|".join(_keyword_pattern(k) for k in keywords) + r")\b", re.IGNORECASE)
    for bucket, keywords in TOPIC_KEYWORDS.items()
}


def topic_bucket(labels: Iterable[str]) -> str:
    """The first bucket (table order) with a keyword in any of ``labels``; ``other`` when none."""
    labels = [label for label in labels if label]
    for bucket, pattern in _BUCKET_PATTERNS.items():
        if any(pattern.search(label) for label in labels):
            return bucket
    return OTHER_BUCKET


@dataclass(frozen=True)
class Filters:
    """The quality filters and the walk (Kuehlkamp et al., table 6). ``None`` disables a limit.

    - ``min_words``: whitespace-separated words of the body paragraphs;
    - ``min_depth``: ``build.document_depth`` (title = 1, so a flat section list is depth 2 and
      ``min_depth 3`` asks for a subsection, as MediaWiki's ``===`` level);
    - ``min_sections``: headings (the lead section does not count);
    - ``n_docs``: stop after this many accepted; ``max_per_bucket``: the per-topic ceiling;
    - ``seed``: the shuffle of the candidate list (the study's seed, ``defaults.SEED``, by default).
    """

    min_words: int | None = DEFAULT_FILTERS["min_words"]
    min_depth: int | None = DEFAULT_FILTERS["min_depth"]
    min_sections: int | None = DEFAULT_FILTERS["min_sections"]
    n_docs: int | None = DEFAULT_FILTERS["n_docs"]
    max_per_bucket: int | None = DEFAULT_FILTERS["max_per_bucket"]
    seed: int = DEFAULT_FILTERS["seed"]

    @classmethod
    def from_spec(cls, spec: dict) -> Filters:
        values = {key: spec[key] for key in DEFAULT_FILTERS if key in spec}
        for key, value in values.items():
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                raise ValueError(f"corpus spec key {key!r} must be a non-negative integer or null, got {value!r}")
        return cls(**values)

    def rejection(self, doc: ParsedDocument) -> str | None:
        """The first filter ``doc`` fails (``too_few_words``, ``too_shallow``, ``too_few_sections``)."""
        if self.min_words is not None and word_count(doc.paragraphs) < self.min_words:
            return "too_few_words"
        if self.min_depth is not None and document_depth(doc.sections) < self.min_depth:
            return "too_shallow"
        if self.min_sections is not None and heading_count(doc.sections) < self.min_sections:
            return "too_few_sections"
        return None


def shuffled(titles: Sequence[str], seed: int) -> list[str]:
    """The walk order: ``titles`` in the given order, shuffled by ``random.Random(seed)``."""
    order = list(titles)
    random.Random(seed).shuffle(order)
    return order


@dataclass
class Selection:
    accepted: list[tuple[ParsedDocument, str]]  # (document, bucket) in walk order
    rejected: list[tuple[str, str]]  # (title, reason)
    visited: int
    candidates: int


def select_documents(
    titles: Sequence[str],
    get_document: Callable[[str], tuple[ParsedDocument | None, list[str], str | None]],
    filters: Filters,
) -> Selection:
    """Walk ``titles`` shuffled under ``filters.seed`` and accept documents (Kuehlkamp et al., appendix E).

    ``get_document(title)`` returns ``(document or None, topic labels, reason when None)``; it is
    called lazily, so a walk that reaches ``n_docs`` fetches nothing more.
    """
    counts = dict.fromkeys(BUCKETS, 0)
    accepted: list[tuple[ParsedDocument, str]] = []
    rejected: list[tuple[str, str]] = []
    visited = 0
    for title in shuffled(titles, filters.seed):
        if filters.n_docs is not None and len(accepted) >= filters.n_docs:
            break
        visited += 1
        doc, labels, reason = get_document(title)
        if doc is None:
            rejected.append((title, reason or "unavailable"))
            continue
        reason = filters.rejection(doc)
        if reason is not None:
            rejected.append((title, reason))
            continue
        bucket = topic_bucket(labels)
        if filters.max_per_bucket is not None and counts[bucket] >= filters.max_per_bucket:
            rejected.append((title, "bucket_full"))
            continue
        counts[bucket] += 1
        doc.meta["topic_bucket"] = bucket
        doc.meta["selection_rank"] = len(accepted)
        accepted.append((doc, bucket))
    return Selection(accepted=accepted, rejected=rejected, visited=visited, candidates=len(titles))


def selection_funnel(selection: Selection) -> list[tuple[str, str, str, int]]:
    """Funnel rows: candidates, visited, rejected per reason, accepted per bucket, out."""
    rows = [("documents", "in", "", selection.candidates), ("documents", "visited", "", selection.visited)]
    reasons: dict[str, int] = {}
    for _, reason in selection.rejected:
        reasons[reason] = reasons.get(reason, 0) + 1
    rows += [("documents", "rejected", reason, count) for reason, count in sorted(reasons.items())]
    per_bucket = dict.fromkeys(BUCKETS, 0)
    for _, bucket in selection.accepted:
        per_bucket[bucket] += 1
    rows += [("documents", "accepted", bucket, count) for bucket, count in per_bucket.items()]
    rows.append(("documents", "out", "", len(selection.accepted)))
    return rows


def selection_tables(corpus: str, selection: Selection, skipped: list[tuple[str, str, str]]) -> CorpusTables:
    """The verified tables of a selection's accepted documents, with its funnel and counted skips
    (``skipped``: ``(source, record, reason)`` rows, the selection's rejections included by the caller)."""
    documents, paragraphs, sections = build_tables(corpus, [doc for doc, _ in selection.accepted])
    assert_verified(paragraphs, sections, documents)
    return CorpusTables(
        documents=documents,
        paragraphs=paragraphs,
        sections=sections,
        funnel=funnel_frame(selection_funnel(selection)),
        skipped=skipped_frame(skipped),
    )
