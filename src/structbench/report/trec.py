"""Runs and chunk-level relevance as TREC files, the formats trec_eval, ranx, ir_measures and PyTerrier read
(docs/method.md §15, "Export to TREC tools").

- a **run** file holds one line per ranked chunk, ``qid Q0 docno rank score tag``: ``docno`` is the
  ``chunk_id`` (an ordinal of the condition's chunk set, so a run is read with its own chunk set's qrels),
  ``rank`` structbench's rank, ``tag`` the cell (``condition/embedder/reranker``);
- a **qrels** file holds one line per judged chunk, ``qid 0 docno rel``: the chunks of the query's document
  that overlap a gold span, ``rel`` 1 when the study's binary rule holds
  (:func:`structbench.metrics.chunk_judgments`), else 0. Unlisted chunks are not relevant.

Ties: the tools order a run by score, breaking ties their own way (trec_eval and ir_measures by docno
descending as text, ranx otherwise), while structbench breaks score ties by ``chunk_id`` ascending. So the
default ``score`` is derived from the rank (:data:`RANK_SCORES`: ``depth + 1 - rank``, ``depth`` the
query's deepest rank), strictly decreasing down each ranking: every tool then reads structbench's order and
its binary measures equal the study's. ``RETRIEVAL_SCORES`` writes the retriever's own scores instead,
for fusing runs elsewhere; tied chunks may then be read in another order.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from structbench.atomic import atomic_path

RANK_SCORES = "rank"  # strictly decreasing scores derived from the rank: every tool reads structbench's order
RETRIEVAL_SCORES = "retrieval"  # the retriever's own scores (ties read in each tool's own order)
SCORE_KINDS = (RANK_SCORES, RETRIEVAL_SCORES)
RUN_COLUMNS = ("qid", "q0", "docno", "rank", "score", "tag")
QRELS_COLUMNS = ("qid", "iteration", "docno", "rel")


def trec_run(runs: pl.DataFrame, tag: str, scores: str = RANK_SCORES) -> pl.DataFrame:
    """A run table (``datamodel.RUNS``: qid, rank, chunk_id, score) as the columns of a TREC run file,
    :data:`RUN_COLUMNS`, in (qid, rank) order; ``scores`` is :data:`RANK_SCORES` or :data:`RETRIEVAL_SCORES`
    (module docstring). Errors on a qid or tag that is empty or holds whitespace (it would split a line)
    and on a rank repeated within a query."""
    if scores not in SCORE_KINDS:
        raise ValueError(f"scores must be one of {', '.join(SCORE_KINDS)}, got {scores!r}")
    _check_field("tag", [tag])
    ranked = runs.select("qid", "rank", "chunk_id", "score").sort("qid", "rank")
    _check_field("qid", ranked["qid"].unique().to_list())
    if ranked.select(pl.struct("qid", "rank").is_duplicated().any()).item():
        raise ValueError("runs: a rank repeated within a query")
    if scores == RANK_SCORES:
        score = pl.col("rank").max().over("qid") + 1 - pl.col("rank")
    else:
        score = pl.col("score").cast(pl.Float64)
    return ranked.select(
        "qid",
        pl.lit("Q0").alias("q0"),
        pl.col("chunk_id").cast(pl.String).alias("docno"),
        pl.col("rank").cast(pl.Int64),
        score.alias("score"),
        pl.lit(tag).alias("tag"),
    )


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
    bad = [value for value in values if not value or any(character.isspace() for character in value)]
    if bad:
        raise ValueError(f"a TREC {name} must be non-empty and hold no whitespace, got {bad[:3]!r}")
