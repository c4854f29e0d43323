"""The boundaries axis (SPEC section 6): where chunks are cut — structural, fixed size-matched, semantic.

Every chunker returns a CHUNKS table whose chunks tile each document's flat text exactly: a chunk runs
from its first character to the first character of the next chunk, so the whitespace that separates
paragraphs (and sentences, lines, words) belongs to the chunk before it. Every cut falls on a token
start, so ``n_tokens`` (content tokens) of a chunk is the number of the document's tokens that start in
it, and the counts of the chunks of a document add up to the document's count.

Each paragraph is tokenized once; span token counts come from the token start offsets. With a
word-level pre-tokenizer (the study's BERT WordPiece) a cut between two pre-tokens (whitespace,
punctuation, CJK characters) splits nothing, so that count is exactly the token count of the chunk's
own text. The one exception is a cut inside a single pre-token, made only when one pre-token alone
has more than ``t_max`` word pieces (never for BERT WordPiece at ``t_max >= 100``: it reads a word of
over 100 characters as one ``[UNK]``); the chunk after such a cut is counted with the pieces the
whole word had. For a tokenizer that is not word-level, span counts are estimates: size decisions
use them, then every chunk is counted again on its own text and one over ``t_max`` by that count is
cut again (:func:`_own_counts`), so the bound holds for the counts reported.

The rules, in the words of SPEC sections 6 and 17 where they are precise and ours where they are not:

* A **unit** is a section's own paragraphs (structural) or a run of adjacent paragraphs of one section
  whose neighbour cosine similarity reaches the threshold (semantic). Sections without paragraphs
  give no unit.
* **Split**: a unit over ``t_max`` tokens is cut at sentence boundaries (paragraph starts included)
  into the fewest parts that fit ``t_max``, as equal as possible: each cut is the sentence boundary
  nearest its equal-split position ``i * T / k``; where that does not fit (lumpy or over-long
  sentences), the cuts minimizing the sum of squared part sizes (:func:`split_cuts`).
* **Fallback**: a part still over ``t_max`` is a single sentence, and no sentence boundary serves. It
  is cut at line starts (the first non-space character after a line break); a part still over is a
  single line, cut at word starts (a non-space character after whitespace); a part still over is a
  single whitespace-delimited word, cut at token starts — first those that begin a pre-token, then,
  inside one over-long pre-token, any token start. Each level uses :func:`snapped_cuts`: the fewest
  parts, each cut the feasible candidate nearest its equal-split position. The last level can
  always fit, so **no chunk is ever over** ``t_max``.
* **Merge**: then, within each top-level section and left to right, a chunk under ``t_min`` is merged
  with the following chunk, else with the preceding one. A merge never crosses a top-level section
  and never makes a chunk larger than ``t_max`` (the hard bound: an embedder silently truncates past
  its window); a small chunk that fits with neither neighbour stays small, as does a top-level
  section that is one small chunk. A merged chunk keeps the first part's ``section_id`` and the
  deepest path all its parts share.

Bounds that therefore hold for structural and semantic chunks: ``n_tokens <= t_max`` always;
``n_tokens >= t_min`` unless the chunk is the only one of its top-level section or adding either
neighbour in its top-level section would pass ``t_max``. Fixed windows (:func:`fixed_chunks`) hold
``n_tokens <= t_max`` too.

**How each chunk's end was cut** is the CHUNKS column ``cut``, one of :data:`CUT_KINDS`, named after
the strongest boundary at the chunk's end: ``"end"`` (the document's end), ``"section"`` (a section
starts there), ``"paragraph"`` (a paragraph starts there: a split inside a unit, a semantic unit
boundary, a fixed window snapped to a paragraph start), ``"sentence"``, and the fallbacks
:data:`FALLBACK_CUTS` — ``"line"``, ``"word"``, ``"token"``. :func:`cut_counts` counts them for the
corpus report. Chunking time is linear in the text: every step looks up boundaries by bisection and
segments each paragraph once per chunker (``benchmarks/bench_chunk_scaling.py`` measures it).
"""

from __future__ import annotations

import bisect
import dataclasses
import math
import re
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from structbench.datamodel import CHUNKS, empty
from structbench.defaults import FIXED_SNAP_TOKENS, SEMANTIC_THRESHOLD, T_MAX, T_MIN
from structbench.sentences import paragraph_boundaries, sentence_starts_near
from structbench.tokens import TokenCounter, TokenSpans, load_tokenizer

EmbedFn = Callable[[list[str]], np.ndarray]

CUT_KINDS = ("section", "paragraph", "sentence", "line", "word", "token", "end")
"""Values of the CHUNKS column ``cut``, strongest boundary first (definitions in the module docstring)."""
FALLBACK_CUTS = ("line", "word", "token")
"""The cuts made where no sentence boundary served (SPEC section 6: "count each fallback")."""

_TOKENIZE_BATCH_DOCS = 32  # documents tokenized per call: bounds memory, lets tokenizing overlap chunking
_LINE_START = re.compile(r"\n\s*(?=\S)")  # match end: the first non-space character after a line break
_WORD_START = re.compile(r"\s+(?=\S)")  # match end: a non-space character after whitespace


# --------------------------------------------------------------------------------------------------
# Prepared documents


@dataclass
class _Section:
    section_id: int
    path: tuple[str, ...]
    top_id: int
    para_start: int
    para_end: int


@dataclass
class _Doc:
    doc_id: str
    text: str
    para_starts: list[int]
    para_ends: list[int]
    sections: list[_Section]  # non-empty sections, reading order
    tokens: TokenSpans | None = None
    counter: TokenCounter | None = None
    # Per-paragraph lookups made while the document is chunked (released with ``tokens``).
    _sentences: dict[int, tuple[list[int], list[int]]] = field(default_factory=dict, repr=False)
    _pretokens: dict[int, np.ndarray] = field(default_factory=dict, repr=False)

    def __post_init__(self):
        self._section_starts = [self.para_starts[s.para_start] for s in self.sections]

    @property
    def n_chars(self) -> int:
        return len(self.text)

    def para_char_start(self, para: int) -> int:
        """Char offset of paragraph ``para``; one past the last paragraph is the document end."""
        return self.para_starts[para] if para < len(self.para_starts) else len(self.text)

    def section_starts(self) -> list[int]:
        return self._section_starts

    def paragraph_of(self, char: int) -> int:
        """Index of the paragraph holding ``char`` (the one before it when ``char`` lies between two)."""
        return max(bisect.bisect_right(self.para_starts, char) - 1, 0)

    def cut_kind(self, char: int, weakest: str) -> str:
        """The strongest boundary at ``char``: end, section, paragraph, else ``weakest``."""
        if char >= len(self.text):
            return "end"
        if _contains(self._section_starts, char):
            return "section"
        if _contains(self.para_starts, char):
            return "paragraph"
        return weakest

    def sentence_bounds(self, para: int) -> tuple[list[int], list[int]]:
        """Sentence starts of paragraph ``para`` (its own start first): chars and token indices."""
        found = self._sentences.get(para)
        if found is None:
            chars = paragraph_boundaries(self.text, self.para_starts[para], self.para_ends[para])
            found = (chars, [self.tokens.index(c) for c in chars])
            self._sentences[para] = found
        return found

    def sentence_bounds_near(self, para: int, lo_char: int, hi_char: int) -> tuple[list[int], list[int]]:
        """:meth:`sentence_bounds` of paragraph ``para`` restricted to a stretch that covers ``[lo_char, hi_char]``.

        Exactly the paragraph's sentence starts (its own start among them) that lie in some ``[a, b]``
        with ``a <= lo_char`` a sentence start or the paragraph start and ``b >= hi_char`` a sentence
        start or the paragraph end, so the starts nearest any point of ``[lo_char, hi_char]`` on
        either side are among them. Only that stretch is segmented
        (:func:`structbench.sentences.sentence_starts_near`). A tokenizer that is not word-level gets
        the whole paragraph, since two sentence starts could then share a token index.
        """
        if para in self._sentences or not self.counter.additive:
            return self.sentence_bounds(para)
        start = self.para_starts[para]
        text = self.text[start : self.para_ends[para]]
        a, _, starts = sentence_starts_near(text, max(lo_char - start, 0), min(max(hi_char - start, 0), len(text)))
        chars = ([start] if a == 0 else []) + [start + b for b in starts]
        return chars, [self.tokens.index(c) for c in chars]

    def pretoken_starts(self, lo: int, hi: int) -> np.ndarray:
        """Indices of the tokens in ``[lo, hi)`` that begin a pre-token (no word piece continues there)."""
        out = []
        para = self.paragraph_of(self.tokens.starts[lo]) if lo < len(self.tokens) else len(self.para_starts)
        while lo < hi and para < len(self.para_starts):
            first = self.tokens.index(self.para_starts[para])
            last = self.tokens.index(self.para_ends[para])
            if last > lo:
                flags = self._pretoken_flags(para, last - first)
                a, b = max(lo, first), min(hi, last)
                out.append(np.flatnonzero(flags[a - first : b - first]) + a)
            para += 1
            if last >= hi:
                break
        return np.concatenate(out) if out else np.zeros(0, dtype=np.int64)

    def _pretoken_flags(self, para: int, n_tokens: int) -> np.ndarray:
        """Per token of paragraph ``para``: does it begin a pre-token? Tokenized again, only when needed."""
        flags = self._pretokens.get(para)
        if flags is None:
            encoding = self.counter.tokenizer.encode(
                self.text[self.para_starts[para] : self.para_ends[para]], add_special_tokens=False
            )
            # A token without a word (an added token) is a pre-token of its own.
            words = np.array([-1 - t if w is None else w for t, w in enumerate(encoding.word_ids)], dtype=np.int64)
            if len(words) != n_tokens:  # the paragraph was tokenized differently: allow every token start
                flags = np.ones(n_tokens, dtype=bool)
            else:
                flags = np.ones(len(words), dtype=bool)
                flags[1:] = words[1:] != words[:-1]
            self._pretokens[para] = flags
        return flags

    def release(self) -> None:
        """Drop the token offsets and per-paragraph lookups once the document is chunked."""
        self.tokens = None
        self._sentences.clear()
        self._pretokens.clear()


def _contains(ordered: Sequence[int], value: int) -> bool:
    index = bisect.bisect_left(ordered, value)
    return index < len(ordered) and ordered[index] == value


@dataclass
class _Piece:
    start: int
    end: int
    tokens: int
    section_id: int
    path: tuple[str, ...]
    top_id: int
    cut: str  # how the piece's end was cut, one of CUT_KINDS


def _columns_by_doc(frame: pl.DataFrame, order: list[str], columns: list[str]) -> dict[str, dict[str, list]]:
    """Group a table's columns by ``doc_id`` as plain Python lists (one pass, no per-row polars)."""
    frame = frame.sort(["doc_id", *order])
    doc_ids = frame["doc_id"].to_list()
    data = {column: frame[column].to_list() for column in columns}
    groups: dict[str, dict[str, list]] = {}
    start = 0
    for index in range(1, len(doc_ids) + 1):
        if index == len(doc_ids) or doc_ids[index] != doc_ids[start]:
            groups[doc_ids[start]] = {column: values[start:index] for column, values in data.items()}
            start = index
    return groups


def _prepare(documents: pl.DataFrame, paragraphs: pl.DataFrame, sections: pl.DataFrame) -> list[_Doc]:
    paras = _columns_by_doc(paragraphs, ["para_idx"], ["start", "end"])
    secs = _columns_by_doc(sections, ["section_id"], ["section_id", "path", "top_section_id", "para_start", "para_end"])
    docs = []
    ordered = documents.select("doc_id", "text").sort("doc_id")
    for doc_id, text in zip(ordered["doc_id"].to_list(), ordered["text"].to_list()):
        text = text or ""
        para = paras.get(doc_id, {"start": [], "end": []})
        if text and not para["start"]:
            raise ValueError(f"document {doc_id!r} has text but no paragraphs")
        if para["start"] and para["start"][0] != 0:
            raise ValueError(f"document {doc_id!r}: first paragraph starts at {para['start'][0]}, not 0")
        sec = secs.get(doc_id)
        section_list = []
        if sec is None and para["start"]:
            raise ValueError(f"document {doc_id!r} has paragraphs but no sections")
        if sec is not None:
            for sid, path, top, ps, pe in zip(
                sec["section_id"], sec["path"], sec["top_section_id"], sec["para_start"], sec["para_end"]
            ):
                if pe > ps:
                    section_list.append(_Section(int(sid), tuple(path), int(top), int(ps), int(pe)))
            covered = [(s.para_start, s.para_end) for s in section_list]
            expected = 0
            for ps, pe in covered:
                if ps != expected:
                    raise ValueError(f"document {doc_id!r}: sections do not tile paragraphs at paragraph {expected}")
                expected = pe
            if expected != len(para["start"]):
                raise ValueError(f"document {doc_id!r}: sections cover {expected} of {len(para['start'])} paragraphs")
        docs.append(_Doc(doc_id, text, list(para["start"]), list(para["end"]), section_list))
    return docs


def _doc_spans(batch: list[_Doc], tokenizer: TokenCounter) -> list[TokenSpans]:
    """Token starts of each document, from its paragraphs tokenized as one parallel batch.

    Paragraphs are separated by whitespace, so (for a word-level tokenizer) the document's tokens are
    its paragraphs' tokens; many short texts also spread better over the tokenizer's threads than a
    few long ones.
    """
    texts = [doc.text[s:e] for doc in batch for s, e in zip(doc.para_starts, doc.para_ends)]
    shifts = [s for doc in batch for s in doc.para_starts]
    per_paragraph = iter(tokenizer.starts_batch(texts, shifts))
    out = []
    for doc in batch:
        starts: list[int] = []
        for _ in doc.para_starts:
            starts.extend(next(per_paragraph))
        out.append(TokenSpans(starts))
    return out


def _tokenized(docs: list[_Doc], tokenizer: TokenCounter) -> Iterator[_Doc]:
    """Yield documents with their token spans, tokenizing the next batch while this one is chunked.

    The tokenizer runs in Rust without the GIL, so a worker thread tokenizing batch ``i + 1``
    overlaps the Python work (sentence segmentation above all) on batch ``i``.
    """
    batches = [docs[i : i + _TOKENIZE_BATCH_DOCS] for i in range(0, len(docs), _TOKENIZE_BATCH_DOCS)]
    if not batches:
        return
    with ThreadPoolExecutor(max_workers=1) as pool:
        pending = pool.submit(_doc_spans, batches[0], tokenizer)
        for index, batch in enumerate(batches):
            spans = pending.result()
            if index + 1 < len(batches):
                pending = pool.submit(_doc_spans, batches[index + 1], tokenizer)
            for doc, doc_spans in zip(batch, spans):
                doc.tokens, doc.counter = doc_spans, tokenizer
                yield doc
                doc.release()


# --------------------------------------------------------------------------------------------------
# Splitting and merging


def partition_sizes(positions: Sequence[int], t_max: int, *, strict: bool = False) -> list[int] | None:
    """Choose cuts among candidate positions: the fewest parts, then the most equal.

    ``positions`` are the token positions of the candidate boundaries of one unit, ascending, from 0
    to the unit's size ``T``. A part is a run of consecutive candidates; it may exceed ``t_max`` only
    if it holds a single sentence (two adjacent candidates), unless ``strict``. Minimizes (number of
    parts, sum of squared part sizes) lexicographically by dynamic programming; ties go to the earlier
    cut. Returns the indices into ``positions`` of the interior cuts (None when ``strict`` and no
    partition fits). Time: the number of candidates times the candidates within ``t_max`` of each.
    """
    m = len(positions) - 1
    if m <= 1 and not strict:
        return []
    inf = (math.inf, math.inf)
    best = [(0, 0)] + [inf] * m
    back = [0] * (m + 1)
    for j in range(1, m + 1):
        pj = positions[j]
        lo = bisect.bisect_left(positions, pj - t_max, 0, j)
        if not strict:
            lo = min(lo, j - 1)
        bj, arg = inf, j - 1
        for i in range(lo, j):
            count, squares = best[i]
            if count == math.inf:
                continue
            size = pj - positions[i]
            candidate = (count + 1, squares + size * size)
            if candidate < bj:
                bj, arg = candidate, i
        best[j], back[j] = bj, arg
    if best[m] == inf:
        return None
    cuts, j = [], m
    while j > 0:
        j = back[j]
        if j > 0:
            cuts.append(j)
    return cuts[::-1]


def _nearest(positions: Sequence[int], ideal: float, lo: int = 0, hi: int | None = None, base: int = 0) -> int | None:
    """Index in ``positions[lo:hi]`` (ascending) whose ``position - base`` is nearest ``ideal``.

    Ties go to the earlier index (also among equal positions); None when the range is empty. Distances
    are taken relative to ``base`` so a caller holding absolute token indices gets the very float
    comparisons of one holding positions relative to its unit. Time: O(log n).
    """
    hi = len(positions) if hi is None else hi
    if lo >= hi:
        return None
    key = (lambda p: p - base) if base else None
    j = bisect.bisect_left(positions, ideal, lo, hi, key=key)
    best = None
    if j > lo:  # the nearest position below ideal, at its first occurrence
        best = bisect.bisect_left(positions, positions[j - 1] - base, lo, j, key=key)
    if j < hi and (best is None or positions[j] - base - ideal < ideal - (positions[best] - base)):
        best = j
    return best


def _nearest_interior(
    positions: Sequence[int], ideal: float, total: int, lo: int = 0, hi: int | None = None, base: int = 0
) -> int | None:
    """:func:`_nearest` among the positions strictly inside the unit (``0 < position - base < total``)."""
    hi = len(positions) if hi is None else hi
    key = (lambda p: p - base) if base else None
    lo = bisect.bisect_right(positions, 0, lo, hi, key=key)
    hi = bisect.bisect_left(positions, total, lo, hi, key=key)
    return _nearest(positions, ideal, lo, hi, base)


def split_cuts(positions: Sequence[int], t_max: int) -> list[int]:
    """The split rule over a unit's candidate boundaries; returns indices of the interior cuts.

    ``positions`` are the token positions of the unit's sentence starts, ascending, from 0, followed
    by the unit size ``T``. With ``k = ceil(T / t_max)`` (the fewest parts that can fit), cut ``i``
    goes to the boundary nearest the equal-split position ``i * T / k`` (ties to the earlier). When
    that yields distinct cuts and parts within ``t_max``, those are the cuts (and ``k`` is the fewest
    possible). Otherwise (long sentences, lumpy sentence sizes) :func:`partition_sizes` decides: the
    fewest parts, then the most equal. A unit that fits, or is one sentence, is not cut.
    """
    total = positions[-1]
    if total <= t_max or len(positions) <= 2:
        return []
    k = math.ceil(total / t_max)
    cuts = [_nearest_interior(positions, total * i / k, total, 0, len(positions) - 1) for i in range(1, k)]
    if None not in cuts and all(a < b for a, b in zip(cuts, cuts[1:])):
        edges = [0, *(positions[c] for c in cuts), total]
        if all(b - a <= t_max for a, b in zip(edges[:-1], edges[1:])):
            return cuts
    return partition_sizes(positions, t_max)


def snapped_cuts(positions: Sequence[int], t_max: int) -> list[int]:
    """The fallback split rule (line, word and token starts); returns indices of the interior cuts.

    ``positions`` are the token positions of the candidates, strictly ascending from 0 to the size
    ``T``. A part is a run of consecutive candidates and may exceed ``t_max`` only if it is a single
    segment (two adjacent candidates; the next fallback level cuts it). The number of parts ``n`` is
    the fewest possible (greedy furthest reach from the start). Cut ``i`` is, among the candidates
    that still allow ``n`` parts after the cuts before it, the one nearest the equal-split position
    ``i * T / n`` (ties to the earlier). Where nothing constrains the cuts this is the snapping of
    :func:`split_cuts`; unlike its fallback, it needs no dynamic programming, so its time is
    ``O(n log m)`` for ``m`` candidates however dense they are.

    Why a feasible candidate always exists: with ``L_i`` the earliest candidate from which the rest
    fits in ``n - i`` parts (greedy from the end), every cut ``i`` of an ``n``-part partition lies at
    or after ``L_i``, and from any feasible previous cut one part reaches ``L_i`` (else the rest
    would need ``n - i + 1`` more parts, more than ``n`` in all).
    """
    m = len(positions) - 1
    total = positions[-1]
    if total <= t_max or m <= 1:
        return []

    def reach(i: int) -> int:  # the furthest candidate a part starting at candidate i can end at
        return max(bisect.bisect_right(positions, positions[i] + t_max) - 1, i + 1)

    def back(j: int) -> int:  # the earliest candidate a part ending at candidate j can start at
        return min(bisect.bisect_left(positions, positions[j] - t_max), j - 1)

    n, i = 0, 0
    while i < m:
        i, n = reach(i), n + 1
    earliest = [m]  # earliest[p]: the first candidate from which p parts reach the end
    for _ in range(n - 1):
        earliest.append(back(earliest[-1]))
    cuts, previous = [], 0
    for c in range(1, n):
        cut = _nearest(positions, total * c / n, earliest[n - c], reach(previous) + 1)
        if cut is None:  # impossible by the argument above; fail loudly rather than cut wrongly
            raise AssertionError(f"no feasible cut {c} of {n} over positions ending {positions[-5:]}")
        cuts.append(cut)
        previous = cut
    return cuts


def _unit_boundaries(doc: _Doc, para_start: int, para_end: int) -> list[int]:
    chars = []
    for para in range(para_start, para_end):
        chars.extend(doc.sentence_bounds(para)[0])
    return chars


def _split(doc: _Doc, piece: _Piece, para_start: int, para_end: int, t_max: int) -> list[_Piece]:
    """Apply :func:`split_cuts` to one unit (paragraphs ``[para_start, para_end)``) over ``t_max``.

    Sentence segmentation is the slow step, so it is done lazily, with the same result as segmenting
    the whole unit (a property test checks this): the boundary nearest an equal-split position lies
    in the paragraph holding that position or at its edges, so only those paragraphs are segmented.
    Each paragraph is segmented (and its boundaries located among the tokens) at most once, and the
    nearest boundary is found by bisection, so the time is linear in the unit.
    """
    tokens = doc.tokens
    base = tokens.index(piece.start)
    total = piece.tokens
    para_tok = [tokens.index(doc.para_starts[p]) - base for p in range(para_start, para_end)]
    k = math.ceil(total / t_max)
    cut_chars, cut_positions = [], []
    for i in range(1, k):
        ideal = total * i / k
        q = para_start + max(bisect.bisect_right(para_tok, ideal) - 1, 0)
        # Segment only around the ideal: a stretch holding the last token before it and the first after.
        before = tokens.starts[math.ceil(base + ideal) - 1]
        chars, indices = doc.sentence_bounds_near(q, before, before + 1)
        best = _nearest_interior(indices, ideal, total, base=base)
        best_char, best_position = (chars[best], indices[best] - base) if best is not None else (None, None)
        if q + 1 < para_end:  # the next paragraph's start is a candidate too; it comes last, so wins only if nearer
            following = para_tok[q + 1 - para_start]
            if 0 < following < total and (best is None or abs(following - ideal) < abs(best_position - ideal)):
                best_char, best_position = doc.para_starts[q + 1], following
        if best_char is None:
            break
        cut_chars.append(best_char)
        cut_positions.append(best_position)
    else:
        edges = [0, *cut_positions, total]
        if all(a < b for a, b in zip(cut_positions, cut_positions[1:])) and all(
            b - a <= t_max for a, b in zip(edges[:-1], edges[1:])
        ):
            char_edges = [piece.start, *cut_chars, piece.end]
            return [
                _Piece(
                    a,
                    b,
                    edges[n + 1] - edges[n],
                    piece.section_id,
                    piece.path,
                    piece.top_id,
                    piece.cut if n == len(cut_chars) else doc.cut_kind(b, "sentence"),
                )
                for n, (a, b) in enumerate(zip(char_edges[:-1], char_edges[1:]))
            ]

    # The fewest parts within t_max, if there are n of them, have cut i in [T - (n - i) * t_max,
    # i * t_max]: the DP needs the sentences of the paragraphs meeting those windows only (every
    # paragraph start is a candidate anyway). A strict DP (no part over t_max) over those candidates
    # that finds n parts has found the DP's answer over every boundary; it finding more means no
    # n-part split exists, so n grows and the windows widen; they cover the unit once
    # (n - 1) * t_max >= T, so this loop runs at most twice. Over-long sentences end up segmenting
    # the whole unit.
    para_next = para_tok[1:] + [total]
    segmented = [False] * (para_end - para_start)
    n = k - 1
    while not all(segmented):
        n += 1
        for i in range(1, n):  # mark the paragraphs meeting window i: para_tok <= hi and para_next >= lo
            lo, hi = total - (n - i) * t_max, i * t_max
            for offset in range(bisect.bisect_left(para_next, lo), bisect.bisect_right(para_tok, hi)):
                segmented[offset] = True
        chars, positions = [], []
        for offset, q in enumerate(range(para_start, para_end)):
            if segmented[offset]:
                sentence_chars, indices = doc.sentence_bounds(q)
                chars.extend(sentence_chars)
                positions.extend([index - base for index in indices])
            else:
                chars.append(doc.para_starts[q])
                positions.append(para_tok[offset])
        positions.append(total)
        cuts = partition_sizes(positions, t_max, strict=True)
        if cuts is not None and len(cuts) + 1 == n:
            return _parts(doc, piece, chars, positions, cuts)
    chars = _unit_boundaries(doc, para_start, para_end)
    positions = [tokens.index(c) - base for c in chars] + [total]
    return _parts(doc, piece, chars, positions, split_cuts(positions, t_max))


def _parts(doc: _Doc, piece: _Piece, chars: list[int], positions: list[int], cuts: list[int]) -> list[_Piece]:
    edges = [0, *cuts, len(chars)]
    parts = []
    for a, b in zip(edges[:-1], edges[1:]):
        start = chars[a]
        end = chars[b] if b < len(chars) else piece.end
        cut = piece.cut if b == len(chars) else doc.cut_kind(end, "sentence")
        parts.append(_Piece(start, end, positions[b] - positions[a], piece.section_id, piece.path, piece.top_id, cut))
    return parts


_FALLBACK_LEVELS = ("line", "word", "pretoken", "piece")  # "pretoken" and "piece" cuts are both "token" cuts


def _refine(doc: _Doc, piece: _Piece, t_max: int, level: int = 0) -> list[_Piece]:
    """Cut a piece over ``t_max`` that no sentence boundary serves (the fallback in the module docstring).

    Level by level (line, word, pre-token, any token start) with :func:`snapped_cuts`; a part that is
    a single segment of one level and still over ``t_max`` goes to the next. The last level has a
    candidate at every token, so its parts fit.
    """
    if piece.tokens <= t_max:
        return [piece]
    name = _FALLBACK_LEVELS[level]
    chars, positions = _fallback_candidates(doc, piece, name)
    cuts = snapped_cuts(positions, t_max)
    kind = name if name in FALLBACK_CUTS else "token"
    edges = [0, *cuts, len(chars)]
    out = []
    for a, b in zip(edges[:-1], edges[1:]):
        end = chars[b] if b < len(chars) else piece.end
        part = _Piece(
            chars[a],
            end,
            positions[b] - positions[a],
            piece.section_id,
            piece.path,
            piece.top_id,
            piece.cut if b == len(chars) else kind,
        )
        out.extend(_refine(doc, part, t_max, level + 1))
    return out


def _fallback_candidates(doc: _Doc, piece: _Piece, level: str) -> tuple[list[int], list[int]]:
    """Candidate cuts of one fallback level inside ``piece``: (chars, token positions).

    ``chars`` starts with the piece's own start; ``positions`` are relative to it, strictly
    ascending, and end with the piece's size (one more entry than ``chars``). A candidate's position
    is the number of the piece's tokens that start before it (so part sizes are span counts); one
    is kept only where a token starts after it and before the piece's end, and one char per
    position (several tokens can share a start offset, as a byte-level tokenizer's bytes of one
    character do).
    """
    tokens = doc.tokens
    base = tokens.index(piece.start)
    top = base + piece.tokens
    starts = np.asarray(tokens.starts[base:top], dtype=np.int64)
    if level in ("line", "word"):
        pattern = _LINE_START if level == "line" else _WORD_START
        found = np.fromiter(
            (match.end() for match in pattern.finditer(doc.text, piece.start, piece.end)), dtype=np.int64
        )
    elif level == "pretoken":
        found = starts[doc.pretoken_starts(base + 1, top) - base]
    else:
        found = starts[1:]
    indices = np.searchsorted(starts, found) + base
    keep = (indices > base) & (indices < top)
    keep[1:] &= indices[1:] != indices[:-1]  # equal token positions: keep the first char
    return [piece.start, *found[keep].tolist()], [0, *(indices[keep] - base).tolist(), piece.tokens]


def _common_path(a: tuple[str, ...], b: tuple[str, ...]) -> tuple[str, ...]:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return a[:n]


def _merged(first: _Piece, second: _Piece) -> _Piece:
    return _Piece(
        first.start,
        second.end,
        first.tokens + second.tokens,
        first.section_id,
        _common_path(first.path, second.path),
        first.top_id,
        second.cut,
    )


def _merge_small(pieces: list[_Piece], t_min: int, t_max: int) -> list[_Piece]:
    """Merge chunks under ``t_min`` within one top-level section (rules in the module docstring)."""
    out = list(pieces)
    i = 0
    while i < len(out):
        piece = out[i]
        if piece.tokens < t_min and len(out) > 1:
            if i + 1 < len(out) and piece.tokens + out[i + 1].tokens <= t_max:
                out[i : i + 2] = [_merged(piece, out[i + 1])]
                continue  # the merged chunk may still be small
            if i > 0 and out[i - 1].tokens + piece.tokens <= t_max:
                out[i - 1 : i + 1] = [_merged(out[i - 1], piece)]
                continue  # out[i] is now the chunk after the merged one
        i += 1
    return out


def _bounded(doc: _Doc, units: list[tuple[_Section, int, int]], t_max: int, t_min: int) -> list[_Piece]:
    """Split each unit over ``t_max`` (sentences, then the fallbacks), then merge small chunks within each
    top-level section."""
    tokens = doc.tokens
    by_top: list[list[_Piece]] = []
    for section, para_start, para_end in units:
        start = doc.para_starts[para_start]
        end = doc.para_char_start(para_end)
        piece = _Piece(
            start,
            end,
            tokens.count(start, end),
            section.section_id,
            section.path,
            section.top_id,
            doc.cut_kind(end, "paragraph"),
        )
        parts = _split(doc, piece, para_start, para_end, t_max) if piece.tokens > t_max else [piece]
        parts = [fitted for part in parts for fitted in _refine(doc, part, t_max)]
        if by_top and by_top[-1][0].top_id == section.top_id:
            by_top[-1].extend(parts)
        else:
            by_top.append(parts)
    out = []
    for group in by_top:
        out.extend(_merge_small(group, t_min, t_max))
    return out


# --------------------------------------------------------------------------------------------------
# Output


def _own_counts(doc: _Doc, pieces: list[_Piece], t_max: int) -> list[_Piece]:
    """For a tokenizer that is not word-level, give each piece its own text's count and keep ``t_max`` by those.

    Span counts are then estimates (a cut can change how the text around it is tokenized), so each
    chunk is counted again on its own text; a chunk over ``t_max`` by that count is cut again with
    the fallback levels over its own tokenization, and its parts are counted again in turn (each
    round cuts a smaller piece, so this ends).
    """
    if doc.counter.additive:
        return pieces
    counts = doc.counter.count_batch([doc.text[piece.start : piece.end] for piece in pieces])
    out = []
    for piece, count in zip(pieces, counts):
        piece = dataclasses.replace(piece, tokens=count)
        out.extend([piece] if count <= t_max else _cut_by_own_tokens(doc, piece, t_max))
    return out


def _cut_by_own_tokens(doc: _Doc, piece: _Piece, t_max: int) -> list[_Piece]:
    own = _Doc(doc.doc_id, doc.text, doc.para_starts, doc.para_ends, doc.sections, counter=doc.counter)
    own.tokens = TokenSpans(
        [piece.start + start for start in doc.counter.spans_batch([doc.text[piece.start : piece.end]])[0].starts]
    )
    parts = _refine(own, dataclasses.replace(piece, tokens=len(own.tokens)), t_max)
    return _own_counts(doc, parts, t_max)


def _frame(rows: list[tuple[str, list[_Piece]]]) -> pl.DataFrame:
    doc_ids, starts, ends, n_tokens, section_ids, paths, cuts = [], [], [], [], [], [], []
    for doc_id, pieces in rows:
        for piece in pieces:
            doc_ids.append(doc_id)
            starts.append(piece.start)
            ends.append(piece.end)
            n_tokens.append(piece.tokens)
            section_ids.append(piece.section_id)
            paths.append(list(piece.path))
            cuts.append(piece.cut)
    if not doc_ids:
        return empty("chunks")
    frame = pl.DataFrame(
        {
            "chunk_id": list(range(len(doc_ids))),
            "doc_id": doc_ids,
            "start": starts,
            "end": ends,
            "n_tokens": n_tokens,
            "section_id": section_ids,
            "path": paths,
            "cut": cuts,
        },
        schema=CHUNKS,
    )
    return frame


def _check_bounds(t_max: int, t_min: int) -> None:
    if t_max < 1 or t_min < 0 or t_min > t_max:
        raise ValueError(f"need 0 <= t_min <= t_max and t_max >= 1, got t_min={t_min}, t_max={t_max}")


# --------------------------------------------------------------------------------------------------
# Public chunkers


def structural_chunks(
    documents: pl.DataFrame,
    paragraphs: pl.DataFrame,
    sections: pl.DataFrame,
    tokenizer: TokenCounter | str,
    *,
    t_max: int = T_MAX,
    t_min: int = T_MIN,
) -> pl.DataFrame:
    """Structure-aligned chunks (A2..A4, P, G2..G4): one unit per section's own paragraphs, then bounds.

    See the module docstring for the split, fallback and merge rules. ``chunk_id`` is the ordinal over the
    set sorted by ``(doc_id, start)``; a chunk's ``section_id`` is its (first) section and ``path``
    that section's path, or the shared path of a merged chunk.
    """
    _check_bounds(t_max, t_min)
    tokenizer = load_tokenizer(tokenizer)
    docs = _prepare(documents, paragraphs, sections)
    rows = []
    for doc in _tokenized(docs, tokenizer):
        units = [(s, s.para_start, s.para_end) for s in doc.sections]
        rows.append((doc.doc_id, _own_counts(doc, _bounded(doc, units, t_max, t_min), t_max)))
    return _frame(rows)


def semantic_chunks(
    documents: pl.DataFrame,
    paragraphs: pl.DataFrame,
    sections: pl.DataFrame,
    tokenizer: TokenCounter | str,
    embed_fn: EmbedFn,
    *,
    threshold: float = SEMANTIC_THRESHOLD,
    t_max: int = T_MAX,
    t_min: int = T_MIN,
) -> pl.DataFrame:
    """Seed 004's semantic merge: within a section, join adjacent paragraphs whose cosine >= threshold.

    A unit is a maximal run of a section's paragraphs in which every adjacent pair reaches the
    threshold (single linkage along reading order); units then get the structural split and merge
    bounds. ``embed_fn(texts) -> array (n, dim)`` is injected (the workflow passes the real embedder,
    tests a deterministic fake); it is called once, only for paragraphs of sections with two or more
    paragraphs, and its rows are L2-normalized again here before the dot product.
    """
    _check_bounds(t_max, t_min)
    tokenizer = load_tokenizer(tokenizer)
    docs = _prepare(documents, paragraphs, sections)

    wanted: list[tuple[int, int]] = []  # (doc index, paragraph) of every paragraph to embed
    for d, doc in enumerate(docs):
        for section in doc.sections:
            if section.para_end - section.para_start > 1:
                wanted.extend((d, p) for p in range(section.para_start, section.para_end))
    similar: dict[tuple[int, int], bool] = {}  # (doc index, paragraph) -> joins the next paragraph
    if wanted:
        vectors = np.asarray(
            embed_fn([docs[d].text[docs[d].para_starts[p] : docs[d].para_ends[p]] for d, p in wanted]), dtype=np.float64
        )
        if vectors.ndim != 2 or len(vectors) != len(wanted):
            raise ValueError(f"embed_fn returned shape {vectors.shape} for {len(wanted)} texts")
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        vectors = vectors / np.where(norms > 0, norms, 1.0)
        cosine = np.einsum("ij,ij->i", vectors[:-1], vectors[1:])
        for k in range(len(wanted) - 1):
            (d, p), (d2, p2) = wanted[k], wanted[k + 1]
            if d == d2 and p2 == p + 1:
                similar[(d, p)] = bool(cosine[k] >= threshold)

    rows = []
    index = {id(doc): d for d, doc in enumerate(docs)}
    for doc in _tokenized(docs, tokenizer):
        d = index[id(doc)]
        units = []
        for section in doc.sections:
            run_start = section.para_start
            for p in range(section.para_start, section.para_end):
                if p + 1 == section.para_end or not similar.get((d, p), False):
                    units.append((section, run_start, p + 1))
                    run_start = p + 1
        rows.append((doc.doc_id, _own_counts(doc, _bounded(doc, units, t_max, t_min), t_max)))
    return _frame(rows)


def fixed_chunks(
    documents: pl.DataFrame,
    reference_chunks: pl.DataFrame,
    tokenizer: TokenCounter | str,
    *,
    paragraphs: pl.DataFrame,
    sections: pl.DataFrame,
    snap_tokens: int = FIXED_SNAP_TOKENS,
    t_min: int = T_MIN,
    t_max: int = T_MAX,
) -> pl.DataFrame:
    """Fixed windows size-matched per document to ``reference_chunks`` (A0, A1; SPEC sections 6, 17).

    Per document the target is the mean ``n_tokens`` of its reference chunks, rounded half up (and
    at most ``t_max``). Greedy from the start, each cut goes, for the window starting at token ``s``,
    to the first of these that exists, all within ``snap_tokens`` of ``s + target`` and never making
    the window longer than ``t_max``:

    1. the sentence boundary (paragraph starts included) nearest ``s + target`` (ties to the earlier);
    2. the line start nearest ``s + target``;
    3. the start of the whitespace-delimited word holding token ``s + target`` (moving the cut back,
       so no word is split);
    4. the last token start at or before ``s + target`` that begins a pre-token, else token
       ``s + target`` itself (a pre-token is what the tokenizer's pre-tokenizer splits off: a word,
       a punctuation mark, a CJK character).

    The last window takes the remainder and is merged into the previous one when under ``t_min``,
    unless the merged window would pass ``t_max``. A chunk's ``section_id`` and ``path`` are those of
    the section its start lies in; ``cut`` says which rule placed its end. ``paragraphs`` and
    ``sections`` are the same tables the reference chunks were built from (sentence boundaries and
    paths need them).
    """
    _check_bounds(t_max, t_min)
    tokenizer = load_tokenizer(tokenizer)
    docs = _prepare(documents, paragraphs, sections)
    targets = _targets(reference_chunks)
    rows = []
    for doc in _tokenized(docs, tokenizer):
        if not doc.text:
            continue
        if doc.doc_id not in targets:
            raise ValueError(f"document {doc.doc_id!r} has no reference chunks to size-match against")
        cuts = _window_cuts(doc, min(targets[doc.doc_id], t_max), snap_tokens, t_min, t_max)
        edges = [0, *(char for char, _ in cuts), doc.n_chars]
        kinds = [kind for _, kind in cuts] + ["end"]
        section_starts = doc.section_starts()
        pieces = []
        for start, end, kind in zip(edges[:-1], edges[1:], kinds):
            section = doc.sections[max(bisect.bisect_right(section_starts, start) - 1, 0)]
            pieces.append(
                _Piece(start, end, doc.tokens.count(start, end), section.section_id, section.path, section.top_id, kind)
            )
        rows.append((doc.doc_id, _own_counts(doc, pieces, t_max)))
    return _frame(rows)


def _targets(reference_chunks: pl.DataFrame) -> dict[str, int]:
    means = reference_chunks.group_by("doc_id").agg(pl.col("n_tokens").cast(pl.Float64).mean().alias("mean"))
    return {
        doc_id: max(1, math.floor(mean + 0.5))
        for doc_id, mean in zip(means["doc_id"].to_list(), means["mean"].to_list())
    }


_Cut = tuple[int, int, str]  # (token index, char offset, cut kind)


def _window_cuts(doc: _Doc, target: int, snap_tokens: int, t_min: int, t_max: int) -> list[tuple[int, str]]:
    """The cuts of :func:`fixed_chunks` in one document, as (char offset, cut kind)."""
    tokens = doc.tokens
    n = len(tokens)
    cuts: list[tuple[int, str]] = []
    window_starts = [0]  # token index where each window starts
    while window_starts[-1] + target < n:
        position = window_starts[-1]
        desired = position + target
        # A cut must start a later character than the window does (tokens can share a start offset).
        lo = max(position + 1, desired - snap_tokens, bisect.bisect_right(tokens.starts, tokens.starts[position]))
        if lo >= n:
            break
        desired = max(desired, lo)
        hi = max(min(n - 1, desired + snap_tokens, position + t_max), desired)
        _, char, kind = (
            _sentence_near(doc, lo, hi, desired)
            or _line_near(doc, lo, hi, desired)
            or _word_before(doc, lo, desired)
            or _token_before(doc, lo, desired)
        )
        window_starts.append(tokens.index(char))  # the window's size is the count of tokens starting in it
        cuts.append((char, kind))
    if cuts and n - window_starts[-1] < t_min and n - window_starts[-2] <= t_max:
        cuts.pop()
    return cuts


def _sentence_near(doc: _Doc, lo: int, hi: int, desired: int) -> _Cut | None:
    """The sentence boundary at a token in ``[lo, hi]`` nearest ``desired`` (ties to the earlier)."""
    starts = doc.tokens.starts
    best: _Cut | None = None
    for para in range(doc.paragraph_of(starts[lo]), doc.paragraph_of(starts[hi]) + 1):
        # The boundaries at a token in [lo, hi] lie in (starts[lo - 1], starts[hi]]: segment only there.
        chars, indices = doc.sentence_bounds_near(para, starts[lo - 1] + 1, starts[hi])
        j = _nearest(indices, desired, bisect.bisect_left(indices, lo), bisect.bisect_right(indices, hi))
        if j is not None and (best is None or abs(indices[j] - desired) < abs(best[0] - desired)):
            best = (indices[j], chars[j], doc.cut_kind(chars[j], "sentence"))
    return best


def _line_near(doc: _Doc, lo: int, hi: int, desired: int) -> _Cut | None:
    """The line start at a token in ``[lo, hi]`` nearest ``desired`` (ties to the earlier)."""
    tokens = doc.tokens
    chars = [match.end() for match in _LINE_START.finditer(doc.text, tokens.starts[lo - 1], tokens.starts[hi] + 1)]
    indices = [tokens.index(char) for char in chars]
    j = _nearest(indices, desired, bisect.bisect_left(indices, lo), bisect.bisect_right(indices, hi))
    return None if j is None else (indices[j], chars[j], "line")


def _word_before(doc: _Doc, lo: int, desired: int) -> _Cut | None:
    """The token in ``[lo, desired]`` nearest ``desired`` that starts a whitespace-delimited word."""
    starts, text = doc.tokens.starts, doc.text
    for index in range(desired, lo - 1, -1):
        char = starts[index]
        if char > 0 and text[char - 1].isspace():
            return index, char, "word"
    return None


def _token_before(doc: _Doc, lo: int, desired: int) -> _Cut:
    """The token in ``[lo, desired]`` nearest ``desired`` that begins a pre-token, else token ``desired``."""
    indices = doc.pretoken_starts(lo, desired + 1)
    index = int(indices[-1]) if len(indices) else desired
    return index, doc.tokens.starts[index], "token"


# --------------------------------------------------------------------------------------------------
# Checks and reports


def assert_tiling(documents: pl.DataFrame, chunks: pl.DataFrame) -> None:
    """Raise ``ValueError`` unless the chunks of every document tile ``[0, n_chars)`` exactly.

    Checks, per document: the first chunk starts at 0, each chunk starts where the previous one ended
    (else a gap or an overlap, named with its offsets), no chunk is empty, the last ends at
    ``n_chars``; every chunk belongs to a known document and every non-empty document has chunks.
    """
    n_chars = dict(zip(documents["doc_id"].to_list(), documents["n_chars"].to_list()))
    ordered = chunks.select("doc_id", "start", "end").sort(["doc_id", "start", "end"])
    doc_ids, starts, ends = (ordered[c].to_list() for c in ("doc_id", "start", "end"))
    seen = set()
    previous_doc, previous_end = None, 0
    for doc_id, start, end in zip(doc_ids, starts, ends):
        if doc_id not in n_chars:
            raise ValueError(f"chunk [{start}, {end}) belongs to unknown document {doc_id!r}")
        if doc_id != previous_doc:
            if previous_doc is not None:
                _check_end(previous_doc, previous_end, n_chars[previous_doc])
            previous_doc, previous_end = doc_id, 0
            seen.add(doc_id)
        if end <= start:
            raise ValueError(f"document {doc_id!r}: empty or reversed chunk [{start}, {end})")
        if start > previous_end:
            raise ValueError(f"document {doc_id!r}: gap [{previous_end}, {start}) between chunks")
        if start < previous_end:
            raise ValueError(f"document {doc_id!r}: chunks overlap on [{start}, {previous_end})")
        previous_end = end
    if previous_doc is not None:
        _check_end(previous_doc, previous_end, n_chars[previous_doc])
    missing = [d for d, n in n_chars.items() if n > 0 and d not in seen]
    if missing:
        raise ValueError(f"document {missing[0]!r} has text but no chunks ({len(missing)} such documents)")


def _check_end(doc_id: str, end: int, n_chars: int) -> None:
    if end < n_chars:
        raise ValueError(f"document {doc_id!r}: chunks end at {end}, not at n_chars={n_chars} (gap [{end}, {n_chars}))")
    if end > n_chars:
        raise ValueError(f"document {doc_id!r}: chunks end at {end}, past n_chars={n_chars}")


def size_match_report(fixed: pl.DataFrame, reference: pl.DataFrame) -> dict:
    """Realized mean chunk sizes of a fixed set and its reference set (one corpus), and their gap.

    SPEC section 6 asks for these per corpus; the paper's realized means differ by at most 4 tokens.
    ``max_doc_difference`` is the largest per-document gap between the two means.
    """

    def means(frame):
        return frame.group_by("doc_id").agg(pl.col("n_tokens").cast(pl.Float64).mean().alias("mean"))

    per_doc = means(fixed).join(means(reference), on="doc_id", how="inner", suffix="_reference")
    fixed_mean = float(fixed["n_tokens"].mean()) if fixed.height else math.nan
    reference_mean = float(reference["n_tokens"].mean()) if reference.height else math.nan
    gap = per_doc.select((pl.col("mean") - pl.col("mean_reference")).abs().max()).item() if per_doc.height else None
    return {
        "fixed_chunks": fixed.height,
        "reference_chunks": reference.height,
        "documents": per_doc.height,
        "fixed_mean_tokens": fixed_mean,
        "reference_mean_tokens": reference_mean,
        "difference": fixed_mean - reference_mean,
        "max_doc_difference": float(gap) if gap is not None else math.nan,
    }


def cut_counts(chunks: pl.DataFrame) -> dict[str, int]:
    """Number of chunks whose end was cut each way: one entry per kind of :data:`CUT_KINDS`, in that order.

    The fallbacks (:data:`FALLBACK_CUTS`) count the cuts where no sentence boundary served (SPEC
    section 6). Raises ``ValueError`` naming a value of ``cut`` that is not a known kind.
    """
    counts = dict.fromkeys(CUT_KINDS, 0)
    for kind, count in chunks.group_by("cut").len().rows():
        if kind not in counts:
            raise ValueError(f"chunks column 'cut' holds {kind!r}, not one of {CUT_KINDS}")
        counts[kind] = int(count)
    return counts


def bounds_report(chunks: pl.DataFrame, *, t_max: int = T_MAX, t_min: int = T_MIN) -> dict:
    """Counts of chunks outside ``[t_min, t_max]``, the size distribution and how chunk ends were cut.

    ``cut_<kind>`` is :func:`cut_counts`' entry for each kind; ``fallback_cuts`` their sum over
    :data:`FALLBACK_CUTS` (chunks ended at a line, word or token start because no sentence boundary served).
    """
    sizes = chunks["n_tokens"]
    cuts = cut_counts(chunks)
    return {
        "chunks": chunks.height,
        "mean_tokens": float(sizes.mean()) if chunks.height else math.nan,
        "median_tokens": float(sizes.median()) if chunks.height else math.nan,
        "max_tokens": int(sizes.max()) if chunks.height else 0,
        "over_t_max": int((sizes > t_max).sum()),
        "under_t_min": int((sizes < t_min).sum()),
        "fallback_cuts": sum(cuts[kind] for kind in FALLBACK_CUTS),
        **{f"cut_{kind}": count for kind, count in cuts.items()},
    }
