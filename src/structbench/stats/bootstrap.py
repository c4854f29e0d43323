"""Document-clustered bootstrap (docs/method.md §11; Kuehlkamp et al., appendix D.2), vectorized.

The draws are a public, reproducible object: :func:`iter_bootstrap_draws` yields, from
``numpy.random.default_rng(seed)``, blocks of ``DRAW_BLOCK`` replicates, each row holding ``n_docs``
document indices drawn uniformly with replacement
(``rng.integers(0, n_docs, size=(rows, n_docs), dtype=draw_dtype(n_docs))``, the smallest unsigned
type that holds the indices: uint16 up to 65,536 documents). :func:`bootstrap_draws` materializes the
same blocks, so a slow per-iteration reference loop can replay exactly the draws the vectorized kernel
used. Block size and dtype are part of the definition of the draws.

Vectorization: each block of index rows becomes a (rows x n_docs) matrix of multiplicities (one
``bincount``), and the replicate means of all columns at once come from one matrix product::

    mean*_b = (multiplicity_b @ doc_sums) / (multiplicity_b @ doc_counts)

i.e. the sum of the drawn documents' delta sums over the sum of their query counts, each drawn copy
counting once. The products run on row slices small enough (about 1e6 multiply-adds) that OpenBLAS
keeps them single-threaded: threaded BLAS runs far slower on a CPU job's few shared cores (measured:
docs/benchmarks.md, "Threaded BLAS in the bootstrap"), and a single thread keeps the summation order,
hence the output bits, fixed.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from structbench.defaults import BOOTSTRAP_ITERS

DRAW_BLOCK = 256
_PRODUCT_SIZE = 900_000  # multiply-adds per matrix product, under OpenBLAS's threading threshold


def draw_dtype(n_docs: int) -> type:
    """The integer type of the draws: the smallest unsigned type that holds ``n_docs - 1``."""
    for dtype in (np.uint16, np.uint32):
        if n_docs <= np.iinfo(dtype).max + 1:
            return dtype
    return np.int64


def iter_bootstrap_draws(n_docs: int, n_boot: int, seed: int, block: int = DRAW_BLOCK) -> Iterator[np.ndarray]:
    """Yield the bootstrap's document draws in blocks of at most ``block`` replicates (row = replicate)."""
    if n_docs < 1:
        raise ValueError("the clustered bootstrap needs at least one document")
    rng = np.random.default_rng(seed)
    dtype = draw_dtype(n_docs)
    for first in range(0, n_boot, block):
        yield rng.integers(0, n_docs, size=(min(block, n_boot - first), n_docs), dtype=dtype)


def bootstrap_draws(n_docs: int, n_boot: int, seed: int, block: int = DRAW_BLOCK) -> np.ndarray:
    """All draws as one (n_boot x n_docs) array: row b lists the documents drawn in replicate b."""
    return np.concatenate(list(iter_bootstrap_draws(n_docs, n_boot, seed, block)), axis=0)


def bootstrap_totals(doc_values: np.ndarray, *, n_boot: int, seed: int, block: int = DRAW_BLOCK) -> np.ndarray:
    """Per replicate, each column's total over the drawn documents, every drawn copy counting once::

        total*_{b,k} = sum_{d in draw_b} doc_values[d, k]

    ``doc_values`` is (n_docs x K); returns (n_boot x K). The kernel under every statistic of the clustered
    bootstrap (:func:`bootstrap_replicates` divides sums by counts; the subgroup analysis,
    :mod:`structbench.stats.subgroups`, takes subgroup means whose counts may be zero in a replicate): the
    draws are :func:`iter_bootstrap_draws` ``(n_docs, n_boot, seed)``, so every caller with the same
    documents, B and seed sees the same replicates.
    """
    doc_values = np.asarray(doc_values, dtype=np.float64)
    doc_values = doc_values.reshape(len(doc_values), -1)
    n_docs, n_columns = doc_values.shape
    slice_rows = max(1, _PRODUCT_SIZE // (n_docs * n_columns))
    offsets = (np.arange(block, dtype=np.int64) * n_docs)[:, None]
    out = np.empty((n_boot, n_columns))
    first = 0
    for draws in iter_bootstrap_draws(n_docs, n_boot, seed, block):
        rows = len(draws)
        flat = np.add(draws, offsets[:rows], dtype=np.int64).ravel()
        multiplicity = np.bincount(flat, minlength=rows * n_docs).reshape(rows, n_docs).astype(np.float64)
        for start in range(0, rows, slice_rows):
            product = multiplicity[start : start + slice_rows] @ doc_values
            out[first + start : first + start + len(product)] = product
        first += rows
    return out


def bootstrap_replicates(
    doc_sums: np.ndarray,
    doc_counts: np.ndarray,
    *,
    n_boot: int = BOOTSTRAP_ITERS,
    seed: int = 0,
    block: int = DRAW_BLOCK,
) -> np.ndarray:
    """Replicate means of the document-clustered bootstrap, several statistics sharing one set of draws.

    ``doc_sums`` is (n_docs x C): per document, the sum of the per-query deltas of each of C contrasts;
    ``doc_counts`` (n_docs x C, or n_docs) the number of queries those sums run over. Every document
    must have a positive count in every column (resample the documents a contrast actually has).
    Returns (n_boot x C)::

        mean*_{b,c} = sum_{d in draw_b} doc_sums[d, c] / sum_{d in draw_b} doc_counts[d, c]
    """
    doc_sums = np.asarray(doc_sums, dtype=np.float64)
    squeeze = doc_sums.ndim == 1
    doc_sums = doc_sums.reshape(len(doc_sums), -1)
    doc_counts = np.asarray(doc_counts, dtype=np.float64).reshape(len(doc_sums), -1)
    if (doc_counts <= 0).any():
        raise ValueError("every resampled document needs at least one query in every column")
    n_columns = doc_sums.shape[1]
    totals = bootstrap_totals(np.concatenate((doc_sums, doc_counts), axis=1), n_boot=n_boot, seed=seed, block=block)
    out = totals[:, :n_columns] / totals[:, n_columns:]
    return out[:, 0] if squeeze else out


def percentile_ci(replicates: np.ndarray, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval: the (1-level)/2 and (1+level)/2 quantiles of the replicates (numpy's
    default linear interpolation), per column."""
    tail = 100 * (1 - level) / 2
    low, high = np.percentile(replicates, [tail, 100 - tail], axis=0)
    return low, high


def bootstrap_p(replicates: np.ndarray) -> np.ndarray:
    """Two-sided bootstrap p per column: ``min(1, 2 * min(P[mean* <= 0], P[mean* >= 0]))``.

    Its resolution is 1/B: p = 0 means no replicate reached zero (report it as p < 1/B)."""
    replicates = np.asarray(replicates)
    at_most = (replicates <= 0).mean(axis=0)
    at_least = (replicates >= 0).mean(axis=0)
    return np.minimum(1.0, 2.0 * np.minimum(at_most, at_least))


def bootstrap_p_mcse(p, n_boot: int) -> np.ndarray:
    """Monte-Carlo standard error of :func:`bootstrap_p` estimated from ``n_boot`` replicates, elementwise.

    The p is twice a tail share, ``p = 2 * k / B`` with k the replicates in the smaller tail, and k is
    binomial(B, pi) with pi = p/2, so::

        MCSE(p) = 2 * sqrt(pi * (1 - pi) / B) = sqrt(p * (2 - p) / B)

    (the plug-in form, the smaller tail taken as fixed). It is 0 at p = 0 (no replicate reached zero:
    the p is then reported as below 1/B) and NaN where p is NaN. Another seed moves p by about this much.
    """
    p = np.asarray(p, dtype=np.float64)
    if n_boot < 1:
        raise ValueError(f"the bootstrap needs at least one replicate, got B = {n_boot}")
    return np.sqrt(np.clip(p, 0.0, 1.0) * (2.0 - np.clip(p, 0.0, 1.0)) / n_boot)


@dataclass(frozen=True)
class BootstrapResult:
    """Effect (unweighted mean delta), 95% percentile CI and two-sided p, one entry per column."""

    estimate: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    p: np.ndarray
    n_queries: int
    n_docs: int


def cluster_sums(deltas: np.ndarray, doc_ids) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Group per-query deltas (n_queries, or n_queries x C) by document, documents sorted by id.

    Returns ``(docs, doc_sums, doc_counts)``.
    """
    deltas = np.asarray(deltas, dtype=np.float64)
    columns = deltas.reshape(len(deltas), -1)
    docs, inverse = np.unique(np.asarray(doc_ids), return_inverse=True)
    inverse = inverse.reshape(-1)
    doc_sums = np.stack([np.bincount(inverse, weights=col, minlength=len(docs)) for col in columns.T], axis=1)
    doc_counts = np.bincount(inverse, minlength=len(docs)).astype(np.float64)
    return docs, doc_sums, doc_counts


def cluster_bootstrap(
    deltas, doc_ids, *, n_boot: int = BOOTSTRAP_ITERS, seed: int = 0, level: float = 0.95
) -> BootstrapResult:
    """Document-clustered bootstrap of a mean paired delta (Kuehlkamp et al., appendix D.2).

    Group the per-query deltas by document; for each of ``n_boot`` replicates resample the documents
    with replacement (every query of a drawn document enters as a bundle) and compute::

        mean*_b = sum_{d in draw} sum_d / sum_{d in draw} count_d

    95% CI = 2.5th / 97.5th percentiles of mean*; two-sided p = 2 * min(P[mean* <= 0], P[mean* >= 0])
    clipped to 1. ``deltas`` may be (n_queries x C): the C columns (e.g. several contrasts or metrics
    over the same queries) share the same draws. Seeded by ``seed`` (numpy Generator, PCG64).
    """
    deltas = np.asarray(deltas, dtype=np.float64)
    if len(deltas) == 0:
        nan = np.full(deltas.reshape(0, -1).shape[1] if deltas.ndim > 1 else 1, np.nan)
        return BootstrapResult(nan, nan, nan, nan, 0, 0)
    docs, doc_sums, doc_counts = cluster_sums(deltas, doc_ids)
    replicates = bootstrap_replicates(doc_sums, doc_counts[:, None], n_boot=n_boot, seed=seed)
    low, high = percentile_ci(replicates, level)
    estimate = deltas.reshape(len(deltas), -1).mean(axis=0)
    return BootstrapResult(estimate, low, high, bootstrap_p(replicates), len(deltas), len(docs))
