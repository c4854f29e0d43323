"""The fidelity run's config and its printer: the corpus file comes only from the command line, the plan
is the four arms on QASPER, and compare.py matches our conditions to Kuehlkamp et al.'s and checks orderings.
(The run itself is ``make fidelity``, which .ci/run calls after the suite.)"""

import importlib.util
import sys

import pytest
import yaml
from conftest import REPO, run_snakemake
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
