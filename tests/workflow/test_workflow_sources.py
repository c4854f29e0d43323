"""The corpus step reruns on its source files' content, not on their modification times: a data folder copied,
synced or checked out again with the same bytes reruns nothing, and an edited file reruns the corpus step even
where the tool that wrote it restored the old modification time."""

from __future__ import annotations

import os
import shutil
import time

import pytest
from conftest import REPO, kb_config, run_snakemake
from test_workflow import planned_jobs

DOCUMENTS = "results/kb/corpus/documents.parquet"  # one output of the corpus step: the run's only target
# Snakemake itself compares the checksums of newer inputs up to 1 MB (--max-checksum-file-size) and trusts the
# modification time of larger ones (a QASPER release file is 9-26 MB). With its limit at one byte the knowledge
# base's small files stand for large ones: what is checked is the workflow's own rule.
LARGE = ("--max-checksum-file-size", "1")


@pytest.mark.workflow
def test_a_resynced_corpus_reruns_nothing_and_an_edited_one_reruns_its_corpus_step(tmp_path):
    docs, questions = tmp_path / "kb/docs", tmp_path / "kb/questions.jsonl"
    shutil.copytree(REPO / "data/kb/docs", docs)
    shutil.copy(REPO / "data/kb/questions.jsonl", questions)
    workdir = tmp_path / "run"
    workdir.mkdir()
    config = str(kb_config(workdir, kb=(docs, questions)))
    built = run_snakemake(workdir, "--cores", "1", *LARGE, DOCUMENTS, "--configfile", config)
    assert built.returncode == 0, built.stderr[-4000:]

    # Synced again: every source an hour newer than the corpus step's outputs, byte for byte the same.
    sources = [*sorted(docs.rglob("*.md")), questions]
    later = time.time() + 3600
    for source in sources:
        os.utime(source, (later, later))
    resynced = run_snakemake(workdir, "-n", *LARGE, DOCUMENTS, "--configfile", config)
    assert resynced.returncode == 0, resynced.stderr[-4000:]
    assert "Nothing to be done" in resynced.stdout + resynced.stderr

    # One document edited, its old modification time put back (cp -p, rsync -t): the content reruns the step.
    edited = sources[0]
    stat = edited.stat()
    edited.write_text(edited.read_text() + "\nOne more sentence at the end.\n")
    os.utime(edited, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    plan = run_snakemake(workdir, "-n", *LARGE, DOCUMENTS, "--configfile", config)
    log = plan.stdout + plan.stderr
    assert plan.returncode == 0, log[-4000:]
    assert planned_jobs(log) == {"corpus": 1}, log[-4000:]
    assert "Params have changed since last execution" in log, log[-4000:]
