"""Resume after a crash (`make resume`, workflow/resume.py).

The workflow test: the default workflow's gold arm with F0 (conftest.gold_f0), started with `make run`, is
killed with SIGKILL to its whole
process group while a job of one rule runs (corpus, embedding, scoring); `make resume` with the same
ARGS then finishes it, and every score, contrast and vector file is byte-identical to an uninterrupted
run's. The unit tests: what the safety check counts as a live run."""

import base64
import contextlib
import importlib.util
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path, PurePath

import psutil
import pytest
from conftest import REPO, gold_f0, local_env

VENV = Path(sys.executable).parent.parent
# `-o STAMP`: use the environment running these tests as it is, never reinstall into it.
MAKE = ["make", "-C", str(REPO), "-o", str(VENV / ".structbench-installed"), f"VENV={VENV}", "CORES=2"]
RUN_TIMEOUT_S = 1200
POLL_S = 0.02

# workflow/resume.py is a script, not a package module: load it by path.
_spec = importlib.util.spec_from_file_location("structbench_resume", REPO / "workflow" / "resume.py")
resume = sys.modules["structbench_resume"] = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(resume)


# ---- the safety check, on real processes --------------------------------------------------------


def test_run_commands_are_snakemake_and_its_script_jobs():
    assert resume.is_run_command(["/venv/bin/python", "/venv/bin/snakemake", "--cores", "2"])
    assert resume.is_run_command(["/venv/bin/python", "-m", "snakemake", "--rerun-incomplete"])
    assert resume.is_run_command(["/venv/bin/python", "/w/.snakemake/scripts/tmpk2j.embed_texts.py"])
    assert resume.is_run_command(["bash", "-c", "set -euo pipefail; python .snakemake/scripts/tmpa.score.py"])
    assert not resume.is_run_command(["vim", "Snakefile"])
    assert not resume.is_run_command(["less", ".snakemake/log/2026.snakemake.log"])
    assert not resume.is_run_command(["/venv/bin/python", "workflow/resume.py", "--cores", "2"])


def sleeper(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("import time\ntime.sleep(120)\n")
    return path


@pytest.fixture
def spawn():
    """Start a process in a directory; every one is killed at the end of the test."""
    started = []

    def start(args: list[str], cwd: Path) -> subprocess.Popen:
        started.append(subprocess.Popen(args, cwd=cwd))
        return started[-1]

    yield start
    for process in started:
        process.kill()
        process.wait()


def test_live_processes_finds_snakemake_and_orphaned_jobs_in_that_directory_only(tmp_path, spawn):
    workdir, elsewhere = tmp_path / "run", tmp_path / "other"
    job = sleeper(workdir / ".snakemake/scripts/tmpq1w2.embed_texts.py")
    entry = sleeper(tmp_path / "venv/bin/snakemake")  # the shape of a console-script snakemake
    other_job = sleeper(elsewhere / ".snakemake/scripts/tmpz9x8.score.py")
    main = spawn([sys.executable, str(entry), "--cores", "2"], workdir)
    orphan = spawn([sys.executable, str(job)], workdir)
    spawn([sys.executable, str(other_job)], elsewhere)  # a run in another directory
    spawn(["sleep", "120"], workdir)  # the user's own process in the directory

    found = resume.live_processes(workdir.resolve())
    assert sorted(int(part.ident) for part in found) == sorted([main.pid, orphan.pid])
    assert {part.kind for part in found} == {"process"}
    assert any(str(job) in part.description for part in found)

    for process in (main, orphan):
        process.kill()
        process.wait()
    assert resume.live_processes(workdir.resolve()) == []


def test_slurm_jobs_are_matched_by_the_directory_they_were_submitted_from(tmp_path):
    run = tmp_path / "my run"
    queue = f"101 {run}\n102 {tmp_path / 'other'}\n103 {run}/sub\n  104 {run}/\n\n"
    found = resume.slurm_jobs_in(queue, run.resolve())
    assert [part.ident for part in found] == ["101", "104"]
    assert found[0] == resume.LiveRunPart("slurm job", "101", f"submitted from {run}")


@pytest.fixture
def no_run(monkeypatch):
    """Should a refusal test wrongly get past the check, fail instead of becoming a Snakemake run."""

    def forbidden(*args):
        pytest.fail("resume went past its check to unlock or run")  # a BaseException: no except stops it

    monkeypatch.setattr("snakemake.cli.args_to_api", forbidden)  # the unlock
    monkeypatch.setattr(resume.os, "execv", forbidden)  # the run


def test_resume_refuses_and_keeps_the_lock_while_a_run_lives(tmp_path, spawn, capsys, no_run):
    lock = tmp_path / ".snakemake/locks/0.output.lock"
    lock.parent.mkdir(parents=True)
    lock.write_text("results/kb/corpus/documents.parquet\n")
    job = sleeper(tmp_path / ".snakemake/scripts/tmpab12.build_corpus.py")
    orphan = spawn([sys.executable, str(job)], tmp_path)

    status = resume.main(["--snakefile", str(REPO / "Snakefile"), "--directory", str(tmp_path), "--cores", "1"])
    assert status == 1
    assert f"process {orphan.pid}:" in capsys.readouterr().err
    assert lock.read_text() == "results/kb/corpus/documents.parquet\n"


def fake_squeue(bin_dir: Path, body: str) -> Path:
    """A ``squeue`` on the PATH that records its arguments and runs ``body`` (sh)."""
    bin_dir.mkdir()
    squeue = bin_dir / "squeue"
    squeue.write_text(f'#!/bin/sh\necho "$@" > "{bin_dir}/args"\n{body}\n')
    squeue.chmod(0o755)
    return bin_dir


def resume_on_slurm(workdir: Path) -> int:
    return resume.main(
        ["--snakefile", str(REPO / "Snakefile"), "--directory", str(workdir), "--executor", "slurm", "--cores", "1"]
    )


def test_resume_on_slurm_refuses_while_the_crashed_runs_jobs_are_queued(tmp_path, monkeypatch, capsys, no_run):
    workdir = tmp_path / "run"
    bin_dir = fake_squeue(tmp_path / "bin", f"printf '4242 {workdir}\\n17 /elsewhere\\n'")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    assert resume_on_slurm(workdir) == 1
    err = capsys.readouterr().err
    assert f"slurm job 4242: submitted from {workdir}" in err and "slurm job 17" not in err
    assert (bin_dir / "args").read_text().split() == ["--me", "--noheader", "--format=%i", "%Z"]


def test_resume_on_slurm_refuses_when_the_queue_cannot_be_read(tmp_path, monkeypatch, capsys, no_run):
    bin_dir = fake_squeue(
        tmp_path / "bin", "echo 'slurm_load_jobs error: Unable to contact slurm controller' >&2; exit 1"
    )
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    assert resume_on_slurm(tmp_path / "run") == 1
    assert (
        "cannot list Slurm jobs (slurm_load_jobs error: Unable to contact slurm controller)" in capsys.readouterr().err
    )


# ---- the workflow killed and resumed --------------------------------------------------------------


def make(target: str, workdir: Path) -> list[str]:
    """The command a user types, with the workdir and config the run lives in as its ARGS."""
    config = workdir / "config.yaml"
    return [*MAKE, target, f"ARGS=--directory {workdir} --configfile {config}"]


def make_resume(workdir: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        make("resume", workdir), check=False, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, env=local_env()
    )


def measured_files(workdir: Path) -> dict[str, bytes]:
    """Relative path -> bytes of every vector, run (ranking), score and contrast file of a run."""
    results = workdir / "results"
    paths = [
        *results.glob("*/scores/**/*.parquet"),
        *results.glob("contrasts/**/*.parquet"),
        *results.glob("*/vectors/**/*.npy"),
        *results.glob("*/runs/**/*.parquet"),
    ]
    return {str(path.relative_to(workdir)): path.read_bytes() for path in paths}


def recorded_outputs(workdir: Path, record: str) -> set[str]:
    """Outputs with a Snakemake record of one kind: ``incomplete`` (its job started and has not finished)
    or ``metadata`` (its job finished). Snakemake's file persistence names each record by the urlsafe
    base64 of the output path (split into '@'-prefixed folders when long)."""
    root = workdir / ".snakemake" / record
    paths = set()
    for entry in root.rglob("*") if root.exists() else ():
        if entry.is_file() and entry.name != "migration_underway":
            encoded = "".join(part.removeprefix("@") for part in entry.relative_to(root).parts)
            paths.add(base64.urlsafe_b64decode(encoded).decode())
    return paths


def incomplete_outputs(workdir: Path) -> set[str]:
    return recorded_outputs(workdir, "incomplete")


def lock_files(workdir: Path) -> list[Path]:
    return sorted((workdir / ".snakemake" / "locks").glob("*.lock"))


def job_processes(root: psutil.Process, script: str) -> list[psutil.Process]:
    """Live descendants of ``root`` running the workflow script ``script`` (Snakemake runs a script job
    from a copy named ``.snakemake/scripts/tmp<random>.<script>``)."""
    found = []
    for process in root.children(recursive=True):
        try:
            cmdline = process.cmdline()
        except psutil.Error:
            continue
        if any(".snakemake/scripts/" in arg and arg.rstrip("'\"").endswith(f".{script}") for arg in cmdline):
            found.append(process)
    return found


def snakemake_process(root: psutil.Process) -> psutil.Process:
    (main,) = [p for p in root.children(recursive=True) if any(Path(arg).name == "snakemake" for arg in p.cmdline())]
    return main


def is_dead(process: psutil.Process) -> bool:
    """Gone, or a zombie (dead, not yet reaped: its parent may be stopped or not ours)."""
    try:
        return process.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def wait_for_group_exit(pgid: int, timeout_s: float = 60) -> None:
    """Until no live (non-zombie) process is left in the process group."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        alive = []
        for process in psutil.process_iter():
            try:
                if os.getpgid(process.pid) == pgid and not is_dead(process):
                    alive.append(process.pid)
            except ProcessLookupError:
                continue
        if not alive:
            return
        time.sleep(POLL_S)
    raise AssertionError(f"processes {alive} of group {pgid} outlived SIGKILL")


@dataclass(frozen=True)
class KillPoint:
    """When to crash the run: a job of ``script`` is alive and Snakemake has marked an output matching
    ``outputs`` incomplete (it counts that job as running). Optionally also: at least
    ``finished_before`` outputs matching ``outputs`` are finished (so the cache already holds their
    vectors), and a job log under ``busy_logs`` shows a step under way (written to, no "done in" yet)."""

    script: str
    outputs: str
    finished_before: int = 0
    busy_logs: str | None = None
    # The corpus and scoring points start from a copy of the reference's embedding cache, so the run
    # reaches them in seconds; the embedding point starts from an empty cache of its own.
    warm_cache: bool = False

    def marked(self, workdir: Path) -> list[str]:
        return sorted(p for p in incomplete_outputs(workdir) if PurePath(p).match(self.outputs))

    def finished(self, workdir: Path) -> list[str]:
        done = recorded_outputs(workdir, "metadata") - incomplete_outputs(workdir)
        return sorted(p for p in done if PurePath(p).match(self.outputs))

    def step_under_way(self, workdir: Path) -> bool:
        logs = [path.read_text() for path in workdir.glob(self.busy_logs)]
        return any(text and "done in" not in text for text in logs)

    def reached(self, workdir: Path, root: psutil.Process) -> bool:
        return (
            len(self.finished(workdir)) >= self.finished_before
            and (self.busy_logs is None or self.step_under_way(workdir))
            and bool(self.marked(workdir))
            and bool(job_processes(root, self.script))
        )


KILL_POINTS = {
    "corpus": KillPoint("build_corpus.py", "results/kb/corpus/*.parquet", warm_cache=True),
    # A second text set's embedding, mid-encoding: the cache already holds the first set's vectors.
    "embedding": KillPoint(
        "embed_texts.py", "results/kb/vectors/minilm/*/*/*.npy", finished_before=1, busy_logs="logs/embed/**/*.log"
    ),
    "scoring": KillPoint("score.py", "results/kb/scores/minilm/*/*.parquet", warm_cache=True),
}


def start_run(workdir: Path) -> subprocess.Popen:
    """`make run` in a process group of its own, as a terminal session would hold it."""
    with (workdir / "run.out").open("w") as log:
        return subprocess.Popen(
            make("run", workdir), stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env=local_env()
        )


def wait_for(point: KillPoint, workdir: Path, run: subprocess.Popen) -> psutil.Process:
    root = psutil.Process(run.pid)
    deadline = time.monotonic() + RUN_TIMEOUT_S
    while not point.reached(workdir, root):
        if run.poll() is not None or time.monotonic() > deadline:
            tail = (workdir / "run.out").read_text()[-4000:]
            raise AssertionError(f"the run never reached a running {point.script} job:\n{tail}")
        time.sleep(POLL_S)
    return root


@pytest.fixture(scope="module")
def reference(gold_run_again):
    """One uninterrupted run with a fresh cache: the bytes every resumed run must reproduce (conftest's
    session run of the gold arm with F0, which test_workflow reads too; the resumed runs use its config)."""
    workdir = gold_run_again.workdir
    files = measured_files(workdir)
    assert any("/scores/minilm/" in p for p in files) and any(p.startswith("results/contrasts/") for p in files)
    assert any("/vectors/minilm/" in p for p in files)
    return workdir, files


def check_resume_refuses_while_alive(workdir: Path, run: subprocess.Popen, root: psutil.Process) -> None:
    """`make resume` must not unlock a run that still lives, whether Snakemake itself is alive or only a
    job it left behind (killing Snakemake alone does not kill its running job)."""
    main = snakemake_process(root)
    jobs = job_processes(root, "embed_texts.py")
    os.killpg(run.pid, signal.SIGSTOP)  # freeze the run so every process stays alive through the checks

    refused = make_resume(workdir)
    assert refused.returncode != 0
    assert f"process {main.pid}:" in refused.stderr, refused.stderr[-2000:]
    assert lock_files(workdir), "resume removed the lock of a live run"

    main.kill()
    deadline = time.monotonic() + 60
    while not is_dead(main) and time.monotonic() < deadline:
        time.sleep(POLL_S)
    refused = make_resume(workdir)
    assert refused.returncode != 0
    assert f"process {main.pid}:" not in refused.stderr
    assert any(f"process {job.pid}:" in refused.stderr for job in jobs), refused.stderr[-2000:]
    assert lock_files(workdir)


@pytest.mark.workflow
@pytest.mark.parametrize("point_name", list(KILL_POINTS))
def test_sigkill_then_make_resume_gives_identical_files(tmp_path, reference, point_name):
    point = KILL_POINTS[point_name]
    reference_dir, reference_files = reference
    gold_f0(tmp_path)
    if point.warm_cache:
        shutil.copytree(reference_dir / "cache", tmp_path / "cache")

    run = start_run(tmp_path)
    try:
        root = wait_for(point, tmp_path, run)
        if point_name == "embedding":
            check_resume_refuses_while_alive(tmp_path, run, root)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(run.pid, signal.SIGKILL)  # the crash (and, should a check above fail, the clean-up)
        run.wait(timeout=60)
        wait_for_group_exit(run.pid)

    # The crash left what a resume has to deal with: a stale lock, and the job in flight marked incomplete.
    assert lock_files(tmp_path)
    assert point.marked(tmp_path)

    resumed = make_resume(tmp_path)
    assert resumed.returncode == 0, resumed.stderr[-4000:]
    assert not lock_files(tmp_path) and not incomplete_outputs(tmp_path)

    resumed_files = measured_files(tmp_path)
    assert sorted(resumed_files) == sorted(reference_files)
    differing = [path for path in reference_files if resumed_files[path] != reference_files[path]]
    assert not differing, f"after resuming from a kill at {point_name}, these differ from the reference: {differing}"
