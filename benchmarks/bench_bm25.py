"""BM25 at full QASPER scale: bm25s (what structbench.retrieval.bm25 runs) against rank-bm25, the named baseline.

    .venv/bin/python benchmarks/bench_bm25.py [--qasper-dir ../shared/data/qasper] [--work /tmp/bench_bm25]
        [--queries 4303] [--baseline-queries 4303] [--subset-docs 60] [--analyzers words,english]

Corpus: QASPER train + dev (every paper the shared data holds), gold structure, structural chunks at the
study's t_max / t_min, content only (prefix ``none``): exactly what the workflow's ``bm25`` rule indexes.
The built tables are kept under ``--work`` so a rerun skips the ~1 minute of chunking. Queries: the
usable questions, cycled to ``--queries`` (default 4,303, the study's QASPER question count).

Contenders, per analyzer (``structbench.retrieval.bm25.ANALYZERS``), both ranking top 100 per query with ties
broken by chunk_id (``retrieval.top_k_by_score``):

- baseline ``rank-bm25``: ``BM25Okapi(tokens, k1=1.5, b=0.75, epsilon=0)`` on pre-analyzed chunks, and
  ``get_scores`` per query. ``epsilon=0`` clamps a negative idf (a term in over half the chunks) at 0,
  the formula of ``structbench.retrieval.bm25``; rank-bm25's default 0.25 floors it at 0.25 x the mean idf
  instead (a term in 51% of the chunks then outweighs one in 49% by far).
- ``bm25s``: ``structbench.retrieval.bm25.BM25Index`` (bm25s, ``robertson`` idf, float64 scores); its index
  time includes analyzing the chunks, which the baseline is given for free.

rank-bm25 ranks in pure Python, about 0.1-0.4 s per query at this scale on a busy 2-core machine: with
``--baseline-queries N`` below ``--queries`` it ranks the first N and its ranking time is extrapolated
per query to all of them (the output says so); agreement is then measured on those N.

Printed: CPU seconds of the process (steadier than wall time on a shared machine; wall also shown) of
index build and of ranking, the ratio rank-bm25 / bm25s (above 1: bm25s is faster), ranking agreement
(queries with the same rank-1 chunk, with the same top-100 list, mean top-10 overlap), and gold top-1
(``structbench.metrics`` ``gold_top1``, bm25s rankings) of each analyzer over the whole pool, within
the query's own paper (each ranking restricted to its paper's chunks), and on the first
``--subset-docs`` dev papers as a pool of their own — there also with rank-bm25's default epsilon.

Measured 2026-12-01 on 2 cores shared with other jobs (1,169 papers, 27,889 chunks; CPU seconds):

    analyzer  rank-bm25 index + ranking        bm25s index + ranking   ranking ratio  total ratio  same top-100
    words     1.6 + 508 (all 4,303 queries)    7.3 + 2.0               250x           55x          2,991 / 2,991
    words     1.9 + 545 (extrapolated, 400)    5.4 + 1.4               377x           80x          400 / 400
    english   1.1 + 348 (extrapolated, 400)    9.0 + 1.3               258x           34x          400 / 400

    gold top-1 (bm25s)   whole pool (2,991 q)   within own paper   first 60 dev papers (180 q)   same, rank-bm25 eps 0.25
    words                0.0441                 0.1802             0.0778                        0.1056
    english              0.0465                 0.1892             0.0889                        0.0944

The analyzer moves gold top-1 by a fraction of a point on the pool (2 of 180 questions on the 60
papers); ranking within the question's own paper instead of the whole pool lifts it four-fold, to near
Kuehlkamp et al.'s 22.7%.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import polars as pl

from structbench.chunking.structural import structural_chunks
from structbench.corpus import load_corpus
from structbench.datamodel import read_table, write_table
from structbench.defaults import T_MAX, T_MIN, TOKENIZER, TOP_K
from structbench.metrics import score_run
from structbench.prefixes import render_texts
from structbench.retrieval.bm25 import ANALYZERS, BM25Index
from structbench.retrieval.search import runs_from_arrays, top_k_by_score
from structbench.tokens import load_tokenizer

SPLITS = ("qasper-train-v0.3.rebuilt.json", "qasper-dev-v0.3.rebuilt.json")


def build_pool(paths: list[Path], work: Path, name: str, max_docs: int | None = None) -> dict[str, pl.DataFrame]:
    """Queries, chunks and content texts of a QASPER pool, built once and kept under ``work``."""
    files = {table: work / f"{name}.{table}.parquet" for table in ("queries", "chunks", "texts")}
    if not all(path.exists() for path in files.values()):
        spec = {"kind": "qasper", "paths": [str(p) for p in paths]} | ({"max_docs": max_docs} if max_docs else {})
        corpus = load_corpus(spec)
        tokenizer = load_tokenizer(TOKENIZER)
        chunks = structural_chunks(
            corpus.documents, corpus.paragraphs, corpus.sections, tokenizer, t_max=T_MAX, t_min=T_MIN
        )
        texts, _ = render_texts(corpus.documents, chunks, "none", tokenizer)
        work.mkdir(parents=True, exist_ok=True)
        for table, frame in (("queries", corpus.queries), ("chunks", chunks), ("texts", texts)):
            write_table(frame, files[table])
    return {table: read_table(path, table) for table, path in files.items()}


def timed(function):
    cpu, wall = time.process_time(), time.perf_counter()
    result = function()
    return result, time.process_time() - cpu, time.perf_counter() - wall


def rank_all(score_query, query_tokens: list, k: int) -> tuple[np.ndarray, np.ndarray]:
    scores = np.zeros((len(query_tokens), k))
    ids = np.zeros((len(query_tokens), k), dtype=np.int64)
    for row, tokens in enumerate(query_tokens):
        scores[row], ids[row] = top_k_by_score(score_query(tokens), k)
    return scores, ids


def bm25s_scorer(index: BM25Index):
    def score(tokens):
        terms = index.index.get_tokens_ids(tokens)
        return (
            np.asarray(index.index.get_scores_from_ids(terms), dtype=np.float64) if terms else np.zeros(index.n_chunks)
        )

    return score


def gold_top1(pool: dict, qids: list[str], scores: np.ndarray, ids: np.ndarray) -> float:
    runs = runs_from_arrays(qids, scores, ids, stage="bm25")
    return float(
        score_run(runs, pool["queries"], pool["chunks"], pool["texts"], metrics=["gold_top1"])["gold_top1"].mean()
    )


def within_paper_gold_top1(pool: dict, index: BM25Index) -> float:
    """Gold top-1 when each query's ranking is restricted to its own paper's chunks (a per-paper QA setting)."""
    chunks = pool["chunks"].sort("chunk_id")
    queries = pool["queries"].sort("qid")
    by_doc = chunks.group_by("doc_id").agg(pl.col("chunk_id"), pl.col("start"), pl.col("end"))
    by_doc = {row["doc_id"]: row for row in by_doc.iter_rows(named=True)}
    picked = []
    for query in queries.iter_rows(named=True):
        own = by_doc[query["doc_id"]]
        own_ids = np.asarray(own["chunk_id"])
        scores = index.scores(query["text"])[own_ids]
        best = own_ids[top_k_by_score(scores, 1)[1]][0]
        picked.append((query["qid"], int(best)))
    runs = runs_from_arrays(
        [q for q, _ in picked], np.ones((len(picked), 1)), np.asarray([[c] for _, c in picked]), "bm25"
    )
    return float(score_run(runs, queries, chunks, pool["texts"], metrics=["gold_top1"])["gold_top1"].mean())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--qasper-dir", type=Path, default=Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "qasper"
    )
    parser.add_argument("--work", type=Path, default=Path("/tmp/bench_bm25"))
    parser.add_argument("--queries", type=int, default=4303)
    parser.add_argument("--baseline-queries", type=int, default=4303)
    parser.add_argument("--subset-docs", type=int, default=60)
    parser.add_argument("--analyzers", default="words,english")
    args = parser.parse_args()
    from rank_bm25 import BM25Okapi

    pool = build_pool([args.qasper_dir / split for split in SPLITS], args.work, "train-dev")
    subset = build_pool([args.qasper_dir / SPLITS[1]], args.work, f"dev-first{args.subset_docs}", args.subset_docs)
    chunk_texts = pool["texts"].sort("chunk_id")["text_for_embedding"].to_list()
    queries = pool["queries"]
    qids, distinct = queries["qid"].to_list(), queries["text"].to_list()
    timed_texts = [distinct[i % len(distinct)] for i in range(args.queries)]
    n_docs = pool["chunks"]["doc_id"].n_unique()
    print(
        f"pool: QASPER train+dev, {n_docs} papers, {len(chunk_texts)} chunks, {len(distinct)} distinct questions "
        f"(cycled to {len(timed_texts)} for timing); top {TOP_K} per query"
    )

    for name in args.analyzers.split(","):
        analyze = ANALYZERS[name]
        query_tokens = [analyze(text) for text in timed_texts]
        n_base = min(args.baseline_queries, len(query_tokens))
        chunk_tokens, corpus_cpu, _ = timed(lambda: [analyze(text) for text in chunk_texts])
        baseline, base_index_cpu, base_index_wall = timed(lambda: BM25Okapi(chunk_tokens, k1=1.5, b=0.75, epsilon=0.0))
        (_, base_ids), base_rank_cpu, base_rank_wall = timed(
            lambda: rank_all(baseline.get_scores, query_tokens[:n_base], TOP_K)
        )
        contender, index_cpu, index_wall = timed(lambda: BM25Index(chunk_texts, name))
        (scores, ids), rank_cpu, rank_wall = timed(lambda: rank_all(bm25s_scorer(contender), query_tokens, TOP_K))
        scale = len(query_tokens) / n_base
        note = "" if n_base == len(query_tokens) else f" (EXTRAPOLATED from {n_base} queries)"
        base_rank_cpu, base_rank_wall = base_rank_cpu * scale, base_rank_wall * scale
        base_total, total = base_index_cpu + base_rank_cpu, index_cpu + rank_cpu
        print(f"\n[{name}] analyzing the chunks for the baseline: {corpus_cpu:.1f} s CPU (not charged to it)")
        print(
            f"  rank-bm25 (baseline): index {base_index_cpu:.1f} s CPU ({base_index_wall:.1f} wall), "
            f"ranking {len(query_tokens)} queries {base_rank_cpu:.1f} s CPU ({base_rank_wall:.1f} wall){note}"
        )
        print(
            f"  bm25s:                index {index_cpu:.1f} s CPU ({index_wall:.1f} wall), "
            f"ranking {len(query_tokens)} queries {rank_cpu:.1f} s CPU ({rank_wall:.1f} wall)"
        )
        print(
            f"  ratio rank-bm25 / bm25s, CPU s: ranking {base_rank_cpu / rank_cpu:.1f}x, "
            f"index + ranking {base_total / total:.1f}x"
        )
        n = min(n_base, len(distinct))
        same_top1 = float((base_ids[:n, 0] == ids[:n, 0]).mean())
        same_list = float((base_ids[:n] == ids[:n]).all(axis=1).mean())
        top10 = float(np.mean([len(set(a[:10]) & set(b[:10])) / 10 for a, b in zip(base_ids[:n], ids[:n])]))
        print(
            f"  agreement over {n} questions: same rank-1 chunk {same_top1:.4f}, same top-{TOP_K} list {same_list:.4f}, "
            f"mean top-10 overlap {top10:.4f}"
        )
        n = len(distinct)
        pool_top1 = gold_top1(pool, qids, scores[:n], ids[:n])
        own_paper = within_paper_gold_top1(pool, contender)
        sub_texts = subset["texts"].sort("chunk_id")["text_for_embedding"].to_list()
        sub_qids = subset["queries"]["qid"].to_list()
        sub_tokens = [analyze(t) for t in subset["queries"]["text"].to_list()]
        sub_top1 = gold_top1(subset, sub_qids, *rank_all(bm25s_scorer(BM25Index(sub_texts, name)), sub_tokens, TOP_K))
        legacy = BM25Okapi([analyze(t) for t in sub_texts], k1=1.5, b=0.75)  # rank-bm25's default epsilon = 0.25
        legacy_top1 = gold_top1(subset, sub_qids, *rank_all(legacy.get_scores, sub_tokens, TOP_K))
        print(
            f"  gold top-1: whole pool {pool_top1:.4f} ({n} questions); within own paper {own_paper:.4f}; "
            f"first {args.subset_docs} dev papers ({subset['chunks'].height} chunks, {len(sub_qids)} questions) "
            f"{sub_top1:.4f} (rank-bm25 with its default epsilon 0.25: {legacy_top1:.4f})"
        )


if __name__ == "__main__":
    main()
