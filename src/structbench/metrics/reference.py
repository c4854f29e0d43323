"""Plain-Python reference implementation of the metrics, written for reading, not speed.

One query at a time, with interval lists and loops, straight from the definitions in
:mod:`structbench.metrics.measures`. The tests check the vectorized kernels against it and the
benchmark (``benchmarks/bench_metrics.py``) measures the speed-up over it. It sums floats in the
same order as the kernels, so coverage scores agree to the last bit.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from structbench.defaults import BUDGETS, NDCG_K, RECALL_K


@dataclass(frozen=True)
class Chunk:
    chunk_id: int
    doc_id: str
    start: int
    end: int
    n_tokens: int = 0
    prefix_tokens: int = 0


def _clip(chunk: Chunk, doc_id: str, span: tuple[int, int]) -> tuple[int, int] | None:
    if chunk.doc_id != doc_id:
        return None
    lo, hi = max(chunk.start, span[0]), min(chunk.end, span[1])
    return (lo, hi) if hi > lo else None


def _union_length(intervals: list[tuple[int, int]]) -> int:
    total, reach = 0, None
    for lo, hi in sorted(intervals):
        if reach is None or lo >= reach:
            total += hi - lo
            reach = hi
        elif hi > reach:
            total += hi - reach
            reach = hi
    return total


def _new_chars(piece: tuple[int, int] | None, covered: list[tuple[int, int]]) -> int:
    if piece is None:
        return 0
    return _union_length(covered + [piece]) - _union_length(covered)


def relevant(chunk: Chunk, doc_id: str, spans: Sequence[tuple[int, int]]) -> bool:
    for span in spans:
        piece = _clip(chunk, doc_id, span)
        if piece is None:
            continue
        overlap = piece[1] - piece[0]
        if overlap / (span[1] - span[0]) >= 0.5 or overlap / (chunk.end - chunk.start) >= 0.8:
            return True
    return False


def coverage_gains(ranking: Sequence[Chunk], doc_id: str, spans: Sequence[tuple[int, int]]) -> list[float]:
    """Per-rank novelty gain ``(1/S) * sum_j new_j / |g_j|`` down the whole ranking."""
    covered: list[list[tuple[int, int]]] = [[] for _ in spans]
    gains = []
    for chunk in ranking:
        total = 0.0
        for j, span in enumerate(spans):
            piece = _clip(chunk, doc_id, span)
            new = _new_chars(piece, covered[j])
            if piece is not None:
                covered[j].append(piece)
            total += new / (span[1] - span[0])
        gains.append(total / len(spans))
    return gains


def dcg(gains: Sequence[float], k: int) -> float:
    total = 0.0
    for i, gain in enumerate(gains[:k], start=1):
        total += gain * (1.0 / math.log2(i + 1))
    return total


def greedy_ideal(chunk_set: Sequence[Chunk], doc_id: str, spans: Sequence[tuple[int, int]], k: int) -> list[Chunk]:
    """Greedy max-marginal-coverage ordering; ties -> smallest chunk_id."""
    pool = sorted((c for c in chunk_set if c.doc_id == doc_id), key=lambda c: c.chunk_id)
    covered: list[list[tuple[int, int]]] = [[] for _ in spans]
    chosen: list[Chunk] = []
    for _ in range(k):
        best, best_gain = None, 0.0
        for chunk in pool:
            if chunk in chosen:
                continue
            total = 0.0
            for j, span in enumerate(spans):
                total += _new_chars(_clip(chunk, doc_id, span), covered[j]) / (span[1] - span[0])
            gain = total / len(spans)
            if gain > best_gain:
                best, best_gain = chunk, gain
        if best is None:
            break
        chosen.append(best)
        for j, span in enumerate(spans):
            piece = _clip(best, doc_id, span)
            if piece is not None:
                covered[j].append(piece)
    return chosen


def coverage_ndcg(ranking, chunk_set, doc_id, spans, k: int = NDCG_K) -> float:
    observed = dcg(coverage_gains(ranking, doc_id, spans), k)
    ideal = dcg(coverage_gains(greedy_ideal(chunk_set, doc_id, spans, k), doc_id, spans), k)
    return observed / ideal if ideal > 0 else 0.0


def binary_ndcg(ranking, chunk_set, doc_id, spans, k: int = NDCG_K) -> float:
    observed = 0.0
    for i, chunk in enumerate(ranking[:k], start=1):
        if relevant(chunk, doc_id, spans):
            observed += 1.0 / math.log2(i + 1)
    n_relevant = sum(1 for c in chunk_set if relevant(c, doc_id, spans))
    ideal = 0.0
    for i in range(1, min(n_relevant, k) + 1):
        ideal += 1.0 / math.log2(i + 1)
    return observed / ideal if ideal > 0 else 0.0


def reciprocal_rank(ranking, doc_id, spans) -> float:
    for i, chunk in enumerate(ranking, start=1):
        if relevant(chunk, doc_id, spans):
            return 1.0 / i
    return 0.0


def span_recall(ranking, doc_id, spans, k: int = RECALL_K) -> float:
    hit = 0
    for span in spans:
        pieces = [p for c in ranking[:k] if (p := _clip(c, doc_id, span)) is not None]
        if _union_length(pieces) >= 0.5 * (span[1] - span[0]):
            hit += 1
    return hit / len(spans)


def budget_coverage(ranking, doc_id, spans, budget: int) -> float:
    taken, used = [], 0
    for chunk in ranking:
        cost = chunk.prefix_tokens + chunk.n_tokens
        if used + cost > budget:
            break
        taken.append(chunk)
        used += cost
    total = 0.0
    for span in spans:
        pieces = [p for c in taken if (p := _clip(c, doc_id, span)) is not None]
        total += _union_length(pieces) / (span[1] - span[0])
    return total / len(spans)


def gold_top1(ranking, doc_id, spans) -> float:
    return 1.0 if ranking and relevant(ranking[0], doc_id, spans) else 0.0


def score_query(ranking, chunk_set, doc_id, spans, *, k=NDCG_K, recall_k=RECALL_K, budgets=BUDGETS) -> dict:
    """All metrics of one query, keyed like :func:`structbench.metrics.metric_names` (the keys are
    written out here, not taken from the registry, so the tests check the registry's names too)."""
    out = {
        f"cov_nDCG@{k}": coverage_ndcg(ranking, chunk_set, doc_id, spans, k),
        f"nDCG@{k}": binary_ndcg(ranking, chunk_set, doc_id, spans, k),
        "MRR": reciprocal_rank(ranking, doc_id, spans),
        f"R@{recall_k}": span_recall(ranking, doc_id, spans, recall_k),
    }
    for budget in budgets:
        out[f"budget_cov@{budget}"] = budget_coverage(ranking, doc_id, spans, budget)
    out["gold_top1"] = gold_top1(ranking, doc_id, spans)
    return out


def reference_inputs(cell: dict) -> tuple[list, dict, dict]:
    """Plain-Python inputs from a cell's tables (``queries``, ``chunks``, ``texts``, ``runs``):
    ``[(qid, doc_id, spans)]`` sorted by qid, ``{qid: [Chunk, ...]}`` in rank order and
    ``{doc_id: [Chunk, ...]}`` (each document's chunk set)."""
    prefix = dict(zip(cell["texts"]["chunk_id"].to_list(), cell["texts"]["prefix_tokens"].to_list()))
    chunks = {
        row["chunk_id"]: Chunk(
            row["chunk_id"], row["doc_id"], row["start"], row["end"], row["n_tokens"], prefix.get(row["chunk_id"], 0)
        )
        for row in cell["chunks"].iter_rows(named=True)
    }
    by_doc: dict[str, list] = {}
    for chunk in chunks.values():
        by_doc.setdefault(chunk.doc_id, []).append(chunk)
    rankings: dict[str, list] = {}
    for qid, chunk_id in cell["runs"].sort("qid", "rank").select("qid", "chunk_id").iter_rows():
        rankings.setdefault(qid, []).append(chunks[chunk_id])
    queries = [
        (q["qid"], q["doc_id"], [tuple(s) for s in q["spans"]])
        for q in cell["queries"].sort("qid").iter_rows(named=True)
    ]
    return queries, rankings, by_doc


# ---- Chroma's character-overlap metrics (structbench.metrics.spans), on explicit character sets


def _characters(intervals) -> set[int]:
    return {x for lo, hi in intervals for x in range(lo, hi)}


def span_counts(ranking, doc_id, spans, k: int) -> tuple[int, int, int]:
    """``(|t_e ∩ t_r|, |t_r|, |t_e|)``: t_r the characters of the top k chunks (of the query's document:
    others only add to |t_r|), each (document, character) once, t_e the characters of the spans."""
    gold = _characters(spans)
    top = ranking[:k]
    retrieved = _characters((c.start, c.end) for c in top if c.doc_id == doc_id)
    every = {(c.doc_id, x) for c in top for x in range(c.start, c.end)}
    return len(gold & retrieved), len(every), len(gold)


def span_iou(ranking, doc_id, spans, k: int) -> float:
    inter, retrieved, gold = span_counts(ranking, doc_id, spans, k)
    return inter / (gold + retrieved - inter)


def span_precision(ranking, doc_id, spans, k: int) -> float:
    inter, retrieved, _ = span_counts(ranking, doc_id, spans, k)
    return inter / retrieved if retrieved else 0.0


def span_char_recall(ranking, doc_id, spans, k: int) -> float:
    inter, _, gold = span_counts(ranking, doc_id, spans, k)
    return inter / gold


def precision_omega(chunk_set, doc_id, spans) -> float:
    """Every chunk of the document sharing a character with the gold, all taken; the denominator is the
    union of those chunks' characters and the gold characters."""
    gold = _characters(spans)
    holding = [c for c in chunk_set if c.doc_id == doc_id and gold & _characters([(c.start, c.end)])]
    taken = _characters((c.start, c.end) for c in holding)
    return len(gold & taken) / len(gold | taken)


def span_scores(ranking, chunk_set, doc_id, spans, *, ks=(NDCG_K,)) -> dict:
    """The span metrics of one query, keyed like their registered names (written out here)."""
    out = {}
    for k in ks:
        out[f"span_IoU@{k}"] = span_iou(ranking, doc_id, spans, k)
        out[f"span_precision@{k}"] = span_precision(ranking, doc_id, spans, k)
        out[f"span_recall@{k}"] = span_char_recall(ranking, doc_id, spans, k)
    out["span_precision_omega"] = precision_omega(chunk_set, doc_id, spans)
    return out
