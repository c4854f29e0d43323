"""Resume the workflow after a crash in one command (what ``make resume`` runs).

A run killed outright (SIGKILL, the OOM killer, a lost node or terminal) leaves two things behind:
its lock under ``.snakemake/locks``, which Snakemake never recognises as stale, and the "incomplete"
markers of the jobs it was running, whose outputs may be missing, partial, or (when a job outlived
its Snakemake) whole but unproven. This script

1. refuses, naming what it found, while anything of a run in that working directory is alive: a
   Snakemake process, one of its job processes (a killed Snakemake's job can keep running and
   write its output), or a Slurm job submitted from that directory. Removing the lock of a live run
   would let two runs write the same files;
2. otherwise removes the stale lock (``snakemake --unlock``) and
3. runs the workflow with ``--rerun-incomplete``, so every job whose outputs are marked incomplete
   runs again and everything downstream of it is rebuilt.

Usage: ``python workflow/resume.py [snakemake arguments]`` with the same arguments as the run that
crashed (``--configfile``, ``--directory``, ``--profile``, ...). With nothing to resume it is an
ordinary run that finds its outputs up to date.

What it can see: processes of this user on this machine and, when the run uses the Slurm executor
(``--executor slurm``, as ``--profile profiles/slurm`` sets), this user's Slurm jobs; if ``squeue``
cannot say, it refuses. A run on another machine sharing the directory over a network filesystem is
invisible to it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import psutil

SNAKEMAKE = [sys.executable, "-m", "snakemake"]


@dataclass(frozen=True)
class LiveRunPart:
    """Something of a run that is still alive: a local process or a Slurm job."""

    kind: str  # "process" or "slurm job"
    ident: str  # pid or Slurm job id
    description: str  # the process's command line, or where the job was submitted from


def is_run_command(cmdline: list[str]) -> bool:
    """Whether a command line is Snakemake itself (``.../bin/snakemake``, ``python -m snakemake``) or one
    of its script jobs, which run a copy of the script from ``.snakemake/scripts/`` (every rule of this
    workflow is a ``script:`` rule; a ``shell:`` job's command line carries no such mark)."""
    return any(Path(arg).name == "snakemake" or ".snakemake/scripts/" in arg for arg in cmdline)


def is_inside(path: Path, directory: Path) -> bool:
    return path == directory or directory in path.parents


def live_processes(workdir: Path) -> list[LiveRunPart]:
    """This machine's Snakemake and job processes whose working directory is ``workdir`` (or below it,
    as a shadow job's is). Processes we may not inspect (other users') and zombies are skipped."""
    ours = {os.getpid(), *(parent.pid for parent in psutil.Process().parents())}
    found = []
    for process in psutil.process_iter(["pid", "cmdline"]):
        if process.info["pid"] in ours or not process.info["cmdline"]:
            continue
        try:
            cwd = Path(process.cwd()).resolve()
        except (psutil.AccessDenied, psutil.NoSuchProcess, psutil.ZombieProcess, FileNotFoundError):
            continue
        if is_inside(cwd, workdir) and is_run_command(process.info["cmdline"]):
            found.append(LiveRunPart("process", str(process.info["pid"]), " ".join(process.info["cmdline"])))
    return found


def slurm_jobs_in(squeue_output: str, workdir: Path) -> list[LiveRunPart]:
    """Jobs of ``squeue --noheader --format='%i %Z'`` output (job id, working directory) whose working
    directory is ``workdir``: Snakemake's Slurm executor submits every job with ``-D <workdir>``."""
    found = []
    for line in squeue_output.splitlines():
        fields = line.strip().split(None, 1)
        if len(fields) == 2 and Path(fields[1]).resolve() == workdir:
            found.append(LiveRunPart("slurm job", fields[0], f"submitted from {fields[1]}"))
    return found


class CannotList(Exception):
    """The Slurm queue could not be read, so a crashed run's jobs may still be queued or running."""


def live_slurm_jobs(workdir: Path) -> list[LiveRunPart]:
    """This user's queued or running Slurm jobs submitted from ``workdir``."""
    if shutil.which("squeue") is None:
        raise CannotList("squeue is not on the PATH")
    queue = subprocess.run(
        ["squeue", "--me", "--noheader", "--format=%i %Z"], check=False, capture_output=True, text=True, timeout=120
    )
    if queue.returncode != 0:
        raise CannotList((queue.stderr.strip().splitlines() or [f"squeue exited with {queue.returncode}"])[-1])
    return slurm_jobs_in(queue.stdout, workdir)


def main(argv: list[str]) -> int:
    # Snakemake's own parser reads the arguments (abbreviations and profiles resolve as they will in
    # the run), and the unlock runs in this process, so the workflow is imported twice, not three times.
    from snakemake.cli import args_to_api, parse_args
    from snakemake.exceptions import print_exception

    parser, unlock_args = parse_args(["--unlock", *argv])
    workdir = Path(unlock_args.directory or os.getcwd()).resolve()
    alive = live_processes(workdir)
    if unlock_args.executor == "slurm":  # given on the command line or by a profile (profiles/slurm)
        try:
            alive += live_slurm_jobs(workdir)
        except CannotList as reason:
            print(
                f"resume: cannot list Slurm jobs ({reason}), and jobs of the crashed run may still be queued "
                "or running; not touching the lock. Resume where squeue works.",
                file=sys.stderr,
            )
            return 1
    if alive:
        print(f"resume: a run in {workdir} is still alive; not touching its lock:", file=sys.stderr)
        for part in alive:
            print(f"  {part.kind} {part.ident}: {part.description}", file=sys.stderr)
        print(
            "Wait for it to finish, or stop it (kill its process group, scancel its jobs); then resume again.",
            file=sys.stderr,
        )
        return 1
    invoked_from = os.getcwd()
    try:
        unlocked = args_to_api(unlock_args, parser)
    except Exception as error:  # what snakemake's own main() does: print it, exit 1
        print_exception(error)
        return 1
    if not unlocked:
        return 1
    os.chdir(invoked_from)  # relative paths in argv (--configfile my.yaml) mean what they meant to the user
    # Become the run (rather than wait on it) so Ctrl-C reaches Snakemake alone and it stops cleanly.
    os.execv(sys.executable, [*SNAKEMAKE, "--rerun-incomplete", *argv])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
