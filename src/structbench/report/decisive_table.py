"""The report's decisive questions (docs/method.md §15, "Decisive questions"): the table that shows, for every pairwise
contrast of each cell, the questions it moved most and both rankings of each, from what the per-cell step computed
(:mod:`structbench.report.decisive`). The flip counts are its block; each contrast, and within it each question, is a
collapsible section (:class:`~structbench.report.table_registry.Details`) with the two rankings side by side."""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from structbench.artifacts.cells import CELL
from structbench.metrics.registry import metric_label
from structbench.report.decisive import (
    CONTENT_CHARS,
    CONTROL,
    EVIDENCE_CHARS,
    PREFIX_CHARS,
    QUESTION_CHARS,
    TREATMENT,
    WIN,
    evidence_mark,
)
from structbench.report.formatting import cell_heading, signed
from structbench.report.table_registry import (
    Block,
    Details,
    Omit,
    ReportInputs,
    TableContent,
    report_table,
    require_scores,
)

FLIP_COLUMNS = ("n_queries", "wins", "ties", "losses", "cutoff", "enters", "leaves", "stays_in", "stays_out")


@report_table(
    "decisive_questions",
    "Decisive questions",
    "For every pairwise contrast in each cell, the questions it moved most: the largest wins and the largest "
    "losses on the contrast's leading metric (per-question Δ, treatment − control; equal Δ in qid order), each "
    "with its question, type and evidence and, side by side, the top chunks of both rankings: the prefix the "
    "condition prepended (heading path, placebo path or situating context) apart from the content, and whether "
    "the chunk is evidence (relevant under the binary rule, or partial; its share of the chunk and of the "
    "question's evidence, spans weighted as coverage-nDCG weighs them). Above them, per contrast, how many "
    "questions' first evidence chunk enters or leaves the top 10. Click a contrast, then a question, to open it.",
)
def decisive_table(inputs: ReportInputs) -> TableContent:
    require_scores(inputs)
    if inputs.decisive_flips.is_empty():
        pairwise = [spec for spec in inputs.contrast_specs if spec.get("treatment")]
        raise Omit(
            "no pairwise contrast compares two rankings of chunks in this config (a read-time run ranks spans)"
            if pairwise
            else "no pairwise contrast is run in this config"
        )
    order = {spec["name"]: i for i, spec in enumerate(inputs.contrast_specs)}
    rank = pl.col("contrast").replace_strict(order, default=len(order), return_dtype=pl.Int64)
    flips = inputs.decisive_flips.sort([*CELL, rank, "contrast"])
    keys = [*CELL, "contrast"]
    questions = inputs.decisive.select([*CELL, *[c for c in inputs.decisive.columns if c not in CELL]])
    data = questions.join(flips.select(*keys, *FLIP_COLUMNS), on=keys, how="left", maintain_order="left")
    details = tuple(
        contrast_details(flip, questions.filter(*(pl.col(key) == flip[key] for key in keys)))
        for flip in flips.iter_rows(named=True)
    )
    notes = (
        "Δ and the scores are the statistics step's per-query scores on the contrast's leading metric; a question "
        "whose Δ is 0 decides nothing and is never shown. The first evidence chunk is the highest-ranked chunk that "
        "is relevant under the binary rule (1 / its rank is the question's reciprocal rank), over the whole run.",
        "Evidence marks: relevant (the binary rule holds for some gold span), partial (the chunk shares characters "
        "with the evidence, too few for the rule), – (none), other document (a chunk of another document); the two "
        "shares are the chunk's characters inside the evidence over its length, and over the evidence's, each span "
        "weighted 1/S.",
        f"Excerpts: content at most {CONTENT_CHARS} characters, prefix {PREFIX_CHARS}, question {QUESTION_CHARS}, "
        f"evidence {EVIDENCE_CHARS} (whitespace runs shown as one space); the Markdown report lists the questions "
        "only; every shown chunk is a row of the data files.",
    )
    return TableContent(data, (Block("", flips_frame(flips)),), notes, details=details)


def flips_frame(flips: pl.DataFrame) -> pl.DataFrame:
    """The flip counts as shown: one row per cell and contrast."""
    return flips.select(
        *CELL,
        pl.format("{}: {} − {}", "contrast", "treatment", "control").alias("contrast"),
        pl.col("metric").map_elements(metric_label, return_dtype=pl.String).alias("metric"),
        pl.col("n_queries").alias("queries"),
        pl.format("{}/{}/{}", "wins", "ties", "losses").alias("W/T/L"),
        pl.format("{} (of top {})", "enters", "cutoff").alias("first evidence enters"),
        pl.col("leaves").alias("leaves"),
        pl.col("stays_in").alias("stays in"),
        pl.col("stays_out").alias("stays out"),
    )


def contrast_details(flip: Mapping, rows: pl.DataFrame) -> Details:
    """One contrast in one cell: its line (counts, flips) and one section per decisive question, wins first."""
    label = metric_label(flip["metric"])
    summary = (
        f"{flip['contrast']}: {flip['treatment']} − {flip['control']} · "
        f"{cell_heading(flip['corpus'], flip['embedder'], flip['reranker'])} · {label}: "
        f"{_count(flip['wins'], 'win')}, {_count(flip['ties'], 'tie')}, {_count(flip['losses'], 'loss', 'losses')}; "
        f"first evidence enters the top {flip['cutoff']} on {_count(flip['enters'], 'question')}, "
        f"leaves it on {flip['leaves']}"
    )
    children = tuple(
        question_details(group, label) for _, group in rows.group_by("outcome", "position", maintain_order=True)
    )
    if not children:
        why = (
            "Every paired question scored the same under both" if flip["n_queries"] else "No question scored under both"
        )
        return Details(summary, (f"{why}: no question decides it.",))
    return Details(summary, children=children)


def question_details(rows: pl.DataFrame, label: str) -> Details:
    """One decisive question: its line, its text, evidence and scores, and both rankings side by side by rank."""
    first = rows.row(0, named=True)
    treatment, control = first["treatment"], first["control"]
    outcome = "Win" if first["outcome"] == WIN else "Loss"
    head = f"{outcome} {first['position']} · Δ {signed(first['delta'], 3)} · {first['qid']} ({first['qtype']})"
    summary = f"{head}: {first['question']}"
    ranks = (
        f"first evidence chunk: rank {_rank(first['first_evidence_treatment'])} under {treatment}, "
        f"{_rank(first['first_evidence_control'])} under {control}"
    )
    lines = (
        f"Question ({first['qtype']}, document {first['doc_id']}): {first['question']}",
        f"Evidence: {first['evidence']}",
        f"{label}: {first['score_treatment']:.3f} under {treatment}, {first['score_control']:.3f} under {control} "
        f"(Δ {signed(first['delta'], 3)}); {ranks}.",
    )
    return Details(summary, lines, side_by_side(rows), brief=f"{summary} · {ranks}")


def side_by_side(rows: pl.DataFrame) -> pl.DataFrame:
    """One question's two rankings, one row per rank: each arm's prefix, content excerpt and evidence mark."""
    arms = []
    for arm, first_column in ((TREATMENT, "first_evidence_treatment"), (CONTROL, "first_evidence_control")):
        ranked = rows.filter((pl.col("arm") == arm) & pl.col("rank").is_not_null())
        name = rows.filter(pl.col("arm") == arm)["condition"][0]
        marks = [evidence_mark(row, row[first_column]) for row in ranked.iter_rows(named=True)]
        arms.append(
            ranked.select(
                "rank",
                pl.col("prefix").replace("", "–").alias(f"{name} prefix"),
                pl.col("content").alias(f"{name} content"),
                pl.Series(f"{name} evidence", marks, dtype=pl.String),
            )
        )
    return arms[0].join(arms[1], on="rank", how="full", coalesce=True).sort("rank")


def _count(n: int, noun: str, plural: str | None = None) -> str:
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


def _rank(rank: int | None) -> str:
    return "none in the run" if rank is None else str(rank)
