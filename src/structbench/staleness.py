"""Whether a finished run's files are what a config makes now, in Snakemake's own judgment: its dry run, asked for
exactly those files.

A reader of a run's results (``structbench export``) takes the config it is given at its word: the study says which
file holds each condition's run, not which config made the file there. A run made with ``retrieval.top_k: 100``
read under a config that says 50, or after a condition was redefined, is the old files under the new config's name.
The workflow already knows when that happens. Every tunable value, and a hash of the library code each rule's
script reaches (``structbench.provenance``), passes through a rule's ``params``; Snakemake stores them, with the
set of input files, the code and the software environment, beside each output in ``.snakemake/metadata``, and its
dry run compares them, and the files' presence and modification times, with what the config asks now, for the
named targets and every file they are made from. So this module asks Snakemake rather than re-deriving each rule's
params from the config in Python, which would be a second copy of ``rules/*.smk`` to drift from the first: the
answer is exact by construction (the jobs a plain ``snakemake`` would run for these files, no more), and it costs
one planning pass of the workflow, no job (docs/benchmarks.md has the time).

Refused, each with the rule, an output and Snakemake's reason:

- :class:`StaleRun`: a job the dry run would run (an output missing or incomplete, or older than an input, or made
  with other params, code, input files or software environment);
- :class:`UncheckedRun`: files Snakemake holds no record of (a run copied without its ``.snakemake`` folder, or a
  check run outside the run's working directory: nothing says which config made them), a plan Snakemake cannot
  make, or no Snakemake to ask.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

DRY_RUN_TIMEOUT_S = 600
SHOWN_JOBS = 8  # a refusal lists this many pending jobs, then counts the rest by rule
JOB_HEADER = re.compile(r"^(?:local)?(?:rule|checkpoint) (?P<rule>\S+):$")
JOB_FIELD = re.compile(r"^\s+(?P<key>\w+): (?P<value>.*)$")
NOTHING_TO_DO = "Nothing to be done"
UNRECORDED = re.compile(r"^Rules with (?P<kind>missing|outdated) metadata: (?P<rules>.+)$", re.M)
PARAMS_PREAMBLE = "Union of exclusive params before and now across all output: "


class StaleRun(ValueError):
    """A run's files are not what the config makes now: Snakemake would rerun some of the jobs that made them."""


class UncheckedRun(ValueError):
    """Whether a run's files are what the config makes now cannot be told: no record of how they were made, no
    plan, or no Snakemake to ask."""


@dataclass(frozen=True)
class PendingJob:
    """A job a dry run would run: its rule, its (first) output and Snakemake's reason."""

    rule: str
    output: str
    reason: str


def dry_run_command(
    snakefile: str | Path, configfiles: Sequence[str | Path], config: Sequence[str], targets: Sequence[str]
) -> list[str]:
    """``snakemake --dry-run`` of the workflow ``snakefile`` for ``targets``, with the run's ``--configfile`` files
    and ``--config`` entries (``key=value``), in this Python's environment. Run it in the run's working directory."""
    command = [sys.executable, "-m", "snakemake", "--snakefile", str(snakefile), "--dry-run"]
    if configfiles:
        command += ["--configfile", *map(str, configfiles)]
    if config:
        command += ["--config", *config]
    return [*command, "--", *targets]


def pending_jobs(log: str) -> list[PendingJob]:
    """The jobs a dry run's log lists (``rule NAME:`` then indented ``key: value`` lines), in its order."""
    jobs, rule, fields = [], None, {}
    for line in [*log.splitlines(), ""]:
        header, field = JOB_HEADER.match(line), JOB_FIELD.match(line)
        if rule is not None and field:
            fields[field["key"]] = field["value"]
            continue
        if rule is not None:
            output = fields.get("output", "-").split(", ")[0]
            jobs.append(PendingJob(rule, output, fields.get("reason", "-").replace(PARAMS_PREAMBLE, "").strip()))
            rule, fields = None, {}
        if header:
            rule = header["rule"]
    return jobs


def unrecorded_rules(log: str) -> dict[str, list[str]]:
    """``{"missing" | "outdated": rules}``: the rules of jobs whose outputs Snakemake holds no (or no current) record
    of, so that params, code and input changes cannot rerun them."""
    return {found["kind"]: found["rules"].split() for found in UNRECORDED.finditer(log)}


def check_current(
    snakefile: str | Path,
    workdir: str | Path,
    targets: Sequence[str],
    *,
    configfiles: Sequence[str | Path] = (),
    config: Sequence[str] = (),
) -> None:
    """Error unless Snakemake, planning ``targets`` with the run's config in its working directory ``workdir``,
    would run nothing and holds a record of how each file was made (module docstring): a :class:`StaleRun` listing
    the pending jobs, an :class:`UncheckedRun` naming what it could not tell."""
    if importlib.util.find_spec("snakemake") is None:
        raise UncheckedRun("cannot check the run: Snakemake is not installed here (structbench's workflow extra)")
    configfiles = [Path(file).resolve() for file in configfiles]
    command = dry_run_command(snakefile, configfiles, config, targets)
    try:
        planned = subprocess.run(
            command, cwd=workdir, capture_output=True, text=True, timeout=DRY_RUN_TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired:
        raise UncheckedRun(f"cannot check the run: Snakemake's dry run took over {DRY_RUN_TIMEOUT_S} s") from None
    log = planned.stdout + planned.stderr
    if planned.returncode != 0:
        tail = [line for line in log.splitlines() if line.strip()][-6:]
        raise UncheckedRun(
            "cannot check the run: Snakemake cannot plan its files under this config:\n  " + "\n  ".join(tail)
        )
    jobs = pending_jobs(log)
    if jobs:
        raise StaleRun(stale_message(jobs))
    if NOTHING_TO_DO not in log:
        raise UncheckedRun(f"cannot check the run: no plan found in Snakemake's dry run ({' '.join(command)})")
    unrecorded = unrecorded_rules(log)
    if unrecorded:
        kinds = "; ".join(f"{kind} for {', '.join(rules)}" for kind, rules in sorted(unrecorded.items()))
        records = Path(workdir).resolve() / ".snakemake"
        raise UncheckedRun(
            f"cannot check the run: Snakemake's record of how its files were made is {kinds}, in {records} "
            "(check in the folder the run ran in, its snakemake -d; a run copied without its .snakemake folder "
            "cannot be checked)"
        )


def stale_message(jobs: list[PendingJob]) -> str:
    """What a :class:`StaleRun` says: how many jobs Snakemake would run, the first :data:`SHOWN_JOBS` with their
    output and reason, the rest counted by rule."""
    rules = sorted({job.rule for job in jobs})
    lines = [f"  {job.rule} {job.output}: {job.reason}" for job in jobs[:SHOWN_JOBS]]
    if len(jobs) > SHOWN_JOBS:
        rest: dict[str, int] = {}
        for job in jobs[SHOWN_JOBS:]:
            rest[job.rule] = rest.get(job.rule, 0) + 1
        lines.append("  and " + ", ".join(f"{count} more {rule}" for rule, count in sorted(rest.items())))
    return (
        f"the run's files are not what this config makes: Snakemake would run {len(jobs)} job(s) of "
        f"{', '.join(rules)} to make them (run the workflow with this config first, or name the config the run was "
        "made with):\n" + "\n".join(lines)
    )
