"""Every command in README.md is run by a test, exactly as written.

The README's fenced ``bash`` blocks are parsed into commands; :data:`HOW` says how each one is
exercised. A command the README gains without an entry here fails
:func:`test_every_readme_command_is_accounted_for`, so the README cannot drift from what runs.
Commands run in a copy of the repository (tracked files, the project's ``.venv`` linked in), in
README order, so ``make run`` really runs the default workflow end to end there.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest
from conftest import NO_SLURM_BIN, REPO
from trec_testing import assert_tools_read_the_study

from structbench.export import Export, ExportedRun, run_study

README = REPO / "README.md"

# How each README command is exercised. "run": exactly as written, in the repository copy.
# "dry-run": exactly as written plus ``-n`` (the full run is hours on this CPU, or needs a cluster);
# what it would run is covered by the named test. "suite": the command that runs this test suite.
HOW = {
    "make run": "run",
    "make test": "suite",
    ".venv/bin/snakemake -n": "run",
    ".venv/bin/snakemake --cores 2 --configfile my.yaml": "run",
    ".venv/bin/snakemake --report report.html": "run",
    "make resume": "run",
    ".venv/bin/structbench export --out trec": "run",  # after `make run`: the default run's TREC files
    ".venv/bin/structbench show kb-001 G3 --against G2": "run",  # after `make run`: one question's two rankings
    # test_config: the preset selects no LLM condition and each promised arm; its plan here (53 jobs on the KB)
    ".venv/bin/snakemake --cores 2 --configfile config/own_corpus.yaml"
    " --config 'corpora={mydocs: {path: data/kb/docs, questions: data/kb/questions.jsonl}}'": "dry-run",
    # test_workflow: the paper grid's plan; test_slurm: the profile's routing and bundles on a real Slurm cluster
    "snakemake --profile profiles/slurm --configfile config/paper.yaml --config cache=/shared/lab/structbench-cache": (
        "dry-run"
    ),
    ".venv/bin/structbench chunk guide.md --json": "run",
}
PYTHON_SNIPPET = "python"  # the README's python block runs as a script in the copy


def readme_blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README.read_text(), flags=re.S)


def readme_commands() -> list[str]:
    """Each line of each ``bash`` block, trailing comments removed (``make run    # installs ...``)."""
    commands = []
    for block in readme_blocks("bash"):
        for line in block.splitlines():
            command = re.sub(r"\s+#\s.*$", "", line).strip()
            if command and not command.startswith("#"):
                commands.append(command)
    return commands


@pytest.fixture(scope="module")
def repo_copy(tmp_path_factory):
    """The tracked files of the repository with the project's .venv linked in (nothing installed again)."""
    copy = tmp_path_factory.mktemp("readme") / "structbench"
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, text=True, check=True)
    for name in filter(None, tracked.stdout.split("\0")):
        target = copy / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, target)
    (copy / ".venv").symlink_to(REPO / ".venv")
    # `make run` uses the environment running these tests as it is, never reinstalls into it: the copy's
    # pyproject.toml (the install stamp's prerequisite) is dated to the epoch. GNU make reads no -o from
    # MAKEFLAGS, and a checkout newer than the shared venv's stamp would otherwise rebuild .venv.
    os.utime(copy / "pyproject.toml", (0, 0))
    if (REPO.parent / "shared").exists():
        (copy.parent / "shared").symlink_to(REPO.parent / "shared")
        release_tarballs(REPO.parent / "shared/data/qasper", copy / "data/qasper")
    return copy


def release_tarballs(shared: Path, folder: Path) -> None:
    """QASPER's official release tarballs where config/paper.yaml reads them (data/qasper/), built from the
    rebuilt train and dev files of ../shared/data in the release's layout. The test split is not there: the
    dev file stands in for it, which the README's dry run allows (the plan is per corpus, not per paper)."""
    folder.mkdir(parents=True, exist_ok=True)
    members = {
        "qasper-train-dev-v0.3.tgz": {"qasper-train-v0.3.json": "train", "qasper-dev-v0.3.json": "dev"},
        "qasper-test-and-evaluator-v0.3.tgz": {"qasper-test-v0.3.json": "dev"},
    }
    for tarball, files in members.items():
        with tarfile.open(folder / tarball, "w:gz", compresslevel=1) as archive:
            for name, split in files.items():
                archive.add(shared / f"qasper-{split}-v0.3.rebuilt.json", arcname=name)


def run(command: str, cwd: Path, timeout: int = 1800) -> subprocess.CompletedProcess:
    # A cluster user has snakemake on PATH (the README's bare `snakemake` lines): the venv's bin comes first,
    # then conftest's no-Slurm folder (every command here runs locally or plans only; where CI has installed
    # Slurm's client for tests/workflow/test_slurm.py, each Snakemake start-up would otherwise wait on `scontrol`).
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "PATH": os.pathsep.join([str(cwd / ".venv/bin"), str(NO_SLURM_BIN), os.environ.get("PATH", "")]),
    }
    return subprocess.run(
        command, shell=True, executable="/bin/bash", cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env
    )


GUIDE = (
    "# Guide\n\nIntro text of the guide.\n\n## Setup\n\nInstall it first. Then run it.\n\n## Use\n\nCall the tool.\n"
)


def assert_cold_default_run(workdir):
    """The default run's LLM steps and embeddings, on empty caches: every step computed something."""
    usages = [json.loads(p.read_text()) for p in (workdir / "results").rglob("shards/*.usage.json")]
    embeds = [json.loads(p.read_text()) for p in (workdir / "results").rglob("*.embed.json")]
    # the model-free inducers' embeddings (paragraphs and title candidates) report like an embedding step
    for inducer in ("tiling", "learned"):
        embeds.append(json.loads((workdir / f"results/kb/structure/induced-{inducer}/usage.json").read_text()))
    # 2 induction + 2 context shards; nineteen text sets (twelve, the learned arm's three, F0's and the late arm's
    # three), the queries and the two model-free inducers (B2, BM25, embeds nothing)
    assert len(usages) == 4 and len(embeds) == 22
    generated, embedded = sum(u["generated"] for u in usages), sum(e["n_encoded"] for e in embeds)
    assert generated > 0 and embedded > 0
    for inducer in ("llm", "tiling", "learned"):
        stats = json.loads((workdir / f"results/kb/structure/induced-{inducer}/stats.json").read_text())
        assert stats["documents"] == 8 == stats["usable"] + stats["repaired"] + stats["failed"]


def listed_runs(workdir: Path, printed: str) -> list[ExportedRun]:
    """The runs ``structbench export`` run in ``workdir`` listed, one per line: ``RUN  (qrels QRELS; KIND scores)``."""
    exported = []
    for line in printed.splitlines():
        run, listed = line.split("  (qrels ")
        qrels, scores = listed.removesuffix(" scores)").split("; ")
        corpus, embedder, reranker, name = Path(run).parts[-4:]
        cell = (corpus, embedder, reranker, name.removesuffix(".run"))
        exported.append(ExportedRun(*cell, workdir / run, workdir / qrels, scores))
    return exported


def assert_the_tools_read_the_default_run(workdir: Path, printed: str) -> None:
    """The default run's export: each condition's run (read-time ones aside), read by ir_measures and by ranx with
    its qrels, gives the study's per-query binary nDCG@10 and MRR and the run's chunk-level recall@50, and every
    file is well formed (tests/trec_testing.py)."""
    exported = listed_runs(workdir, printed)
    study = run_study([], workdir, str(workdir / "results"))
    assert {run.condition for run in exported} == set(study.conditions)  # the default run has no read-time condition
    assert {"A4", "G4", "M4", "L4", "B2"} <= set(study.conditions)  # two-stage and BM25 runs among them
    assert assert_tools_read_the_study(study, Export(exported, {})) == len(exported) * 3 * 2 * 35


@pytest.mark.workflow
def test_readme_commands_run_as_written(repo_copy):
    (repo_copy / "my.yaml").write_text("stats: {bootstrap_iters: 2000}\n")
    (repo_copy / "guide.md").write_text(GUIDE)
    for command in readme_commands():
        mode = HOW[command]
        if mode == "suite":
            continue  # the suite itself: .ci/run calls it
        result = run(command + (" -n" if mode == "dry-run" else ""), repo_copy)
        assert result.returncode == 0, f"{command}\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
        if command == "make run":
            assert (repo_copy / "results/report/report.md").is_file()
            assert_cold_default_run(repo_copy)
            assert "results/report/report.md" in result.stdout
            # That a second run is served from the caches is checked at a smaller scale, where it costs less:
            # test_workflow.py (every vector from the cache) and test_workflow_llm.py (every LLM answer).
        if command.endswith("--configfile my.yaml"):
            # my.yaml changes one statistics value: only the contrasts and the report were rerun.
            assert re.search(r"contrasts\s+1", result.stdout + result.stderr)
            assert not re.search(r"embed_texts\s+\d", result.stdout + result.stderr)
        if command.endswith("--report report.html"):
            assert (repo_copy / "report.html").stat().st_size > 10_000
        if command.startswith(".venv/bin/structbench export"):
            assert_the_tools_read_the_default_run(repo_copy, result.stdout)
        if command.startswith(".venv/bin/structbench show"):
            assert re.search(r"^G3: cov_nDCG@10 \d\.\d{3} +\| G2: cov_nDCG@10 \d\.\d{3}$", result.stdout, re.M)
        if command.startswith(".venv/bin/structbench chunk"):
            assert [json_line.startswith("{") for json_line in result.stdout.splitlines()] == [True, True, True]
    snippet = readme_blocks("python")[0]
    result = run(f".venv/bin/python - <<'EOF'\n{snippet}\nEOF", repo_copy, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Guide > Setup" in result.stdout


# after the long test above, so that the next work unit is not queued behind it (tests/conftest.py)
def test_every_readme_command_is_accounted_for():
    commands = readme_commands()
    assert commands, "README.md has no bash commands"
    assert sorted(set(commands)) == sorted(HOW), "README commands and tests/workflow/test_readme.py::HOW disagree"
    assert len(readme_blocks("python")) == 1
