"""Practitioners' chunkers as conditions (boundaries: external:<name>): the plan of config/chunkers.yaml,
named errors before any job, and one real run on the knowledge base where external chunks are located in
the flat text, carry the path of the section holding their first character, take path prefixes and
two-stage routing, are size-matched and reported."""

import json

import polars as pl
import pytest
from conftest import REPO, kb_config, run_snakemake
from test_config import layered
from test_workflow import planned_jobs

from structbench.chunking.tiling import assert_tiling
from structbench.config import ConfigError
from structbench.crosskeys import check_cross_keys

pytestmark = pytest.mark.workflow


def test_dry_run_of_the_chunkers_config_plans_every_chunker_once(tmp_path):
    config = kb_config(tmp_path, whole_default=True)
    result = run_snakemake(tmp_path, "-n", "--configfile", str(config), str(REPO / "config/chunkers.yaml"))
    assert result.returncode == 0, result.stderr
    jobs = planned_jobs(result.stdout + result.stderr)
    # Eight chunkers (four libraries, each at t_max and size-matched), each one chunk set on gold structure;
    # 21 conditions, each its own text set (16 external, F0, G2, G3, M2, M3).
    assert jobs["external_chunks"] == 8 and jobs["score"] == 21 and jobs["embed_texts"] == 21
    assert jobs["structural_chunks"] == 2 and jobs["fixed_chunks"] == 1 and "induce_structure" not in jobs


NOSUCH_CHUNKER = "conditions: {X0: {boundaries: 'external:nosuch', structure: gold, prefix: none, retrieval: flat}}\n"


@pytest.mark.parametrize(
    "extra, selected, named",
    [
        (
            NOSUCH_CHUNKER,
            ["X0"],
            "conditions.X0.boundaries = 'external:nosuch' names chunker 'nosuch', which config.chunkers does not",
        ),
        (
            "chunkers: {lc: {library: llamaindex, kind: recursive}}\n",
            [],
            "chunkers.lc.library: 'llamaindex' is not one of",
        ),
    ],
)
def test_bad_chunker_config_stops_the_dry_run_naming_it(tmp_path, extra, selected, named):
    config = kb_config(tmp_path, extra, select={"conditions": selected})
    result = run_snakemake(tmp_path, "-n", "--configfile", str(config))
    assert result.returncode != 0
    assert named in result.stdout + result.stderr


def test_a_declared_condition_the_selection_leaves_out_asks_nothing_of_the_run(tmp_path):
    """X0 names no declared chunker, but select.conditions runs the gold arm only: the plan stands."""
    result = run_snakemake(tmp_path, "-n", "--configfile", str(kb_config(tmp_path, NOSUCH_CHUNKER)))
    assert result.returncode == 0, result.stderr[-2000:]
    assert "external_chunks" not in planned_jobs(result.stdout + result.stderr)


def test_a_missing_chunker_library_stops_at_start_up_with_the_install_command(monkeypatch):
    import structbench.chunking.external.chunker_spec as external

    # The one boundary faked: whether the library imports (it is installed here).
    monkeypatch.setattr(
        external, "missing_libraries", lambda specs: [f"chunkers.{s.name}: not installed" for s in specs]
    )
    config = layered(None)
    config["chunkers"] = {"lc": {"library": "langchain", "kind": "recursive", "size_match": False, "options": {}}}
    config["conditions"]["X0"] = {
        "boundaries": "external:lc",
        "structure": "gold",
        "prefix": "none",
        "retrieval": "flat",
    }
    config["select"] = {"conditions": ["X0"]}
    with pytest.raises(ConfigError, match="chunkers.lc: not installed"):
        check_cross_keys(config, ["cov_nDCG@10"])
    # Declared but not selected: nothing to install.
    config["select"] = {"conditions": ["G2"]}
    check_cross_keys(config, ["cov_nDCG@10"])


RUN = """
chunkers:
  semchunk: {library: semchunk, kind: chunkerify}
  text_splitter_matched: {library: text_splitter, kind: markdown, size_match: true}
conditions:
  SC0: {boundaries: "external:semchunk", structure: gold, prefix: none, retrieval: flat}
  TSm3: {boundaries: "external:text_splitter_matched", structure: gold, prefix: "path:3", retrieval: flat}
  TSm4: {boundaries: "external:text_splitter_matched", structure: gold, prefix: "path:3", retrieval: two_stage}
contrasts:
  SC0-G2: {treatment: SC0, control: G2, family: chunkers}
  TSm3-G3: {treatment: TSm3, control: G3, family: chunkers}
stats: {bootstrap_iters: 1000, primary_metric: cov_nDCG@10, mixedlm: false}
"""


def test_external_chunkers_run_end_to_end_with_paths_routing_and_size_matching(tmp_path):
    config = kb_config(tmp_path, RUN, select={"conditions": ["SC0", "TSm3", "TSm4"]})
    result = run_snakemake(tmp_path, "--cores", "2", "--configfile", str(config))
    assert result.returncode == 0, result.stderr[-4000:]
    results = tmp_path / "results/kb"
    documents = pl.read_parquet(results / "corpus/documents.parquet")
    sections = pl.read_parquet(results / "structure/gold/sections.parquet")
    for chunkset in ("external-semchunk/gold", "external-text_splitter_matched/gold"):
        chunks = pl.read_parquet(results / f"chunks/{chunkset}.parquet")
        assert_tiling(documents, chunks)
        # A chunk's path is the path of the section holding its first character.
        located = chunks.join(sections.select("doc_id", "section_id", "path"), on=["doc_id", "section_id"])
        assert located.height == chunks.height
        assert (located["path"] == located["path_right"]).all()
    texts = pl.read_parquet(results / "texts/external-text_splitter_matched/gold/path-3.parquet")
    assert texts["prefix"].str.len_chars().min() > 0  # every KB chunk lies under a heading
    # Two-stage routing ranks the same vectors as TSm3 and writes its routing table.
    assert (results / "runs/minilm/TSm4.routing.parquet").exists()
    contrasts = pl.read_parquet(tmp_path / "results/contrasts/kb/minilm/none/contrasts.parquet")
    chunkers = contrasts.filter(pl.col("label") == "chunkers", pl.col("metric") == "cov_nDCG@10")
    assert sorted(chunkers["contrast"]) == ["SC0-G2", "TSm3-G3"] and chunkers["p_holm"].is_finite().all()
    matched = json.loads((results / "chunks/external-text_splitter_matched/gold.chunker.json").read_text())
    assert abs(matched["difference"]) < abs(
        json.loads((results / "chunks/external-semchunk/gold.chunker.json").read_text())["mean_tokens"]
        - matched["reference_mean_tokens"]
    )
    report = (tmp_path / "results/report/report.md").read_text()
    assert "external-text_splitter_matched/gold" in report and "## Chunk sets (size matching)" in report
