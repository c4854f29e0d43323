"""Benchmark (b): the document-clustered bootstrap at QASPER scale, vectorized vs per-iteration loops.

Workload: 4,303 paired per-query deltas over 1,508 documents, 4 contrasts (the pre-registered family),
B = 10,000 replicates, 95% percentile CI and two-sided p for each contrast.

- vectorized: ``structbench.stats`` (``cluster_sums`` + ``bootstrap_replicates`` + ``percentile_ci`` +
  ``bootstrap_p``): one draw matrix shared by the 4 contrasts, multiplicities by bincount, replicate
  means by two matrix products. Median of several repeats.
- baseline 1, per-iteration Python loop: for each replicate draw the documents (same published draws),
  then sum the drawn documents' delta sums and query counts in Python, one contrast at a time — the
  straightforward implementation of appendix D.2. Timed on a subset of replicates and extrapolated to
  B = 10,000 (the output says so).
- baseline 2, per-iteration loop with numpy inside (fancy indexing per replicate, all 4 contrasts at
  once): a stronger baseline, timed on all B replicates.

All three use the same draws; the script checks they give the same CIs and p-values.

    .venv/bin/python benchmarks/bench_bootstrap.py [--repeats 5] [--python-iterations 300]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from structbench.defaults import BOOTSTRAP_ITERS, SEED
from structbench.stats import bootstrap_draws, bootstrap_p, bootstrap_replicates, cluster_sums, percentile_ci

N_QUERIES, N_DOCS, N_CONTRASTS = 4303, 1508, 4
B = BOOTSTRAP_ITERS


def workload():
    rng = np.random.default_rng(0)
    doc = np.sort(np.concatenate((np.arange(N_DOCS), rng.integers(0, N_DOCS, N_QUERIES - N_DOCS))))
    effects = np.array([0.012, 0.016, 0.001, -0.015])
    deltas = effects + rng.normal(0, 0.04, (N_DOCS, 1))[doc] + rng.normal(0, 0.15, (N_QUERIES, N_CONTRASTS))
    return deltas, np.array([f"paper{d:05d}" for d in doc])


def vectorized(deltas, doc_ids):
    _, doc_sums, doc_counts = cluster_sums(deltas, doc_ids)
    replicates = bootstrap_replicates(doc_sums, doc_counts[:, None], n_boot=B, seed=SEED)
    low, high = percentile_ci(replicates)
    return low, high, bootstrap_p(replicates)


def python_loop(doc_sums, doc_counts, draws, contrast):
    sums = doc_sums[:, contrast].tolist()
    counts = doc_counts.tolist()
    means = []
    for row in draws.tolist():
        total, count = 0.0, 0
        for d in row:
            total += sums[d]
            count += counts[d]
        means.append(total / count)
    return np.array(means)


def numpy_loop(doc_sums, doc_counts, draws):
    means = np.empty((len(draws), doc_sums.shape[1]))
    for b, row in enumerate(draws):
        means[b] = doc_sums[row].sum(axis=0) / doc_counts[row].sum()
    return means


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--python-iterations", type=int, default=300)
    args = parser.parse_args()
    deltas, doc_ids = workload()
    print(f"workload: {N_QUERIES} queries over {N_DOCS} documents, {N_CONTRASTS} contrasts, B = {B}")

    vectorized(deltas, doc_ids)  # warm-up
    times = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        low, high, p = vectorized(deltas, doc_ids)
        times.append(time.perf_counter() - start)
    fast = statistics.median(times)
    print(
        f"vectorized (4 contrasts, one call): median {fast * 1000:.0f} ms (min {min(times) * 1000:.0f}, max {max(times) * 1000:.0f}) over {args.repeats} runs"
    )

    _, doc_sums, doc_counts = cluster_sums(deltas, doc_ids)
    start = time.perf_counter()
    draws = bootstrap_draws(N_DOCS, B, SEED)
    draw_time = time.perf_counter() - start

    subset = draws[: args.python_iterations]
    start = time.perf_counter()
    loop_means = [python_loop(doc_sums, doc_counts, subset, c) for c in range(N_CONTRASTS)]
    loop_elapsed = time.perf_counter() - start
    python_total = loop_elapsed / len(subset) * B + draw_time
    print(
        f"baseline 1, per-iteration Python loop: {loop_elapsed:.2f} s for {len(subset)} replicates x {N_CONTRASTS} contrasts; "
        f"EXTRAPOLATED to B = {B}: {python_total:.1f} s (including {draw_time * 1000:.0f} ms to draw)"
    )

    start = time.perf_counter()
    numpy_means = numpy_loop(doc_sums, doc_counts, bootstrap_draws(N_DOCS, B, SEED))
    numpy_total = time.perf_counter() - start
    print(f"baseline 2, per-iteration loop with numpy inside: {numpy_total:.2f} s for all {B} replicates (measured)")

    full = bootstrap_replicates(doc_sums, doc_counts[:, None], n_boot=B, seed=SEED)
    worst_loop = max(float(np.abs(full[: len(subset), c] - loop_means[c]).max()) for c in range(N_CONTRASTS))
    numpy_low, numpy_high = percentile_ci(numpy_means)
    worst_ci = float(max(np.abs(numpy_low - low).max(), np.abs(numpy_high - high).max()))
    same_p = bool(np.array_equal(bootstrap_p(numpy_means), p))
    print(
        f"agreement: replicate means vs Python loop max |diff| {worst_loop:.2g}; CI vs numpy loop max |diff| {worst_ci:.2g}; p identical: {same_p}"
    )
    for c in range(N_CONTRASTS):
        print(
            f"  contrast {c + 1}: delta {deltas[:, c].mean():+.4f}  95% CI [{low[c]:+.4f}, {high[c]:+.4f}]  p {p[c]:.4f}"
        )
    print(
        f"speed-up vs per-iteration Python loop: {python_total / fast:.0f}x (goal >= 50x); "
        f"vs per-iteration numpy loop: {numpy_total / fast:.1f}x; vectorized under 1 s: {fast < 1.0}"
    )


if __name__ == "__main__":
    main()
