"""Benchmark: the subgroup analysis at QASPER scale against the contrasts step it rides on.

Workload: 4,303 paired questions over 1,508 documents (QASPER train + dev, as ``bench_bootstrap.py``), two
conditions per contrast, 4 contrasts (the pre-registered subgroup study's), 4 moderators (a document-level one, two
question-level ones, one with three levels), B = 10,000 replicates.

- subgroups: ``structbench.stats.subgroups.subgroup_table`` over the 4 contrasts and 4 moderators: per contrast one
  pass of the contrast's draws over every side and level (``bootstrap_totals``), CIs, interactions, Holm.
- baseline: ``structbench.stats.contrasts.contrast_table`` of the same 4 contrasts (MixedLM off), the step the
  workflow runs beside it.

Prints the median of ``--repeats`` runs of each and the peak resident memory of the process.

    PYTHONPATH=src .venv/bin/python benchmarks/bench_subgroups.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import time

import numpy as np
import polars as pl

from structbench.defaults import BOOTSTRAP_ITERS, SEED
from structbench.stats.contrasts import contrast_table
from structbench.stats.moderators import LABELS, Labelling, Moderator
from structbench.stats.subgroups import subgroup_table

N_QUERIES, N_DOCS = 4303, 1508
CONDITIONS = ("F0", "G2", "G3", "P3", "B2", "B3")
CONTRASTS = [
    {"name": "G3-P3", "treatment": "G3", "control": "P3", "family": "primary"},
    {"name": "G3-G2", "treatment": "G3", "control": "G2", "family": "primary"},
    {"name": "G2-F0", "treatment": "G2", "control": "F0", "family": "primary"},
    {"name": "B3-B2", "treatment": "B3", "control": "B2", "family": "exploratory"},
]


def workload() -> tuple[pl.DataFrame, list[Labelling]]:
    rng = np.random.default_rng(0)
    doc = np.sort(np.concatenate((np.arange(N_DOCS), rng.integers(0, N_DOCS, N_QUERIES - N_DOCS))))
    qids = [f"q{i:05d}" for i in range(N_QUERIES)]
    docs = [f"paper{d:05d}" for d in doc]
    base = rng.uniform(0, 1, N_QUERIES)
    scores = pl.concat(
        [
            pl.DataFrame(
                {
                    "qid": qids,
                    "doc_id": docs,
                    "condition": condition,
                    "cov_nDCG@10": base + rng.normal(0, 0.1, N_QUERIES),
                }
            )
            for condition in CONDITIONS
        ]
    )
    deep = rng.uniform(size=N_DOCS) < 0.4
    qtypes = rng.choice(["extractive", "abstractive", "yes_no"], N_QUERIES)
    sides = {
        "tree_depth": np.where(deep[doc], "A", "B"),
        "anchoring": np.where(rng.uniform(size=N_QUERIES) < 0.6, "A", "B"),
        "qtype": np.where(qtypes == "extractive", "A", "B"),
        "evidence_spans": np.where(rng.uniform(size=N_QUERIES) < 0.7, "A", "B"),
    }
    labellings = [
        Labelling(
            Moderator(name, "A", "B"),
            pl.DataFrame({"qid": qids, "level": qtypes if name == "qtype" else group, "group": group}, schema=LABELS),
        )
        for name, group in sides.items()
    ]
    return scores, labellings


def timed(function, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    scores, labellings = workload()
    metric = ["cov_nDCG@10"]
    baseline = timed(
        lambda: contrast_table(scores, CONTRASTS, metric, B=BOOTSTRAP_ITERS, seed=SEED, mixedlm=False), args.repeats
    )
    subgroups = timed(
        lambda: subgroup_table(scores, CONTRASTS, labellings, metric[0], B=BOOTSTRAP_ITERS, seed=SEED), args.repeats
    )
    table = subgroup_table(scores, CONTRASTS, labellings, metric[0], B=BOOTSTRAP_ITERS, seed=SEED)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{N_QUERIES} questions, {N_DOCS} documents, {len(CONTRASTS)} contrasts, B = {BOOTSTRAP_ITERS}")
    print(f"contrast_table (baseline, MixedLM off): {baseline:.2f} s")
    print(f"subgroup_table, {len(labellings)} moderators: {subgroups:.2f} s ({table.height} rows)")
    print(f"peak resident memory of the process: {peak:.0f} MiB")


if __name__ == "__main__":
    main()
