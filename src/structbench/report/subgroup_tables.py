"""The subgroup table (docs/method.md §11, "Subgroups (moderators)"): for which questions a contrast's effect holds.

The statistics step's subgroup tables (:mod:`structbench.stats.subgroups`) formatted, one block per cell: each
contrast's moderators, their sides (A, B) and the levels of a side holding several, each with Δ, its 95% CI and
the questions / documents it rests on, then the interaction Δ_A − Δ_B with its CI, p, Monte-Carlo error, Holm p
over the contrast's moderators and dz. The report draws no bootstrap of its own.
"""

from __future__ import annotations

import polars as pl

from structbench.artifacts.cells import CELL
from structbench.defaults import ALPHA
from structbench.report.formatting import cell_heading, format_p, signed
from structbench.report.table_registry import Omit, ReportInputs, TableContent, blocks_by, report_table, require_scores
from structbench.stats.subgroups import MIN_SUBGROUP_DOCS

ROW_MARKS = {"subgroup": "", "level": "· ", "interaction": "interaction "}


def subgroup_rows(inputs: ReportInputs) -> pl.DataFrame:
    """The statistics step's rows in report order: by cell, then contrast in declared order, moderator and row as
    the step wrote them; with what each contrast compares and whether each interaction is Holm-significant."""
    data = inputs.subgroups
    order = {spec["name"]: i for i, spec in enumerate(inputs.contrast_specs)}
    significant = pl.col("testable") & pl.col("p_holm").is_not_nan() & (pl.col("p_holm") < ALPHA)
    return (
        data.with_row_index("_row")
        .with_columns(
            (pl.col("treatment") + " − " + pl.col("control")).alias("comparison"),
            (significant & (pl.col("kind") == "interaction")).fill_null(False).alias("holm_significant"),
            pl.col("contrast").replace_strict(order, default=len(order), return_dtype=pl.Int64).alias("_order"),
        )
        .sort(*CELL, "_order", "_row")
        .drop("_row", "_order")
    )


def _holm_text(row: dict, B: int | None) -> str:
    if row["kind"] != "interaction":
        return ""
    if not row["testable"]:
        return "not testable"
    text = format_p(row["p_holm"], B)
    marks = [mark for mark, on in (("n.s.", not row["holm_significant"]), ("fragile", row["holm_fragile"])) if on]
    return f"{text} ({', '.join(marks)})" if marks else text


@report_table(
    "subgroups",
    "Subgroups (moderators)",
    "For which questions a contrast's effect holds (config subgroups; docs/method.md §11). Each moderator splits the "
    "contrast's paired questions into two sides, A and B (tree_depth: the document's deepest heading level, ≥ 2 "
    "against 1; anchoring: the question shares an analyzer token with the heading path of a gold section holding "
    "its evidence; qtype: the corpus's reference type against the rest, each type a level; evidence_spans: one "
    "against two or more). Δ is the mean paired per-question difference within a side or level; the interaction "
    "is Δ_A − Δ_B. CIs and p come from the contrast's own document-clustered bootstrap draws (both sides' means "
    f"over the drawn documents' questions); Holm runs over the moderators of each contrast. A side in fewer than "
    f"{MIN_SUBGROUP_DOCS} documents makes its moderator not testable (reported, not tested); dz is the interaction "
    "over the standard deviation of all the contrast's per-question deltas.",
)
def subgroups_table(inputs: ReportInputs) -> TableContent:
    require_scores(inputs)
    if inputs.subgroups.is_empty():
        raise Omit("no subgroup analysis in this config (subgroups: moderators and contrasts)")
    data = subgroup_rows(inputs)
    B = inputs.bootstrap_iters
    shown = data.select(
        *CELL,
        (pl.col("contrast") + ": " + pl.col("comparison")).alias("contrast"),
        "moderator",
        pl.struct("kind", "group", "level")
        .map_elements(
            lambda r: ROW_MARKS[r["kind"]] + (r["level"] if r["kind"] == "level" else f"{r['group']}: {r['level']}"),
            return_dtype=pl.String,
        )
        .alias("subgroup"),
        pl.col("delta").map_elements(signed, return_dtype=pl.String).alias("Δ"),
        pl.struct("ci_low", "ci_high")
        .map_elements(lambda ci: f"[{signed(ci['ci_low'])}, {signed(ci['ci_high'])}]", return_dtype=pl.String)
        .alias("95% CI"),
        pl.format("{} / {}", "n_queries", "n_docs").alias("queries / docs"),
        pl.struct("kind", "p")
        .map_elements(lambda r: format_p(r["p"], B) if r["kind"] == "interaction" else "", return_dtype=pl.String)
        .alias("p"),
        pl.col("p_mcse").map_elements(lambda v: "" if v != v else f"{v:.4f}", return_dtype=pl.String).alias("MC s.e."),
        pl.struct("kind", "testable", "p_holm", "holm_significant", "holm_fragile")
        .map_elements(lambda r: _holm_text(r, B), return_dtype=pl.String)
        .alias("p (Holm)"),
        pl.col("dz").map_elements(lambda v: "" if v != v else signed(v, 2), return_dtype=pl.String).alias("dz"),
        "note",
    )
    blocks = blocks_by(shown, CELL, lambda c, e, r: cell_heading(c, e, r))
    return TableContent(data, blocks, _notes(data))


def _notes(data: pl.DataFrame) -> tuple[str, ...]:
    """How many interactions were tested, not testable and Holm-significant; replicates left out for an empty side."""
    interactions = data.filter(pl.col("kind") == "interaction")
    tested = interactions.filter(pl.col("testable"))
    notes = [
        f"{interactions.height} interactions: {tested.height} tested, {interactions.height - tested.height} not "
        f"testable (a side in fewer than {MIN_SUBGROUP_DOCS} documents: their CIs are descriptive, a clustered "
        f"bootstrap over so few documents gives too narrow an interval); "
        f"{interactions['holm_significant'].sum()} Holm-significant at {ALPHA:g}."
    ]
    dropped = data.filter(pl.col("n_empty_resamples") > 0)
    if dropped.height:
        notes.append(
            f"{dropped.height} rows left out resamples that drew no question of a side (n_empty_resamples in the "
            "table's data): their CI and p are over the other resamples."
        )
    return tuple(notes)
