"""The fidelity run's config and its printer: the corpus file comes only from the command line, the plan
is the four arms on QASPER, and compare.py matches our conditions to Kuehlkamp et al.'s and checks orderings.
The run itself (``make fidelity``'s config on the first 20 QASPER dev papers) is made here, once, as a work unit
of the suite beside the others, with two WikiText articles and G4 layered on: the same run also shows a corpus
without questions built and reported beside a scored one."""

import importlib.util
import sys

import polars as pl
import pytest
import yaml
from conftest import REPO, SHARED_DATA, SHOWN_IN_SUMMARY, CompletedRun, run_snakemake
from report_testing import synthetic_inputs
from test_workflow import planned_jobs

from structbench.report.bundle import ReportPaths, write_report_bundle

FIDELITY = REPO / "tests/fidelity/qasper.yaml"
spec = importlib.util.spec_from_file_location("fidelity_compare", REPO / "tests/fidelity/compare.py")
compare = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = compare  # its dataclasses look their module up there
spec.loader.exec_module(compare)


def test_the_config_names_no_corpus_file():
    config = yaml.safe_load(FIDELITY.read_text())
    assert "paths" not in config["corpora"]["qasper"] and config["corpora"]["qasper"]["max_docs"] == 20


def test_fidelity_plan_is_four_arms_on_the_qasper_file_given_as_an_override(tmp_path, shared_data):
    qasper = shared_data / "qasper/qasper-dev-v0.3.rebuilt.json"
    result = run_snakemake(
        tmp_path, "-n", "--configfile", str(FIDELITY), "--config", f"corpora={{qasper: {{paths: [{qasper}]}}}}"
    )
    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout + result.stderr
    for condition in ("F0", "G2", "G3", "P3"):
        assert f"results/fidelity/qasper/scores/minilm/none/{condition}.parquet" in out
    jobs = planned_jobs(out)
    assert (
        jobs["score"] == 4
        and jobs["contrasts"] == 1
        and jobs["retrieval_layer"] == 1
        and "induce_structure" not in jobs
    )
    missing = run_snakemake(tmp_path, "-n", "--configfile", str(FIDELITY))
    assert missing.returncode != 0 and "paths" in missing.stdout + missing.stderr


@pytest.mark.parametrize(
    "axes, analog",
    [
        ({"boundaries": "fixed", "structure": "gold", "prefix": "none", "retrieval": "flat"}, ("A0", False)),
        ({"boundaries": "fixed", "structure": "induced:llm", "prefix": "none", "retrieval": "flat"}, ("A0", True)),
        ({"boundaries": "fixed", "structure": "induced:llm", "prefix": "context", "retrieval": "flat"}, ("A1", True)),
        ({"boundaries": "structural", "structure": "gold", "prefix": "placebo:3", "retrieval": "flat"}, ("P", False)),
        (
            {"boundaries": "structural", "structure": "induced:llm", "prefix": "placebo:3", "retrieval": "flat"},
            ("P", True),
        ),
        ({"boundaries": "structural", "structure": "gold", "prefix": "none", "retrieval": "flat"}, ("G2", True)),
        (
            {"boundaries": "structural", "structure": "induced:llm", "prefix": "path:3", "retrieval": "flat"},
            ("A3", True),
        ),
        ({"boundaries": "structural", "structure": "gold", "prefix": "path:3", "retrieval": "two_stage"}, ("G4", True)),
        # The model-free inducer's arm is not the paper's LLM-induced arm.
        ({"boundaries": "structural", "structure": "induced:tiling", "prefix": "path:3", "retrieval": "flat"}, None),
        ({"boundaries": "structural", "structure": "induced:tiling", "prefix": "placebo:3", "retrieval": "flat"}, None),
        ({"boundaries": "structural", "structure": "gold", "prefix": "path:1", "retrieval": "flat"}, None),
        ({"boundaries": "semantic", "structure": "gold", "prefix": "none", "retrieval": "flat"}, None),
    ],
)
def test_paper_analogs(axes, analog):
    found = compare.paper_analog(axes)
    assert ((found.paper, found.same) if found else None) == analog
    if found and not found.same:
        assert found.note  # a variant says how it differs


def test_ordering_agreement_counts_pairs_and_ties_apart():
    ours = {"F0": 0.10, "P3": 0.12, "G2": 0.11, "G3": 0.13}
    paper = {"F0": 0.098, "P3": 0.109, "G2": 0.120, "G3": 0.126}
    assert compare.ordering_agreement(ours, paper) == compare.Agreement(5, 0, ("G2/P3",), 6)
    # Two of ours with one paper analog (equal paper values) are a tie, not a disagreement.
    tied = compare.ordering_agreement({"P3": 0.12, "MP": 0.11, "G3": 0.13}, {"P3": 0.109, "MP": 0.109, "G3": 0.126})
    assert tied == compare.Agreement(2, 1, (), 3)


def test_compare_prints_means_beside_the_paper_and_the_contrast_signs(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    write_report_bundle(synthetic_inputs(), ReportPaths.under("report"))
    assert compare.main(tmp_path / "report") == 0
    out = capsys.readouterr().out
    assert "Fidelity run: alpha, 48 questions over 12 papers" in out
    assert "G3-d1" in out and "ordering, Kuehlkamp et al.: F0 < P3 < G4 < G2 < G3" in out  # G3-d1 has no analog
    assert "G3-P3" in out and "(G3 − P, Table 2)" in out


# Layered over the fidelity config: two WikiText articles (no questions: built, verified, chunked, reported, not
# scored) and G4, the two-stage router over G3's vectors. Neither changes QASPER's chunk sets, vectors or runs.
WIKITEXT_LAYER = """
corpora:
  wikitext: {{kind: wikitext, path: '{wikitext}', n_docs: 2}}
select: {{corpora: [qasper, wikitext], conditions: [F0, P3, G2, G3, G4]}}
"""


@pytest.fixture(scope="module")
def fidelity_run(tmp_path_factory) -> CompletedRun:
    if not SHARED_DATA.exists():
        pytest.skip(f"shared data not found at {SHARED_DATA}")
    workdir = tmp_path_factory.mktemp("fidelity-run")
    layer = workdir / "wikitext.yaml"
    layer.write_text(WIKITEXT_LAYER.format(wikitext=SHARED_DATA / "wikitext/wikitext-2-raw-test/wiki.test.raw"))
    qasper = SHARED_DATA / "qasper/qasper-dev-v0.3.rebuilt.json"
    result = run_snakemake(
        workdir,
        "--cores",
        "2",
        "--configfile",
        str(FIDELITY),
        str(layer),
        "--config",
        f"corpora={{qasper: {{paths: [{qasper}]}}}}",
    )
    assert result.returncode == 0, result.stderr[-4000:]
    return CompletedRun(workdir, layer, result)


def test_fidelity_run_prints_the_four_arms_beside_kuehlkamp_et_al(fidelity_run, capsys, record_property):
    assert compare.main(fidelity_run.workdir / "results/fidelity/report") == 0
    out = capsys.readouterr().out
    record_property(SHOWN_IN_SUMMARY, out)  # conftest prints it after the run, as make fidelity would
    assert "Fidelity run: qasper," in out and "over 20 papers, minilm, reranker none" in out
    assert "Fidelity run: wikitext" not in out  # no questions, no cell
    ordering = next(line for line in out.splitlines() if line.startswith("ordering, ours:"))
    assert sorted(ordering.removeprefix("ordering, ours:").strip().split(" < ")) == ["F0", "G2", "G3", "G4", "P3"]
    assert "ordering, Kuehlkamp et al.: F0 < P3 < G4 < G2 < G3" in out
    contrast_rows = [line for line in out.splitlines() if line.startswith(("G3-P3 ", "G3-G2 ", "G2-F0 "))]
    assert contrast_rows and all(" agrees " in row or " differs " in row for row in contrast_rows), out


def test_qasper_and_wikitext_build_and_report_side_by_side(fidelity_run):
    """QASPER has native questions and is scored; WikiText has none until query generation, so it is built,
    verified, chunked and reported but not scored."""
    results = fidelity_run.workdir / "results/fidelity"
    scored = sorted(p.stem for p in (results / "qasper/scores/minilm/none").glob("*.parquet"))
    assert scored == ["F0", "G2", "G3", "G4", "P3"]
    assert not (results / "wikitext/scores").exists()
    wikitext_docs = pl.read_parquet(results / "wikitext/corpus/documents.parquet")
    assert wikitext_docs.height == 2
    assert not wikitext_docs["text"].str.contains(" @-@ ").any()

    report = (results / "report/report.md").read_text()
    assert "| statistic | qasper | wikitext |" in report
    assert "### qasper · minilm · reranker: none" in report
    assert "placebo:3" in report and "## Chunk sets (size matching)" in report
