"""Scoring runs of spans (docs/method.md §18): a ranked list of character spans, not only chunk ids.

A read-time run (:mod:`structbench.retrieval.readtime`) ranks *units*: a chunk, a merged span, a section.
Its ``units`` table holds them like a chunk set (``chunk_id, doc_id, start, end, n_tokens``; the
condition's own chunks keep their ids, every other span has a new one) and its runs table ranks unit
ids. Every metric defined on character offsets then scores it unchanged through
:func:`~structbench.metrics.evidence.align_run`: coverage gains, token budgets (a unit costs its
content tokens: read-time text carries no prefix), span IoU / precision / recall.

Two things are the chunk set's, not the run's:

- **the ideal**: coverage-nDCG's IDCG is the greedy ideal over the condition's *chunk set* (the flat
  run's ideal), so a read-time run and its flat run share each query's denominator and their
  difference is a difference of DCG. A unit larger than a chunk can cover more at rank 1 than any
  chunk, so a read-time run can score above 1 (not clipped, as with overlapping chunks, §10). Such
  runs are therefore read on token-budget coverage first, which is at most 1 by construction and
  charges every returned token (:mod:`structbench.stats.readings`).
- **binary relevance**: binary nDCG, MRR and gold top-1 judge whole chunks by the 0.5 / 0.8 overlap
  thresholds of Kuehlkamp et al., appendix C, whose ideal counts the chunk set's relevant chunks; a
  section is not a chunk, so these say they do not apply: NaN, which the statistics skip.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import numpy as np
import polars as pl

from structbench.metrics.evidence import align_run
from structbench.metrics.measures import ID_SCHEMA, _check_inputs
from structbench.metrics.registry import parse_metrics

# metric definitions judged on whole chunks (module docstring): NaN on a run of spans
CHUNK_ONLY = frozenset({"nDCG", "MRR", "gold_top1"})
# the fields of RunEvidence that describe the chunk set (the ideal's pool), taken from the chunk set
CHUNK_SET_FIELDS = (
    "cand_query",
    "cand_chunk_id",
    "pair_cand",
    "pair_span",
    "pair_lo",
    "pair_hi",
    "cand_relevant",
    "query_n_relevant",
    "chunks_disjoint",
    "cand_start",
    "cand_end",
)
UNIT_COLUMNS = ("chunk_id", "doc_id", "start", "end", "n_tokens")


def score_units(
    runs: pl.DataFrame,
    units: pl.DataFrame,
    queries: pl.DataFrame,
    chunks: pl.DataFrame,
    *,
    metrics: Sequence[str],
    inputs: Mapping[str, object] | None = None,
) -> pl.DataFrame:
    """Score a run of units per query, in the layout of :func:`~structbench.metrics.score_run`.

    ``runs`` ranks ``units`` ids (at most one per query and rank, disjoint within a query); ``chunks`` is
    the condition's chunk set, whose ideal normalizes coverage-nDCG. Chunk-only metrics are NaN."""
    selected = parse_metrics(metrics)
    _check_inputs(selected, inputs or {})
    evidence = align_run(runs, queries, units.select(UNIT_COLUMNS), None)
    empty = runs.head(0)  # the chunk set's ideal reads no run
    ideal = align_run(empty, queries, chunks, None)
    evidence = dataclasses.replace(evidence, **{name: getattr(ideal, name) for name in CHUNK_SET_FIELDS})
    frame = {"qid": evidence.qid, "doc_id": evidence.doc_id, "qtype": evidence.qtype}
    for metric in selected:
        if metric.definition.name in CHUNK_ONLY:
            frame[metric.name] = np.full(evidence.n_queries, np.nan)
        else:
            frame[metric.name] = metric.compute(evidence, inputs)
    return pl.DataFrame(frame, schema=ID_SCHEMA | {metric.name: pl.Float64 for metric in selected})
