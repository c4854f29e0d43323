"""Retrieval kinds that rescore a flat run's top candidates with a model (the title-chain study, sections 5-6).

Both keep the chunk index as it is and move the title chain to scoring time; the model is injected
(``encode_queries``, ``score_pairs``), so this module imports none and tests can pass a hand-made one.

**Query-side title injection** (``query_titles:<d>``; the title-chain study, section 6(a)). The condition's own flat
run (the title-chain study's design: chunks embedded unprefixed, ``prefix: none``) supplies the candidates; each of
a query's top ``candidates`` chunks c is rescored with a second query embedding that carries c's title
chain, in the same bracketed form a ``path:d`` prefix gives a chunk::

    score(q, c) = cos( E_query("[" + " > ".join(path(c)[:d]) + "]\\n\\n" + q),  v_c )

where ``v_c`` is c's vector in the condition's index and E_query the embedder with its query prefix.
One embedding per distinct (query, title chain) pair, through the embedding cache. We implement the
injection as a second query embedding, not as a cross-encoder input, because (1) the title-chain study places it
in the query embedding ("zero index rebuild"), the bi-encoder setting the study's prefix contrasts
measure, so ``query_titles:d`` against ``path:d`` compares the same title on the query side and on the
chunk side under one embedder; (2) a cross-encoder reads query and chunk as one sequence, where
putting the title before the query or before the chunk is nearly the same input, and the reranker
axis already covers cross-encoders; (3) the run then depends on the embedder alone, like every other
run, so the cell's reranker stays an orthogonal axis.

**Per-candidate prefix choice** (``per_candidate:<reranker>``; the title-chain study's recommended direction). The
condition's prefixed index and the unprefixed index of the same chunk set each give their top
``candidates``; every chunk in the union is scored by the named cross-encoder in both versions, and
keeps the better one::

    score(q, c) = max( CE(q, prefix(c) + content(c)),  CE(q, content(c)) )

The run's ``stage`` says which version won (``prefixed``, or ``unprefixed``; a tie counts as prefixed).

In both, the rescored candidates take ranks 1..n by (score desc, chunk_id asc); the condition's own
flat run then continues with the chunks not rescored, in its order, up to ``top_k`` — as the reranker
leaves ranks past its ``top_n`` (so scores change scale at rank n + 1; ranks are what metrics read).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import polars as pl

from structbench.datamodel import conform
from structbench.defaults import RESCORE_CANDIDATES
from structbench.defaults import SEPARATOR as DEFAULT_SEPARATOR
from structbench.prefixes import render_prefix
from structbench.prefixes.budget import bounded_titles
from structbench.tokens import DEFAULT_TOKENIZER, TokenCounter, load_tokenizer

log = logging.getLogger(__name__)

PREFIXED, UNPREFIXED, QUERY_TITLES = "prefixed", "unprefixed", "query_titles"


def rescored_first(run: pl.DataFrame, rescored: pl.DataFrame, top_k: int) -> pl.DataFrame:
    """``rescored`` (``qid, chunk_id, score, stage``) ranked first per query by (score desc, chunk_id asc),
    then ``run``'s rows for every other chunk in ``run``'s order; each query cut to ``top_k`` rows."""
    head = rescored.select("qid", "chunk_id", pl.col("score").cast(pl.Float64), "stage").sort(
        ["qid", "score", "chunk_id"], descending=[False, True, False]
    )
    tail = (
        run.join(head.select("qid", "chunk_id"), on=["qid", "chunk_id"], how="anti")
        .sort("qid", "rank")
        .select("qid", "chunk_id", pl.col("score").cast(pl.Float64), "stage")
    )
    ranked = (
        pl.concat([head.with_columns(pl.lit(0).alias("part")), tail.with_columns(pl.lit(1).alias("part"))])
        .with_row_index("order")
        .sort("qid", "part", "order")
        .with_columns((pl.int_range(pl.len()).over("qid") + 1).alias("rank"))
        .filter(pl.col("rank") <= top_k)
    )
    return conform(ranked, "runs")


def title_blocks(
    chunks: pl.DataFrame,
    depth: int,
    separator: str = DEFAULT_SEPARATOR,
    max_tokens: int | None = None,
    tokenizer: TokenCounter | str = DEFAULT_TOKENIZER,
) -> dict[int, str]:
    """chunk_id -> the chunk's title chain cut to ``depth``, rendered as a ``path:d`` prefix renders it; with
    ``max_tokens`` (the workflow passes half of the condition's ``t_max``, as for a ``path:d`` prefix), a
    chain over that many ``tokenizer`` tokens shortened by the prefixes' rule (:mod:`structbench.prefixes.budget`,
    the leaf title kept)."""
    if depth < 1:
        raise ValueError(f"title depth must be >= 1, got {depth}")
    paths = [tuple(path[:depth]) for path in chunks["path"].to_list()]
    render = lambda items: render_prefix(items, separator)  # noqa: E731
    blocks = (
        [render(path) for path in paths]
        if max_tokens is None
        else bounded_titles(paths, render, max_tokens, load_tokenizer(tokenizer))
    )
    return dict(zip(chunks["chunk_id"].to_list(), blocks))


def inject_query_titles(
    run: pl.DataFrame,
    chunk_vectors: np.ndarray,
    query_texts: Mapping[str, str],
    titles: Mapping[int, str],
    encode_queries: Callable[[list[str]], np.ndarray],
    candidates: int = RESCORE_CANDIDATES,
    top_k: int | None = None,
) -> pl.DataFrame:
    """Query-side title injection (module docstring) over ``run``'s top ``candidates`` per query.

    ``encode_queries(texts) -> (len(texts), dim)`` normalized query vectors (the embedder adds its own
    query prefix); ``titles`` maps chunk_id to its rendered title chain (:func:`title_blocks`)."""
    head = run.filter(pl.col("rank") <= candidates).select("qid", "chunk_id")
    injected = [
        titles[chunk] + query_texts[qid] for qid, chunk in zip(head["qid"].to_list(), head["chunk_id"].to_list())
    ]
    distinct = sorted(set(injected))
    position = {text: row for row, text in enumerate(distinct)}
    vectors = (
        np.asarray(encode_queries(distinct), dtype=np.float32)
        if distinct
        else np.zeros((0, chunk_vectors.shape[1]), np.float32)
    )
    rows = np.fromiter((position[text] for text in injected), dtype=np.int64, count=len(injected))
    chunk_rows = head["chunk_id"].to_numpy()
    scores = np.einsum("ij,ij->i", vectors[rows], chunk_vectors[chunk_rows]) if len(rows) else np.zeros(0, np.float32)
    log.info("query titles: %d candidates, %d distinct injected queries", head.height, len(distinct))
    rescored = head.with_columns(pl.Series("score", scores, dtype=pl.Float64), pl.lit(QUERY_TITLES).alias("stage"))
    return rescored_first(run, rescored, top_k or _depth(run))


def choose_per_candidate(
    prefixed_run: pl.DataFrame,
    unprefixed_run: pl.DataFrame,
    query_texts: Mapping[str, str],
    prefixed_texts: Mapping[int, str],
    unprefixed_texts: Mapping[int, str],
    score_pairs: Callable[[Sequence[tuple[str, str]]], Sequence[float]],
    candidates: int = RESCORE_CANDIDATES,
    top_k: int | None = None,
) -> pl.DataFrame:
    """Per-candidate prefix choice (module docstring): the union of both runs' top ``candidates``, each
    chunk scored by ``score_pairs([(query, text), ...])`` in both versions, the better score kept.

    The tail after the rescored chunks follows ``prefixed_run`` (the condition's own index)."""
    head = (
        pl.concat(
            [
                run.filter(pl.col("rank") <= candidates).select("qid", "chunk_id")
                for run in (prefixed_run, unprefixed_run)
            ]
        )
        .unique()
        .sort("qid", "chunk_id")
    )
    qids, chunk_ids = head["qid"].to_list(), head["chunk_id"].to_list()
    pairs = [(query_texts[q], prefixed_texts[c]) for q, c in zip(qids, chunk_ids)]
    pairs += [(query_texts[q], unprefixed_texts[c]) for q, c in zip(qids, chunk_ids)]
    scores = np.asarray(score_pairs(pairs), dtype=np.float64).reshape(-1) if pairs else np.zeros(0)
    with_prefix, without = scores[: head.height], scores[head.height :]
    prefix_wins = with_prefix >= without
    log.info(
        "per-candidate choice: %d candidates, the prefixed version scored higher (or equal) for %d",
        head.height,
        int(prefix_wins.sum()),
    )
    rescored = head.with_columns(
        pl.Series("score", np.where(prefix_wins, with_prefix, without), dtype=pl.Float64),
        pl.Series("stage", np.where(prefix_wins, PREFIXED, UNPREFIXED), dtype=pl.String),
    )
    return rescored_first(prefixed_run, rescored, top_k or _depth(prefixed_run))


def _depth(run: pl.DataFrame) -> int:
    """The longest ranking in ``run`` (the run's top_k)."""
    return int(run["rank"].max() or 0)
