"""Runs and chunk-level relevance as TREC files, the formats trec_eval, ranx, ir_measures and PyTerrier read
(docs/method.md §15, "Export to TREC tools").

- a **run** file holds one line per ranked chunk, ``qid Q0 docno rank score tag``: ``docno`` is the
  ``chunk_id`` (an ordinal of the condition's chunk set, so a run is read with its own chunk set's qrels),
  ``rank`` structbench's rank, ``tag`` the cell (``condition/embedder/reranker``);
- a **qrels** file holds one line per judged chunk, ``qid 0 docno rel``: the chunks of the query's document
  that overlap a gold span, ``rel`` 1 when the study's binary rule holds
  (:func:`structbench.metrics.chunk_judgments`), else 0. Unlisted chunks are not relevant.

Scores. The tools order a run by its score column, never by its rank column, and break score ties their own
way (trec_eval and ir_measures by docno descending as text, ranx otherwise), while structbench ranks score ties by
``chunk_id`` ascending and places some chunks out of score order on purpose (a two-stage run ranks the chunks of
the routed sections above a backfill whose scores are higher; a reranked run ranks its reranked head, scored by
the cross-encoder, above its tail, scored by the retriever). So every written score column strictly descends
down each ranking, and every tool reads structbench's order:

- :data:`RANK_SCORES` (the default): ``depth + 1 - rank``, ``depth`` the query's deepest rank;
- :data:`RETRIEVAL_SCORES`: the retriever's own score (for fusing runs elsewhere) where a file's native scores
  never rise down a ranking, each tied score lowered to the next 32-bit float below the line above it (trec_eval
  reads scores as 32-bit floats, so a finer step would tie again); a file whose native scores rise somewhere
  down a ranking holds rank scores instead (:func:`written_scores` says which a file holds), since its native
  scores do not give the study's order.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

from structbench.atomic import atomic_path
from structbench.datamodel import is_one_field

RANK_SCORES = "rank"  # strictly decreasing scores derived from the rank: every tool reads structbench's order
RETRIEVAL_SCORES = "retrieval"  # the retriever's own scores, ties stepped apart, where they never rise down a ranking
SCORE_KINDS = (RANK_SCORES, RETRIEVAL_SCORES)
RUN_COLUMNS = ("qid", "q0", "docno", "rank", "score", "tag")
QRELS_COLUMNS = ("qid", "iteration", "docno", "rel")


def trec_run(runs: pl.DataFrame, tag: str, scores: str = RANK_SCORES) -> pl.DataFrame:
    """A run table (``datamodel.RUNS``: qid, rank, chunk_id, score) as the columns of a TREC run file,
    :data:`RUN_COLUMNS`, in (qid, rank) order, its score column strictly descending down each query's ranking
    (:data:`RANK_SCORES` or :data:`RETRIEVAL_SCORES` as :func:`written_scores` resolves ``scores``; module
    docstring). Errors on a qid or tag that is empty or holds whitespace (it would split a line), a rank or a
    chunk repeated within a query, and a score that is not finite."""
    _check_field("tag", [tag])
    ranked = _ranked(runs)
    if written_scores(ranked, scores) == RANK_SCORES:
        score = (pl.col("rank").max().over("qid") + 1 - pl.col("rank")).cast(pl.Int64)
    else:
        score = pl.Series("score", _stepped_below_ties(ranked["qid"].to_numpy(), ranked["score"].to_numpy()))
    return ranked.select(
        "qid",
        pl.lit("Q0").alias("q0"),
        pl.col("chunk_id").cast(pl.String).alias("docno"),
        pl.col("rank").cast(pl.Int64),
        score.alias("score"),
        pl.lit(tag).alias("tag"),
    )


def written_scores(runs: pl.DataFrame, scores: str = RANK_SCORES) -> str:
    """What :func:`trec_run` writes in the score column of ``runs`` asked for ``scores``: :data:`RANK_SCORES`,
    or :data:`RETRIEVAL_SCORES` where asked for and no query's native scores rise down its ranking (module
    docstring)."""
    if scores not in SCORE_KINDS:
        raise ValueError(f"scores must be one of {', '.join(SCORE_KINDS)}, got {scores!r}")
    if scores == RANK_SCORES:
        return RANK_SCORES
    ranked = _ranked(runs)
    rises = (pl.col("score").diff().over("qid") > 0).any()
    return RANK_SCORES if ranked.select(rises).item() else RETRIEVAL_SCORES


def _ranked(runs: pl.DataFrame) -> pl.DataFrame:
    """``runs`` in (qid, rank) order, checked: fields a TREC line can hold, one row per rank and per chunk of a
    query, finite scores."""
    ranked = runs.select("qid", "rank", "chunk_id", pl.col("score").cast(pl.Float32)).sort("qid", "rank")
    _check_field("qid", ranked["qid"].unique().to_list())
    for column, what in (("rank", "a rank"), ("chunk_id", "a chunk (docno)")):
        repeated = ranked.filter(pl.struct("qid", column).is_duplicated())
        if repeated.height:
            raise ValueError(f"runs: {what} repeated within query {repeated['qid'][0]!r}: {repeated[column][0]}")
    bad = ranked.filter(~pl.col("score").is_finite())
    if bad.height:
        raise ValueError(
            f"runs: score {bad['score'][0]} (not finite) for query {bad['qid'][0]!r} at rank {bad['rank'][0]}"
        )
    return ranked


def _stepped_below_ties(qids: np.ndarray, native: np.ndarray) -> np.ndarray:
    """Native scores (32-bit, in rank order, never rising within a query) with each score not below the line
    above it in its query lowered to the next 32-bit float below that line: strictly descending, and within a
    few 32-bit steps of the native score."""
    stepped = native.astype(np.float32)
    for row in range(1, len(stepped)):
        if qids[row] == qids[row - 1] and stepped[row] >= stepped[row - 1]:
            stepped[row] = np.nextafter(stepped[row - 1], np.float32(-np.inf))
    return stepped


def trec_qrels(judgments: pl.DataFrame) -> pl.DataFrame:
    """Chunk judgments (:func:`structbench.metrics.chunk_judgments`: qid, chunk_id, relevant) as the columns
    of a TREC qrels file, :data:`QRELS_COLUMNS`, in (qid, chunk_id) order: ``iteration`` is always 0, ``rel``
    1 for a relevant chunk and 0 for a judged one that is not."""
    _check_field("qid", judgments["qid"].unique().to_list())
    return judgments.sort("qid", "chunk_id").select(
        "qid",
        pl.lit(0, dtype=pl.Int64).alias("iteration"),
        pl.col("chunk_id").cast(pl.String).alias("docno"),
        pl.col("relevant").cast(pl.Int64).alias("rel"),
    )


def write_trec(frame: pl.DataFrame, path: str | Path) -> None:
    """Write a :func:`trec_run` or :func:`trec_qrels` table as its TREC file: one line per row, the columns
    separated by one space, atomically (temp file + rename)."""
    line = pl.concat_str([pl.col(column).cast(pl.String) for column in frame.columns], separator=" ")
    lines = frame.select(line)[:, 0].to_list()
    with atomic_path(path) as tmp:
        Path(tmp).write_text("".join(f"{text}\n" for text in lines), encoding="utf-8")


def _check_field(name: str, values: list[str]) -> None:
    """Error if a value of a whitespace-separated field is empty or holds whitespace."""
    bad = [value for value in values if not is_one_field(value)]
    if bad:
        raise ValueError(f"a TREC {name} must be non-empty and hold no whitespace, got {bad[:3]!r}")
