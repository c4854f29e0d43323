"""The Slurm profile on a real single-node Slurm cluster (tests/slurm/cluster.sh; see shared/notes/slurm-ci.md).

Skipped unless slurmctld, slurmd and munge(d) are installed and the test runs as root. The test profile is the
real profiles/slurm/config.yaml with resources capped to the one node (2 CPUs), squeue status checks (the
cluster has no accounting, so sacct does not work) and no account. Partition routing is read back without
sacct: from slurmctld's job records (squeue --states=all, kept for MinJobAge=600 s), matched against the
executor's per-job Slurm logs under .snakemake/slurm_logs/rule_<rule>/<wildcards>/<jobid>.log.
"""

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from conftest import REPO, SNAKEMAKE, kb_config

CLUSTER_SH = REPO / "tests/slurm/cluster.sh"
SBIN_PATH = os.environ.get("PATH", "") + os.pathsep + "/usr/sbin"
MISSING = [tool for tool in ("slurmctld", "slurmd", "munge", "munged") if not shutil.which(tool, path=SBIN_PATH)]
NODE_CPUS, NODE_MEM_MB = 2, 4096
JOB_MEM_MB, JOB_RUNTIME_MIN = 1500, 30
HARD_TIMEOUT_S = 900

pytestmark = [
    pytest.mark.skipif(bool(MISSING), reason=f"Slurm not installed (missing: {', '.join(MISSING)})"),
    pytest.mark.skipif(os.geteuid() != 0, reason="starting a Slurm cluster needs root"),
]


@pytest.fixture(scope="module")
def slurm_cluster(tmp_path_factory):
    state = tmp_path_factory.mktemp("slurm-cluster")
    env = {**os.environ, "PATH": SBIN_PATH, "SLURM_CI_CPUS": str(NODE_CPUS), "SLURM_CI_MEM_MB": str(NODE_MEM_MB)}
    started = subprocess.run(["bash", str(CLUSTER_SH), "start", str(state)], capture_output=True, text=True, env=env, timeout=120)
    try:
        if started.returncode == 3:
            pytest.skip(started.stderr.strip())
        assert started.returncode == 0, started.stdout + started.stderr
        yield state
    finally:
        subprocess.run(["bash", str(CLUSTER_SH), "stop", str(state)], capture_output=True, text=True, env=env, timeout=120)


def cap(value, limit):
    return min(int(value), limit) if isinstance(value, (int, float)) else value


def make_test_profile(directory: Path) -> Path:
    """The real profile's settings, capped to the test node, with squeue status checks and no account."""
    profile = yaml.safe_load((REPO / "profiles/slurm/config.yaml").read_text())
    caps = {"mem_mb": JOB_MEM_MB, "runtime": JOB_RUNTIME_MIN, "cpus_per_task": NODE_CPUS}
    capped = lambda resources: {k: cap(v, caps[k]) if k in caps else v for k, v in resources.items()}
    profile["default-resources"] = capped(profile.get("default-resources", {}))
    profile["set-resources"] = {rule: capped(r) for rule, r in profile.get("set-resources", {}).items()}
    profile["set-threads"] = {rule: cap(n, NODE_CPUS) for rule, n in profile.get("set-threads", {}).items()}
    profile.update(
        {
            "jobs": 4,
            "retries": 0,
            "latency-wait": 5,
            "slurm-status-command": "squeue",  # needs MinJobAge >= 3 x init seconds: 600 >= 15
            "slurm-init-seconds-before-status-checks": 5,
            "slurm-no-account": True,
            "slurm-keep-successful-logs": True,
        }
    )
    path = directory / "profile"
    path.mkdir()
    (path / "config.yaml").write_text(yaml.safe_dump(profile, sort_keys=False))
    return path


def slurm_jobs(workdir: Path) -> dict[str, dict[str, str]]:
    """Job id -> partition, comment (rule_<rule>[_wildcards_...]), state, TresPerJob, NumCPUs of jobs run in workdir."""
    listing = subprocess.run(
        ["squeue", "--states=all", "-h", "-o", "%i|%P|%k|%T|%Z"], capture_output=True, text=True, check=True
    ).stdout
    jobs = {}
    for line in listing.splitlines():
        job_id, partition, comment, state, job_workdir = line.split("|", 4)
        if Path(job_workdir) == workdir:
            shown = subprocess.run(["scontrol", "show", "job", "-o", job_id], capture_output=True, text=True).stdout
            fields = dict(f.split("=", 1) for f in shown.split() if "=" in f)
            jobs[job_id] = {
                "partition": partition,
                "comment": comment,
                "state": state,
                "tres": fields.get("TresPerJob", ""),
                "cpus": fields.get("NumCPUs", ""),
            }
    return jobs


def cancel_jobs(workdir: Path) -> None:
    ids = [job_id for job_id, job in slurm_jobs(workdir).items() if job["state"] in ("PENDING", "RUNNING")]
    if ids:
        subprocess.run(["scancel", *ids], capture_output=True)


def test_default_workflow_through_slurm_routes_embedding_to_gpu(slurm_cluster, tmp_path):
    workdir = tmp_path / "run"
    workdir.mkdir()
    config = kb_config(workdir, "stats: {bootstrap_iters: 1000, primary_metric: cov_nDCG@10, mixedlm: false}\n")
    profile = make_test_profile(tmp_path)
    snakemake = [str(SNAKEMAKE), "-s", str(REPO / "Snakefile"), "-d", str(workdir)]
    command = ["timeout", "-k", "30", str(HARD_TIMEOUT_S), *snakemake, "--profile", str(profile), "--configfile", str(config)]
    env = {**os.environ, "PATH": SBIN_PATH}
    try:
        result = subprocess.run(command, capture_output=True, text=True, env=env, cwd=workdir)
    finally:
        cancel_jobs(workdir)
    if result.returncode in (124, 137):
        subprocess.run([*snakemake, "--unlock", "--configfile", str(config)], capture_output=True, env=env, cwd=workdir)
        pytest.fail(f"workflow killed after {HARD_TIMEOUT_S} s:\n{(result.stdout + result.stderr)[-4000:]}")
    log = result.stdout + result.stderr
    assert result.returncode == 0, log[-4000:]

    report = (workdir / "results/report/report.md").read_text()
    assert "## Contrasts" in report and "G3-F0" in report

    jobs = slurm_jobs(workdir)
    rules = {job_id: job["comment"].removeprefix("rule_").split("_wildcards_")[0] for job_id, job in jobs.items()}
    assert jobs, "no Slurm job records for this run"
    assert all(job["state"] == "COMPLETED" for job in jobs.values()), jobs
    embed = {job_id for job_id, rule in rules.items() if rule in ("embed_texts", "embed_queries")}
    assert sorted(rules[j] for j in embed) == ["embed_queries"] + ["embed_texts"] * 3, rules
    for job_id, job in jobs.items():
        if job_id in embed:
            assert job["partition"] == "gpu" and "gpu:1" in job["tres"], (rules[job_id], job)
            # The rule's (capped) threads become --cpus-per-task: the profile sets no cpus_per_task default.
            assert job["cpus"] == str(NODE_CPUS), (rules[job_id], job)
        else:
            assert job["partition"] == "cpu" and "gpu" not in job["tres"], (rules[job_id], job)
    assert {"corpus", "texts", "retrieve", "score", "contrasts", "report"} <= set(rules.values()), rules

    # The executor's own per-job logs agree: .snakemake/slurm_logs/rule_<rule>/<wildcards>/<jobid>.log
    logs = {p.stem: p.relative_to(workdir / ".snakemake/slurm_logs").parts[0] for p in (workdir / ".snakemake/slurm_logs").rglob("*.log")}
    assert logs == {job_id: f"rule_{rule}" for job_id, rule in rules.items()}
