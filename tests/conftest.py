import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"
SNAKEMAKE = Path(sys.executable).with_name("snakemake")

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def run_snakemake(workdir: Path, *args: str, timeout: int = 1200) -> subprocess.CompletedProcess:
    """Run the project's workflow in ``workdir`` (outputs, logs and cache land there)."""
    command = [str(SNAKEMAKE), "-s", str(REPO / "Snakefile"), "-d", str(workdir), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout)


def kb_config(workdir: Path, extra: str = "") -> Path:
    """The default config, with the embedded corpus addressed absolutely so the run can live elsewhere."""
    path = workdir / "config.yaml"
    path.write_text(
        "corpora:\n"
        f"  kb: {{kind: markdown, path: '{REPO / 'data/kb/docs'}', questions: '{REPO / 'data/kb/questions.jsonl'}'}}\n"
        + extra
    )
    return path


@pytest.fixture
def shared_data() -> Path:
    if not SHARED_DATA.exists():
        pytest.skip(f"shared data not found at {SHARED_DATA}")
    return SHARED_DATA
