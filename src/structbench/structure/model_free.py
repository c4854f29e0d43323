"""What the two inducers that need no LLM share (docs/method.md §5): the segmentation inducer
(:mod:`.segmentation`) and the learned one (:mod:`.learned`) both read unit-length paragraph vectors from
one ``encode`` call for a whole corpus (:func:`paragraph_vectors`), title their sections with keyphrases of
the sections' own words (:func:`keyphrase_titles`), state a status row per document (:func:`status_row`)
and return the gold-schema ``(sections, status)`` tables, verified (:func:`induced_tables`). This module
imports no model library.

**Titles** (KeyBERT-style, Grootendorst 2020; own code, no dependency): candidate 1-3-word phrases of the
section's text (its subsections' text included), split at punctuation, stopwords allowed inside but
never at either end, words starting with a letter; the ``max_candidates`` most frequent (ties: longer,
then earlier) are embedded in one ``encode`` call per document and ranked by Maximal Marginal Relevance
(Carbonell & Goldstein 1998) against the section vector (the renormalised mean of its paragraph vectors):
``(1 - diversity) * cos(c, section) - diversity * max cos(c, chosen)``. The title is the best phrase, plus
the second when it shares no word with the first and both fit in ``title_words`` words, joined by ", ".
A section without any candidate is titled with its first ``title_words`` words that hold a letter or a
digit, and ``Section <n>`` (its position) when it has none (punctuation only). Every title is also held to
``TITLE_CHARS_PER_WORD * title_words`` characters (cut, ending in "…"): text without spaces (CJK, Thai)
is one long "word". Words and characters are grapheme clusters (``regex``'s ``\\X``), never code
points, so a Thai, Lao, Khmer or Devanagari letter keeps its combining marks: a word is never split at a
mark, and a cut never leaves a base letter without the marks written on it. The hard bound in tokens is
the prefix's (``structbench.prefixes.budget``: half of ``t_max``). Titles are never empty.

**Status** (``induction.STATUS`` columns; ``rounds`` and ``windows`` are always 1, violations, clipped
paragraphs and shortened titles 0): ``usable`` when the document got more than one section; ``failed``
when it got a single section, with the reason (one paragraph; too short for two sections of
``min_section_paragraphs``; no valley deep enough, or no gap's boundary probability reaching the
threshold). ``failed`` is the LLM inducer's word for the same outcome, a single section over the whole
document, so reports count both inducers alike. ``repaired`` never occurs: the tiling is legal by
construction (checked with ``induction.check_sections``; a violation is a bug and raises).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl
import regex

from structbench.corpus.verify import verify_sections
from structbench.datamodel import MAX_LEVEL, SectionSpec
from structbench.graphemes import ELLIPSIS, grapheme_count, grapheme_prefix
from structbench.sentences import sentence_starts
from structbench.structure.sections import STATUS, InducedSection, sections_table
from structbench.vectors import unit_length

log = logging.getLogger(__name__)

Encode = Callable[[list[str]], np.ndarray]

UNITS = ("paragraph", "sentence")
TITLE_CHARS_PER_WORD = 12  # a title of title_words words holds at most this many characters per word

# English function words plus the boilerplate of papers and articles ("figure", "proposed"): never at a
# title phrase's ends.
_STOPWORD_TEXT = """
a about above across after again against all almost also although always am among an and another any are
as at be because been before being below between both but by can cannot could did do does doing done
down during each either else etc even ever every few for from further had has have having he her here
hers herself him himself his how however i if in into is it its itself just least less many may me might
more most much must my myself neither no nor not now of off often on once one only onto or other others
otherwise our ours ourselves out over own per perhaps rather same several shall she should since so some
such than that the their theirs them themselves then there therefore these they this those though
through thus to too toward towards two under until up upon us use used uses using very via was we were
what when where whether which while who whom whose why will with within without would yet you your yours
e.g i.e et al fig figure table section sec eq equation respectively show shows shown propose proposed
present presented see based also first second third new given like well able make makes made get gets
"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())
# A word: whole grapheme clusters, the first opening with a letter (or a non-decimal number such as Ⅻ), the rest
# with a letter, number, _, ' or - (the classes of ``re``'s former ``[^\W\d_][\w'-]*``). ``re`` reads a combining
# mark (Thai ั, Devanagari ्) as no word character, so it split words there and dropped the mark.
_WORD = regex.compile(r"(?=[\p{L}\p{Nl}\p{No}])\X(?:(?=[\p{L}\p{N}_'-])\X)*")
_PHRASE_BREAK = re.compile(r"[.,;:!?()\[\]{}\"“”‘’/|=+*<>]|\s-\s|\s–\s|\s—\s")


# ----------------------------------------------------------------------------------------- vectors


def paragraph_vectors(texts_by_doc: dict[str, list[str]], encode: Encode, unit: str) -> dict[str, np.ndarray]:
    """Unit-length paragraph vectors per document, from one ``encode`` call over the whole corpus."""
    if unit not in UNITS:
        raise ValueError(f"unit must be one of {UNITS}, not {unit!r}")
    texts = [text for paragraphs_of in texts_by_doc.values() for text in paragraphs_of]
    if unit == "paragraph":
        pieces, owner = texts, np.arange(len(texts))
    else:
        split = [_sentences(text) for text in texts]
        pieces = [sentence for sentences in split for sentence in sentences]
        owner = np.repeat(np.arange(len(texts)), [len(sentences) for sentences in split])
    encoded = np.asarray(encode(pieces), dtype=np.float32)
    if encoded.shape[0] != len(pieces):
        raise ValueError(f"encode returned {encoded.shape[0]} rows for {len(pieces)} texts")
    summed = np.zeros((len(texts), encoded.shape[1]), np.float64)
    np.add.at(summed, owner, encoded)
    vectors = unit_length(summed)
    result, offset = {}, 0
    for doc_id, paragraphs_of in texts_by_doc.items():
        result[doc_id] = vectors[offset : offset + len(paragraphs_of)]
        offset += len(paragraphs_of)
    return result


def _sentences(paragraph: str) -> list[str]:
    """The paragraph's sentences (at least one: the paragraph itself)."""
    cuts = [0, *sentence_starts(paragraph), len(paragraph)]
    pieces = [paragraph[a:b].strip() for a, b in zip(cuts, cuts[1:])]
    return [piece for piece in pieces if piece] or [paragraph]


# ------------------------------------------------------------------------------------------- titles


@dataclass
class _Candidate:
    surface: str  # first occurrence as written
    count: int
    first_position: int
    n_words: int


def candidate_phrases(text: str, max_words: int = 3) -> dict[str, _Candidate]:
    """1..``max_words``-word phrases of ``text`` keyed by lower case: runs of words between punctuation,
    no stopword (or one-letter word) at either end, every word starting with a letter."""
    candidates: dict[str, _Candidate] = {}
    position = 0
    for piece in _PHRASE_BREAK.split(text):
        words = _WORD.findall(piece)
        lowered = [word.lower().strip("'-") for word in words]
        for start in range(len(words)):
            position += 1
            if not _can_open(lowered[start]):
                continue
            for length in range(1, max_words + 1):
                end = start + length
                if end > len(words):
                    break
                if not _can_close(lowered[end - 1]):
                    continue
                key = " ".join(lowered[start:end])
                if key in candidates:
                    candidates[key].count += 1
                else:
                    candidates[key] = _Candidate(" ".join(words[start:end]), 1, position, length)
    return candidates


def _can_open(word: str) -> bool:
    """A phrase may start with it: no stopword, no one-letter word, no adverb (-ly)."""
    return len(word) > 1 and word not in STOPWORDS and not word.endswith("ly")


def _can_close(word: str) -> bool:
    """A phrase may end with it: as ``_can_open``, and no past participle (-ed, not -eed), a cheap
    stand-in for "ends in a noun" without a tagger."""
    return _can_open(word) and not (len(word) > 4 and word.endswith("ed") and not word.endswith("eed"))


def shortlist(candidates: dict[str, _Candidate], max_candidates: int) -> list[str]:
    """The ``max_candidates`` most frequent candidate keys (ties: more words, then earlier)."""
    ranked = sorted(
        candidates, key=lambda key: (-candidates[key].count, -candidates[key].n_words, candidates[key].first_position)
    )
    return ranked[:max_candidates]


def mmr_order(candidate_vectors: np.ndarray, target: np.ndarray, n_pick: int, diversity: float) -> list[int]:
    """Maximal Marginal Relevance: repeatedly the candidate maximising
    ``(1 - diversity) * cos(c, target) - diversity * max cos(c, picked)``; ties go to the earlier row."""
    relevance = candidate_vectors @ target
    picked: list[int] = []
    redundancy = np.full(len(candidate_vectors), -np.inf)
    for _ in range(min(n_pick, len(candidate_vectors))):
        score = (1 - diversity) * relevance - diversity * (redundancy if picked else 0.0)
        score[picked] = -np.inf
        best = int(np.argmax(score))  # argmax returns the first maximum: ties broken by position
        picked.append(best)
        redundancy = np.maximum(redundancy, candidate_vectors @ candidate_vectors[best])
    return picked


def compose_title(phrases: Sequence[str], title_words: int) -> str:
    """The first phrase (cut to ``title_words`` words), plus the next one sharing no word with it when
    both fit within ``title_words`` words, joined by ", "."""
    if not phrases:
        return ""
    first = phrases[0].split()[:title_words]
    words = {word.lower() for word in first}
    for other in phrases[1:]:
        other_words = other.split()
        if len(first) + len(other_words) <= title_words and not words & {w.lower() for w in other_words}:
            joined = " ".join(first) + ", " + other
            if grapheme_count(joined) <= TITLE_CHARS_PER_WORD * title_words:
                return joined
    return bounded_words(first, title_words)


def bounded_words(words: Sequence[str], title_words: int) -> str:
    """The first ``title_words`` words joined, and at most ``TITLE_CHARS_PER_WORD * title_words``
    characters (grapheme clusters, :func:`grapheme_prefix`): text without spaces (CJK, Thai) is one
    "word", so words alone bound nothing there."""
    text = " ".join(words[:title_words])
    limit = TITLE_CHARS_PER_WORD * title_words
    return text if grapheme_count(text) <= limit else grapheme_prefix(text, limit).rstrip() + ELLIPSIS


def fallback_title(text: str, title_words: int, position: int) -> str:
    """For a section with no candidate phrase: its first ``title_words`` words that hold a letter or a
    digit (bounded as :func:`bounded_words`), or ``"Section <position>"`` when none does (punctuation
    only: a title of punctuation says nothing)."""
    words = [word for word in text.split() if any(ch.isalnum() for ch in word)]
    return bounded_words(words, title_words) if words else f"Section {position}"


def section_titles(
    section_texts: Sequence[str],
    section_vectors: np.ndarray,
    encode: Encode,
    *,
    title_words: int,
    max_candidates: int,
    diversity: float,
) -> list[str]:
    """One title per section of one document; all candidates go to ``encode`` in one call."""
    phrases = [candidate_phrases(text) for text in section_texts]
    shortlists = [shortlist(candidates, max_candidates) for candidates in phrases]
    all_keys = list(dict.fromkeys(key for keys in shortlists for key in keys))
    surfaces: dict[str, str] = {}  # a phrase's first surface form in the document, for display
    for candidates in phrases:
        for key, candidate in candidates.items():
            surfaces.setdefault(key, candidate.surface)
    vectors = unit_length(np.asarray(encode(all_keys), dtype=np.float32)) if all_keys else None
    row = {key: index for index, key in enumerate(all_keys)}
    titles = []
    for position, (text, keys, target) in enumerate(zip(section_texts, shortlists, section_vectors), 1):
        if not keys:
            titles.append(fallback_title(text, title_words, position))
            continue
        order = mmr_order(vectors[[row[key] for key in keys]], target, 3, diversity)
        title = compose_title([surfaces[keys[i]] for i in order], title_words)
        titles.append(title or fallback_title(text, title_words, position))
    return titles


# ------------------------------------------------------------------------------------------ tables


def subtree_ends(sections: Sequence[InducedSection]) -> list[int]:
    """Each section's last paragraph including its subsections (1-based)."""
    ends = []
    for index, section in enumerate(sections):
        end = sections[-1].last
        for later in sections[index + 1 :]:
            if later.level <= section.level:
                end = later.first - 1
                break
        ends.append(end)
    return ends


def keyphrase_titles(
    texts: Sequence[str],
    vectors: np.ndarray,
    sections: Sequence[InducedSection],
    ends: Sequence[int],
    encode: Encode,
    **title_options,
) -> list[str]:
    """Keyphrase titles (:func:`section_titles`) of ``sections`` of one document, each read over its subtree
    (first paragraph to its ``ends`` entry): the section's text and the renormalised sum of its paragraph vectors."""
    if not sections:
        return []
    section_texts = ["\n\n".join(texts[s.first - 1 : end]) for s, end in zip(sections, ends)]
    sums = [vectors[s.first - 1 : end].sum(axis=0) for s, end in zip(sections, ends)]
    section_vectors = unit_length(np.stack(sums))
    return section_titles(section_texts, section_vectors, encode, **title_options)


def status_row(doc_id: str, sections: Sequence[InducedSection], reason: str) -> tuple:
    """A model-free inducer's ``STATUS`` row of one document (module docstring, "Status")."""
    status = "usable" if len(sections) > 1 else "failed"
    return (doc_id, status, reason, 1, 1, len(sections), 0, 0, sum(s.level > MAX_LEVEL for s in sections), 0, 0)


def induced_tables(
    documents: pl.DataFrame,
    paragraphs: pl.DataFrame,
    texts_by_doc: dict[str, list[str]],
    specs: dict[str, list[SectionSpec]],
    status_rows: list[tuple],
    inducer: str,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``(sections, status)`` of a model-free inducer: the sections table built like gold's and verified (a
    violation is a bug of ``inducer`` and raises), and the status table."""
    induced = sections_table(documents, texts_by_doc, specs)
    violations = verify_sections(paragraphs.filter(pl.col("doc_id").is_in(list(texts_by_doc))), induced)
    if violations:
        raise AssertionError(f"{inducer} sections fail verification:\n" + "\n".join(violations[:20]))
    status_table = pl.DataFrame(status_rows, schema=STATUS, orient="row")
    log.info(
        "%s: %d documents, %d usable",
        inducer,
        status_table.height,
        status_table.filter(pl.col("status") == "usable").height,
    )
    return induced, status_table
