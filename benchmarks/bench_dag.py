"""The paper grid's plan: jobs per rule and dry-run wall time, and how both grow with the LLM shard count
and with the corpus. docs/method.md §13: the paper grid must stay in the low thousands of jobs and dry-run in
seconds.

    .venv/bin/python benchmarks/bench_dag.py [--qasper-dir ../shared/data/qasper] [--repeat 1]

Every variant is ``snakemake -n --configfile config/paper.yaml`` in an empty work directory (nothing
built, so every job is planned), with QASPER's paths overridden to the local train and dev files (the
paper config points at the release tarballs a cluster user downloads; the test split is not here):

- ``baseline``: the paper grid as shipped (QASPER train + dev, 1,169 papers; Wikipedia-FA, 200 articles).
- ``shards x2``: ``llm_shards`` doubled (4 -> 8).
- ``dev only``: QASPER's dev split alone (281 papers): the baseline holds 4.2x its papers.
- ``half docs``: ``max_docs`` at half of the baseline's papers: the baseline holds 2x its papers.
- ``default``: the embedded default config on its Markdown KB (Kuehlkamp et al.'s conditions, one corpus, one
  embedder, no reranker), for Snakemake's fixed start-up cost.

Printed: jobs per rule for each variant, total jobs, the dry run's wall seconds (best of ``--repeat``)
and both as ratios to ``baseline`` measured in the same run. Jobs are counted from Snakemake's own
"Job stats" table. The plan depends on the corpus's files only through their paths and modification
times (LLM work is split into a fixed number of document shards, ``structbench.shards``), so a bigger
corpus is expected to leave both the job count and the dry-run time unchanged, and more shards to add
only the LLM shard jobs.

Where a Slurm client is installed, every Snakemake start-up (a dry run too) waits for the Slurm executor
plugin, which Snakemake imports whenever it is installed, to run ``scontrol show config``; with no
controller answering (a laptop or CI machine with Slurm's packages, or a cluster whose controller is
slow) that is a timeout of up to 10 s, which is not the workflow's planning. So every variant is also
timed with that probe answered at once ("no probe": an ``scontrol`` that exits 1 first on PATH, which is
what the plugin sees on a machine without Slurm), and the probe's own time is printed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = Path(sys.executable).with_name("snakemake")
QASPER_FILES = ("qasper-train-v0.3.rebuilt.json", "qasper-dev-v0.3.rebuilt.json")
BASELINE_PAPERS = 888 + 281  # train + dev, data/README of the shared folder


def planned_jobs(output: str) -> dict[str, int]:
    """Rule -> job count from the 'Job stats' table of a dry run (the same parse as tests/workflow/test_workflow.py)."""
    table = output.split("Job stats:")[-1]
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+)\s+(\d+)$", table, re.M) if m.group(1) != "total"}


def qasper_override(paths: list[Path], max_docs: int | None = None) -> str:
    """A ``--config`` value replacing the paper config's QASPER entry (Snakemake parses it as YAML)."""
    entry = {"kind": "qasper", "paths": [str(p) for p in paths]}
    if max_docs is not None:
        entry["max_docs"] = max_docs
    return "corpora=" + json.dumps({"qasper": entry})


def variants(qasper_dir: Path) -> dict[str, list[str]]:
    """Variant name -> the snakemake arguments after ``-n``."""
    train, dev = (qasper_dir / name for name in QASPER_FILES)
    paper = ["--configfile", str(REPO / "config/paper.yaml")]
    return {
        "baseline": paper + ["--config", qasper_override([train, dev])],
        "shards x2": paper + ["--config", qasper_override([train, dev]), "llm_shards=8"],
        "dev only": paper + ["--config", qasper_override([dev])],
        "half docs": paper + ["--config", qasper_override([train, dev], max_docs=BASELINE_PAPERS // 2)],
        # the embedded KB addressed absolutely, since the dry run works in an empty directory elsewhere
        "default": [
            "--config",
            "corpora="
            + json.dumps(
                {
                    "kb": {
                        "kind": "markdown",
                        "path": str(REPO / "data/kb/docs"),
                        "questions": str(REPO / "data/kb/questions.jsonl"),
                    }
                }
            ),
        ],
    }


def dry_run(args: list[str], repeat: int, path_first: str | None = None) -> tuple[dict[str, int], float]:
    """Jobs per rule and the best wall time of ``repeat`` dry runs, each in a fresh empty work directory;
    ``path_first`` is put in front of PATH."""
    env = os.environ | {"PYTHONPATH": str(REPO / "src")}  # plan with this checkout's library
    if path_first:
        env["PATH"] = path_first + os.pathsep + env["PATH"]
    best, jobs = float("inf"), {}
    for _ in range(repeat):
        with tempfile.TemporaryDirectory(prefix="bench_dag_") as workdir:
            command = [str(SNAKEMAKE), "-s", str(REPO / "Snakefile"), "-d", workdir, "-n", *args]
            started = time.perf_counter()
            result = subprocess.run(command, capture_output=True, text=True, env=env, cwd=REPO)
            elapsed = time.perf_counter() - started
        if result.returncode != 0:
            raise SystemExit(f"dry run failed: {' '.join(command)}\n{result.stderr[-3000:]}")
        best, jobs = min(best, elapsed), planned_jobs(result.stdout + result.stderr)
    return jobs, best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--qasper-dir", type=Path, default=REPO.parent / "shared/data/qasper")
    parser.add_argument("--repeat", type=int, default=1)
    options = parser.parse_args()

    probe_s = None
    if shutil.which("scontrol"):
        started = time.perf_counter()
        subprocess.run(["scontrol", "show", "config"], capture_output=True, timeout=30)
        probe_s = time.perf_counter() - started
    with tempfile.TemporaryDirectory(prefix="bench_dag_noprobe_") as shim:
        fail_at_once = Path(shim) / "scontrol"
        fail_at_once.write_text("#!/bin/sh\nexit 1\n")
        fail_at_once.chmod(0o755)
        runs = {
            name: (dry_run(args, options.repeat), dry_run(args, options.repeat, path_first=shim))
            for name, args in variants(options.qasper_dir).items()
        }
    measured = {name: with_probe for name, (with_probe, _) in runs.items()}
    unprobed = {name: wall for name, (_, (_, wall)) in runs.items()}
    names = list(measured)
    rules = sorted(
        {rule for jobs, _ in measured.values() for rule in jobs}, key=lambda rule: -measured["baseline"][0].get(rule, 0)
    )
    width = max(map(len, rules)) + 2
    print("jobs per rule".ljust(width) + "".join(f"{name:>12}" for name in names))
    for rule in rules:
        print(rule.ljust(width) + "".join(f"{measured[name][0].get(rule, 0):>12}" for name in names))
    totals = {name: sum(jobs.values()) for name, (jobs, _) in measured.items()}
    seconds = {name: wall for name, (_, wall) in measured.items()}
    print("total".ljust(width) + "".join(f"{totals[name]:>12}" for name in names))
    print("dry run, s".ljust(width) + "".join(f"{seconds[name]:>12.1f}" for name in names))
    print("no probe, s".ljust(width) + "".join(f"{unprobed[name]:>12.1f}" for name in names))
    print("jobs / baseline".ljust(width) + "".join(f"{totals[name] / totals['baseline']:>12.2f}" for name in names))
    print("time / baseline".ljust(width) + "".join(f"{seconds[name] / seconds['baseline']:>12.2f}" for name in names))
    print(
        "no probe / baseline".ljust(width)
        + "".join(f"{unprobed[name] / unprobed['baseline']:>12.2f}" for name in names)
    )
    print("scontrol show config: " + ("not installed" if probe_s is None else f"{probe_s:.1f} s"))
    changed = {
        rule: (measured["baseline"][0].get(rule, 0), n)
        for rule, n in measured["shards x2"][0].items()
        if n != measured["baseline"][0].get(rule, 0)
    }
    print(f"rules whose count changes with llm_shards 4 -> 8: {changed}")


if __name__ == "__main__":
    main()
