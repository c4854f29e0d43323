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
``min_section_paragraphs``; no valley deep enough). ``failed`` is the LLM inducer's word for the same
outcome, a single section over the whole document, so reports count both inducers alike. ``repaired``
never occurs: the tiling is legal by construction (checked with ``induction.check_sections``; a
violation is a bug and raises).

**Defaults** (``window=3, depth_cutoff=0.5, min_section_paragraphs=2, max_levels=2, level_cutoff=0.0,
unit="paragraph"``) were chosen on QASPER *train* papers only (40 papers evenly spaced through
``qasper-train-v0.3.rebuilt.json``, 2,742 paragraphs; never dev, never WikiText) with the packaged MiniLM
(all-MiniLM-L6-v2), by ``benchmarks/tune_segmentation.py`` over a 486-setting grid (unit x window 2-4 x
cutoff 0/0.5/1 x minimum 1-3 x levels 1-3 x level cutoff 0/0.5/1; three levels score exactly as two:
the metrics tell only top-level starts from all starts). Objective: the mean over the
all-levels and top-level views of ``(1 - WindowDiff) + boundary F1 - 0.5 |ln(sections/doc / gold's)|``.
Measured (``structure.agreement``; Pk / WindowDiff / boundary F1 (tolerance 1), all levels | top level;
sections per document all | top)::

    gold                                   -                 -                  15.9 | 11.3
    this inducer (defaults)           .428 / .517 / .528 | .443 / .468 / .330    19.7 |  8.6
    single section                    .514 / .514 / .000 | .409 / .409 / .000     1.0 |  1.0
    equal split, gold's count (oracle) .453 / .554 / .626 | .547 / .618 / .492   15.9 | 15.9
    equal split, gold's top count      .494 / .546 / .494 | .488 / .524 / .503   11.3 | 11.3

The inducer has the best all-level Pk of these; its all-level WindowDiff ties the single section's
(which WindowDiff does not punish for missing boundaries more than for misplacing them) and beats the equal
splits. Boundary F1 with a one-paragraph tolerance rewards evenly spread boundaries, so the equal split that
is *told* gold's section count beats it there. Top-level WindowDiff is best for the single section (few
top-level sections score well on it). The best
flat setting (``max_levels=1, window=4, depth_cutoff=0``; objective 0.837) edges out the chosen
hierarchical one (0.813), and sentence vectors (best hierarchical: ``window=2, depth_cutoff=1,
min_section_paragraphs=3``, 0.828) cost ~3.6x the encoder inputs (9,480 sentences for 2,742 paragraphs)
for a difference inside the noise of 40 papers: paragraph vectors are the default, and the hierarchy is
kept because docs/method.md §5 asks for one.
"""

from __future__ import annotations

import inspect
import logging
import re
from bisect import bisect_left
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np
import polars as pl
import regex

from structbench.corpus.verify import verify_sections
from structbench.datamodel import MAX_LEVEL, SectionSpec
from structbench.graphemes import ELLIPSIS, grapheme_count, grapheme_prefix
from structbench.logs import with_progress
from structbench.sentences import sentence_starts
from structbench.structure.sections import STATUS, InducedSection, check_sections, paragraph_texts, sections_table

log = logging.getLogger(__name__)

Encode = Callable[[list[str]], np.ndarray]

DEPTH_EPSILON = 1e-4  # depths below this are float noise on a flat curve, not valleys
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


# -------------------------------------------------------------------------------------- segmentation


def normalise_rows(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length; an all-zero row stays zero (its cosine with anything is 0)."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)


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
    return np.einsum("ij,ij->i", normalise_rows(left), normalise_rows(right))


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
    vectors = normalise_rows(np.asarray(encode(all_keys), dtype=np.float32)) if all_keys else None
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


# ---------------------------------------------------------------------------------------------- driver


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
    vectors = normalise_rows(summed)
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
    section_vectors = normalise_rows(np.stack(sums))
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


# The inducer's options, as config keys (inducers.<name> of kind segmentation; the schema states the same
# defaults, checked by tests/structure/test_segmentation.py).
OPTIONS = tuple(
    name for name, p in inspect.signature(induce_segmentation).parameters.items() if p.kind == p.KEYWORD_ONLY
)
