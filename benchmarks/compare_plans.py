"""Whether a change leaves the workflow's plan as it was: every job of every shipped config, compared with a base.

A refactoring of the plan (``structbench.plan``, ``rules/common.smk``) must not change what runs. For each case
below (a config of ``config/`` or ``tests/fidelity/``, layered as its header says), this builds the DAG of the
checkout under test and of a base revision (a detached ``git worktree``) through the Snakemake API, without running
a job, and lists each job as its rule, outputs, named inputs, log, threads, GPU count and params. ``snakemake
--detailed-summary`` cannot answer this: its inputs column is read from the metadata of jobs that already ran, so it
is ``-`` for a plan that never ran. The ``code`` param (the hash of the library modules a script reaches,
``structbench.provenance``) is left out: it changes with any library edit.

Both plans are built from this checkout's directory (its ``data/`` and the ``../shared/data`` the QASPER and
Chroma configs read), each with its own ``Snakefile`` and ``src/``::

    python benchmarks/compare_plans.py                 # against main, every case
    python benchmarks/compare_plans.py --base HEAD~3 config late
    python benchmarks/compare_plans.py dump config     # one plan as JSON lines (the subprocess both sides run)

Exit status 1 when a plan differs or fails on one side only."""

from __future__ import annotations

import argparse
import difflib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED_QASPER = "../shared/data/qasper/qasper-{}-v0.3.rebuilt.json"
SHARED_DEV = f"corpora={{qasper: {{paths: [{SHARED_QASPER.format('dev')}]}}}}"  # config/qasper.yaml's release file
QASPER_50 = [f"corpora={{qasper: {{max_docs: 50, paths: [{SHARED_QASPER.format('dev')}]}}}}"]
PAPER_QASPER = f"corpora={{qasper: {{paths: [{SHARED_QASPER.format('train')}, {SHARED_QASPER.format('dev')}]}}}}"
# name -> (config files layered over config/config.yaml, --config overrides): each as its file's header runs it.
CASES = {
    "config": ([], []),
    "chroma": (["config/chroma.yaml"], []),
    "chunkers": (["config/chunkers.yaml"], []),
    "chunkers-qasper": (["config/qasper.yaml", "config/chunkers.yaml"], QASPER_50),
    "ladder": (["config/ladder.yaml"], []),
    "late": (["config/late.yaml"], []),
    "model_free": (["config/model_free.yaml"], []),
    # the official tarballs are not here: the rebuilt train and dev files stand in (the plan is per corpus, not per paper)
    "paper": (["config/paper.yaml"], [PAPER_QASPER]),
    "qasper": (["config/qasper.yaml"], [SHARED_DEV]),
    "qasper_knobs": (["config/qasper.yaml", "config/sizes.yaml", "config/qasper_knobs.yaml"], QASPER_50),
    "readtime": (["config/qasper.yaml", "config/readtime.yaml"], QASPER_50),
    "sizes": (["config/sizes.yaml"], []),
    "wikitext": (
        ["config/wikitext.yaml"],
        ["corpora={wikitext: {path: ../shared/data/wikitext/wikitext-2-raw-test/wiki.test.raw}}"],
    ),
    "fidelity": (["tests/fidelity/qasper.yaml"], [SHARED_DEV]),
}
# Planning asks no endpoint (the API's plan is not a dry run, so a parse-time probe would send requests).
NO_PROBE = ["probe_endpoints=false"]
# Params that are not the plan: the code hash changes with every library edit.
UNPLANNED_PARAMS = {"code"}


def plain(value):
    """A JSON-able copy of a job attribute (Snakemake's Namedlist, tuples, paths)."""
    if isinstance(value, dict):
        return {str(key): plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)


def named(namedlist) -> dict:
    """A Namedlist as name -> items (its unnamed items under ``""``), in order."""
    names = {index: name for name, (index, _end) in namedlist._names.items()}
    items = {}
    for index, item in enumerate(namedlist):
        items.setdefault(names.get(index, ""), []).append(str(item))
    return items


def job_record(job) -> dict:
    params = {name: plain(value) for name, value in job.params.items() if name not in UNPLANNED_PARAMS}
    return {
        "rule": job.rule.name,
        "output": sorted(str(f) for f in job.output),
        "input": named(job.input),
        "log": sorted(str(f) for f in job.log),
        "threads": job.threads,
        "gpu": job.resources.get("gpu"),
        "params": params,
    }


def dump(case: str) -> None:
    """Print the plan of ``case`` under the Snakefile and library of the running interpreter's checkout."""
    from snakemake.api import SnakemakeApi
    from snakemake.cli import parse_config
    from snakemake.settings.types import ConfigSettings, DAGSettings, OutputSettings, ResourceSettings

    configfiles, overrides = CASES[case]
    overrides = overrides + NO_PROBE
    snakefile = Path(os.environ.get("PLAN_SNAKEFILE", REPO / "Snakefile"))
    with SnakemakeApi(OutputSettings(quiet={"all"})) as api:
        workflow_api = api.workflow(
            snakefile=snakefile,
            resource_settings=ResourceSettings(cores=1),
            config_settings=ConfigSettings(
                config=parse_config(overrides), configfiles=[Path(f) for f in configfiles], config_args=overrides
            ),
        )
        api_dag = workflow_api.dag(dag_settings=DAGSettings())
        workflow = api_dag.workflow_api._workflow
        workflow._prepare_dag(forceall=False, ignore_incomplete=True, lock_warn_only=True)
        workflow._build_dag()
        records = sorted((job_record(job) for job in workflow.dag.jobs), key=lambda r: (r["rule"], r["output"]))
    for record in records:
        print(json.dumps(record, sort_keys=True))


def plan_of(tree: Path, case: str) -> tuple[bool, str]:
    """``(planned, JSON lines or the error)`` of ``case`` under ``tree``'s Snakefile and ``src/``, run here."""
    env = os.environ | {"PYTHONPATH": str(tree / "src"), "PLAN_SNAKEFILE": str(tree / "Snakefile")}
    done = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "dump", case],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
    )
    if done.returncode:
        return False, (done.stderr.strip().splitlines() or ["(no message)"])[-1]
    return True, done.stdout


def compare(base: str, cases: list[str]) -> int:
    differing = 0
    with tempfile.TemporaryDirectory(prefix="plan-base-") as folder:
        tree = Path(folder) / "tree"
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(tree), base], check=True)
        try:
            for case in cases:
                base_ok, base_plan = plan_of(tree, case)
                new_ok, new_plan = plan_of(REPO, case)
                if not base_ok and not new_ok:
                    print(f"{case}: cannot plan here on either side ({new_plan})")
                    continue
                if base_ok != new_ok:
                    differing += 1
                    print(f"{case}: DIFFERS: plans on one side only (base: {base_plan[:200]} | new: {new_plan[:200]})")
                    continue
                if base_plan == new_plan:
                    print(f"{case}: identical ({len(new_plan.splitlines())} jobs)")
                    continue
                differing += 1
                print(f"{case}: DIFFERS")
                diff = difflib.unified_diff(base_plan.splitlines(), new_plan.splitlines(), "base", "new", lineterm="")
                print("\n".join(list(diff)[:40]))
        finally:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(tree)], check=False)
    return 1 if differing else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("cases", nargs="*", help=f"cases to compare (default: all of {list(CASES)})")
    parser.add_argument("--base", default="main", help="the revision to compare with (default: main)")
    arguments = parser.parse_args()
    if arguments.cases[:1] == ["dump"]:
        for case in arguments.cases[1:]:
            dump(case)
        return 0
    return compare(arguments.base, arguments.cases or list(CASES))


if __name__ == "__main__":
    sys.exit(main())
