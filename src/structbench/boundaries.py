"""The boundaries axis (SPEC section 6): where chunks are cut — structural, fixed size-matched, semantic.

Every chunker returns a CHUNKS table whose chunks tile each document's flat text exactly: a chunk runs
from its first character to the first character of the next chunk, so the whitespace that separates
paragraphs (and sentences) belongs to the chunk before it. Cuts fall only on paragraph starts,
sentence starts (:mod:`structbench.sentences`) or, for fixed windows with no sentence nearby, word
starts, so no cut splits a word and ``n_tokens`` (content tokens) of a chunk is the token count of its
own text.

Each paragraph is tokenized once; span token counts come from the token start offsets. With a
word-level pre-tokenizer (the study's BERT WordPiece) that count is exact; for any other tokenizer the
final ``n_tokens`` are recounted on the chunk texts, and size decisions used the paragraph-level counts.

The rules, in the words of SPEC sections 6 and 17 where they are precise and ours where they are not:

* A **unit** is a section's own paragraphs (structural) or a run of adjacent paragraphs of one section
  whose neighbour cosine similarity reaches the threshold (semantic). Sections without paragraphs
  give no unit.
* **Split**: a unit over ``t_max`` tokens is cut at sentence boundaries into the fewest parts that fit
  ``t_max``, as equal as possible: each cut is the sentence boundary nearest its equal-split position
  ``i * T / k``; where that does not fit (lumpy or over-long sentences), the cuts minimizing the sum
  of squared part sizes (:func:`split_cuts`). A sentence longer than ``t_max`` becomes a part of its
  own and is never cut.
* **Merge**: then, within each top-level section and left to right, a chunk under ``t_min`` is merged
  with the following chunk, else with the preceding one. A merge never crosses a top-level section
  and never makes a chunk larger than ``t_max`` (the hard bound: an embedder silently truncates past
  its window); a small chunk that fits with neither neighbour stays small, as does a top-level
  section that is one small chunk. A merged chunk keeps the first part's ``section_id`` and the
  deepest path all its parts share.

Bounds that therefore hold for structural and semantic chunks: ``n_tokens <= t_max`` unless the chunk
is a single sentence; ``n_tokens >= t_min`` unless the chunk is the only one of its top-level section
or adding either neighbour in its top-level section would pass ``t_max``.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import polars as pl

from structbench.sentences import paragraph_boundaries
from structbench.tables import CHUNKS, empty
from structbench.tokens import TokenCounter, TokenSpans, load_tokenizer

EmbedFn = Callable[[list[str]], np.ndarray]

_TOKENIZE_BATCH_DOCS = 32  # documents tokenized per call: bounds memory, lets tokenizing overlap chunking


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

    @property
    def n_chars(self) -> int:
        return len(self.text)

    def para_char_start(self, para: int) -> int:
        """Char offset of paragraph ``para``; one past the last paragraph is the document end."""
        return self.para_starts[para] if para < len(self.para_starts) else len(self.text)

    def section_starts(self) -> list[int]:
        return [self.para_starts[s.para_start] for s in self.sections]


@dataclass
class _Piece:
    start: int
    end: int
    tokens: int
    section_id: int
    path: tuple[str, ...]
    top_id: int


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
            for sid, path, top, ps, pe in zip(sec["section_id"], sec["path"], sec["top_section_id"],
                                              sec["para_start"], sec["para_end"]):
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
    spans = iter(tokenizer.spans_batch(texts))
    out = []
    for doc in batch:
        starts: list[int] = []
        for para_start in doc.para_starts:
            starts.extend([para_start + start for start in next(spans).starts])
        out.append(TokenSpans(starts))
    return out


def _tokenized(docs: list[_Doc], tokenizer: TokenCounter) -> Iterator[_Doc]:
    """Yield documents with their token spans, tokenizing the next batch while this one is chunked.

    The tokenizer runs in Rust without the GIL, so a worker thread tokenizing batch ``i + 1``
    overlaps the Python work (sentence segmentation above all) on batch ``i``.
    """
    batches = [docs[i:i + _TOKENIZE_BATCH_DOCS] for i in range(0, len(docs), _TOKENIZE_BATCH_DOCS)]
    if not batches:
        return
    with ThreadPoolExecutor(max_workers=1) as pool:
        pending = pool.submit(_doc_spans, batches[0], tokenizer)
        for index, batch in enumerate(batches):
            spans = pending.result()
            if index + 1 < len(batches):
                pending = pool.submit(_doc_spans, batches[index + 1], tokenizer)
            for doc, doc_spans in zip(batch, spans):
                doc.tokens = doc_spans
                yield doc
                doc.tokens = None  # release the token offsets once the document is chunked


# --------------------------------------------------------------------------------------------------
# Splitting and merging


def partition_sizes(positions: Sequence[int], t_max: int, *, strict: bool = False) -> list[int] | None:
    """Choose cuts among candidate positions: the fewest parts, then the most equal.

    ``positions`` are the token positions of the candidate boundaries of one unit, ascending, from 0
    to the unit's size ``T``. A part is a run of consecutive candidates; it may exceed ``t_max`` only
    if it holds a single sentence (two adjacent candidates), unless ``strict``. Minimizes (number of
    parts, sum of squared part sizes) lexicographically by dynamic programming; ties go to the earlier
    cut. Returns the indices into ``positions`` of the interior cuts (None when ``strict`` and no
    partition fits).
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


def _unit_boundaries(doc: _Doc, para_start: int, para_end: int) -> list[int]:
    chars = []
    for para in range(para_start, para_end):
        chars.extend(paragraph_boundaries(doc.text, doc.para_starts[para], doc.para_ends[para]))
    return chars


def _nearest(positions: Sequence[int], ideal: float, total: int) -> int | None:
    """Index of the interior position nearest ``ideal`` (ties to the earlier), or None."""
    best, best_distance = None, math.inf
    for index, position in enumerate(positions):
        if 0 < position < total and abs(position - ideal) < best_distance:
            best, best_distance = index, abs(position - ideal)
    return best


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
    cuts = [_nearest(positions[:-1], total * i / k, total) for i in range(1, k)]
    if None not in cuts and all(a < b for a, b in zip(cuts, cuts[1:])):
        edges = [0, *(positions[c] for c in cuts), total]
        if all(b - a <= t_max for a, b in zip(edges[:-1], edges[1:])):
            return cuts
    return partition_sizes(positions, t_max)


def _split(doc: _Doc, piece: _Piece, para_start: int, para_end: int, t_max: int) -> list[_Piece]:
    """Apply :func:`split_cuts` to one unit (paragraphs ``[para_start, para_end)``) over ``t_max``.

    Sentence segmentation is the slow step, so it is done lazily, with the same result as segmenting
    the whole unit (a property test checks this): the boundary nearest an equal-split position lies
    in the paragraph holding that position or at its edges, so only those paragraphs are segmented.
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
        near = paragraph_boundaries(doc.text, doc.para_starts[q], doc.para_ends[q])
        if q + 1 < para_end:
            near.append(doc.para_starts[q + 1])
        near_positions = [tokens.index(c) - base for c in near]
        best = _nearest(near_positions, ideal, total)
        if best is None:
            break
        cut_chars.append(near[best])
        cut_positions.append(near_positions[best])
    else:
        edges = [0, *cut_positions, total]
        if all(a < b for a, b in zip(cut_positions, cut_positions[1:])) and \
                all(b - a <= t_max for a, b in zip(edges[:-1], edges[1:])):
            char_edges = [piece.start, *cut_chars, piece.end]
            return [_Piece(a, b, edges[n + 1] - edges[n], piece.section_id, piece.path, piece.top_id)
                    for n, (a, b) in enumerate(zip(char_edges[:-1], char_edges[1:]))]

    # The fewest parts within t_max, if there are n of them, have cut i in [T - (n - i) * t_max,
    # i * t_max]: the DP needs the sentences of the paragraphs meeting those windows only (every
    # paragraph start is a candidate anyway). A strict DP (no part over t_max) over those candidates
    # that finds n parts has found the DP's answer over every boundary; it finding more means no
    # n-part split exists, so n grows and the windows widen. Over-long sentences end up segmenting
    # the whole unit.
    segmented: set[int] = set()
    n = k - 1
    while len(segmented) < para_end - para_start:  # windows cover the unit once (n - 1) * t_max >= T
        n += 1
        windows = [(total - (n - i) * t_max, i * t_max) for i in range(1, n)]
        para_next = para_tok[1:] + [total]
        chars = []
        for offset, q in enumerate(range(para_start, para_end)):
            if q in segmented or any(para_tok[offset] <= hi and para_next[offset] >= lo for lo, hi in windows):
                segmented.add(q)
                chars.extend(paragraph_boundaries(doc.text, doc.para_starts[q], doc.para_ends[q]))
            else:
                chars.append(doc.para_starts[q])
        positions = [tokens.index(c) - base for c in chars] + [total]
        cuts = partition_sizes(positions, t_max, strict=True)
        if cuts is not None and len(cuts) + 1 == n:
            return _parts(piece, chars, positions, cuts)
    chars = _unit_boundaries(doc, para_start, para_end)
    positions = [tokens.index(c) - base for c in chars] + [total]
    return _parts(piece, chars, positions, split_cuts(positions, t_max))


def _parts(piece: _Piece, chars: list[int], positions: list[int], cuts: list[int]) -> list[_Piece]:
    edges = [0, *cuts, len(chars)]
    parts = []
    for a, b in zip(edges[:-1], edges[1:]):
        start = chars[a]
        end = chars[b] if b < len(chars) else piece.end
        parts.append(_Piece(start, end, positions[b] - positions[a], piece.section_id, piece.path, piece.top_id))
    return parts


def _common_path(a: tuple[str, ...], b: tuple[str, ...]) -> tuple[str, ...]:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return a[:n]


def _merged(first: _Piece, second: _Piece) -> _Piece:
    return _Piece(first.start, second.end, first.tokens + second.tokens, first.section_id,
                  _common_path(first.path, second.path), first.top_id)


def _merge_small(pieces: list[_Piece], t_min: int, t_max: int) -> list[_Piece]:
    """Merge chunks under ``t_min`` within one top-level section (rules in the module docstring)."""
    out = list(pieces)
    i = 0
    while i < len(out):
        piece = out[i]
        if piece.tokens < t_min and len(out) > 1:
            if i + 1 < len(out) and piece.tokens + out[i + 1].tokens <= t_max:
                out[i:i + 2] = [_merged(piece, out[i + 1])]
                continue  # the merged chunk may still be small
            if i > 0 and out[i - 1].tokens + piece.tokens <= t_max:
                out[i - 1:i + 1] = [_merged(out[i - 1], piece)]
                continue  # out[i] is now the chunk after the merged one
        i += 1
    return out


def _bounded(doc: _Doc, units: list[tuple[_Section, int, int]], t_max: int, t_min: int) -> list[_Piece]:
    """Split each unit over ``t_max``, then merge small chunks within each top-level section."""
    tokens = doc.tokens
    by_top: list[list[_Piece]] = []
    for section, para_start, para_end in units:
        start = doc.para_starts[para_start]
        end = doc.para_char_start(para_end)
        piece = _Piece(start, end, tokens.count(start, end), section.section_id, section.path, section.top_id)
        parts = _split(doc, piece, para_start, para_end, t_max) if piece.tokens > t_max else [piece]
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


def _frame(rows: list[tuple[str, list[_Piece]]], docs_text: dict[str, str], tokenizer: TokenCounter) -> pl.DataFrame:
    doc_ids, starts, ends, n_tokens, section_ids, paths = [], [], [], [], [], []
    for doc_id, pieces in rows:
        for piece in pieces:
            doc_ids.append(doc_id)
            starts.append(piece.start)
            ends.append(piece.end)
            n_tokens.append(piece.tokens)
            section_ids.append(piece.section_id)
            paths.append(list(piece.path))
    if not tokenizer.additive:  # span counts were estimates: count each chunk's own text
        n_tokens = tokenizer.count_batch([docs_text[d][s:e] for d, s, e in zip(doc_ids, starts, ends)])
    if not doc_ids:
        return empty("chunks")
    frame = pl.DataFrame({
        "chunk_id": list(range(len(doc_ids))),
        "doc_id": doc_ids,
        "start": starts,
        "end": ends,
        "n_tokens": n_tokens,
        "section_id": section_ids,
        "path": paths,
    }, schema=CHUNKS)
    return frame


def _check_bounds(t_max: int, t_min: int) -> None:
    if t_max < 1 or t_min < 0 or t_min > t_max:
        raise ValueError(f"need 0 <= t_min <= t_max and t_max >= 1, got t_min={t_min}, t_max={t_max}")


# --------------------------------------------------------------------------------------------------
# Public chunkers


def structural_chunks(documents: pl.DataFrame, paragraphs: pl.DataFrame, sections: pl.DataFrame,
                      tokenizer: TokenCounter | str, *, t_max: int = 350, t_min: int = 60) -> pl.DataFrame:
    """Structure-aligned chunks (A2..A4, P, G2..G4): one unit per section's own paragraphs, then bounds.

    See the module docstring for the split and merge rules. ``chunk_id`` is the ordinal over the
    set sorted by ``(doc_id, start)``; a chunk's ``section_id`` is its (first) section and ``path``
    that section's path, or the shared path of a merged chunk.
    """
    _check_bounds(t_max, t_min)
    tokenizer = load_tokenizer(tokenizer)
    docs = _prepare(documents, paragraphs, sections)
    rows = []
    for doc in _tokenized(docs, tokenizer):
        units = [(s, s.para_start, s.para_end) for s in doc.sections]
        rows.append((doc.doc_id, _bounded(doc, units, t_max, t_min)))
    return _frame(rows, {d.doc_id: d.text for d in docs}, tokenizer)


def semantic_chunks(documents: pl.DataFrame, paragraphs: pl.DataFrame, sections: pl.DataFrame,
                    tokenizer: TokenCounter | str, embed_fn: EmbedFn, *, threshold: float = 0.85,
                    t_max: int = 350, t_min: int = 60) -> pl.DataFrame:
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
        vectors = np.asarray(embed_fn([docs[d].text[docs[d].para_starts[p]:docs[d].para_ends[p]] for d, p in wanted]),
                             dtype=np.float64)
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
        rows.append((doc.doc_id, _bounded(doc, units, t_max, t_min)))
    return _frame(rows, {d.doc_id: d.text for d in docs}, tokenizer)


def fixed_chunks(documents: pl.DataFrame, reference_chunks: pl.DataFrame, tokenizer: TokenCounter | str, *,
                 paragraphs: pl.DataFrame, sections: pl.DataFrame, snap_tokens: int = 15,
                 t_min: int = 60) -> pl.DataFrame:
    """Fixed windows size-matched per document to ``reference_chunks`` (A0, A1; SPEC sections 6, 17).

    Per document the target is the mean ``n_tokens`` of its reference chunks, rounded half up.
    Greedy from the start: each cut goes to the sentence boundary (paragraph starts included) nearest
    to ``start + target`` tokens within ``snap_tokens`` (ties to the earlier); without one, to
    ``start + target`` tokens, moved back to the start of the whitespace-delimited word holding that
    token so no word is split (forward if that would not advance). The last window takes the
    remainder and is merged into the previous one when under ``t_min``. A chunk's ``section_id`` and
    ``path`` are those of the section its start lies in. ``paragraphs`` and ``sections`` are the same
    tables the reference chunks were built from (sentence boundaries and paths need them).
    """
    tokenizer = load_tokenizer(tokenizer)
    docs = _prepare(documents, paragraphs, sections)
    targets = _targets(reference_chunks)
    rows = []
    for doc in _tokenized(docs, tokenizer):
        if not doc.text:
            continue
        if doc.doc_id not in targets:
            raise ValueError(f"document {doc.doc_id!r} has no reference chunks to size-match against")
        cuts = _window_cuts(doc, targets[doc.doc_id], snap_tokens, t_min)
        edges = [0, *cuts, doc.n_chars]
        section_starts = doc.section_starts()
        pieces = []
        for start, end in zip(edges[:-1], edges[1:]):
            section = doc.sections[max(bisect.bisect_right(section_starts, start) - 1, 0)]
            pieces.append(_Piece(start, end, doc.tokens.count(start, end), section.section_id, section.path,
                                 section.top_id))
        rows.append((doc.doc_id, pieces))
    return _frame(rows, {d.doc_id: d.text for d in docs}, tokenizer)


def _targets(reference_chunks: pl.DataFrame) -> dict[str, int]:
    means = reference_chunks.group_by("doc_id").agg(pl.col("n_tokens").cast(pl.Float64).mean().alias("mean"))
    return {doc_id: max(1, math.floor(mean + 0.5))
            for doc_id, mean in zip(means["doc_id"].to_list(), means["mean"].to_list())}


def _window_cuts(doc: _Doc, target: int, snap_tokens: int, t_min: int) -> list[int]:
    tokens = doc.tokens
    n = len(tokens)
    cuts: list[int] = []
    position = 0  # token index where the current window starts
    while position + target < n:
        desired = position + target
        lo, hi = max(position + 1, desired - snap_tokens), min(n - 1, desired + snap_tokens)
        best, best_distance = None, math.inf
        first = max(bisect.bisect_right(doc.para_starts, tokens.starts[lo]) - 1, 0)
        last = bisect.bisect_right(doc.para_starts, tokens.starts[hi]) - 1
        for para in range(first, last + 1):
            for char in paragraph_boundaries(doc.text, doc.para_starts[para], doc.para_ends[para]):
                index = tokens.index(char)
                if lo <= index <= hi and abs(index - desired) < best_distance:
                    best, best_distance = (index, char), abs(index - desired)
        if best is None:
            index = _word_start(doc, position, desired)
            if index is None:
                break
            best = (index, tokens.starts[index])
        position = best[0]
        cuts.append(best[1])
    if cuts and len(tokens) - position < t_min:
        cuts.pop()
    return cuts


def _word_start(doc: _Doc, position: int, desired: int) -> int | None:
    """The token index at or before ``desired`` (after ``position``) that starts a whitespace-delimited word."""
    starts, text = doc.tokens.starts, doc.text
    for index in range(desired, position, -1):
        char = starts[index]
        if char > 0 and text[char - 1].isspace():
            return index
    for index in range(desired + 1, len(starts)):
        char = starts[index]
        if text[char - 1].isspace():
            return index
    return None


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


def bounds_report(chunks: pl.DataFrame, *, t_max: int = 350, t_min: int = 60) -> dict:
    """Counts of chunks outside ``[t_min, t_max]`` and the size distribution, for the corpus report."""
    sizes = chunks["n_tokens"]
    return {
        "chunks": chunks.height,
        "mean_tokens": float(sizes.mean()) if chunks.height else math.nan,
        "median_tokens": float(sizes.median()) if chunks.height else math.nan,
        "over_t_max": int((sizes > t_max).sum()),
        "under_t_min": int((sizes < t_min).sum()),
    }

