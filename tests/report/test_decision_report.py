"""The report's first table, the decision (structbench.report.decision_table): the statistics step's ranking with each
condition's cost beside it, ties said as ties, the leader as a call, the power and ceiling notes."""

from __future__ import annotations

import numpy as np
import polars as pl
from report_testing import chunk_table, synthetic_inputs

from structbench.chunking.tiling import bounds_file
from structbench.defaults import T_MAX, T_MIN
from structbench.report.catalog import TABLE_ORDER, TABLES, build_tables
from structbench.report.markdown import render_markdown
from structbench.report.table_registry import Omitted, ReportInputs, Table
from structbench.stats.decision import decision_table

AXES = {"boundaries": "structural", "structure": "gold", "prefix": "path:3", "retrieval": "flat"}
CONDITIONS = {
    "G3": AXES,
    "CX": AXES | {"prefix": "context"},
    "T": AXES | {"retrieval": "toc"},
    "I": AXES | {"structure": "induced:llm", "prefix": "none"},
}
OFFSETS = {"G3": 0.0, "CX": 0.0, "T": -0.2, "I": -0.1}
B = 500


def scores(n_docs: int = 24) -> pl.DataFrame:
    rng = np.random.default_rng(5)
    base = rng.uniform(0.3, 0.8, size=n_docs)
    base[:6] = 1.0  # six queries at the ceiling under G3
    rows = []
    for condition, offset in OFFSETS.items():
        noise = rng.normal(0, 0.03, size=n_docs)
        if condition == "CX":  # G3 + 0.02 on even documents, − 0.021 on odd ones: a mean 0.003 below, tied
            noise = np.where(np.arange(n_docs) % 2 == 0, 0.02, -0.021)
        for d in range(n_docs):
            value = base[d] if condition == "G3" else float(np.clip(base[d] + offset + noise[d], 0, 1))
            rows.append(
                {"qid": f"q{d:02d}", "doc_id": f"d{d:02d}", "cov_nDCG@10": value, "condition": condition}
                | {"corpus": "kb", "embedder": "e5", "reranker": "none"}
            )
    return pl.DataFrame(rows)


def decision_inputs() -> ReportInputs:
    cell = scores()
    chunks = chunk_table([100, 120, 80, 150, 90, 60])
    return ReportInputs(
        scores=cell,
        contrasts=pl.DataFrame(),
        conditions=CONDITIONS,
        primary_metric="cov_nDCG@10",
        bootstrap_iters=B,
        decisions=decision_table(cell, CONDITIONS, "cov_nDCG@10", n_boot=B, seed=0),
        chunk_sets={("kb", "structural/gold"): chunks},
        chunk_bounds={("kb", "structural/gold"): bounds_file(chunks, t_max=T_MAX, t_min=T_MIN)},
        text_reports=[
            {"corpus": "kb", "boundaries": "structural", "structure": "gold", "prefix": "path:3"}
            | {"mean_prefix_tokens": 10.0}
        ],
        embed_reports=[{"corpus": "kb", "embedder": "e5", "text set": "structural/gold/path-3", "vector_bytes": 1}],
        context_stats=[
            {"corpus": "kb", "chunk set": "structural/gold", "llm": {"requests": 6, "prompt_tokens": 900}}
            | {"generated_tokens": 0}
        ],
        induction_stats=[
            {"corpus": "kb", "inducer": "llm", "llm": {"requests": 4, "prompt_tokens": 3000, "generated_tokens": 400}}
        ],
    )


def test_the_decision_is_the_reports_first_table():
    assert TABLE_ORDER[0] == "decision"
    assert build_tables(synthetic_inputs())[0].spec.name == "decision"


def test_the_decision_ranks_with_costs_ties_and_the_leader_as_a_call():
    inputs = decision_inputs()
    (table,) = build_tables(inputs, [TABLES["decision"]])
    assert isinstance(table, Table)
    data = table.content.data
    assert data["condition"].to_list() == ["G3", "CX", "I", "T"]
    (block,) = table.content.blocks
    assert block.heading == "kb · e5 · reranker: none · ranked on coverage-nDCG@10"
    assert block.frame.columns == [
        "rank",
        "condition",
        "coverage-nDCG@10",
        "95% CI",
        "vs leader",
        "index tokens",
        "vectors",
        "LLM calls",
        "LLM tokens",
    ]
    rows = {row["condition"]: row for row in block.frame.rows(named=True)}
    assert rows["G3"]["vs leader"] == "leader"
    p = data.filter(pl.col("condition") == "CX")["p_holm"][0]
    assert p >= 0.05 and rows["CX"]["vs leader"] == f"tied with the leader (p = {p:.3f})"
    assert rows["T"]["vs leader"] == "below the leader (p < 0.002)"
    # the index of G3's text set: 600 content tokens + 6 chunks × 10 prefix tokens, 6 vectors
    assert (rows["G3"]["index tokens"], rows["G3"]["vectors"]) == (660, 6)
    assert rows["CX"]["index tokens"] is None  # its text set was not embedded in this input
    assert (rows["G3"]["LLM calls"], rows["G3"]["LLM tokens"]) == (0, 0)
    assert (rows["CX"]["LLM calls"], rows["CX"]["LLM tokens"]) == (6, 900)
    assert (rows["I"]["LLM calls"], rows["I"]["LLM tokens"]) == (4, 3400)
    assert (rows["T"]["LLM calls"], rows["T"]["LLM tokens"]) == (0, 0)
    notes = "\n".join(table.content.notes)
    assert "leader G3: `structbench.chunk_markdown_file(path, depth=3)`; tied with it: CX." in notes
    assert "with 24 queries over 24 documents" in notes
    assert "MDE = 2.80 × SE" in notes and "Only" not in notes  # 24 documents: enough clusters
    assert "ceiling: 25.0% of the leader's queries score the maximum (1)" in notes
    assert "T's LLM usage is not recorded for the TOC router's query-time calls" in notes


def test_the_power_note_warns_of_few_clusters():
    inputs = decision_inputs()
    cell = scores().filter(pl.col("doc_id") < "d08")
    inputs.scores = cell
    inputs.decisions = decision_table(cell, CONDITIONS, "cov_nDCG@10", n_boot=B, seed=0)
    (table,) = build_tables(inputs, [TABLES["decision"]])
    notes = "\n".join(table.content.notes)
    assert "with 8 queries over 8 documents" in notes
    assert "Only 8 documents were resampled: below 20 clusters" in notes
    assert "reads the smallest token budget" not in notes  # no read-time condition


def test_a_budget_reading_is_said_under_the_table():
    inputs = decision_inputs()
    cell = scores().with_columns(pl.col("cov_nDCG@10").alias("budget_cov@512"))
    conditions = CONDITIONS | {"T": AXES | {"retrieval": "parent:2"}}
    inputs.scores, inputs.conditions = cell, conditions
    inputs.decisions = decision_table(cell, conditions, "cov_nDCG@10", n_boot=B, seed=0)
    (table,) = build_tables(inputs, [TABLES["decision"]])
    assert table.content.blocks[0].heading.endswith("ranked on budget coverage@512")
    assert "a unit longer than 512 tokens cannot be read within it" in "\n".join(table.content.notes)


def test_the_call_carries_the_size_its_chunk_set_was_held_to():
    inputs = decision_inputs()
    chunks = inputs.chunk_sets[("kb", "structural/gold")]
    inputs.chunk_bounds = {("kb", "structural/gold"): bounds_file(chunks, t_max=500, t_min=60)}
    (table,) = build_tables(inputs, [TABLES["decision"]])
    assert "leader G3: `structbench.chunk_markdown_file(path, depth=3, t_max=500)`" in "\n".join(table.content.notes)


def test_a_leader_the_api_cannot_express_names_the_axes_that_need_the_workflow():
    inputs = decision_inputs()
    decisions = inputs.decisions.with_columns(
        rank=pl.when(pl.col("condition") == "G3").then(2).when(pl.col("condition") == "CX").then(1).otherwise("rank")
    )
    inputs.decisions = decisions
    (table,) = build_tables(inputs, [TABLES["decision"]])
    assert "leader CX: needs the workflow: prefix context" in "\n".join(table.content.notes)


def test_the_decision_renders_in_markdown_and_is_omitted_without_the_statistics_table():
    inputs = decision_inputs()
    tables = build_tables(inputs, [TABLES["decision"]])
    markdown = render_markdown(tables, [], files={}, figure_paths={}, primary_metric="cov_nDCG@10", bootstrap_iters=B)
    assert "## Decision: which condition on this corpus" in markdown
    assert "| 1 | G3 |" in markdown and "structbench.chunk_markdown_file(path, depth=3)" in markdown
    inputs.decisions = pl.DataFrame()
    (omitted,) = build_tables(inputs, [TABLES["decision"]])
    assert isinstance(omitted, Omitted) and omitted.reason == "the statistics step wrote no decision table"
