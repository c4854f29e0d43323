"""Structural and semantic chunks (rules in :mod:`structbench.chunking`)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import polars as pl

from structbench.chunking.cuts import _bounded, _check_bounds, _frame, _own_counts
from structbench.chunking.document import _prepare, _tokenized
from structbench.defaults import SEMANTIC_THRESHOLD, T_MAX, T_MIN
from structbench.tokens import TokenCounter, load_tokenizer
from structbench.vectors import unit_length

EmbedFn = Callable[[list[str]], np.ndarray]


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
    *,
    embed_fn: EmbedFn,
    threshold: float = SEMANTIC_THRESHOLD,
    t_max: int = T_MAX,
    t_min: int = T_MIN,
) -> pl.DataFrame:
    """The title-chain study's semantic merge: within a section, join adjacent paragraphs whose cosine >= threshold.

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
        vectors = unit_length(vectors)
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
