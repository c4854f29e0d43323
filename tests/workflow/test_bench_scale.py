"""benchmarks/bench_scale.py: the job records it reads are the ones step_log writes, its exponent is the log-log
slope, and its smoke mode runs the gold arm at two sizes from empty caches and prints one row per step."""

import importlib.util
import subprocess
import sys
import time

import pytest
from conftest import REPO, SHARED_DATA, local_env

from structbench.logs import peak_rss_mib, step_log

spec = importlib.util.spec_from_file_location("bench_scale", REPO / "benchmarks/bench_scale.py")
bench_scale = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = bench_scale  # its dataclasses look their module up there
spec.loader.exec_module(bench_scale)
Job, SizeRun = bench_scale.Job, bench_scale.SizeRun


def test_a_job_record_is_read_from_the_closing_line_step_log_writes(tmp_path):
    peak_before = peak_rss_mib()
    wall, cpu = time.perf_counter(), time.process_time()
    with step_log(tmp_path / "logs/embed/qasper/minilm-x.log", "embed_texts"):
        kept = b"x" * ((peak_before + 64) << 20)  # written, so resident: a peak above any before it
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    with step_log(tmp_path / "logs/score/unfinished.log", "score"):
        pass
    (tmp_path / "logs/score/unfinished.log").write_text("a job still running\n")
    [job] = bench_scale.finished_jobs(tmp_path / "logs")
    # the closing line's times, to its 0.1 s, are the step's own (bounded by what the test measured around it: the
    # bytes are the worker's earlier peak and more, so their time depends on that worker, never a fixed bound)
    assert job.step == "embed_texts" and job.log == "embed/qasper/minilm-x.log" and 0 <= job.seconds <= wall + 0.1
    assert 0 < job.cpu_seconds <= cpu + 0.1  # writing the bytes takes CPU
    assert job.peak_rss_mib >= peak_before + 64 and len(kept) > 0


@pytest.mark.parametrize("power", [1.0, 1.5, 2.0])
def test_the_exponent_is_the_slope_of_log_seconds_on_log_papers(power):
    papers = [25, 50, 100, 200]
    assert bench_scale.fitted_exponent(papers, [0.3 * p**power for p in papers]) == pytest.approx(power)


def test_no_exponent_for_one_size_or_a_step_under_a_second():
    assert bench_scale.fitted_exponent([10], [50.0]) is None
    assert bench_scale.fitted_exponent([10, 20], [0.4, 2.0]) is None
    assert bench_scale.fitted_exponent([10, 20], [1.0, 4.0]) == pytest.approx(2.0)


def test_the_table_has_a_row_per_step_slowest_first_then_the_whole_run():
    def run(papers, embed, score, wall):
        # CPU seconds are summed; a job logged before CPU was recorded counts its wall seconds
        jobs = [Job("embed_texts", 99.0, embed / 2, 800, "a.log"), Job("embed_texts", embed / 2, None, 810, "b.log")]
        return SizeRun(papers, wall, jobs + [Job("score", 99.0, score, 230, "c.log")], {})

    runs = [run(10, 20.0, 2.0, 40.0), run(20, 40.0, 8.0, 60.0)]
    lines = bench_scale.format_table(runs).splitlines()
    assert lines[0].split() == ["step", "s/paper", "@10", "s/paper", "@20", "s", "@20", "exponent"]
    assert lines[1].split() == ["embed_texts", "2.000", "2.000", "40.0", "1.00"]
    assert lines[2].split() == ["score", "0.200", "0.400", "8.0", "2.00"]
    assert lines[3].split() == ["all", "steps", "(cpu)", "2.200", "2.400", "48.0", "1.13"]
    assert lines[4].split() == ["whole", "run", "(wall)", "4.000", "3.000", "60.0", "0.58"]
    assert bench_scale.largest_job(runs[-1]).log == "b.log"


@pytest.mark.workflow
@pytest.mark.model
def test_the_smoke_mode_prints_every_step_at_both_sizes(tmp_path):
    qasper = SHARED_DATA / "qasper/qasper-train-v0.3.rebuilt.json"
    if not qasper.exists():
        pytest.skip(f"needs the QASPER train file at {qasper}")
    # 32-token inputs: the table's shape is what is checked here, not MiniLM's time on whole chunks
    scratch = str(tmp_path / "scale")
    command = [sys.executable, "benchmarks/bench_scale.py", "--smoke", "--max-seq-length", "32", "--scratch", scratch]
    result = subprocess.run(command, cwd=REPO, env=local_env(), capture_output=True, text=True, timeout=1800)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    lines = result.stdout.splitlines()
    assert lines[0].startswith("3 papers: ") and lines[1].startswith("6 papers: ")
    header = lines.index(next(line for line in lines if line.startswith("step ")))
    whole = lines.index(next(line for line in lines if line.startswith("whole run (wall) ")))
    rows = {line.split()[0]: line.split()[1:] for line in lines[header + 1 : whole - 1]}
    assert lines[whole - 1].startswith("all steps (cpu) ")
    for step in ("corpus", "structural_chunks", "fixed_chunks", "texts", "embed_texts", "retrieve", "bm25", "score"):
        assert len(rows[step]) == 4, rows[step]  # two sizes, the largest's seconds, an exponent or "-"
    assert [line.split(":")[0] for line in lines[whole + 1 :]] == [
        "report at 3 papers",
        "report at 6 papers",
        "largest peak RSS at 6 papers",
    ]
    assert "index.html" in lines[whole + 1] and "largest table tables/" in lines[whole + 1]
    assert (tmp_path / "scale/papers-3/results/qasper/scores").is_dir()


def test_the_report_line_names_the_page_and_the_largest_table():
    files = {"index.html": 47 * 1024, "report.md": 32 * 1024, "tables/a.csv": 2048, "tables/per_query.csv": 9216}
    line = bench_scale.report_line(SizeRun(6, 10.0, [], files))
    assert line == "report at 6 papers: index.html 47 KiB, report.md 32 KiB, largest table tables/per_query.csv 9 KiB"


def test_the_whole_run_time_is_snakemakes_elapsed_line():
    assert bench_scale.elapsed_seconds("...\n34 of 34 steps (100%) done\nElapsed time: 0:04:55.5\n") == 295.5
    assert bench_scale.elapsed_seconds("Elapsed time: 1 day, 2:00:01.0\n") == 26 * 3600 + 1
    with pytest.raises(ValueError, match="did not finish"):
        bench_scale.elapsed_seconds("Error in rule score:\n")
