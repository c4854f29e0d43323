"""The questions that decide each pairwise contrast of one cell: the largest wins and losses with both rankings'
top chunks, and the first-evidence flip counts (structbench.report.decisive)."""

import polars as pl

from structbench.datamodel import read_table, write_table
from structbench.logs import step_log
from structbench.report.decisive import ConditionRun, decisive_questions


def listed(files) -> list[str]:
    """A named input as a list (Snakemake hands a one-file list as its path)."""
    return [files] if isinstance(files, str) else list(files)


with step_log(snakemake.log[0], "decisive_questions") as log:
    conditions = list(snakemake.params.conditions)
    files = {key: dict(zip(conditions, listed(snakemake.input[key]))) for key in ("runs", "chunks", "texts")}

    def load(condition: str) -> ConditionRun:
        return ConditionRun(*(read_table(files[key][condition], key) for key in ("runs", "chunks", "texts")))

    settings = dict(snakemake.params.settings)
    decisive = decisive_questions(
        pl.concat([read_table(path) for path in listed(snakemake.input.scores)], how="diagonal_relaxed"),
        [dict(spec) for spec in snakemake.params.contrasts],
        load,
        read_table(snakemake.input.queries, "queries"),
        read_table(snakemake.input.documents, "documents"),
        settings["primary_metric"],
        per_side=settings["per_side"],
        top_k=settings["top_k"],
    )
    cell = [pl.lit(snakemake.wildcards[key]).alias(key) for key in ("corpus", "embedder", "reranker")]
    log.info("\n%s", decisive.flips)
    write_table(decisive.questions.with_columns(cell), snakemake.output.questions)
    write_table(decisive.flips.with_columns(cell), snakemake.output.flips)
