import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
TESTS = REPO / "tests"
SHARED_DATA = REPO.parent / "shared" / "data"
SNAKEMAKE = Path(sys.executable).with_name("snakemake")

# The test files live in one folder per library package (tests/retrieval/, tests/llm/, ...) and the workflow's
# tests in tests/workflow/, all without __init__.py: pytest's default "prepend" import mode imports each file by
# its stem, so stems are unique across the tree. A few test files import another's helpers by that stem (from
# test_metrics import ...), as conftest imports test_workflow_llm's: every test folder is on sys.path, as
# tests/ itself is (this file's folder), so those imports work whichever file is collected, or run, first.
TEST_FOLDERS = sorted(path.parent for path in TESTS.glob("*/test_*.py"))
sys.path[1:1] = [str(folder) for folder in dict.fromkeys(TEST_FOLDERS) if str(folder) not in sys.path]

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


# Snakemake imports every installed executor plugin at start-up, and the Slurm plugin then runs
# `scontrol show config` (for the controller's MinJobAge). Where Slurm's client is installed but no
# controller answers (CI installs Slurm for tests/workflow/test_slurm.py, which alone starts a controller), that
# waits for its 10 s timeout on every Snakemake start-up, dry runs included. Local runs never use Slurm:
# their PATH starts with a folder whose `scontrol` fails at once, which is what the plugin meets on a
# machine without Slurm. tests/workflow/test_slurm.py does not use it.
NO_SLURM_BIN = Path(tempfile.mkdtemp(prefix="structbench-no-slurm-"))
(NO_SLURM_BIN / "scontrol").write_text("#!/bin/sh\nexit 1\n")
(NO_SLURM_BIN / "scontrol").chmod(0o755)
atexit.register(shutil.rmtree, NO_SLURM_BIN, True)


# One GGUF conversion of the packaged SmolLM2 for the whole session (structbench.llm.gguf_cache): every test,
# and every job of every run a test starts, loads the conversion after the first one made it. A folder of the
# session's own, so each session starts cold and leaves nothing in the user's cache.
if "STRUCTBENCH_MODEL_CACHE" not in os.environ:
    os.environ["STRUCTBENCH_MODEL_CACHE"] = tempfile.mkdtemp(prefix="structbench-models-")
    atexit.register(shutil.rmtree, os.environ["STRUCTBENCH_MODEL_CACHE"], True)


def absolute_pythonpath() -> dict[str, str]:
    """This process's PYTHONPATH with every entry made absolute, or nothing. A run works in its own directory
    (``-d``), where a relative ``PYTHONPATH=src:tests`` would find nothing and the jobs would import whichever
    structbench is installed instead of this checkout's."""
    entries = [os.path.abspath(entry) for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep) if entry]
    return {"PYTHONPATH": os.pathsep.join(entries)} if entries else {}


def local_env(**extra: str) -> dict[str, str]:
    """The environment of a local (non-Slurm) Snakemake run: see NO_SLURM_BIN and absolute_pythonpath."""
    path = f"{NO_SLURM_BIN}{os.pathsep}{os.environ.get('PATH', '')}"
    return {**os.environ, "PATH": path, **absolute_pythonpath(), **extra}


def run_snakemake(
    workdir: Path, *args: str, timeout: int = 1200, checkout: Path = REPO, **env: str
) -> subprocess.CompletedProcess:
    """Run the workflow of ``checkout`` (this repository unless given) in ``workdir`` (outputs, logs and
    cache land there), with ``env`` added to the environment."""
    command = [str(SNAKEMAKE), "-s", str(checkout / "Snakefile"), "-d", str(workdir), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=local_env(**env))


# The default config's gold-structure arm: what workflow tests run unless they need the LLM arm, whose
# SmolLM2 calls take minutes on a CPU (the README test runs the whole default once).
GOLD_ARM = ["G2", "G3", "G4"]


def kb_config(
    workdir: Path,
    extra: str = "",
    select: dict | None = None,
    whole_default: bool = False,
    name: str = "config.yaml",
    kb: tuple[Path, Path] = (REPO / "data/kb/docs", REPO / "data/kb/questions.jsonl"),
) -> Path:
    """The default config layered with ``extra``, the embedded corpus (or ``kb``: its documents folder and
    questions file) addressed absolutely so the run can live elsewhere, written to ``workdir/name``;
    ``select.conditions`` is the gold arm (plus ``select``'s own entries) unless ``whole_default``."""
    chosen = dict(select or {})
    if not whole_default:
        chosen["conditions"] = GOLD_ARM + chosen.get("conditions", [])
    docs, questions = kb
    path = workdir / name
    path.write_text(
        "corpora:\n"
        f"  kb: {{kind: markdown, path: '{docs}', questions: '{questions}'}}\n"
        + (f"select: {json.dumps(chosen)}\n" if chosen else "")
        + extra
    )
    return path


@pytest.fixture
def shared_data() -> Path:
    if not SHARED_DATA.exists():
        pytest.skip(f"shared data not found at {SHARED_DATA}")
    return SHARED_DATA


# The gold arm plus fixed windows on gold chunks (F0) and their contrast: the config of the workflow tests
# that need a completed run without the LLM arm (test_workflow, test_report_html, test_resume).
F0 = (
    "conditions:\n  F0: {boundaries: fixed, structure: gold, prefix: none, retrieval: flat}\n"
    "contrasts:\n  G3-F0: {treatment: G3, control: F0, family: primary}\n"
)


def gold_f0(workdir: Path, extra: str = "", name: str = "config.yaml") -> Path:
    return kb_config(workdir, F0 + extra, select={"conditions": ["F0"]}, name=name)


@dataclass(frozen=True)
class CompletedRun:
    workdir: Path
    config: Path
    result: subprocess.CompletedProcess


def gold_f0_run(workdir: Path) -> CompletedRun:
    """A whole run of :func:`gold_f0` in ``workdir``, with a fresh cache of its own there."""
    config = gold_f0(workdir)
    result = run_snakemake(workdir, "--cores", "2", "--configfile", str(config))
    assert result.returncode == 0, result.stderr[-4000:]
    return CompletedRun(workdir, config, result)


# Two completed runs of the gold arm with F0, each from a fresh cache, made once per session for the tests
# that read them (a gold-arm run is mostly embedding: about a minute on two cores). Their readers must leave
# them as they found them: dry runs only, configs written elsewhere, reruns that rewrite the same bytes.
@pytest.fixture(scope="session")
def gold_run(tmp_path_factory) -> CompletedRun:
    """Read by test_workflow (the determinism check's first run, the partial rebuilds planned on it) and
    test_report_html (the report, its summary line, both HTML pages)."""
    return gold_f0_run(tmp_path_factory.mktemp("gold-run"))


@pytest.fixture(scope="session")
def gold_run_again(tmp_path_factory) -> CompletedRun:
    """Read by test_workflow (the determinism check's second run, whose cache another checkout reuses) and
    test_resume (the uninterrupted reference every resumed run must reproduce, and its warm cache)."""
    return gold_f0_run(tmp_path_factory.mktemp("gold-run-again"))


# The knobs practitioners tune, in one run of the knowledge base (no LLM): G2 at two sizes of its own beside the
# run's, size-matched fixed windows at each (docs/method.md §6a), and half-window overlapping windows beside their
# tiling twin (§6, "Overlap"). Read by test_workflow_sizes (the size curve) and test_workflow_overlap (the
# covering set and the index cost): one run, since the two check different things of the same chunk sets.
KNOBS = """
conditions:
  G2-200: {boundaries: structural, structure: gold, prefix: none, retrieval: flat, t_max: 200}
  G2-500: {boundaries: structural, structure: gold, prefix: none, retrieval: flat, t_max: 500, t_min: 100}
  F0-200: {boundaries: fixed, structure: gold, prefix: none, retrieval: flat, t_max: 200}
  F0-500: {boundaries: fixed, structure: gold, prefix: none, retrieval: flat, t_max: 500, t_min: 100}
  F0: {boundaries: fixed, structure: gold, prefix: none, retrieval: flat}
  F0o: {boundaries: 'fixed_overlap:0.5', structure: gold, prefix: none, retrieval: flat}
contrasts:
  size-curve: {conditions: [G2-200, G2, G2-500], sizes: [200, 350, 500], family: exploratory}
  G2-F0-200: {treatment: G2-200, control: F0-200, family: exploratory}
  F0o-F0: {treatment: F0o, control: F0, family: overlap}
metrics: {extra: [span_IoU@5, span_precision@5]}
stats: {bootstrap_iters: 1000, primary_metric: cov_nDCG@10, mixedlm: false}
"""
KNOBS_CONDITIONS = ["G2", "G2-200", "G2-500", "F0-200", "F0-500", "F0", "F0o"]


@pytest.fixture(scope="session")
def knobs_run(tmp_path_factory) -> CompletedRun:
    workdir = tmp_path_factory.mktemp("knobs-run")
    config = kb_config(workdir, KNOBS, select={"conditions": KNOBS_CONDITIONS}, whole_default=True)
    result = run_snakemake(workdir, "--cores", "2", "--configfile", str(config))
    assert result.returncode == 0, result.stderr[-4000:]
    return CompletedRun(workdir, config, result)


@dataclass(frozen=True)
class TinyLlmRun:
    docs: Path
    questions: Path
    model: Path
    cache: Path
    workdir: Path
    result: subprocess.CompletedProcess


@pytest.fixture(scope="session")
def tiny_llm_run(tmp_path_factory) -> TinyLlmRun:
    """A whole run of test_workflow_llm's LLM config (three KB documents, a tiny random-weight model) from a
    cache of its own, made once per session. Read by test_workflow_llm (the LLM steps end to end, then another
    workdir on its cache) and test_slurm (the uninterrupted run that a Slurm run of the same study, killed and
    resumed on a cache of its own, must reproduce byte for byte). Its readers leave it as they found it: dry
    runs only, configs written elsewhere, reruns in other workdirs."""
    from test_workflow_llm import llm_config, tiny_llm_study

    root = tmp_path_factory.mktemp("tiny-llm")
    docs, questions, model, cache = tiny_llm_study(root)
    workdir = root / "first"
    workdir.mkdir()
    config = llm_config(workdir, docs, questions, model, cache)
    result = run_snakemake(workdir, "--cores", "2", "--configfile", str(config))
    assert result.returncode == 0, result.stderr[-4000:]
    return TinyLlmRun(docs, questions, model, cache, workdir, result)


# The suite runs on two pytest-xdist workers (make test: -n 2 --dist loadgroup): a workflow test is mostly one
# Snakemake run on one core at a time, so one worker left half the machine idle. Each module is one group, so
# its module fixtures (a server, a cluster, a repository copy) start once, as without xdist; the modules that
# read one of the session runs above form one group per run, so each run is made once, by one worker.
SESSION_RUN_GROUPS = {
    "gold": ("test_workflow", "test_report_html", "test_report_latex", "test_resume"),
    "llm": ("test_workflow_llm", "test_slurm"),
    "knobs": ("test_workflow_sizes", "test_workflow_overlap"),
}
GROUP_OF_MODULE = {module: group for group, modules in SESSION_RUN_GROUPS.items() for module in modules}


# The longest work units go first (the controller hands units out in collection order, see the scheduler below),
# each with its longest test first: the README's cold default run alone is a third of the suite, and started
# last it would run on one worker after the other had finished.
LONGEST_FIRST = ("test_readme", "llm", "gold", "test_fidelity")


def work_unit(nodeid: str) -> str:
    """The work unit a test belongs to: its module's session-run group, else its module's file stem."""
    module = Path(nodeid.split("::", 1)[0]).stem
    return GROUP_OF_MODULE.get(module, module)


def pytest_collection_modifyitems(items):
    rank = {group: index for index, group in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(work_unit(item.nodeid), len(rank)))  # stable: the rest keep their order


# xdist's own loadgroup reads groups from an `@group` suffix it writes into `item._nodeid`, which pytest 9 no
# longer reads (node ids come from `item._id`): on pytest 9 it groups nothing, and every session run and module
# fixture was made once per worker. The controller asks this hook for its scheduler; ours groups by the node id
# alone, through work_unit, so it works on any pytest the hook exists on. Two more departures from xdist's
# LoadScopeScheduling, both so the longest units start first and nothing waits behind one:
# - units are handed out in collection order (LONGEST_FIRST), not sorted by their number of tests, which is
#   what xdist's --loadscope-reorder (on by default) does, putting the README's two tests near the end;
# - a worker gets its next unit when one test of its current one is left (xdist tops up at two): a worker
#   runs a test only once it knows the next one, so one must stay queued, and a second unit queued behind a
#   long test would wait there while the other worker ran dry.
@pytest.hookimpl(optionalhook=True)  # a hook of xdist's: without xdist (-p no:xdist) pytest knows no such hook
def pytest_xdist_make_scheduler(config, log):
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    config.option.loadscopereorder = False

    class ModuleGroupScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return work_unit(nodeid)

        def _reschedule(self, node) -> None:
            if node.shutting_down:
                return
            if not self.workqueue:
                node.shutdown()
                return
            if self._pending_of(self.assigned_work[node]) <= 1:
                self._assign_work_unit(node)

    return ModuleGroupScheduling(config, log)


# A test's output worth reading in CI's log (the fidelity table): recorded as a user property under this name, and
# printed after the run by the controller (user properties travel with xdist's reports; captured output does not).
SHOWN_IN_SUMMARY = "shown_in_summary"


def pytest_terminal_summary(terminalreporter):
    for report in terminalreporter.stats.get("passed", []):
        for name, text in getattr(report, "user_properties", []):
            if name == SHOWN_IN_SUMMARY:
                terminalreporter.write_sep("-", report.nodeid)
                terminalreporter.write_line(str(text))
