"""The title-chain study's retrieval-layer comparison of one cell: each prefixed condition's run against its unprefixed
twin's."""

import polars as pl

from structbench.datamodel import read_table, write_table
from structbench.logs import step_log
from structbench.metrics.diagnostics import retrieval_layer_table

with step_log(snakemake.log[0], "retrieval_layer") as log:
    runs = {name: read_table(path, "runs") for name, path in zip(snakemake.params.conditions, snakemake.input.runs)}
    table = retrieval_layer_table(runs, [tuple(pair) for pair in snakemake.params.pairs])
    table = table.with_columns(
        [pl.lit(snakemake.wildcards[key]).alias(key) for key in ("corpus", "embedder", "reranker")]
    )
    log.info("\n%s", table)
    write_table(table, snakemake.output[0])
