"""The study plan as a library object (structbench.plan.study.Study), called without Snakemake: what a config runs and
drops, which run a BM25 condition reads, what an ``rrf`` condition fuses, the dose-response series and layer pairs,
the report's file lists; and the artifact paths (structbench.artifacts.layout.Layout), each spelled once."""

from __future__ import annotations

import copy
import inspect
import re
import subprocess
import sys

import pytest
import yaml
from conftest import REPO

from structbench import defaults
from structbench.artifacts.layout import Layout
from structbench.config import ConfigError, validate_config
from structbench.plan import report_files
from structbench.plan.study import Study
from structbench.report.table_registry import ReportInput

SCHEMA = REPO / "workflow/schemas/config.schema.yaml"
DEFAULT = yaml.safe_load((REPO / "config/config.yaml").read_text())
FLAT_GOLD = {"boundaries": "structural", "structure": "gold", "prefix": "none", "retrieval": "flat"}
# A small study on gold structure: the heading-path depths 0-3, BM25, hybrid dense + BM25 and a dual index.
CONDITIONS = {
    "F0": FLAT_GOLD | {"boundaries": "fixed"},
    "G2": FLAT_GOLD,
    "G3-d1": FLAT_GOLD | {"prefix": "path:1"},
    "G3-d2": FLAT_GOLD | {"prefix": "path:2"},
    "G3": FLAT_GOLD | {"prefix": "path:3"},
    "B2": FLAT_GOLD | {"retrieval": "bm25"},
    "H3": FLAT_GOLD | {"prefix": "path:3", "retrieval": "rrf:bm25"},
    "D3": FLAT_GOLD | {"prefix": "path:3", "retrieval": "rrf:none"},
}
CONTRASTS = {
    "G3-G2": {"treatment": "G3", "control": "G2", "family": "secondary"},
    "G3-B2": {"treatment": "G3", "control": "B2", "family": "exploratory"},
    "H3-G3": {"treatment": "H3", "control": "G3", "family": "exploratory"},
}


def study(**keys) -> Study:
    """The study of the default config with ``keys`` replaced (not merged), validated as the workflow does; new
    ``contrasts`` drop the default's ``subgroups`` (which name the default's contrasts) unless ``keys`` has its own."""
    config = copy.deepcopy(DEFAULT) | ({"subgroups": {}} if "contrasts" in keys else {}) | keys
    return Study.from_config(validate_config(config, SCHEMA))


def small(select=None) -> Study:
    return study(conditions=CONDITIONS, contrasts=CONTRASTS, select={"conditions": select} if select else {})


def test_a_selection_drops_the_contrasts_it_halves_and_names_what_each_misses():
    chosen = [name for name in CONDITIONS if name != "B2"]
    plan = small(chosen)
    assert list(plan.conditions) == chosen  # declared order
    assert list(plan.contrasts) == ["G3-G2", "H3-G3"]
    assert plan.dropped_contrasts == [
        {"name": "G3-B2", "family": "exploratory", "treatment": "G3", "control": "B2", "missing": ["B2"]}
    ]
    assert small().dropped_contrasts == []


def test_the_default_config_runs_every_declared_contrast():
    plan = study()
    assert list(plan.contrasts) == list(DEFAULT["contrasts"]) and plan.dropped_contrasts == []
    assert plan.conditions_retrieved_by("two_stage") == ["A4", "G4", "M4", "L4"]
    assert plan.used_inducers() == ["learned", "llm", "tiling"]
    assert plan.inducers_of_kind("segmentation") == ["tiling"] and plan.inducers_of_kind("learned") == ["learned"]


def test_a_bad_config_fails_when_the_study_is_built():
    with pytest.raises(ConfigError, match="select.conditions"):
        small(["G2", "nonesuch"])


def test_a_bm25_condition_reads_its_chunk_sets_one_bm25_run_unless_reranked():
    plan = small()
    bm25_run = "results/kb/runs/bm25/structural/gold.parquet"
    assert plan.condition_run("kb", "minilm", "none", "B2") == bm25_run
    assert plan.condition_run("kb", "other", "none", "B2") == bm25_run  # one file for every embedder cell
    assert plan.condition_run("kb", "minilm", "none", "G2") == "results/kb/runs/minilm/G2.parquet"
    assert plan.condition_run("kb", "minilm", "bge", "B2") == "results/kb/runs/minilm/reranked/bge/B2.parquet"
    assert plan.unreranked_runs("kb", "minilm", "B2") == bm25_run  # what the reranker rescores
    assert plan.score_inputs("kb", "minilm", "none", "B2") == {
        "runs": bm25_run,
        "queries": "results/kb/corpus/queries.parquet",
        "chunks": "results/kb/chunks/structural/gold.parquet",
        "texts": "results/kb/texts/structural/gold/none.parquet",
    }


def test_a_prefixed_bm25_condition_reads_the_bm25_run_of_its_own_text_set_beside_the_chunk_sets():
    """B3 (BM25 over G3's texts) reads a run of its text set, one per (corpus, chunk set, prefix) whatever the number
    of conditions and embedders that read it; B2's run keeps its path; a reranker rescores B3's run over B3's texts."""
    lexical = {
        "B3": FLAT_GOLD | {"prefix": "path:3", "retrieval": "bm25"},
        "B3-again": FLAT_GOLD | {"prefix": "path:3", "retrieval": "bm25"},  # the same text set: the same run
        "BP": FLAT_GOLD | {"prefix": "placebo:3", "retrieval": "bm25"},
        "BF": FLAT_GOLD | {"boundaries": "fixed", "prefix": "path:3", "retrieval": "bm25"},
    }
    plan = study(conditions=CONDITIONS | lexical, contrasts=CONTRASTS)
    b3_run = "results/kb/runs/bm25/structural/gold/path-3.parquet"
    assert (
        plan.condition_run("kb", "minilm", "none", "B3")
        == plan.condition_run("kb", "other", "none", "B3-again")
        == b3_run
    )
    assert plan.condition_run("kb", "minilm", "none", "BP") == "results/kb/runs/bm25/structural/gold/placebo-3.parquet"
    assert plan.condition_run("kb", "minilm", "none", "BF") == "results/kb/runs/bm25/fixed/gold/path-3.parquet"
    assert (
        plan.condition_run("kb", "minilm", "none", "B2") == "results/kb/runs/bm25/structural/gold.parquet"
    )  # unchanged
    assert plan.unreranked_runs("kb", "minilm", "B3") == b3_run
    assert plan.condition_run("kb", "minilm", "bge", "B3") == "results/kb/runs/minilm/reranked/bge/B3.parquet"
    assert plan.score_inputs("kb", "minilm", "none", "B3") == {
        "runs": b3_run,
        "queries": "results/kb/corpus/queries.parquet",
        "chunks": "results/kb/chunks/structural/gold.parquet",
        "texts": "results/kb/texts/structural/gold/path-3.parquet",  # G3's texts: what the run ranked
    }
    # the workflow's prefixed BM25 rule writes these prefixes; the probe stays on the chunk sets, unprefixed
    assert plan.bm25_prefixes() == ["path-3", "placebo-3"]
    assert small().bm25_prefixes() == []
    assert "results/kb/scores/bm25/fixed/gold.parquet" in plan.all_bm25_scores()
    assert not [path for path in plan.all_bm25_scores() if "path-3" in path]
    # BM25 embeds nothing, so the prefixed BM25 conditions add no embedding report
    assert [key for key in plan.all_embed_reports() if key[2] == "fixed/gold/path-3"] == []


def test_chromas_chunk_extents_bring_the_documents_to_both_score_steps():
    plain = small()
    assert "documents" not in plain.score_inputs("kb", "minilm", "none", "G2")
    assert "documents" not in plain.bm25_score_inputs("kb", "structural", "gold")
    placed = study(
        conditions=CONDITIONS,
        contrasts=CONTRASTS,
        metrics=DEFAULT["metrics"] | {"extra": ["span_IoU_sum@5", "span_precision_omega_chroma"]},
    )
    documents = "results/kb/corpus/documents.parquet"
    assert placed.score_inputs("kb", "minilm", "none", "G2")["documents"] == documents
    assert placed.bm25_score_inputs("kb", "structural", "gold") == {
        "runs": "results/kb/runs/bm25/structural/gold.parquet",
        "queries": "results/kb/corpus/queries.parquet",
        "chunks": "results/kb/chunks/structural/gold.parquet",
        "texts": "results/kb/texts/structural/gold/none.parquet",
        "documents": documents,
    }


def test_fusion_reads_the_partner_text_sets_vectors_and_the_chunk_sets_bm25_run():
    plan = small()
    assert plan.fusion_inputs("kb", "minilm", "H3") == {
        "partner_vectors": [],
        "partner_runs": ["results/kb/runs/bm25/structural/gold.parquet"],
    }
    assert plan.fusion_inputs("kb", "minilm", "D3") == {
        "partner_vectors": ["results/kb/vectors/minilm/structural/gold/none.npy"],
        "partner_runs": [],
    }
    assert plan.conditions_retrieved_by("rrf") == ["H3", "D3"]


def test_dose_series_derives_the_undeclared_depth_ladder_and_keeps_declared_ones_first():
    assert small().dose_series() == [
        {
            "name": "G2 → G3-d1 → G3-d2 → G3",
            "conditions": ["G2", "G3-d1", "G3-d2", "G3"],
            "depths": [0.0, 1.0, 2.0, 3.0],
            "declared": False,
        }
    ]
    declared = study().dose_series()[0]
    assert declared["name"] == "induced-depth" and declared["declared"]


def test_layer_pairs_compare_each_prefixed_condition_with_the_unprefixed_run_of_its_chunk_set():
    plan = small()
    assert plan.retrieval_layer_pairs() == [["G3-d1", "G2"], ["G3-d2", "G2"], ["G3", "G2"]]
    assert plan.retrieval_layer_conditions() == ["G3-d1", "G2", "G3-d2", "G3"]
    named = study(conditions=CONDITIONS, contrasts=CONTRASTS, report={"compare_runs": [["G3", "G3-d1"]]})
    assert named.retrieval_layer_pairs() == [["G3", "G3-d1"]]  # report.compare_runs wins


def test_the_report_reads_the_files_the_study_decides():
    plan = small()
    files = plan.report_files()
    assert files["scores"] == [f"results/kb/scores/minilm/none/{name}.parquet" for name in CONDITIONS]
    assert files["contrasts"] == ["results/contrasts/kb/minilm/none/contrasts.parquet"]  # one cell
    # the BM25 probe once per chunk set a condition ranks; only the fixed windows are size-matched
    assert files["bm25_scores"] == [
        "results/kb/scores/bm25/fixed/gold.parquet",
        "results/kb/scores/bm25/structural/gold.parquet",
    ]
    assert files["size_matches"] == ["results/kb/chunks/fixed/gold.size_match.json"]
    assert files["induction_stats"] == files["context_stats"] == files["querygen_stats"] == []
    assert len(files["text_reports"]) == 5  # B2, H3 and D3 share the text sets of G2 and G3
    assert plan.report_input_keys()["chunk_sets"] == [["kb", "fixed/gold"], ["kb", "structural/gold"]]
    # BM25 embeds nothing; the queries' vectors have a report of their own
    assert [key[2] for key in plan.all_embed_reports()] == [
        "fixed/gold/none",
        "structural/gold/none",
        "structural/gold/path-1",
        "structural/gold/path-2",
        "structural/gold/path-3",
        "queries",
    ]
    segmentation = [key for key in study().all_embed_reports() if key[2].endswith("(segmentation)")]
    assert segmentation == [("kb", "minilm", "induced-tiling (segmentation)")]


def test_a_report_input_naming_no_file_list_of_the_study_is_an_error(monkeypatch):
    monkeypatch.setattr(report_files, "report_inputs", lambda: {"scores": ReportInput("all_scorez", "parquet")})
    with pytest.raises(NameError, match="report input 'scores' names file list 'all_scorez'"):
        small().report_files()
    monkeypatch.setattr(report_files, "report_inputs", lambda: {"scores": ReportInput("paths", "parquet")})
    with pytest.raises(NameError, match="'paths', which Study does not hold"):
        small().report_files()  # a Study attribute, but no all_* file list


def test_each_artifact_has_a_path_of_its_own():
    """Every Layout method, called with the same keys, names a different file under the results folder."""
    layout = Layout("out")
    keys = {"corpus": "kb", "chunkset": "structural/gold", "textset": "structural/gold/none", "embedder": "e"}
    keys |= {"reranker": "r", "condition": "c", "structure": "gold", "shard": 0, "table": "t", "report": "bounds"}
    keys |= {"name": "n", "suffix": "s", "inducer": "i", "prefix": "path-3"}
    found = {}
    for name, method in inspect.getmembers(layout, inspect.ismethod):
        if name.startswith("_"):
            continue
        arguments = {parameter: keys[parameter] for parameter in inspect.signature(method).parameters}
        found[name] = method(**arguments)
    assert all(path.startswith("out/") for path in found.values())
    assert len(set(found.values())) == len(found), found


def test_the_study_imports_no_snakemake():
    code = "import sys, structbench.plan.study, structbench.artifacts.layout; print('snakemake' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout == "False\n"


def test_a_corpus_lists_its_source_files_and_reads_none_of_them(tmp_path):
    """The plan names a corpus's source files (the workflow hashes them: structbench.corpus.sources); a questions
    file not there yet is still listed, so Snakemake names it as a missing input."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "b.md").write_text("# B\n\nBeta.\n")
    (docs / "a.md").write_text("# A\n\nAlpha.\n")
    questions = tmp_path / "q.jsonl"
    plan = study(corpora={"kb": {"kind": "markdown", "path": str(docs), "questions": str(questions)}})
    assert plan.corpus_sources("kb") == [str(docs / "a.md"), str(docs / "b.md"), str(questions)]
    assert not hasattr(plan, "corpus_source_digest")


def test_the_decisive_questions_read_each_pairwise_contrasts_runs_as_scoring_read_them():
    readtime = {"GR": FLAT_GOLD | {"retrieval": "parent:2"}}
    contrasts = CONTRASTS | {
        "GR-G2": {"treatment": "GR", "control": "G2", "family": "readtime"},  # ranks spans: left out
        "depth": {"conditions": ["G2", "G3-d1", "G3"], "depths": [0, 1, 3]},  # a slope: left out
    }
    plan = study(conditions=CONDITIONS | readtime, contrasts=contrasts)
    assert [spec["name"] for spec in plan.decisive_contrasts()] == ["G3-G2", "G3-B2", "H3-G3"]
    assert plan.decisive_conditions() == ["G3", "G2", "B2", "H3"]
    inputs = plan.decisive_inputs("kb", "minilm", "none")
    assert inputs["runs"] == [
        "results/kb/runs/minilm/G3.parquet",
        "results/kb/runs/minilm/G2.parquet",
        "results/kb/runs/bm25/structural/gold.parquet",  # the BM25 condition's one run, as scoring reads it
        "results/kb/runs/minilm/H3.parquet",
    ]
    assert inputs["texts"][1] == inputs["texts"][2] == "results/kb/texts/structural/gold/none.parquet"
    assert inputs["scores"][0] == "results/kb/scores/minilm/none/G3.parquet"
    assert (inputs["queries"], inputs["documents"]) == (
        "results/kb/corpus/queries.parquet",
        "results/kb/corpus/documents.parquet",
    )
    # the schema's defaults are structbench.defaults' (the API's and the command's)
    settings = {"per_side": defaults.DECISIVE_PER_SIDE, "top_k": defaults.DECISIVE_TOP_K}
    assert plan.decisive_settings() == settings | {"primary_metric": "cov_nDCG@10"} and settings["per_side"] == 5
    files = plan.report_files()
    assert files["decisive"] == ["results/kb/diagnostics/minilm/none/decisive_questions.parquet"]
    assert files["decisive_flips"] == ["results/kb/diagnostics/minilm/none/decisive_flips.parquet"]
    # without a pairwise contrast among chunk rankings, no step runs and the report reads nothing
    alone = study(conditions=CONDITIONS | readtime, contrasts={"GR-G2": contrasts["GR-G2"]})
    assert alone.decisive_contrasts() == [] and alone.report_files()["decisive"] == []


@pytest.mark.parametrize(
    "decisive, message",
    [
        ({"per_side": 0}, "report.decisive.per_side: 0 is less than the minimum of 1"),
        ({"top_k": 101}, "report.decisive.top_k: 101 is greater than the maximum of 100"),
        ({"topk": 3}, "report.decisive.topk: unknown key; did you mean 'top_k'?"),
    ],
)
def test_a_bad_decisive_setting_is_named_at_its_key(decisive, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        study(report={"decisive": decisive})
