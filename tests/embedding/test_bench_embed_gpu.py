"""The GPU embedding benchmark's CPU smoke mode: every code path of benchmarks/bench_embed_gpu.py (random-weight
model folders, the three contenders, the exactness cases and their diagnosis) runs, and its exactness checks pass."""

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

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


def test_the_json_goes_where_the_options_say_never_the_working_directory(tmp_path, monkeypatch):
    """``--out`` when given; else a temporary folder for ``--smoke`` and the checkout's ignored results/ for a
    measurement: the working directory is never written silently."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_embed_gpu", REPO / "benchmarks" / "bench_embed_gpu.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    monkeypatch.chdir(tmp_path)
    folders = {}
    for name, argv in (("smoke", ["--smoke"]), ("run", []), ("given", ["--smoke", "--out", "mine"])):
        args = bench.build_parser().parse_args(argv)
        folders[name] = bench.output_folder(args.out, args.smoke)
    assert folders["smoke"] == bench.SMOKE_RESULTS and folders["smoke"].is_relative_to(tempfile.gettempdir())
    assert folders["run"] == REPO / "results" / "benchmarks"
    assert folders["given"] == Path("mine")
    assert all(folder.resolve() != tmp_path for folder in folders.values())
    assert "results/" in (REPO / ".gitignore").read_text().splitlines()
