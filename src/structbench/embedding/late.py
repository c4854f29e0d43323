"""Late chunking (docs/method.md §8a; Günther, Mohr, Williams, Wang and Xiao, "Late Chunking: Contextual Chunk
Embeddings Using Long-Context Embedding Models", 2024): a chunk's vector is the normalised mean of its own tokens'
output embeddings from a pass over its *document*, so it has attended to its neighbours without a prepended token.

**Windows** (:func:`plan_windows`, Jina's "long late chunking"): the document's flat text (content as chunked, no
prefixes) is tokenized once without special tokens; a text longer than the window's capacity
(``max_seq_length - 2``: each window is ``[CLS] tokens [SEP]``) is covered by windows of that capacity starting every
``capacity - overlap`` tokens, the last one ending at the document's end.

**Alignment** (:func:`chunk_token_ranges`): a token belongs to the chunk whose character span holds the token's
first character (the tokenizer's offsets); chunks tile the flat text, so every token belongs to one chunk.

**Which window pools a chunk** (:func:`assign_windows`): among the windows holding all of the chunk's tokens, the one
with most context on both sides (the larger ``min(left, right)`` context tokens); a tie goes to the earlier window.
A chunk no window holds whole (it straddles a window boundary by more than the overlap, or is longer than a window)
is pooled token by token: each token's output comes from the window where that token has most context on both sides
(ties: earlier). Those chunks are counted (``n_split``). A window's ``[CLS]`` is pooled with the chunk holding its
first content token and its ``[SEP]`` with the chunk holding its last, as independent encoding pools both with
every chunk: so a one-chunk document that fits one window gets exactly the ordinary pooled vector
(``tests/embedding/test_late.py`` measures the difference).

**Placebo late chunking** (:func:`placebo_window`): the same chunk's tokens pooled inside a window whose other tokens
come from another document (a seeded derangement among documents of similar token length,
:func:`structbench.prefixes.placebo.document_derangement`), with the left and right context counts of the chunk's
real window (fewer only when the host document is shorter), at the same relative position. Late − placebo-late then
asks whether *this document's* context helps, with "more tokens of attention around it" held equal.

**Shapes** (the local encoder's rule, ``embedding/passes.py``): each window runs padded to its own bucket length in a
pass of a fixed row count for that width, filled with copies, with the attention kernel and the CPU thread split
fixed too; so a window's outputs never depend on other windows, the order or the thread count.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from structbench.cache import VectorCache
from structbench.conditions import LATE_PREFIXES
from structbench.datamodel import document_texts
from structbench.embedding.local import (
    SPECIAL_TOKENS,
    EmbedderSpec,
    embedder_namespace,
    embedding_dimension,
    load_model,
    resolve_embedder,
)
from structbench.embedding.passes import plan_passes, run_passes, tokenized_windows
from structbench.embedding.report import TruncationCount, add_lookup_totals, encoder_report, new_totals
from structbench.logs import Progress
from structbench.vectors import unit_length

LOG = logging.getLogger(__name__)

LATE_SCHEME = "late-windows-v1"


# ---- pure planning -----------------------------------------------------------------------------------------


def plan_windows(n_tokens: int, capacity: int, overlap: int) -> list[tuple[int, int]]:
    """Half-open token ranges ``[start, end)`` of the windows covering ``n_tokens`` tokens: ``capacity`` tokens each,
    starting every ``capacity - overlap``, the last ending at ``n_tokens``. One window when the text fits."""
    if capacity < 1:
        raise ValueError(f"late chunking: window capacity {capacity} tokens leaves no room for content")
    if not 0 <= overlap < capacity:
        raise ValueError(f"late chunking: overlap {overlap} must be >= 0 and below the window capacity {capacity}")
    if n_tokens <= capacity:
        return [(0, n_tokens)]
    step = capacity - overlap
    windows = []
    start = 0
    while True:
        end = min(start + capacity, n_tokens)
        windows.append((start, end))
        if end == n_tokens:
            return windows
        start += step


def window_overlap(capacity: int, overlap: int | None) -> int:
    """The overlap in tokens: the stated one, or (``None``, the default) half of a window's ``capacity``, so that a
    chunk of up to ``capacity // 2 + 1`` tokens always lies whole in some window (:func:`plan_windows`)."""
    return capacity // 2 if overlap is None else overlap


def chunk_token_ranges(token_starts: Sequence[int], spans: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """Each chunk's token range ``[a, b)``: the tokens whose first character lies in the chunk's ``[start, end)``.

    ``token_starts`` are the tokens' first-character offsets (ascending), ``spans`` the chunks' character spans
    (ascending, disjoint). A chunk holding no token is a ValueError naming its span."""
    starts = np.asarray(token_starts, dtype=np.int64)
    ranges = []
    for start, end in spans:
        a, b = int(np.searchsorted(starts, start, "left")), int(np.searchsorted(starts, end, "left"))
        if a == b:
            raise ValueError(f"late chunking: chunk span [{start}, {end}) holds no token of its document")
        ranges.append((a, b))
    return ranges


def _context(position: tuple[int, int], window: tuple[int, int]) -> int:
    """Context tokens on the poorer side of ``position`` ``[a, b)`` inside ``window``."""
    return min(position[0] - window[0], window[1] - position[1])


@dataclass(frozen=True)
class Piece:
    """Tokens ``[a, b)`` of a chunk pooled from window ``window`` (an index into the plan)."""

    window: int
    a: int
    b: int


def assign_windows(token_range: tuple[int, int], windows: Sequence[tuple[int, int]]) -> list[Piece]:
    """The pieces a chunk is pooled from (module docstring): one piece from the holding window with most context on
    both sides (ties: earlier), else a token-by-token choice merged into runs of one window."""
    a, b = token_range
    holding = [i for i, (ws, we) in enumerate(windows) if ws <= a and b <= we]
    if holding:
        best = max(holding, key=lambda i: (_context((a, b), windows[i]), -i))
        return [Piece(best, a, b)]
    pieces: list[Piece] = []
    for token in range(a, b):
        candidates = [i for i, (ws, we) in enumerate(windows) if ws <= token < we]
        best = max(candidates, key=lambda i: (_context((token, token + 1), windows[i]), -i))
        if pieces and pieces[-1].window == best and pieces[-1].b == token:
            pieces[-1] = Piece(best, pieces[-1].a, token + 1)
        else:
            pieces.append(Piece(best, token, token + 1))
    return pieces


def placebo_window(
    token_range: tuple[int, int],
    real_window: tuple[int, int] | None,
    n_own: int,
    host: Sequence[int],
    chunk_ids: Sequence[int],
    capacity: int,
) -> tuple[list[int], int, int]:
    """A placebo window's content ids and where the chunk lies in it: ``(ids, a, b)``.

    The chunk's own ids ``chunk_ids`` are kept; its left and right context counts are those of its real window
    (``real_window``; a split chunk, ``None``, is centred in a full window), cut in proportion when the ``host``
    document is shorter; the host tokens around it are taken at the chunk's relative position in its own document
    (``token_range`` of ``n_own`` tokens). A chunk filling a window is the caller's case: it gets no host token."""
    n = len(chunk_ids)
    if n >= capacity:
        raise ValueError(f"placebo window: a chunk of {n} tokens leaves no room in a window of {capacity}")
    if real_window is None:
        left = (capacity - n) // 2
        right = capacity - n - left
    else:
        left, right = token_range[0] - real_window[0], real_window[1] - token_range[1]
    if left + right > len(host):
        left = round(len(host) * left / (left + right))
        right = len(host) - left
    position = round(token_range[0] * len(host) / max(n_own, 1))
    position = min(max(position, left), len(host) - right)
    before, after = list(host[position - left : position]), list(host[position : position + right])
    return before + list(chunk_ids) + after, left, left + n


# ---- the model call ----------------------------------------------------------------------------------------


def tokenize_document(tokenizer, text: str) -> tuple[list[int], list[int]]:
    """A document's token ids without special tokens, never truncated, and each token's first-character offset."""
    encoded = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True, verbose=False)
    return list(encoded["input_ids"]), [start for start, _ in encoded["offset_mapping"]]


def _token_vectors(features: dict) -> np.ndarray:
    return features["token_embeddings"].float().cpu().numpy()


def token_outputs(model, windows: Sequence[Sequence[int]], threads: int | None = None) -> list[np.ndarray]:
    """Each window's output token embeddings (``len + 2`` rows, specials included), float32, in input order, from
    the fixed-shape passes of ``embedding/passes.py`` (a window's outputs never depend on other windows)."""
    tokenized = tokenized_windows(model.tokenizer, windows)
    passes = plan_passes(tokenized.lengths, model.max_seq_length, on_gpu=model.device.type == "cuda")
    outputs: list[np.ndarray | None] = [None] * len(windows)
    for one_pass, tokens in zip(passes, run_passes(model, tokenized, passes, _token_vectors, threads)):
        for row, index in enumerate(one_pass.members):
            outputs[index] = tokens[row, : tokenized.lengths[index]]
    return outputs


def pool(outputs: np.ndarray, a: int, b: int, n_window: int) -> tuple[np.ndarray, int]:
    """Sum and count of a piece's outputs: its content tokens ``[a, b)`` of a window of ``n_window`` content tokens,
    plus ``[CLS]`` when it starts the window and ``[SEP]`` when it ends it (module docstring)."""
    first = 0 if a == 0 else a + 1
    last = n_window + 2 if b == n_window else b + 1
    return outputs[first:last].sum(axis=0, dtype=np.float64), last - first


def _normalised(total: np.ndarray, count: int) -> np.ndarray:
    """The pooled vector: the mean of ``count`` outputs summed in ``total``, at unit length, float32."""
    return unit_length(total / count).astype(np.float32)


@dataclass
class LateStats:
    """What a late encoding cost and how its chunks were placed (the embedding report's late keys)."""

    windows: int = 0
    tokens_late: int = 0  # window tokens encoded, specials included
    tokens_independent: int = 0  # the same chunks encoded one by one, specials included
    n_split: int = 0  # chunks no window held whole
    n_own_host: int = 0  # placebo chunks pooled in their own document (must be 0)
    n_without_context: int = 0  # placebo chunks longer than a window: no host token
    context_tokens: int = 0  # sum over chunks of left + right context tokens in their window
    max_window: int = 0  # the longest window, specials included (never above max_seq_length: nothing truncated)
    seconds: float = 0.0


def late_document_vectors(
    model,
    ids: Sequence[int],
    ranges: Sequence[tuple[int, int]],
    capacity: int,
    overlap: int,
    threads: int | None,
    stats: LateStats,
    host: Sequence[int] | None = None,
) -> np.ndarray:
    """One document's chunk vectors (row per range), late (``host`` None) or placebo-late inside ``host``'s ids."""
    windows = plan_windows(len(ids), capacity, overlap)
    assigned = [assign_windows(r, windows) for r in ranges]
    stats.tokens_independent += sum(b - a + SPECIAL_TOKENS for a, b in ranges)
    stats.n_split += sum(len(pieces) > 1 for pieces in assigned)
    if host is None:
        contents = [list(ids[ws:we]) for ws, we in windows]
        jobs = [
            [(p.window, p.a - windows[p.window][0], p.b - windows[p.window][0]) for p in pieces] for pieces in assigned
        ]
        stats.context_tokens += sum(
            (p.a - windows[p.window][0]) + (windows[p.window][1] - p.b) for pieces in assigned for p in pieces[:1]
        )
    else:
        contents, jobs = [], []
        for r, pieces in zip(ranges, assigned):
            own = list(ids[r[0] : r[1]])
            if len(own) >= capacity:  # no room for a host token: the chunk alone, in windows of its own
                stats.n_without_context += 1
                cut = range(0, len(own), capacity)
                jobs.append([(len(contents) + k, 0, len(own[s : s + capacity])) for k, s in enumerate(cut)])
                contents.extend(own[s : s + capacity] for s in cut)
                continue
            real = windows[pieces[0].window] if len(pieces) == 1 else None
            window, a, b = placebo_window(r, real, len(ids), host, own, capacity)
            stats.context_tokens += len(window) - (b - a)
            jobs.append([(len(contents), a, b)])
            contents.append(window)
    started = time.perf_counter()
    outputs = token_outputs(model, contents, threads)
    stats.seconds += time.perf_counter() - started
    stats.windows += len(contents)
    stats.tokens_late += sum(len(c) + SPECIAL_TOKENS for c in contents)
    stats.max_window = max([stats.max_window, *(len(c) + SPECIAL_TOKENS for c in contents)])
    vectors = np.zeros((len(ranges), embedding_dimension(model)), dtype=np.float32)
    for row, pieces in enumerate(jobs):
        total, count = 0.0, 0
        for window, a, b in pieces:
            piece_sum, piece_count = pool(outputs[window], a, b, len(contents[window]))
            total, count = total + piece_sum, count + piece_count
        vectors[row] = _normalised(total, count)
    return vectors


# ---- the cached encoder ------------------------------------------------------------------------------------


def chunk_key(text: str, spans: Sequence[tuple[int, int]], index: int, host: str | None) -> str:
    """A chunk's cache text: its document's text, every chunk span of it, its index and (placebo) the host text."""
    return json.dumps({"document": text, "spans": [list(s) for s in spans], "chunk": index, "host": host})


class LateEncoder:
    """Late (``mode="late"``) or placebo-late (``"late_placebo"``) chunk vectors of one chunk set, through the
    content-addressed cache: namespace = the model's fingerprint (weights or revision, max_seq_length, device,
    libraries) plus the window, the overlap and the mode; key = (document text, chunk spans, chunk, host text)."""

    def __init__(
        self, spec: EmbedderSpec, cache_root: str | Path, overlap: int | None, mode: str, threads: int | None = None
    ):
        if mode not in LATE_PREFIXES:
            raise ValueError(f"late chunking mode {mode!r} is not one of {list(LATE_PREFIXES)}")
        self.spec, self.mode, self.threads = spec, mode, threads
        self.resolved = resolve_embedder(spec)
        self.window = self.resolved.max_seq_length
        self.capacity = self.window - SPECIAL_TOKENS
        overlap = window_overlap(self.capacity, overlap)
        plan_windows(0, self.capacity, overlap)  # refuses an overlap the window cannot take, before any model loads
        self.overlap = overlap
        namespace = embedder_namespace(self.resolved, cache_root) | {
            "late": {"scheme": LATE_SCHEME, "window": self.window, "overlap": overlap, "mode": mode}
        }
        self.cache = VectorCache(cache_root, namespace)
        self.stats = LateStats()
        self.totals = new_totals()
        self._model = None

    def model(self):
        if self._model is None:
            self._model = load_model(self.resolved)
        return self._model

    def _compute(self, keys: list[str]) -> np.ndarray:
        model = self.model()
        wanted: dict[tuple, list[int]] = {}
        parsed = [json.loads(key) for key in keys]
        for position, item in enumerate(parsed):
            group = (item["document"], json.dumps(item["spans"]), item["host"])
            wanted.setdefault(group, []).append(position)
        out = np.zeros((len(keys), embedding_dimension(model)), dtype=np.float32)
        # one cache chunk holds every key (a document's windows are encoded once), so progress is logged here
        progress = Progress(LOG, f"{self.mode}-encoded", total=len(keys), unit="chunks", interval=30.0)
        for (text, spans_json, host_text), positions in wanted.items():
            ids, starts = tokenize_document(model.tokenizer, text)
            ranges = chunk_token_ranges(starts, [tuple(s) for s in json.loads(spans_json)])
            host = None if host_text is None else tokenize_document(model.tokenizer, host_text)[0]
            chunks = [parsed[p]["chunk"] for p in positions]
            vectors = late_document_vectors(
                model,
                ids,
                [ranges[c] for c in chunks],
                self.capacity,
                self.overlap,
                self.threads,
                self.stats,
                host,
            )
            out[positions] = vectors
            progress.update(len(positions))
        progress.finish()
        return out

    def __call__(self, documents: Sequence[tuple[str, Sequence[tuple[int, int]], str | None]]) -> np.ndarray:
        """Vectors for every chunk of ``documents`` — ``(text, chunk spans, host text or None)`` each — in order."""
        keys = [chunk_key(text, spans, i, host) for text, spans, host in documents for i in range(len(spans))]
        if self.mode == "late_placebo":
            self.stats.n_own_host += sum(len(spans) for text, spans, host in documents if host == text)
        lookup = self.cache.get_or_compute(keys, self._compute, chunk_size=1 << 20, verb="late-encoded")
        add_lookup_totals(self.totals, len(keys), lookup)
        return lookup.vectors

    def report(self) -> dict:
        stats = self.stats
        return encoder_report(
            self.totals, TruncationCount(self.window, 0, stats.max_window), self.cache.directory.name
        ) | {
            "encoding": self.mode,
            "late_overlap": self.overlap,
            "late_windows": stats.windows,
            "tokens_late": stats.tokens_late,
            "tokens_independent": stats.tokens_independent,
            "late_split_chunks": stats.n_split,
            "late_own_host_chunks": stats.n_own_host,
            "late_without_context": stats.n_without_context,
            "late_mean_context_tokens": stats.context_tokens / max(self.totals["n_encoded"], 1),
            "encoder_seconds": round(stats.seconds, 3),
        }


# ---- the workflow step -------------------------------------------------------------------------------------


def late_chunk_documents(documents, chunks, mode: str, seed: int) -> tuple[list[tuple], list[int]]:
    """The encoder's input for a chunk set — ``(document text, chunk spans, host text or None)`` per document,
    documents in ``doc_id`` order — and the chunk ids in the order the encoder returns their vectors.

    ``documents``/``chunks`` are the DOCUMENTS and CHUNKS tables. The placebo's hosts are a derangement among
    documents of similar length (:func:`structbench.prefixes.placebo.document_derangement`; lengths in characters,
    the tokenizer being the model's); a document hosting itself is a ValueError."""
    from structbench.prefixes.placebo import document_derangement

    text_of = document_texts(documents)
    ordered = chunks.sort(["doc_id", "start"])
    by_doc: dict[str, list[tuple[int, int, int]]] = {}
    for chunk_id, doc_id, start, end in ordered.select("chunk_id", "doc_id", "start", "end").iter_rows():
        by_doc.setdefault(doc_id, []).append((chunk_id, start, end))
    missing = sorted(set(by_doc) - set(text_of))
    if missing:
        raise ValueError(f"chunks refer to documents missing from the documents table: {missing[:5]}")
    hosts = {}
    if mode == "late_placebo":
        hosts = document_derangement({doc: len(text_of[doc]) for doc in by_doc}, seed)
        own = [doc for doc, host in hosts.items() if host == doc]
        if own:
            raise ValueError(f"placebo late chunking: documents {own[:5]} would be pooled in their own context")
    entries, order = [], []
    for doc in sorted(by_doc):
        rows = by_doc[doc]
        host = text_of[hosts[doc]] if hosts else None
        entries.append((text_of[doc], [(start, end) for _, start, end in rows], host))
        order.extend(chunk_id for chunk_id, _, _ in rows)
    return entries, order


def late_embed_with_cache(
    documents,
    chunks,
    spec: EmbedderSpec,
    cache_root: str | Path,
    overlap: int | None,
    mode: str,
    seed: int,
    output_npy: str | Path,
    report_json: str | Path,
    threads: int | None = None,
) -> dict:
    """Workflow entry: late (or placebo-late) vectors of every chunk, row i = chunk_id i, and the report, written
    atomically."""
    from structbench.cache import atomic_write_bytes, atomic_write_text
    from structbench.embedding.report import npy_bytes, vector_facts

    entries, order = late_chunk_documents(documents, chunks, mode, seed)
    encoder = LateEncoder(spec, cache_root, overlap, mode, threads)
    vectors = encoder(entries)
    if not order:
        vectors = np.zeros((0, embedding_dimension(encoder.model())), dtype=np.float32)
    by_chunk = np.zeros_like(vectors)
    by_chunk[np.asarray(order, dtype=np.int64)] = vectors
    report = {**encoder.report(), **vector_facts(by_chunk)}
    atomic_write_bytes(output_npy, npy_bytes(by_chunk))
    atomic_write_text(report_json, json.dumps(report, sort_keys=True, indent=1) + "\n")
    return report
