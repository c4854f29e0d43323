"""Cut kinds, the tiling check and the size-match and bounds reports of chunk sets (light: polars only)."""

from __future__ import annotations

import math

import polars as pl

from structbench.datamodel import document_texts
from structbench.defaults import SIZE_MATCH_TOLERANCE, T_MAX, T_MIN
from structbench.overlap import shared_characters

CUT_KINDS = ("section", "paragraph", "sentence", "line", "word", "token", "end")
"""Values of the CHUNKS column ``cut``, strongest boundary first (definitions in the module docstring)."""
FALLBACK_CUTS = ("line", "word", "token")
"""The cuts made where no sentence boundary served (docs/method.md §6: "count each fallback")."""


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


def assert_covering(documents: pl.DataFrame, chunks: pl.DataFrame) -> None:
    """Raise ``ValueError`` unless the chunks of every document cover ``[0, n_chars)`` in order: the check of
    a chunk set declared to overlap (docs/method.md §6, "Overlap"), where :func:`assert_tiling` would refuse
    every shared character.

    Per document, in ``chunk_id`` order: every chunk lies inside the text (``0 <= start < end <= n_chars``)
    and holds a non-space character (a real piece of the text at its offsets: the chunk's text *is*
    ``text[start:end]``, and a peer chunker's reported text was compared there,
    :mod:`structbench.chunking.external`); ``(start, end)`` strictly increases (chunks in order, none
    twice, ``chunk_id`` following ``(doc_id, start)``; a chunk may lie inside an earlier one, as
    semantic-text-splitter's Markdown splitter makes them); the first starts at 0, each starts at or before
    the furthest end so far (no gap: the union covers the text), and the furthest end is ``n_chars``;
    every non-empty document has chunks. Named like :func:`assert_tiling`'s errors, with the offsets.
    """
    texts = document_texts(documents)
    ordered = chunks.select("chunk_id", "doc_id", "start", "end").sort("chunk_id")
    previous_doc, previous, previous_end = None, (-1, -1), 0  # previous_end: the furthest end so far
    seen = set()
    for chunk_id, doc_id, start, end in ordered.iter_rows():
        if doc_id not in texts:
            raise ValueError(f"chunk [{start}, {end}) belongs to unknown document {doc_id!r}")
        text = texts[doc_id]
        if doc_id != previous_doc:
            if doc_id in seen:
                raise ValueError(f"document {doc_id!r}: its chunks are not consecutive in chunk_id order")
            if previous_doc is not None:
                _check_end(previous_doc, previous_end, len(texts[previous_doc]))
            previous_doc, previous, previous_end = doc_id, (-1, -1), 0
            seen.add(doc_id)
        if not 0 <= start < end <= len(text):
            raise ValueError(
                f"document {doc_id!r}: chunk {chunk_id} [{start}, {end}) is empty or outside [0, {len(text)})"
            )
        if not text[start:end].strip():
            raise ValueError(f"document {doc_id!r}: chunk {chunk_id} [{start}, {end}) holds only whitespace")
        if (start, end) <= previous:
            raise ValueError(
                f"document {doc_id!r}: chunk {chunk_id} [{start}, {end}) is out of order after [{previous[0]}, "
                f"{previous[1]}) (chunks must come in (start, end) order, none twice)"
            )
        if start > previous_end:
            raise ValueError(f"document {doc_id!r}: gap [{previous_end}, {start}) between chunks")
        previous, previous_end = (start, end), max(previous_end, end)
    if previous_doc is not None:
        _check_end(previous_doc, previous_end, len(texts[previous_doc]))
    missing = [d for d, text in texts.items() if text and d not in seen]
    if missing:
        raise ValueError(f"document {missing[0]!r} has text but no chunks ({len(missing)} such documents)")


def check_chunk_set(documents: pl.DataFrame, chunks: pl.DataFrame, overlap: str | None) -> None:
    """The check a chunk set's declaration asks for: :func:`assert_tiling` when it declares no overlap (every
    chunk set but ``fixed_overlap`` windows and peer chunkers with an overlap), else :func:`assert_covering`."""
    (assert_tiling if overlap is None else assert_covering)(documents, chunks)


def _check_end(doc_id: str, end: int, n_chars: int) -> None:
    if end < n_chars:
        raise ValueError(f"document {doc_id!r}: chunks end at {end}, not at n_chars={n_chars} (gap [{end}, {n_chars}))")
    if end > n_chars:
        raise ValueError(f"document {doc_id!r}: chunks end at {end}, past n_chars={n_chars}")


def size_match_report(matched: pl.DataFrame, reference: pl.DataFrame, tolerance: float = SIZE_MATCH_TOLERANCE) -> dict:
    """Realized mean chunk sizes of a size-matched set and its reference set (one corpus), and their gap.

    ``matched_*`` describe the size-matched set (fixed windows, or an external chunker with
    ``size_match``). docs/method.md §6 asks for these per corpus; the paper's realized means differ by at most 4 tokens.
    ``max_doc_difference`` is the largest per-document gap between the two means; ``docs_within_tolerance``
    counts the documents whose gap is at most ``tolerance`` tokens
    (:data:`structbench.defaults.SIZE_MATCH_TOLERANCE`, the report's flag).
    """

    def means(frame):
        return frame.group_by("doc_id").agg(pl.col("n_tokens").cast(pl.Float64).mean().alias("mean"))

    per_doc = means(matched).join(means(reference), on="doc_id", how="inner", suffix="_reference")
    matched_mean = float(matched["n_tokens"].mean()) if matched.height else math.nan
    reference_mean = float(reference["n_tokens"].mean()) if reference.height else math.nan
    gaps = per_doc.select((pl.col("mean") - pl.col("mean_reference")).abs())["mean"]
    gap = gaps.max() if per_doc.height else None
    return {
        "matched_chunks": matched.height,
        "reference_chunks": reference.height,
        "documents": per_doc.height,
        "matched_mean_tokens": matched_mean,
        "reference_mean_tokens": reference_mean,
        "difference": matched_mean - reference_mean,
        "max_doc_difference": float(gap) if gap is not None else math.nan,
        "tolerance_tokens": float(tolerance),
        "docs_within_tolerance": int((gaps <= tolerance).sum()),
    }


def cut_counts(chunks: pl.DataFrame) -> dict[str, int]:
    """Number of chunks whose end was cut each way: one entry per kind of :data:`CUT_KINDS`, in that order.

    The fallbacks (:data:`FALLBACK_CUTS`) count the cuts where no sentence boundary served (docs/method.md
    §6). Raises ``ValueError`` naming a value of ``cut`` that is not a known kind.
    """
    counts = dict.fromkeys(CUT_KINDS, 0)
    for kind, count in chunks.group_by("cut").len().rows():
        if kind not in counts:
            raise ValueError(f"chunks column 'cut' holds {kind!r}, not one of {CUT_KINDS}")
        counts[kind] = int(count)
    return counts


def bounds_file(chunks: pl.DataFrame, *, t_max: int, t_min: int, overlap: str | None = None) -> dict:
    """What a chunk rule writes next to its chunk set (``<set>.bounds.json``): the bounds it was held to and
    :func:`bounds_report` against them, so the report reads a chunk set's bounds without chunking code.

    A set declared to overlap (``overlap``: the declaration as written, ``"50"`` or ``"0.5"``) adds
    ``tiles: false``, the declaration and :func:`overlap_report`; every other set says ``tiles: true`` and
    keeps its keys as before, so a tiling set's file only gains that one key."""
    declared = {"tiles": True} if overlap is None else {"tiles": False, "overlap": overlap, **overlap_report(chunks)}
    return {"t_max": t_max, "t_min": t_min, **declared, **bounds_report(chunks, t_max=t_max, t_min=t_min)}


def overlap_report(chunks: pl.DataFrame) -> dict:
    """How much an overlapping chunk set repeats: per pair of consecutive chunks of a document, the characters
    they share (``overlap_chars_mean``: the mean over those pairs; ``overlapping_pairs``: pairs sharing any),
    and ``indexed_chars`` (the characters of every chunk, repeats included) against ``document_chars`` (their
    union, each document's text once): their ratio is what the index pays for the overlap."""
    ordered = chunks.sort("chunk_id")
    shared = shared_characters(ordered)
    indexed = int((ordered["end"] - ordered["start"]).sum()) if ordered.height else 0
    document = int(ordered.group_by("doc_id").agg(pl.col("end").max())["end"].sum()) if ordered.height else 0
    return {
        "overlapping_pairs": int((shared > 0).sum()),
        "overlap_chars_mean": float(shared.mean()) if shared.len() else math.nan,
        "indexed_chars": indexed,
        "document_chars": document,
    }


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
