"""What every encoder shares, local or endpoint: the embedding report's keys, the truncation count, the
cache-count totals, and the ``.npy`` bytes a workflow step writes. No model, no HTTP, no torch."""

from __future__ import annotations

import io
from dataclasses import dataclass

import numpy as np

# The embedding report's cache columns, in this order (add_lookup_totals); an encoder starts from zeros.
CACHE_KEYS = ("n_texts", "n_distinct", "n_encoded", "n_from_cache", "n_quarantined")


@dataclass(frozen=True)
class TruncationCount:
    """``n_truncated`` texts of the counted ones have more than ``max_seq_length`` tokens; the longest
    has ``max_tokens``. Tokens are the embedder's own, special tokens included."""

    max_seq_length: int
    n_truncated: int
    max_tokens: int


@dataclass(frozen=True)
class Embedded:
    """Vectors for a list of texts (row i = text i) and the report of how they were obtained."""

    vectors: np.ndarray
    report: dict


def new_totals() -> dict:
    """An encoder's running cache totals before its first call: every :data:`CACHE_KEYS` at 0."""
    return dict.fromkeys(CACHE_KEYS, 0)


def add_lookup_totals(totals: dict, n_texts: int, lookup) -> None:
    """Add one cache lookup's counts (texts, distinct, encoded, from cache, quarantined) to an encoder's
    running totals: the embedding report's cache columns, the same for local and endpoint encoders."""
    for key, value in zip(
        CACHE_KEYS,
        (
            n_texts,
            lookup.n_computed + lookup.n_from_cache,
            lookup.n_computed,
            lookup.n_from_cache,
            lookup.n_quarantined,
        ),
    ):
        totals[key] += value


def encoder_report(totals: dict, truncation: TruncationCount, namespace: str) -> dict:
    """An encoder's embedding report: its cache totals, its truncation count and its cache namespace."""
    return {
        **totals,
        "max_seq_length": truncation.max_seq_length,
        "n_truncated": truncation.n_truncated,
        "max_tokens": truncation.max_tokens,
        "namespace": namespace,
    }


def npy_bytes(vectors: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, vectors)
    return buffer.getvalue()


def vector_facts(vectors: np.ndarray) -> dict:
    """What a text set's vectors cost the index: their width and their float32 payload in bytes (rows x
    dimensions x 4; the ``.npy`` header aside), for the report's index-cost table."""
    return {"dimensions": int(vectors.shape[1]) if vectors.ndim == 2 else 0, "vector_bytes": int(vectors.nbytes)}
