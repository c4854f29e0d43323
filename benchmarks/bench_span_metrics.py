"""Benchmark: the cost of Chroma's span metrics (structbench.metrics.spans) on one QASPER-sized cell.

Cell: the synthetic cell of ``bench_metrics.py`` (4,303 queries, 1,508 documents, top 100: 430,300
run rows). Three measurements in the same run, each the median of several repeats after a warm-up:

- baseline: ``score_run`` with the study's default set (``metric_names()``, what the workflow scores);
- with spans: the same plus ``span_IoU@10, span_precision@10, span_recall@10, span_precision_omega``;
  the ratio to the baseline is the span metrics' added cost (alignment is shared);
- the span metrics' character-set reference (``reference.span_scores``, plain Python) on the first
  ``--ref-queries`` queries, extrapolated per query, against the vectorized span metrics alone (the
  four computed on a RunEvidence built beforehand); the numbers are checked equal before the ratio
  is printed.

    .venv/bin/python benchmarks/bench_span_metrics.py [--repeats 5] [--ref-queries 400]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from structbench.metrics import align_run, metric_names, parse_metrics, score_run
from structbench.metrics import reference as ref
from structbench.metrics.synthetic import synthetic_cell

SPAN_METRICS = ["span_IoU@10", "span_precision@10", "span_recall@10", "span_precision_omega"]


def median_time(function, repeats: int) -> tuple[float, object]:
    result = function()  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--ref-queries", type=int, default=400)
    args = parser.parse_args()

    cell = synthetic_cell(n_docs=1508, n_queries=4303, seed=0)
    tables = cell["runs"], cell["queries"], cell["chunks"], cell["texts"]
    base_names = metric_names()
    base, _ = median_time(lambda: score_run(*tables, metrics=base_names), args.repeats)
    full, scores = median_time(lambda: score_run(*tables, metrics=base_names + SPAN_METRICS), args.repeats)
    print(f"default set: median {base * 1e3:.1f} ms; with the span metrics: {full * 1e3:.1f} ms")
    print(f"ratio with spans / default: {full / base:.3f} (span metrics add {(full - base) * 1e3:.1f} ms)")

    evidence = align_run(*tables)
    metrics = parse_metrics(SPAN_METRICS)
    alone, _ = median_time(lambda: [metric.compute(evidence) for metric in metrics], args.repeats)
    print(f"the four span metrics alone on a built RunEvidence: median {alone * 1e3:.2f} ms")

    queries, rankings, by_doc = ref.reference_inputs(cell)
    subset = queries[: args.ref_queries]
    start = time.perf_counter()
    rows = [ref.span_scores(rankings.get(qid, []), by_doc[doc], doc, spans) for qid, doc, spans in subset]
    per_query = (time.perf_counter() - start) / len(subset)
    for name in SPAN_METRICS:
        fast = scores[name].to_numpy()[: len(subset)]
        if not np.array_equal(fast, np.array([row[name] for row in rows])):
            raise SystemExit(f"{name}: vectorized and reference differ")
    reference_total = per_query * len(queries)
    print(
        f"character-set reference: {per_query * 1e3:.2f} ms/query, full cell {reference_total:.1f} s "
        f"(extrapolated from {len(subset)} queries); equal to the vectorized values"
    )
    print(f"speed-up of the vectorized span metrics vs the reference: {reference_total / alone:.0f}x")


if __name__ == "__main__":
    main()
