"""Whether a run's files are what a config makes now (structbench.staleness): real Snakemake runs of a two-rule
workflow, then its dry run under the same config, another value of a param, an input changed after the run, a run
without its records, and a target no rule makes; and the reading of a dry run's log."""

from __future__ import annotations

import os

import pytest
from conftest import local_env

from structbench.staleness import (
    SHOWN_JOBS,
    PendingJob,
    StaleRun,
    UncheckedRun,
    check_current,
    pending_jobs,
    stale_message,
    unrecorded_rules,
)

# Two rules, each of whose params come from config, as the study's rules' do.
SNAKEFILE = """
rule rank:
    input: "data/{name}.txt"
    output: "results/{name}.run"
    params: top_k=config["top_k"]
    shell: "head -n {params.top_k} {input} > {output}"

rule judge:
    input: "results/{name}.run"
    output: "results/{name}.qrels"
    params: rule=config["rule"]
    shell: "echo {params.rule} | cat - {input} > {output}"
"""
TARGETS = ["results/a.run", "results/a.qrels"]


@pytest.fixture
def finished(tmp_path, monkeypatch):
    """A finished run of :data:`SNAKEFILE` in ``tmp_path`` with ``run.yaml`` (top_k 3, rule binary); ``(snakefile,
    config)``."""
    import subprocess
    import sys

    monkeypatch.setenv("PATH", local_env()["PATH"])
    snakefile, config = tmp_path / "Snakefile", tmp_path / "run.yaml"
    snakefile.write_text(SNAKEFILE)
    config.write_text("top_k: 3\nrule: binary\n")
    (tmp_path / "data").mkdir()
    (tmp_path / "data/a.txt").write_text("".join(f"line {n}\n" for n in range(10)))
    command = [sys.executable, "-m", "snakemake", "-s", str(snakefile), "--cores", "1", "--configfile", str(config)]
    made = subprocess.run([*command, "--", *TARGETS], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert made.returncode == 0, made.stderr[-3000:]
    return snakefile, config


def test_the_runs_own_config_passes_and_another_param_value_is_named(tmp_path, finished):
    snakefile, config = finished
    check_current(snakefile, tmp_path, TARGETS, configfiles=[config])
    check_current(snakefile, tmp_path, TARGETS[:1], configfiles=[config])
    other = tmp_path / "other.yaml"
    other.write_text("top_k: 5\n")
    with pytest.raises(StaleRun) as refused:
        check_current(snakefile, tmp_path, TARGETS, configfiles=[config, other])
    said = str(refused.value)
    assert said.startswith(
        "the run's files are not what this config makes: Snakemake would run 2 job(s) of judge, rank"
    )
    assert "  rank results/a.run: Params have changed since last execution: before: 3 now: 5" in said
    assert "  judge results/a.qrels: Input files updated by another job: results/a.run" in said
    # --config entries count as the run's config does
    with pytest.raises(StaleRun, match="judge results/a.qrels: Params have changed since last execution: before: "):
        check_current(snakefile, tmp_path, TARGETS, configfiles=[config], config=["rule=graded"])
    # a target upstream of the changed param is still what the config makes
    check_current(snakefile, tmp_path, TARGETS[:1], configfiles=[config], config=["rule=graded"])


def test_an_input_changed_after_the_run_is_named(tmp_path, finished):
    snakefile, config = finished
    source = tmp_path / "data/a.txt"
    later = os.stat(tmp_path / "results/a.qrels").st_mtime + 10
    os.utime(source, (later, later))
    # newer but the same bytes: Snakemake compares the checksum it recorded of a small input, and reruns nothing
    check_current(snakefile, tmp_path, TARGETS, configfiles=[config])
    source.write_text("line -1\n" + source.read_text())  # a new first line: the run's first three lines change
    os.utime(source, (later + 10, later + 10))
    with pytest.raises(StaleRun, match="rank results/a.run: Updated input files: data/a.txt"):
        check_current(snakefile, tmp_path, TARGETS, configfiles=[config])


def test_files_without_snakemakes_record_and_targets_no_rule_makes_cannot_be_checked(tmp_path, finished):
    snakefile, config = finished
    with pytest.raises(UncheckedRun, match="cannot check the run: Snakemake cannot plan its files under this config"):
        check_current(snakefile, tmp_path, ["results/a.tsv"], configfiles=[config])
    # the files as a copy without the run's .snakemake folder has them
    for record in (tmp_path / ".snakemake/metadata").iterdir():
        record.unlink()
    with pytest.raises(UncheckedRun, match="record of how its files were made is missing for judge, rank, in "):
        check_current(snakefile, tmp_path, TARGETS, configfiles=[config])


# What a dry run of the study printed for three of its jobs (Snakemake 9), trimmed.
DRY_RUN_LOG = """Building DAG of jobs...
Job stats:
job         count
--------  -------
retrieve        2
corpus          1
total           3


[Mon Dec  7 22:16:28 2026]
rule retrieve:
    input: results/kb/vectors/minilm/structural/gold/none.npy, results/kb/corpus/queries.parquet
    output: results/kb/runs/minilm/G2.parquet
    log: logs/retrieve/kb/minilm-G2.log
    jobid: 7
    reason: Params have changed since last execution: Union of exclusive params before and now across all output: before: 100 now: 50 
    wildcards: corpus=kb, embedder=minilm, condition=G2
    resources: tmpdir=/tmp
[Mon Dec  7 22:16:28 2026]
localrule corpus:
    input: data/kb/docs/a.md
    output: results/kb/corpus/documents.parquet, results/kb/corpus/queries.parquet
    jobid: 6
    reason: Missing output files: results/kb/corpus/queries.parquet
[Mon Dec  7 22:16:28 2026]
rule retrieve:
    output: results/kb/runs/minilm/G3.parquet
    reason: Input files updated by another job: results/kb/corpus/queries.parquet
Job stats:
job         count
--------  -------
retrieve        2
total           3

Reasons:
    (check individual jobs above for details)
    params have changed since last execution:
        retrieve
Rules with missing metadata: corpus texts
This was a dry-run (flag -n). The order of jobs does not reflect the order of execution.
"""  # noqa: E501, W291 (Snakemake's own lines)


def test_a_dry_runs_jobs_are_read_with_their_rule_first_output_and_reason():
    assert pending_jobs(DRY_RUN_LOG) == [
        PendingJob(
            "retrieve",
            "results/kb/runs/minilm/G2.parquet",
            "Params have changed since last execution: before: 100 now: 50",
        ),
        PendingJob(
            "corpus", "results/kb/corpus/documents.parquet", "Missing output files: results/kb/corpus/queries.parquet"
        ),
        PendingJob(
            "retrieve",
            "results/kb/runs/minilm/G3.parquet",
            "Input files updated by another job: results/kb/corpus/queries.parquet",
        ),
    ]
    assert (
        pending_jobs("Building DAG of jobs...\nNothing to be done (all requested files are present and up to date).\n")
        == []
    )
    assert unrecorded_rules(DRY_RUN_LOG) == {"missing": ["corpus", "texts"]}


def test_a_refusal_lists_the_first_jobs_and_counts_the_rest_by_rule():
    jobs = [PendingJob("embed", f"v{n}.npy", "Missing output files") for n in range(SHOWN_JOBS)]
    jobs += [PendingJob("retrieve", f"r{n}.parquet", "Updated input files") for n in range(3)]
    jobs += [PendingJob("embed", "late.npy", "Missing output files")]
    said = stale_message(jobs).splitlines()
    assert said[0].startswith(f"the run's files are not what this config makes: Snakemake would run {SHOWN_JOBS + 4} ")
    assert "job(s) of embed, retrieve to make them" in said[0]
    assert said[1:-1] == [f"  embed v{n}.npy: Missing output files" for n in range(SHOWN_JOBS)]
    assert said[-1] == "  and 1 more embed, 3 more retrieve"
