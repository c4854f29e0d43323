"""Cut kinds, the tiling check and the size-match and bounds reports of chunk sets (light: polars only)."""

from __future__ import annotations

import math

import polars as pl

from structbench.defaults import SIZE_MATCH_TOLERANCE, T_MAX, T_MIN

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


def bounds_file(chunks: pl.DataFrame, *, t_max: int, t_min: int) -> dict:
    """What a chunk rule writes next to its chunk set (``<set>.bounds.json``): the bounds it was held to and
    :func:`bounds_report` against them, so the report reads a chunk set's bounds without chunking code."""
    return {"t_max": t_max, "t_min": t_min, **bounds_report(chunks, t_max=t_max, t_min=t_min)}


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
