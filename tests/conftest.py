import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"
SNAKEMAKE = Path(sys.executable).with_name("snakemake")

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


# Snakemake imports every installed executor plugin at start-up, and the Slurm plugin then runs
# `scontrol show config` (for the controller's MinJobAge). Where Slurm's client is installed but no
# controller answers (CI installs Slurm for tests/test_slurm.py, which alone starts a controller), that
# waits for its 10 s timeout on every Snakemake start-up, dry runs included. Local runs never use Slurm:
# their PATH starts with a folder whose `scontrol` fails at once, which is what the plugin meets on a
# machine without Slurm. tests/test_slurm.py does not use it.
_NO_SLURM_BIN = Path(tempfile.mkdtemp(prefix="structbench-no-slurm-"))
(_NO_SLURM_BIN / "scontrol").write_text("#!/bin/sh\nexit 1\n")
(_NO_SLURM_BIN / "scontrol").chmod(0o755)
atexit.register(shutil.rmtree, _NO_SLURM_BIN, True)


def local_env(**extra: str) -> dict[str, str]:
    """The environment of a local (non-Slurm) Snakemake run: see _NO_SLURM_BIN."""
    return {**os.environ, "PATH": f"{_NO_SLURM_BIN}{os.pathsep}{os.environ.get('PATH', '')}", **extra}


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


def kb_config(workdir: Path, extra: str = "", select: dict | None = None, whole_default: bool = False) -> Path:
    """The default config layered with ``extra``, the embedded corpus addressed absolutely so the run can
    live elsewhere; ``select.conditions`` is the gold arm (plus ``select``'s own entries) unless
    ``whole_default``."""
    chosen = dict(select or {})
    if not whole_default:
        chosen["conditions"] = GOLD_ARM + chosen.get("conditions", [])
    path = workdir / "config.yaml"
    path.write_text(
        "corpora:\n"
        f"  kb: {{kind: markdown, path: '{REPO / 'data/kb/docs'}', questions: '{REPO / 'data/kb/questions.jsonl'}'}}\n"
        + (f"select: {json.dumps(chosen)}\n" if chosen else "")
        + extra
    )
    return path


@pytest.fixture
def shared_data() -> Path:
    if not SHARED_DATA.exists():
        pytest.skip(f"shared data not found at {SHARED_DATA}")
    return SHARED_DATA
