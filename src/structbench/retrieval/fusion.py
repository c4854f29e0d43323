"""Reciprocal rank fusion of runs over one chunk set (docs/method.md §8; the title-chain study, section 6(b)).

For a query q and runs R_1 .. R_m that rank chunks of the same chunk set (Cormack, Clarke and
Buettcher, SIGIR 2009)::

    rrf(q, c) = sum over runs r that rank c for q:  1 / (k + rank_r(q, c))

with ``rank`` 1-based and k = 60 (config ``retrieval.rrf_k``). A chunk a run does not rank adds
nothing from that run. The fused run keeps the ``top_k`` best chunks by (rrf desc, chunk_id asc).

Which runs a condition fuses is its ``rrf:<sources>`` value (:data:`structbench.conditions.AXES`): the
condition's own flat dense run plus one run per source, ``+``-joined — ``bm25`` (the BM25 run of the
same chunk set: hybrid search) or a prefix of the same chunk set, written without its colon
(``none``, ``path2``, ``placebo3``, ``context``: that text set's flat run under the same embedder).
``rrf:none`` on a ``path:d`` condition is the title-chain study's dual index (prefixed + unprefixed); ``rrf:bm25``
the practitioner's hybrid; ``rrf:none+bm25`` fuses all three.
"""

from __future__ import annotations

import re

import polars as pl

from structbench.conditions import FUSION_SEPARATOR, FUSION_SOURCE, FUSION_SOURCES, fusion_source_names
from structbench.datamodel import conform
from structbench.defaults import RRF_K

LEXICAL_SOURCE = "bm25"
SOURCE_SEPARATOR = FUSION_SEPARATOR


def fusion_sources(parameter: str, own_prefix: str) -> list[str]:
    """The partner runs an ``rrf:<parameter>`` condition with prefix ``own_prefix`` fuses with its own run:
    ``"bm25"`` or prefix values (``"none"``, ``"path:3"``), in the order written.

    A source named twice, or a prefix equal to the condition's own (the same run twice), is an error."""
    if not re.fullmatch(FUSION_SOURCES, parameter):
        raise ValueError(
            f"rrf sources {parameter!r}: expected {SOURCE_SEPARATOR!r}-joined names of the form {FUSION_SOURCE}"
        )
    sources = fusion_source_names(parameter)
    if len(set(sources)) != len(sources):
        raise ValueError(f"rrf sources {parameter!r} name a run twice")
    if own_prefix in sources:
        raise ValueError(
            f"rrf sources {parameter!r} include the condition's own prefix {own_prefix!r}: that run "
            "would be fused with itself"
        )
    return sources


def reciprocal_rank_fusion(runs: list[pl.DataFrame], k: int = RRF_K, top_k: int | None = None) -> pl.DataFrame:
    """The RRF of ``runs`` (module docstring) as a runs table with stage ``"rrf"`` and score = rrf.

    Every run must rank chunks of one chunk set (chunk_id is the identity). ``top_k`` caps each query's
    fused list (None: every chunk some run ranks)."""
    if not runs:
        raise ValueError("reciprocal_rank_fusion needs at least one run")
    if k < 0:
        raise ValueError(f"rrf k must be >= 0, got {k}")
    contributions = pl.concat(
        [run.select("qid", "chunk_id", (1.0 / (k + pl.col("rank").cast(pl.Float64))).alias("score")) for run in runs]
    )
    fused = (
        contributions.group_by("qid", "chunk_id")
        # Summed in sorted order: chunks with the same multiset of ranks get bit-identical scores, so their
        # order is decided by chunk_id, never by the floating-point order of a parallel sum.
        .agg(pl.col("score").sort().sum())
        .sort(["qid", "score", "chunk_id"], descending=[False, True, False])
        .with_columns((pl.int_range(pl.len()).over("qid") + 1).alias("rank"))
    )
    if top_k is not None:
        fused = fused.filter(pl.col("rank") <= top_k)
    return conform(fused.with_columns(pl.lit("rrf").alias("stage")), "runs")
