"""Chunk size as a condition attribute, end to end on the knowledge base (docs/method.md §6a): G2 at two sizes of
its own beside the run's, each with size-matched fixed windows, a size curve and a contrast across sizes."""

import json

import polars as pl
import pytest
from conftest import KNOBS, REPO, kb_config, run_snakemake
from test_workflow import planned_jobs

from structbench.chunking.tiling import assert_tiling

pytestmark = pytest.mark.workflow

SELECT = {"conditions": ["G2-200", "G2-500", "F0-200", "F0-500"]}


def test_the_sizes_config_plans_one_chunk_set_per_size_on_the_kb_and_on_qasper(tmp_path, shared_data):
    config = kb_config(tmp_path, whole_default=True)
    result = run_snakemake(tmp_path, "-n", "--configfile", str(config), str(REPO / "config/sizes.yaml"))
    assert result.returncode == 0, result.stderr[-4000:]
    jobs = planned_jobs(result.stdout + result.stderr)
    assert jobs["structural_chunks"] == 3 and jobs["fixed_chunks"] == 3 and jobs["score"] == 6
    qasper = run_snakemake(
        tmp_path,
        "-n",
        "--configfile",
        str(REPO / "config/qasper.yaml"),
        str(REPO / "config/sizes.yaml"),
        "--config",
        f"corpora={{qasper: {{paths: [{shared_data}/qasper/qasper-dev-v0.3.rebuilt.json]}}}}",
    )
    assert qasper.returncode == 0, qasper.stderr[-4000:]
    assert planned_jobs(qasper.stdout + qasper.stderr)["structural_chunks"] == 3


def test_a_bad_size_curve_stops_the_dry_run_naming_it(tmp_path):
    bad = KNOBS.replace("sizes: [200, 350, 500]", "sizes: [200, 400, 500]")
    result = run_snakemake(tmp_path, "-n", "--configfile", str(kb_config(tmp_path, bad, select=SELECT)))
    assert result.returncode != 0
    assert (
        "contrasts.size-curve.sizes = [200, 400, 500] disagrees with its conditions: G2 is chunked at t_max = 350"
        in (result.stdout + result.stderr)
    )


def test_conditions_at_their_own_sizes_run_end_to_end_and_the_report_shows_the_size_curve(knobs_run):
    tmp_path = knobs_run.workdir
    results = tmp_path / "results/kb"
    documents = pl.read_parquet(results / "corpus/documents.parquet")
    sizes = {}
    for chunkset, t_max, t_min in (
        ("structural-t200/gold", 200, 60),
        ("structural/gold", 350, 60),
        ("structural-t500-m100/gold", 500, 100),
        ("fixed-t200/gold", 200, 60),
        ("fixed-t500-m100/gold", 500, 100),
    ):
        chunks = pl.read_parquet(results / f"chunks/{chunkset}.parquet")
        assert_tiling(documents, chunks)
        bounds = json.loads((results / f"chunks/{chunkset}.bounds.json").read_text())
        assert (bounds["t_max"], bounds["t_min"], bounds["over_t_max"]) == (t_max, t_min, 0)
        assert chunks["n_tokens"].max() <= t_max
        sizes[chunkset] = chunks["n_tokens"].mean()
    # larger bounds, larger chunks; each fixed-window set is matched to the structural chunks of its own size
    assert sizes["structural-t200/gold"] < sizes["structural/gold"] < sizes["structural-t500-m100/gold"]
    for size in ("-t200", "-t500-m100"):
        match = json.loads((results / f"chunks/fixed{size}/gold.size_match.json").read_text())
        assert match["chunk set"] == f"fixed{size}/gold"
        assert match["reference_mean_tokens"] == pytest.approx(sizes[f"structural{size}/gold"])
        assert abs(match["difference"]) < 5
    # a prefix budget follows its chunk set's t_max: G3 (350) is unaffected; the texts of G2-200 carry none
    contrasts = pl.read_parquet(tmp_path / "results/contrasts/kb/minilm/none/contrasts.parquet")
    curve = contrasts.filter(pl.col("contrast") == "size-curve", pl.col("metric") == "cov_nDCG@10").row(0, named=True)
    assert curve["ci_low"] <= curve["delta"] <= curve["ci_high"] and curve["n_queries"] == 35
    size_table = pl.read_csv(tmp_path / "results/report/tables/size_curve.csv")
    assert size_table["condition"].to_list() == ["G2-200", "G2", "G2-500"]
    assert size_table["t_max"].to_list() == [200, 350, 500]
    assert size_table["slope"].to_list() == pytest.approx([curve["delta"]] * 3)
    report = (tmp_path / "results/report/report.md").read_text()
    assert "## Chunk-size curve" in report and "size slope per doubling over G2-200 → G2 → G2-500" in report
    assert "| G2-500 | structural | gold | none | flat | t_max 500, t_min 100 |" in report  # the conditions table
    for figure in ("size_curve", "chunk_sizes"):  # chunk sizes: one panel per size, fixed beside structural
        assert (tmp_path / f"results/report/figures/{figure}.png").stat().st_size > 0
