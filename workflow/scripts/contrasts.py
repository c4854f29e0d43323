"""Paired contrasts of one cell: clustered bootstrap, Holm, dz, MixedLM (docs/method.md §11)."""

import polars as pl

from structbench.datamodel import read_table, write_table
from structbench.logs import step_log
from structbench.stats import contrast_table

with step_log(snakemake.log[0], "contrasts") as log:
    scores = pl.concat([read_table(path) for path in snakemake.input], how="diagonal_relaxed")
    table = contrast_table(
        scores,
        list(snakemake.params.contrasts),
        # the primary metric, then any stats.contrast_metrics (each Holm-corrected on its own)
        list(dict.fromkeys([snakemake.params.primary_metric, *snakemake.params.contrast_metrics])),
        B=snakemake.params.bootstrap_iters,
        seed=snakemake.params.seed,
        mixedlm=snakemake.params.mixedlm,
        cluster=snakemake.params.cluster,
    )
    table = table.with_columns(
        [pl.lit(snakemake.wildcards[key]).alias(key) for key in ("corpus", "embedder", "reranker")]
    )
    log.info("\n%s", table)
    write_table(table, snakemake.output[0])
