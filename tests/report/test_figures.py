"""The report's figures and its folder: every figure drawn from a complete input, PNG bytes identical
across processes, no metadata, colour-blind-safe palette, tables as Parquet + CSV, the summary line."""

import json
import os
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import polars as pl
import pytest
from conftest import TESTS
from report_testing import CONDITIONS, synthetic_inputs

from structbench.report.bundle import ReportPaths, csv_bytes, run_summary, write_report_bundle
from structbench.report.catalog import TABLES, build_tables
from structbench.report.figures import FIGURES, PALETTE, RenderedFigure, condition_styles, render_figures
from structbench.report.table_registry import Omitted

RENDER = """
import os, sys
sys.path.insert(0, {tests!r})
from report_testing import synthetic_inputs
from structbench.report.bundle import ReportPaths, write_report_bundle
os.chdir(sys.argv[1])  # the report names its files relative to the working directory, as in the workflow
write_report_bundle(synthetic_inputs(), ReportPaths.under("report"))
"""


def render(folder: Path, hash_seed: str) -> None:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    result = subprocess.run(
        [sys.executable, "-c", RENDER.format(tests=str(TESTS)), str(folder)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("run")
    render(workdir, "1")
    return workdir / "report"


def png_chunks(data: bytes) -> list[tuple[bytes, bytes]]:
    """(type, payload) of each chunk of a PNG, checking the signature and every CRC."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    chunks, offset = [], 8
    while offset < len(data):
        (length,) = struct.unpack(">I", data[offset : offset + 4])
        kind, payload = data[offset + 4 : offset + 8], data[offset + 8 : offset + 8 + length]
        (crc,) = struct.unpack(">I", data[offset + 8 + length : offset + 12 + length])
        assert zlib.crc32(kind + payload) == crc
        chunks.append((kind, payload))
        offset += 12 + length
    return chunks


def test_every_figure_is_drawn_for_a_complete_input(bundle):
    manifest = json.loads((bundle / "manifest.json").read_text())
    assert [f["name"] for f in manifest["figures"]] == list(FIGURES)
    # the synthetic inputs declare no size curve (its conditions differ in t_max): tests/test_sizes.py draws it
    drawn = [name for name in FIGURES if name != "size_curve"]
    assert all(f["written"] for f in manifest["figures"] if f["name"] in drawn), manifest["figures"]
    for name in drawn:
        chunks = png_chunks((bundle / "figures" / f"{name}.png").read_bytes())
        kinds = [kind for kind, _ in chunks]
        # no text metadata (Software, dates) and no modification time: nothing that changes between runs
        assert not {b"tEXt", b"iTXt", b"zTXt", b"tIME"} & set(kinds), (name, kinds)
        width, height = struct.unpack(">II", chunks[0][1][:8])
        assert 300 <= width <= 2400 and 150 <= height <= 2400, (name, width, height)


def test_figures_and_every_report_file_are_byte_identical_across_processes(bundle, tmp_path):
    render(tmp_path, "12345")  # another interpreter, another hash seed
    first = {p.relative_to(bundle): p.read_bytes() for p in sorted(bundle.rglob("*")) if p.is_file()}
    second = {
        p.relative_to(tmp_path / "report"): p.read_bytes()
        for p in sorted((tmp_path / "report").rglob("*"))
        if p.is_file()
    }
    assert first.keys() == second.keys()
    differing = [str(path) for path in first if first[path] != second[path]]
    assert differing == []


def test_tables_are_written_as_parquet_and_csv_with_the_same_content(bundle):
    manifest = json.loads((bundle / "manifest.json").read_text())
    written = [t for t in manifest["tables"] if t["written"]]
    assert {t["name"] for t in written} == set(TABLES) - {
        "induction",
        "situating_contexts",
        "llm_calls",
        "query_generation",
        "size_curve",  # no size curve in the synthetic inputs (tests/test_sizes.py builds it)
        "span_rules",  # no span metric scored in the synthetic inputs (tests/metrics/test_spans.py)
    }
    for table in written:
        parquet = pl.read_parquet(bundle / "tables" / f"{table['name']}.parquet")
        csv = pl.read_csv(bundle / "tables" / f"{table['name']}.csv", schema=parquet.schema)
        assert csv.equals(parquet), table["name"]
    omitted = {t["name"]: t["reason"] for t in manifest["tables"] if not t["written"]}
    assert omitted["induction"] == "no induced structure in this config"


def test_csv_writes_nested_columns_as_json():
    frame = pl.DataFrame({"path": [["Title", "Section"]], "n": [1]})
    assert csv_bytes(frame) == b'path,n\n"[""Title"", ""Section""]",1\n'


def test_markdown_and_html_link_every_figure_and_state_every_omission(bundle):
    markdown, page = (bundle / "report.md").read_text(), (bundle / "index.html").read_text()
    for name in FIGURES:
        if name != "size_curve":  # the synthetic inputs declare none: stated as omitted, below
            assert f"](figures/{name}.png)" in markdown and f'<img src="figures/{name}.png"' in page
    assert "*Omitted: no size curve (a contrast with sizes) in this config.*" in markdown
    assert "*Omitted: no induced structure in this config.*" in markdown
    assert "Omitted: no induced structure in this config." in page
    assert "<script" not in page  # opens from disk with nothing to run


def test_a_figure_is_omitted_with_its_tables_reason():
    inputs = synthetic_inputs(conditions={k: v for k, v in CONDITIONS.items() if k != "G4"}, size_matches=[])
    tables = build_tables(inputs)
    specs = [FIGURES["section_recall"], FIGURES["chunk_sizes"]]
    section_recall, chunk_sizes = render_figures(tables, inputs, specs)
    assert isinstance(section_recall, Omitted)
    assert section_recall.reason == "no routed conditions (retrieval two_stage or toc) in this config"
    # chunk sizes has its table (chunk sets exist) but no size-matched pair to draw: the figure omits itself
    assert isinstance(chunk_sizes, Omitted) and chunk_sizes.reason.startswith("no fixed-window condition")


def test_palette_is_okabe_ito_and_a_condition_keeps_its_style_across_figures():
    assert PALETTE == ("#000000", "#E69F00", "#56B4E9", "#009E73", "#0072B2", "#D55E00", "#CC79A7")
    inputs = synthetic_inputs()
    all_styles = condition_styles(inputs, list(CONDITIONS))
    assert condition_styles(inputs, ["G4", "G2"])["G4"] == all_styles["G4"]  # by declared position, not by subset
    assert len({(s["color"], s["marker"]) for s in all_styles.values()}) == len(CONDITIONS)


def test_importing_the_figures_module_does_not_import_matplotlib():
    code = "import sys, structbench.report.figures, structbench.report.bundle; print('matplotlib' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.stdout.strip() == "False", result.stderr


def test_run_summary_names_the_report_cells_and_cache_use():
    inputs = synthetic_inputs()
    tables = build_tables(inputs)
    figures = [
        Omitted(spec, "x") if name == "section_recall" else RenderedFigure(spec, b"") for name, spec in FIGURES.items()
    ]
    line = run_summary(inputs, ReportPaths.under("results/report"), tables, figures)
    assert "\n" not in line
    assert line.startswith("structbench report: results/report/index.html (Markdown: results/report/report.md); ")
    assert "12 cells (2 corpora × 6 conditions × 1 embedder × 1 reranker)" in line
    assert f"{len(TABLES) - 6} tables and {len(FIGURES) - 1} figures written, 6 tables and 1 figure omitted" in line
    assert line.endswith("served from cache: 3 of 8 embedded texts, no LLM requests")
    llm = synthetic_inputs(induction_stats=[{"llm": {"requests": 10, "served_from_cache": 4}}])
    assert run_summary(llm, ReportPaths.under("r"), tables, figures).endswith("4 of 10 LLM requests")


def test_write_report_bundle_returns_the_summary_it_writes(tmp_path):
    inputs = synthetic_inputs(scores=pl.DataFrame(), contrasts=pl.DataFrame(), bm25_scores=pl.DataFrame())
    summary = write_report_bundle(inputs, ReportPaths.under(tmp_path))
    assert (tmp_path / "summary.txt").read_text() == summary + "\n"
    assert "no scored cell" in summary
