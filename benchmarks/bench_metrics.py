"""Benchmark (a): scoring one QASPER-sized cell, vectorized vs the plain-Python reference.

Cell (synthetic, structbench.metrics.synthetic): 4,303 queries over 1,508 documents, ~15 chunks per
document tiling it, ~2.1 gold spans per query, top 100 per query corpus-wide (430,300 run rows).

- vectorized: ``structbench.metrics.score_run`` on the polars tables with the default metric set the
  workflow passes (``metric_names()``, through the registry), everything included (validation, joins,
  all eight metrics); median of several repeats after one warm-up.
- baseline: ``structbench.metrics.reference.score_query`` (plain Python, one query at a time) on the
  same cell, given Python objects built beforehand (that conversion is NOT timed, which favours the
  baseline). Run on all queries unless --ref-queries is smaller, in which case the time is
  extrapolated per query (the output says so).

Both produce the same numbers; the script checks that before printing the ratio.

    .venv/bin/python benchmarks/bench_metrics.py [--repeats 7] [--ref-queries 4303]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from structbench.metrics import metric_names, score_run
from structbench.metrics import reference as ref
from structbench.metrics.synthetic import synthetic_cell


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--ref-queries", type=int, default=4303)
    args = parser.parse_args()

    cell = synthetic_cell(n_docs=1508, n_queries=4303, seed=0)
    n_queries = cell["queries"].height
    print(
        f"cell: {n_queries} queries, {cell['chunks'].height} chunks over 1508 docs, {cell['runs'].height} run rows, "
        f"{cell['queries']['spans'].list.len().mean():.2f} spans/query"
    )

    names = metric_names()
    score_run(cell["runs"], cell["queries"], cell["chunks"], cell["texts"], metrics=names)  # warm-up
    times = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        scores = score_run(cell["runs"], cell["queries"], cell["chunks"], cell["texts"], metrics=names)
        times.append(time.perf_counter() - start)
    vectorized = statistics.median(times)
    print(
        f"vectorized score_run: median {vectorized * 1000:.1f} ms (min {min(times) * 1000:.1f}, max {max(times) * 1000:.1f}) over {args.repeats} runs"
    )

    queries, rankings, by_doc = ref.reference_inputs(cell)
    subset = queries[: args.ref_queries]
    start = time.perf_counter()
    ref_rows = [ref.score_query(rankings.get(qid, []), by_doc[doc], doc, spans) for qid, doc, spans in subset]
    ref_elapsed = time.perf_counter() - start
    per_query = ref_elapsed / len(subset)
    ref_total = per_query * n_queries
    note = "measured on all queries" if len(subset) == n_queries else f"EXTRAPOLATED from {len(subset)} queries"
    print(
        f"reference (plain Python): {ref_elapsed:.2f} s for {len(subset)} queries = {per_query * 1e3:.3f} ms/query; "
        f"full cell {ref_total:.2f} s ({note})"
    )

    worst = 0.0
    for column in names:
        fast = scores[column].to_numpy()[: len(subset)]
        slow = np.array([row[column] for row in ref_rows])
        worst = max(worst, float(np.abs(fast - slow).max()))
    print(f"max |vectorized - reference| over all metrics: {worst:.3g}")
    print(f"speed-up vs plain-Python reference: {ref_total / vectorized:.1f}x (goal >= 50x)")


if __name__ == "__main__":
    main()
