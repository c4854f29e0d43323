"""The placebo prefix (condition P; Kuehlkamp et al., appendix E.3; docs/method.md §§7 and 17): real heading paths
of OTHER documents, in the same format, depth and length distribution as the real ones.

The unique (document, path) pairs are bucketed by depth and permuted within each bucket toward a
cross-document derangement under a fixed seed (:func:`placebo_paths`); the residual same-document
assignments are counted and reported, never hidden.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from structbench.defaults import SEED as DEFAULT_SEED


def placebo_paths(chunks: pl.DataFrame, depth: int, seed: int = DEFAULT_SEED) -> tuple[pl.DataFrame, int]:
    """Map each real (document, path cut to ``depth``) pair to a real path of another document.

    The unique pairs are bucketed by the length of the cut path, so a placebo has the depth of the
    path it replaces. Within a bucket, pairs are sorted by (document, path), shuffled with a
    generator seeded by ``(seed, depth, bucket length)``, and repaired: each pair left with a path of
    its own document swaps sources with a randomly chosen pair for which the swap gives both a
    foreign path. One pass reaches the fewest same-document assignments possible: zero unless one
    document holds more than half of a bucket's pairs (m of n), and then ``2m - n``.

    Returns the mapping (``doc_id, real_path, placebo_path, placebo_doc_id``; every chunk with that
    real pair gets that placebo path) and the number of pairs still mapped within their document.
    """
    if depth < 1:
        raise ValueError(f"placebo depth must be >= 1, got {depth}")
    pairs = (
        chunks.select("doc_id", pl.col("path").list.head(depth).alias("real_path"))
        .unique()
        .sort(["doc_id", "real_path"])
    )
    doc_ids = pairs["doc_id"].to_list()
    real_paths = pairs["real_path"].to_list()
    placebo: list = [None] * len(doc_ids)
    placebo_doc: list = [None] * len(doc_ids)
    residual = 0
    by_length: dict[int, list[int]] = {}
    for index, path in enumerate(real_paths):
        by_length.setdefault(len(path), []).append(index)
    for length in sorted(by_length):
        members = by_length[length]
        codes = np.unique(np.asarray([doc_ids[i] for i in members], dtype=object), return_inverse=True)[1]
        source = _cross_document_permutation(codes, np.random.default_rng([seed, depth, length]))
        residual += int((codes[source] == codes).sum())
        for position, index in enumerate(members):
            origin = members[source[position]]
            placebo[index] = real_paths[origin]
            placebo_doc[index] = doc_ids[origin]
    mapping = pl.DataFrame(
        {"doc_id": doc_ids, "real_path": real_paths, "placebo_path": placebo, "placebo_doc_id": placebo_doc},
        schema={
            "doc_id": pl.String,
            "real_path": pl.List(pl.String),
            "placebo_path": pl.List(pl.String),
            "placebo_doc_id": pl.String,
        },
    )
    return mapping, residual


def _cross_document_permutation(docs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A permutation ``source`` (item i takes item source[i]'s path) with as few same-document items as possible.

    For a conflicting item i of document D, a partner j is valid when neither j nor its source is in
    D; swapping their sources fixes i and keeps j foreign. Valid partners exist while D has more
    conflicts than the unavoidable ``max(0, 2m - n)``, and a swap never adds a conflict elsewhere.
    """
    n = len(docs)
    source = rng.permutation(n)
    for i in np.flatnonzero(docs[source] == docs):
        own = docs[i]
        if docs[source[i]] != own:  # already fixed as some earlier swap's partner
            continue
        valid = (docs != own) & (docs[source] != own)
        if not valid.any():
            continue
        offset = int(rng.integers(n))
        j = (offset + int(np.argmax(np.roll(valid, -offset)))) % n
        source[i], source[j] = source[j], source[i]
    return source


# Documents deranged within runs of this many length-sorted neighbours, so a host is of similar length.
DERANGEMENT_BLOCK = 4


def document_derangement(lengths: dict[str, int], seed: int = DEFAULT_SEED) -> dict[str, str]:
    """Each document's placebo host for late chunking (docs/method.md §8a): another document of similar length.

    Documents sorted by (length, doc_id) are cut into consecutive blocks of :data:`DERANGEMENT_BLOCK` (a last block
    of one joins the one before); each block is permuted by :func:`_cross_document_permutation` under a generator
    seeded by ``(seed, block)``, which, every member being its own document, is a derangement: no document hosts
    itself. Fewer than two documents have no placebo: a ValueError."""
    if len(lengths) < 2:
        raise ValueError(f"placebo late chunking needs two or more documents; the corpus has {len(lengths)}")
    ordered = sorted(lengths, key=lambda doc: (lengths[doc], doc))
    blocks = [ordered[i : i + DERANGEMENT_BLOCK] for i in range(0, len(ordered), DERANGEMENT_BLOCK)]
    if len(blocks[-1]) == 1:
        blocks[-2].extend(blocks.pop())
    host = {}
    for number, block in enumerate(blocks):
        source = _cross_document_permutation(np.arange(len(block)), np.random.default_rng([seed, number]))
        host.update((doc, block[source[i]]) for i, doc in enumerate(block))
    return host
