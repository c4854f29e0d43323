"""The subgroup (moderator) analysis of one cell: each moderator's sides and levels, the interactions with their
bootstrap CIs, p's and Holm over the moderators (structbench.stats.subgroups); the anchoring moderator reads the
questions with the run's BM25 analyzer."""

import polars as pl

from structbench.datamodel import read_table, write_table
from structbench.logs import step_log
from structbench.retrieval.bm25 import analyzer
from structbench.stats.subgroups import cell_subgroups

with step_log(snakemake.log[0], "subgroups") as log:
    table = cell_subgroups(
        # two or more files: the conditions the contrasts compare
        pl.concat([read_table(path) for path in snakemake.input.scores], how="diagonal_relaxed"),
        read_table(snakemake.input.queries, "queries"),
        read_table(snakemake.input.sections, "sections"),
        dict(snakemake.params.subgroups),
        snakemake.params.primary_metric,
        tokenize=analyzer(snakemake.params.analyzer),
        qtype_reference=snakemake.params.qtype_reference,
        B=snakemake.params.bootstrap_iters,
        seed=snakemake.params.seed,
        cluster=snakemake.params.cluster,
    )
    table = table.with_columns(
        [pl.lit(snakemake.wildcards[key]).alias(key) for key in ("corpus", "embedder", "reranker")]
    )
    log.info("\n%s", table)
    write_table(table, snakemake.output[0])
