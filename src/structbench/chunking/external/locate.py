"""From a library's spans to tiling chunks: locating, counting, cut kinds and size matching, and
:func:`external_chunks` itself (rules in :mod:`structbench.chunking.external`).
"""

from __future__ import annotations

import bisect
import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass

import polars as pl

from structbench.chunking.external.adapters import _ADAPTERS, Adapter, _Unverifiable
from structbench.chunking.external.chunker_spec import (
    LIBRARIES,
    ChunkerSpec,
    ExternalChunkerError,
    library_version,
    require_installed,
)
from structbench.chunking.external.markdown import _Document, _documents
from structbench.chunking.tiling import cut_counts, size_match_report
from structbench.datamodel import CHUNKS, empty
from structbench.sentences import sentence_starts_near
from structbench.tokens import TokenCounter, load_tokenizer

# --------------------------------------------------------------------------------------------------
# From a library's spans to tiling chunks


class LibraryFailure(ExternalChunkerError):
    """The library itself raised at one size (not a verification failure: those are never skipped)."""

    def __init__(self, where: str, size: int, error: Exception):
        self.size, self.error = size, f"{type(error).__name__}: {error}"
        super().__init__(f"{where}: the library failed at size {size}: {self.error}")


@dataclass
class _Chunked:
    """One document chunked at one size."""

    size: int
    starts: list[int]
    ends: list[int]
    n_tokens: list[int]
    heading_only: int

    @property
    def mean(self) -> float:
        return statistics.fmean(self.n_tokens) if self.n_tokens else math.nan


def _content(text: str, start: int, end: int) -> tuple[int, int] | None:
    """``[start, end)`` without its surrounding whitespace; None when only whitespace."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return (start, end) if end > start else None


def _preview(text: str) -> str:
    return repr(text[:60] + ("..." if len(text) > 60 else ""))


def _content_spans(doc: _Document, spec: ChunkerSpec, adapter: Adapter, size: int) -> tuple[list[tuple[int, int]], int]:
    """The library's chunks of ``doc`` at ``size`` as flat content spans, and how many held only headings."""
    markdown = doc.markdown if spec.input == "markdown" else None
    source = markdown.text if markdown else doc.text
    where = f"chunkers.{spec.name} ({spec.library} {spec.kind}), document {doc.doc_id!r}"
    try:
        spans = adapter(source, size)
    except _Unverifiable as error:
        raise ExternalChunkerError(
            f"{where}: a chunk's text is not in the input "
            f"{'at the offsets the library gives' if spec.library != 'langchain' else 'after the previous chunk'}: "
            f"{_preview(error.chunk)}"
        ) from None
    except Exception as error:
        raise LibraryFailure(where, size, error) from error
    content, heading_only = [], 0
    for start, end in spans:
        if markdown is not None:
            mapped = markdown.flat_span(start, end)
            if mapped is None:
                heading_only += not source[start:end].isspace()
                continue
            start, end = mapped
        span = _content(doc.text, start, end)
        if span is None:
            heading_only += markdown is not None and not source[start:end].isspace()
            continue
        content.append(span)
    return content, heading_only


def _chunk_extents(doc: _Document, spec: ChunkerSpec, content: list[tuple[int, int]]) -> tuple[list[int], list[int]]:
    """Chunk starts and ends: tiling the document (module docstring, Tiling), or, for a chunker declaring an
    overlap, covering it in order (Overlap): each chunk its content span, in the library's order, which
    must be ``(start, end)`` increasing; where whitespace lies between the text covered so far and a chunk,
    the chunk that reached furthest is extended over it; the first chunk starts at 0, and the one reaching
    furthest ends at ``n_chars``."""
    if spec.overlap is None:
        starts = _tile_edges(doc, spec, content)
        return starts, starts[1:] + [len(doc.text)]
    where = f"chunkers.{spec.name} ({spec.library} {spec.kind}), document {doc.doc_id!r}"
    starts, ends, furthest = [], [], None  # furthest: the index of the chunk reaching furthest so far
    for start, end in content:
        if starts and (start, end) <= (starts[-1], ends[-1]):
            raise ExternalChunkerError(
                f"{where}: chunk [{start}, {end}) does not follow the chunk [{starts[-1]}, {ends[-1]}) before it "
                "(chunks must come in (start, end) order, none twice)"
            )
        reach = ends[furthest] if starts else 0
        gap = doc.text[reach:start]
        if gap.strip():
            raise ExternalChunkerError(
                f"{where}: the library dropped text at [{reach}, {start}): {_preview(gap.strip())}"
            )
        if starts and reach < start:
            ends[furthest] = start  # the whitespace between two chunks belongs to the one before, as when tiling
        starts.append(start)
        ends.append(end)
        if furthest is None or end > ends[furthest]:
            furthest = len(ends) - 1
    reach = ends[furthest] if starts else 0
    if doc.text[reach:].strip():
        raise ExternalChunkerError(
            f"{where}: the library dropped text at [{reach}, {len(doc.text)}): {_preview(doc.text[reach:].strip())}"
        )
    if starts:
        starts[0], ends[furthest] = 0, len(doc.text)
    return starts, ends


def _tile_edges(doc: _Document, spec: ChunkerSpec, content: list[tuple[int, int]]) -> list[int]:
    """Chunk starts that tile the document (module docstring, Tiling); the last chunk ends at ``n_chars``."""
    where = f"chunkers.{spec.name} ({spec.library} {spec.kind}), document {doc.doc_id!r}"
    edges, previous_end = [], 0
    for start, end in content:
        if start < previous_end:
            raise ExternalChunkerError(f"{where}: chunks overlap on [{start}, {previous_end})")
        gap = doc.text[previous_end:start]
        if gap.strip():
            raise ExternalChunkerError(
                f"{where}: the library dropped text at [{previous_end}, {start}): {_preview(gap.strip())}"
            )
        edges.append(start)
        previous_end = end
    tail = doc.text[previous_end:]
    if tail.strip():
        raise ExternalChunkerError(
            f"{where}: the library dropped text at [{previous_end}, {len(doc.text)}): {_preview(tail.strip())}"
        )
    if edges:
        edges[0] = 0
    return edges


def _word_edge(text: str, char: int) -> bool:
    return char == 0 or char >= len(text) or text[char - 1].isspace()


def _chunk_document(doc: _Document, spec: ChunkerSpec, adapter: Adapter, counter: TokenCounter, size: int) -> _Chunked:
    content, heading_only = _content_spans(doc, spec, adapter, size)
    starts, ends = _chunk_extents(doc, spec, content)
    text = doc.text
    # A chunk cut where whitespace precedes both its edges splits no word, so with a word-level tokenizer its
    # count is the number of the document's tokens starting in it (structbench.tokens.TokenSpans): the
    # document is tokenized once for every size tried. Any other chunk is counted on its own text.
    tokens = doc.tokens(counter) if counter.additive else None
    n_tokens = [
        tokens.count(a, b) if tokens is not None and _word_edge(text, a) and _word_edge(text, b) else -1
        for a, b in zip(starts, ends)
    ]
    own = [i for i, n in enumerate(n_tokens) if n < 0]
    for i, n in zip(own, counter.count_batch([text[starts[i] : ends[i]] for i in own])):
        n_tokens[i] = n
    return _Chunked(size, starts, ends, n_tokens, heading_only)


def matched_size(
    evaluate: Callable[[int], float], target: float, t_max: int, failed: dict[int, LibraryFailure] | None = None
) -> int:
    """The size in ``1..t_max`` whose realized mean ``evaluate(size)`` is closest to ``target``.

    Bisection for the smallest size whose mean reaches ``target`` (means grow with the size, not
    strictly), then the closest of all sizes evaluated, ties to the larger. ``evaluate`` is called at
    most ``1 + ceil(log2(t_max))`` times, never twice for one size.

    A size where ``evaluate`` raises :class:`LibraryFailure` is skipped (docs/method.md §6, "Peer
    chunkers"): recorded in ``failed`` (size -> the :class:`LibraryFailure`) and read as "below the
    target" (the search goes on above it), except ``t_max``, whose failure lets the search go below.
    The closest of the sizes that worked wins; when none worked, the failure at the largest size is raised.
    """
    seen: dict[int, float] = {}
    failed = {} if failed is None else failed

    def reaches(size: int, on_failure: bool) -> bool:
        if size not in seen and size not in failed:
            try:
                seen[size] = evaluate(size)
            except LibraryFailure as error:
                failed[size] = error
        return on_failure if size in failed else seen[size] >= target

    lo, hi = 1, t_max
    if reaches(hi, on_failure=True):
        while lo < hi:
            mid = (lo + hi) // 2
            if reaches(mid, on_failure=False):
                hi = mid
            else:
                lo = mid + 1
    if not seen:
        raise failed[max(failed)]
    return min(seen, key=lambda size: (abs(seen[size] - target), -size))


def _cut_kind(doc: _Document, char: int) -> str:
    """The strongest boundary at ``char``, a chunk end (module docstring, Columns).

    An overlapping set's chunk ends at its last non-space character (the next chunk starts inside it, so no
    whitespace is added after it, as a tiling set's is): the boundary is then read past the whitespace that
    follows, where a tiling chunk would have ended."""
    text = doc.text
    char = _past_whitespace(text, char)
    if char >= len(text):
        return "end"
    index = bisect.bisect_left(doc.section_starts, char)
    if index < len(doc.section_starts) and doc.section_starts[index] == char:
        return "section"
    para = bisect.bisect_right(doc.para_starts, char) - 1
    if doc.para_starts[para] == char:
        return "paragraph"
    lo = char
    while lo > 0 and text[lo - 1].isspace():
        lo -= 1
    if lo == char:
        return "token"
    start, end = doc.para_starts[para], doc.para_ends[para]
    if char < end:
        _, _, sentence_starts = sentence_starts_near(text[start:end], char - start, char - start)
        if char - start in sentence_starts:
            return "sentence"
    return "line" if "\n" in text[lo:char] else "word"


def _past_whitespace(text: str, char: int) -> int:
    """``char`` moved past the whitespace that starts there (unchanged when ``text[char]`` is not a space)."""
    while char < len(text) and text[char].isspace():
        char += 1
    return char


# --------------------------------------------------------------------------------------------------
# The chunker


def _reference_means(reference: pl.DataFrame) -> dict[str, float]:
    means = reference.group_by("doc_id").agg(pl.col("n_tokens").cast(pl.Float64).mean().alias("mean"))
    return dict(zip(means["doc_id"].to_list(), means["mean"].to_list()))


def external_chunks(
    documents: pl.DataFrame,
    paragraphs: pl.DataFrame,
    sections: pl.DataFrame,
    tokenizer: TokenCounter | str,
    *,
    spec: ChunkerSpec,
    t_max: int,
    reference: pl.DataFrame | None = None,
) -> tuple[pl.DataFrame, dict]:
    """Run a peer chunker over a corpus: ``(chunks, report)`` (rules in the module docstring).

    ``documents``, ``paragraphs`` and ``sections`` are the corpus tables a structural chunker gets
    (``sections``: the gold or an induced structure); ``reference`` is that structure's structural
    chunk set, required when ``spec.size_match`` and otherwise only reported against. The chunks tile
    every document (``chunk_id`` ordinal over ``(doc_id, start)``). The report holds the library and
    version, chunk and over-``t_max`` counts, heading-only chunks dropped, the cut kinds, per document
    the size used, chunk count and mean tokens, and, with a reference, the keys of
    :func:`structbench.chunking.tiling.size_match_report` (``matched_*`` there meaning this chunk set), so the
    chunk-size-matching table reads it as it reads a fixed set's.
    """
    if t_max < 1:
        raise ExternalChunkerError(f"chunkers.{spec.name}: t_max must be at least 1, got {t_max}")
    if spec.size_match and reference is None:
        raise ExternalChunkerError(f"chunkers.{spec.name}: size_match needs the structural reference chunks")
    require_installed([spec])
    counter = load_tokenizer(tokenizer)
    adapter = _ADAPTERS[spec.library](spec, counter)
    targets = _reference_means(reference) if reference is not None else {}
    rows: dict[str, list] = {column: [] for column in CHUNKS if column != "chunk_id"}
    per_document, runs, heading_only, failed_trials = [], 0, 0, 0
    for doc in _documents(documents, paragraphs, sections):
        if not doc.text.strip():
            continue
        tried: dict[int, _Chunked] = {}

        def run(size: int, doc=doc, tried=tried) -> float:
            tried[size] = _chunk_document(doc, spec, adapter, counter, size)
            return tried[size].mean

        if spec.size_match:
            if doc.doc_id not in targets:
                raise ExternalChunkerError(
                    f"chunkers.{spec.name}: document {doc.doc_id!r} has no reference chunks to size-match against"
                )
            failed: dict[int, LibraryFailure] = {}
            try:
                size = matched_size(run, targets[doc.doc_id], t_max, failed)
            except LibraryFailure:
                raise ExternalChunkerError(
                    f"chunkers.{spec.name} ({spec.library} {spec.kind}), document {doc.doc_id!r}: the library "
                    f"failed at every size tried, {sorted(failed)}: "
                    + "; ".join(f"size {n}: {failed[n].error}" for n in sorted(failed))
                ) from None
            failed_trials += len(failed)
        else:
            failed = {}
            size = t_max
            run(size)
        chunked = tried[size]
        doc._tokens = doc._markdown = None  # only one document's lookups are held at a time
        runs += len(tried) + len(failed)
        heading_only += chunked.heading_only
        for start, end, n_tokens in zip(chunked.starts, chunked.ends, chunked.n_tokens):
            index = max(bisect.bisect_right(doc.section_starts, start) - 1, 0)
            rows["doc_id"].append(doc.doc_id)
            rows["start"].append(start)
            rows["end"].append(end)
            rows["n_tokens"].append(n_tokens)
            rows["section_id"].append(doc.section_ids[index])
            rows["path"].append(doc.section_paths[index])
            rows["cut"].append(_cut_kind(doc, end))
        per_document.append(
            {
                "doc_id": doc.doc_id,
                "size": size,
                "chunks": len(chunked.starts),
                "mean_tokens": chunked.mean,
                "reference_mean_tokens": targets.get(doc.doc_id),
                "over_t_max": sum(n > t_max for n in chunked.n_tokens),
                "heading_only_dropped": chunked.heading_only,
                "sizes_tried": sorted(tried.keys() | failed.keys()),
                "sizes_failed": [{"size": n, "error": failed[n].error} for n in sorted(failed)],
            }
        )
    if rows["doc_id"]:
        chunks = pl.DataFrame({"chunk_id": list(range(len(rows["doc_id"]))), **rows}, schema=CHUNKS)
    else:
        chunks = empty("chunks")
    sizes = chunks["n_tokens"]
    report = {
        "chunker": spec.name,
        "library": spec.library,
        "kind": spec.kind,
        "version": library_version(spec.library),
        "requirement": LIBRARIES[spec.library].requirement,
        "options": dict(spec.options),
        "overlap": None if spec.overlap is None else spec.overlap.text,
        "size_match": spec.size_match,
        "t_max": t_max,
        "tokenizer": counter.name,
        "chunks": chunks.height,
        "mean_tokens": float(sizes.mean()) if chunks.height else math.nan,
        "max_tokens": int(sizes.max()) if chunks.height else 0,
        "over_t_max": int((sizes > t_max).sum()),
        "heading_only_dropped": heading_only,
        "library_runs": runs,
        "failed_trials": failed_trials,  # size-matching trial sizes where the library raised, skipped
        **{f"cut_{kind}": count for kind, count in cut_counts(chunks).items()},
        "per_document": per_document,
    }
    if reference is not None:
        report.update(size_match_report(chunks, reference))
    return chunks, report
