"""The report's subgroup table and forest (structbench.report.subgroup_tables, report.figures): the statistics step's
numbers as they are, in declared contrast order; a tested interaction's Holm p and marks; omitted without a
subgroup analysis; the forest drawn per contrast and cell."""

import polars as pl
from report_testing import CONTRAST_SPECS, B, synthetic_inputs, synthetic_scores, synthetic_subgroups

from structbench.report.catalog import build_tables
from structbench.report.figures import FIGURES, render_figures
from structbench.report.formatting import format_p
from structbench.report.markdown import render_markdown
from structbench.report.table_registry import Omitted, Table


def subgroup_table_of(inputs):
    (table,) = [t for t in build_tables(inputs) if t.spec.name == "subgroups"]
    return table


def test_the_table_is_the_statistics_steps_rows_in_declared_order():
    inputs = synthetic_inputs()
    table = subgroup_table_of(inputs)
    assert isinstance(table, Table)
    data = table.content.data
    keys = ["corpus", "contrast", "moderator", "kind", "group", "level"]
    assert data.drop("comparison", "holm_significant").sort(keys).equals(inputs.subgroups.sort(keys))
    pairwise = [spec["name"] for spec in CONTRAST_SPECS if "treatment" in spec]
    alpha = data.filter(pl.col("corpus") == "alpha")
    assert alpha["contrast"].unique(maintain_order=True).to_list() == pairwise
    block = table.content.blocks[0]
    assert block.heading == "alpha · e5 · reranker: none"
    first = block.frame.row(0, named=True)
    assert first["contrast"] == "G3-G2: G3 − G2" and first["subgroup"] == "A: depth ≥ 2"
    interaction = block.frame.row(2, named=True)
    assert interaction["subgroup"] == "interaction A − B: depth ≥ 2 − depth 1"
    # twelve documents a corpus: every side is in fewer than 20, so nothing is tested
    assert interaction["p"] == "n/a" and interaction["p (Holm)"] == "not testable"
    assert table.content.notes[0].startswith("24 interactions: 0 tested, 24 not testable")


def test_a_tested_interaction_shows_its_holm_p_and_marks():
    scores = synthetic_scores(corpora=("alpha",), n_docs=44, per_doc=4)
    subgroups = synthetic_subgroups(scores)
    inputs = synthetic_inputs(subgroups=subgroups)
    frame = subgroup_table_of(inputs).content.blocks[0].frame
    tested = subgroups.filter(pl.col("testable") & (pl.col("kind") == "interaction"))
    # 22 documents of each depth, and every document holds an anchored question, each type and both span counts
    assert tested.height == 3 * 4
    shown = frame.filter(pl.col("subgroup").str.starts_with("interaction"))
    assert shown.height == 12 and "not testable" not in shown["p (Holm)"].to_list()
    for row, stats in zip(shown.iter_rows(named=True), tested.iter_rows(named=True)):
        assert row["p"] == format_p(stats["p"], B) and row["MC s.e."] == f"{stats['p_mcse']:.4f}"
        assert row["p (Holm)"].startswith(format_p(stats["p_holm"], B))
        assert ("n.s." in row["p (Holm)"]) is (stats["p_holm"] >= 0.05)
        assert ("fragile" in row["p (Holm)"]) is stats["holm_fragile"]
    # the path's offset is the same in every subgroup: no interaction comes out Holm-significant here
    assert all("n.s." in text for text in shown["p (Holm)"].to_list())


def test_without_a_subgroup_analysis_the_table_and_its_forest_are_omitted():
    inputs = synthetic_inputs(subgroups=pl.DataFrame())
    table = subgroup_table_of(inputs)
    assert isinstance(table, Omitted)
    assert table.reason == "no subgroup analysis in this config (subgroups: moderators and contrasts)"
    (forest,) = render_figures(build_tables(inputs), inputs, [FIGURES["forest_subgroups"]])
    assert isinstance(forest, Omitted) and forest.reason == table.reason
    markdown = render_markdown(build_tables(inputs), [], files={}, figure_paths={}, primary_metric="cov_nDCG@10")
    assert "## Subgroups (moderators)" in markdown and table.reason in markdown


def test_the_forest_has_a_panel_per_contrast_and_cell():
    inputs = synthetic_inputs()
    (forest,) = render_figures(build_tables(inputs), inputs, [FIGURES["forest_subgroups"]])
    assert forest.png.startswith(b"\x89PNG")
    width, height = int.from_bytes(forest.png[16:20], "big"), int.from_bytes(forest.png[20:24], "big")
    # three contrasts side by side, two corpora one above the other
    assert width > 3 * 500 and height > 2 * 300
