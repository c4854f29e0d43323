"""The GPU embedding benchmark's CPU smoke mode: every code path of benchmarks/bench_embed_gpu.py (random-weight
model folders, the three contenders, the exactness cases and their diagnosis) runs, and its exactness checks pass."""

import json
import os
import subprocess
import sys

import pytest
from conftest import REPO, SHARED_DATA

QASPER_DEV = SHARED_DATA / "qasper" / "qasper-dev-v0.3.rebuilt.json"


@pytest.mark.model
@pytest.mark.skipif(not QASPER_DEV.exists(), reason=f"needs the QASPER dev file at {QASPER_DEV}")
def test_the_smoke_mode_runs_every_path_and_its_exactness_checks_pass(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    result = subprocess.run(
        [
            sys.executable,
            "benchmarks/bench_embed_gpu.py",
            "--smoke",
            "--qasper",
            str(QASPER_DEV),
            "--out",
            str(tmp_path),
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    lines = json.loads((tmp_path / "bench_embed_gpu.json").read_text())
    checks = [line["check"] for line in lines]
    assert checks.count("speed") == 1 and checks.count("exact") == 2 and checks.count("diagnosis") == 2
    assert all(line["n_differ"] == 0 for line in lines if line["check"] == "exact")
    speed = next(line for line in lines if line["check"] == "speed")
    assert speed["project"] > 0 and speed["plain"] > 0 and speed["st32"] > 0
