"""The whole workflow's cost against corpus size: the gold arm on QASPER train papers at several sizes, each run
from empty caches, with every rule's seconds per paper and how its time grows with the papers.

    PYTHONPATH=src .venv/bin/python benchmarks/bench_scale.py [--sizes 25 50 100 200] [--cores 2] [--scratch DIR]
    PYTHONPATH=src .venv/bin/python benchmarks/bench_scale.py --smoke     # 3 and 6 papers: the table's shape

Each size is ``snakemake --cores N --configfile config/qasper.yaml <layer>`` in a work directory of its own under
the scratch folder (its own results, logs, cache and .snakemake), where the layer reads the first ``max_docs``
papers of the QASPER train file and selects the gold arm: F0, G2, G3, P3, G4 and B2, the conditions whose cost is
the corpus's alone (no LLM step). Every job's seconds and peak resident memory come from its log's closing line
(``structbench.logs.step_log``: "done in 12.3 s, cpu 10.1 s, peak RSS 812 MiB"); a rule's time is the CPU time of
its jobs, summed (on a shared machine the wall time of a step measures its neighbours as much as its own work), the
whole run's is Snakemake's own "Elapsed time" (first job to last). A size already finished under the scratch folder
is read back, not run again, so an interrupted benchmark resumes with its next size.

Printed: per rule (named as its job logs name it: ``texts`` is render_texts), the CPU seconds per paper at each size
and the fitted exponent b of time ~ papers^b (least squares of log seconds on log papers; 1 is linear, 2
quadratic), then the sum of the steps' CPU seconds and the whole run's wall time the same way, and the job with the largest peak RSS at the largest
size. A rule under a second at some size gets no exponent (start-up noise, not growth). ``--out FILE`` also
writes the measurements as JSON. Numbers belong in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = Path(sys.executable).with_name("snakemake")
QASPER_TRAIN = REPO.parent / "shared/data/qasper/qasper-train-v0.3.rebuilt.json"
SIZES, SMOKE_SIZES = (25, 50, 100, 200), (3, 6)
# Below this many seconds at some size a rule's time is start-up and noise: no exponent is fitted to it.
MIN_FIT_SECONDS = 1.0

# The gold arm: F0 and P3 as the fidelity run defines them (tests/fidelity/qasper.yaml), the rest the default's.
GOLD_ARM_LAYER = {
    "select": {"corpora": ["qasper"], "conditions": ["F0", "G2", "G3", "P3", "G4", "B2"]},
    "conditions": {"P3": {"boundaries": "structural", "structure": "gold", "prefix": "placebo:3", "retrieval": "flat"}},
    "contrasts": {
        "G3-P3": {"treatment": "G3", "control": "P3", "family": "primary"},
        "G2-F0": {"treatment": "G2", "control": "F0", "family": "primary"},
    },
}

# "2026-12-06 06:01:02,345 structbench.embed_texts INFO done in 12.3 s, peak RSS 812 MiB"
DONE_LINE = re.compile(
    r"structbench\.(?P<step>\w+) INFO done in (?P<seconds>[\d.]+) s(?:, cpu (?P<cpu>[\d.]+) s)?, peak RSS (?P<rss>\d+) MiB"
)
# Snakemake's closing line: the run's wall time from its first job to its last (start-up and planning excluded)
ELAPSED_LINE = re.compile(r"^Elapsed time: (?:(?P<days>\d+) days?, )?(?P<h>\d+):(?P<m>\d+):(?P<s>[\d.]+)$", re.M)


@dataclass(frozen=True)
class Job:
    step: str
    seconds: float
    cpu_seconds: float | None  # None: a log from before step_log recorded CPU time
    peak_rss_mib: int
    log: str


@dataclass(frozen=True)
class SizeRun:
    papers: int
    wall_seconds: float
    jobs: list[Job]
    report_bytes: dict[str, int]  # the report's files (path under results/report/ -> bytes)


def scale_layer(papers: int, qasper: Path, cache: Path | None = None, max_seq_length: int | None = None) -> dict:
    """The config layered over config/qasper.yaml for one size: the first ``papers`` papers of ``qasper``; the
    run's own cache unless ``cache`` is given; MiniLM's input length unless ``max_seq_length`` is."""
    corpus = {"qasper": {"kind": "qasper", "paths": [str(qasper)], "max_docs": papers, "fuzzy_threshold": 90}}
    layer = {"corpora": corpus, **GOLD_ARM_LAYER}
    if cache is not None:
        layer["cache"] = str(cache)
    if max_seq_length is not None:
        layer["embedders"] = {"minilm": {"max_seq_length": max_seq_length}}
    return layer


def finished_jobs(logs: Path) -> list[Job]:
    """Every job under ``logs`` whose log has step_log's closing line, in path order."""
    jobs = []
    for path in sorted(logs.rglob("*.log")):
        found = DONE_LINE.search(path.read_text(encoding="utf-8", errors="replace"))
        if found:
            cpu = float(found["cpu"]) if found["cpu"] else None
            jobs.append(
                Job(found["step"], float(found["seconds"]), cpu, int(found["rss"]), str(path.relative_to(logs)))
            )
    return jobs


def elapsed_seconds(snakemake_log: str) -> float:
    """The wall time in Snakemake's closing "Elapsed time: 0:04:55.947605" line (hours may exceed a day)."""
    found = ELAPSED_LINE.search(snakemake_log)
    if not found:
        raise ValueError("no 'Elapsed time:' line in the Snakemake output: the run did not finish")
    days = int(found["days"] or 0)
    return ((days * 24 + int(found["h"])) * 60 + int(found["m"])) * 60 + float(found["s"])


def run_size(papers: int, scratch: Path, qasper: Path, cores: int, **layer_options) -> SizeRun:
    """One whole run of the gold arm on ``papers`` papers in ``scratch/papers-<n>``: read back if a finished run
    is there, else run in a new folder (empty caches are the point); ``layer_options`` go to :func:`scale_layer`."""
    workdir = scratch / f"papers-{papers}"
    finished = workdir / "snakemake.log"
    if finished.exists():
        return finished_run(papers, workdir, finished.read_text())
    workdir.mkdir(parents=True)
    layer = workdir / "scale.yaml"
    layer.write_text(yaml.safe_dump(scale_layer(papers, qasper, **layer_options), sort_keys=False))
    command = [str(SNAKEMAKE), "-s", str(REPO / "Snakefile"), "-d", str(workdir), "--cores", str(cores)]
    command += ["--configfile", str(REPO / "config/qasper.yaml"), str(layer)]
    env = os.environ | {"PYTHONPATH": os.pathsep.join(filter(None, [str(REPO / "src"), os.environ.get("PYTHONPATH")]))}
    result = subprocess.run(command, capture_output=True, text=True, env=env, cwd=REPO)
    if result.returncode != 0:
        (workdir / "failed.log").write_text(result.stdout + result.stderr)
        raise SystemExit(f"the {papers}-paper run failed ({workdir / 'failed.log'}):\n{result.stderr[-3000:]}")
    finished.write_text(result.stdout + result.stderr)
    return finished_run(papers, workdir, result.stdout + result.stderr)


def finished_run(papers: int, workdir: Path, snakemake_log: str) -> SizeRun:
    """What a finished run in ``workdir`` measured: its wall time, its jobs and its report's file sizes."""
    report = workdir / "results/report"
    sizes = {str(path.relative_to(report)): path.stat().st_size for path in sorted(report.rglob("*")) if path.is_file()}
    return SizeRun(papers, elapsed_seconds(snakemake_log), finished_jobs(workdir / "logs"), sizes)


def report_line(run: SizeRun) -> str:
    """The report's size at one run size: the HTML page, the Markdown and the largest data file."""
    largest = max((name for name in run.report_bytes if name.startswith("tables/")), key=run.report_bytes.get)
    kib = {name: run.report_bytes[name] / 1024 for name in ("index.html", "report.md", largest)}
    return (
        f"report at {run.papers} papers: index.html {kib['index.html']:.0f} KiB, report.md {kib['report.md']:.0f} "
        f"KiB, largest table {largest} {kib[largest]:.0f} KiB"
    )


def step_seconds(jobs: list[Job]) -> dict[str, float]:
    """CPU seconds per step, summed over its jobs (a job without a CPU record counts its wall seconds)."""
    totals: dict[str, float] = {}
    for job in jobs:
        totals[job.step] = totals.get(job.step, 0.0) + (job.seconds if job.cpu_seconds is None else job.cpu_seconds)
    return totals


def fitted_exponent(papers: list[int], seconds: list[float]) -> float | None:
    """The slope b of log(seconds) = a + b log(papers), least squares; None for fewer than two sizes or a time
    under MIN_FIT_SECONDS."""
    if len(papers) < 2 or min(seconds) < MIN_FIT_SECONDS:
        return None
    xs, ys = [math.log(p) for p in papers], [math.log(s) for s in seconds]
    mean_x, mean_y = sum(xs) / len(xs), sum(ys) / len(ys)
    spread = sum((x - mean_x) ** 2 for x in xs)
    return sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys)) / spread


def scaling_rows(runs: list[SizeRun]) -> list[tuple[str, list[float], float | None]]:
    """(name, seconds at each size, exponent) for every step (CPU), slowest at the largest size first, then the
    sum of them as ``all steps (cpu)`` and the whole run's wall time as ``whole run (wall)``. A step absent at some
    size counts 0 s there."""
    papers = [run.papers for run in runs]
    per_size = [step_seconds(run.jobs) for run in runs]
    steps = sorted({step for seconds in per_size for step in seconds}, key=lambda s: (-per_size[-1].get(s, 0.0), s))
    rows = []
    for step in steps:
        seconds = [sizes.get(step, 0.0) for sizes in per_size]
        rows.append((step, seconds, fitted_exponent(papers, seconds)))
    cpu = [sum(sizes.values()) for sizes in per_size]
    walls = [run.wall_seconds for run in runs]
    return (
        rows
        + [("all steps (cpu)", cpu, fitted_exponent(papers, cpu))]
        + [("whole run (wall)", walls, fitted_exponent(papers, walls))]
    )


def format_table(runs: list[SizeRun]) -> str:
    """The printed table: a step per line, its seconds per paper at each size and its exponent."""
    papers = [run.papers for run in runs]
    header = ["step", *(f"s/paper @{n}" for n in papers), f"s @{papers[-1]}", "exponent"]
    lines = [header]
    for name, seconds, exponent in scaling_rows(runs):
        per_paper = [f"{s / n:.3f}" for s, n in zip(seconds, papers)]
        lines.append([name, *per_paper, f"{seconds[-1]:.1f}", "-" if exponent is None else f"{exponent:.2f}"])
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    text = [
        "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(line, widths))) for line in lines
    ]
    return "\n".join(text)


def largest_job(run: SizeRun) -> Job:
    """The job of ``run`` with the largest peak resident memory."""
    return max(run.jobs, key=lambda job: (job.peak_rss_mib, job.log))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sizes", type=int, nargs="+", default=list(SIZES), help="papers per run (default: %(default)s)"
    )
    parser.add_argument("--smoke", action="store_true", help=f"sizes {SMOKE_SIZES}: the table's shape, for a test")
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--qasper", type=Path, default=QASPER_TRAIN, help="a QASPER JSON file (default: train)")
    parser.add_argument(
        "--scratch", type=Path, required=True, help="a folder for the runs (finished sizes there are read back)"
    )
    parser.add_argument("--out", type=Path, help="also write the measurements here as JSON")
    parser.add_argument(
        "--shared-cache",
        action="store_true",
        help="one embedding cache for all sizes, run smallest first: each size embeds only the papers the "
        "previous lacked (a quicker measurement of the other rules; embed_texts is then not from empty caches)",
    )
    parser.add_argument(
        "--max-seq-length",
        type=int,
        help="MiniLM's input length (the shipped 512 unless given): shorter embeds faster and leaves the other "
        "rules' work the same, but its vectors are not the study's",
    )
    options = parser.parse_args()
    sizes = sorted(SMOKE_SIZES if options.smoke else options.sizes)
    if not options.qasper.exists():
        raise SystemExit(f"QASPER file {options.qasper} does not exist (--qasper)")

    layer_options = {"max_seq_length": options.max_seq_length}
    if options.shared_cache:
        layer_options["cache"] = options.scratch.absolute() / "shared-cache"
    runs = []
    for papers in sizes:
        runs.append(run_size(papers, options.scratch, options.qasper, options.cores, **layer_options))
        print(f"{papers} papers: {runs[-1].wall_seconds:.1f} s, {len(runs[-1].jobs)} jobs", flush=True)
    print(format_table(runs))
    for run in runs:
        print(report_line(run))
    biggest = largest_job(runs[-1])
    print(f"largest peak RSS at {runs[-1].papers} papers: {biggest.peak_rss_mib} MiB ({biggest.step}, {biggest.log})")
    if options.out:
        options.out.write_text(json.dumps([asdict(run) for run in runs], indent=1))


if __name__ == "__main__":
    main()
