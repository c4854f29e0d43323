"""Embed the queries (row i = query i of the queries table), with the embedder's query prefix."""

from structbench.datamodel import read_table
from structbench.embedding.encoders import embed_with_cache, prefixed_queries
from structbench.logs import step_log

with step_log(snakemake.log[0], "embed_queries"):
    spec = dict(snakemake.params.embedder)
    queries = read_table(snakemake.input[0], "queries")
    embed_with_cache(
        prefixed_queries(queries["text"].to_list(), spec),
        spec,
        snakemake.params.cache,
        snakemake.output.vectors,
        report_json=snakemake.output.report,
        threads=snakemake.threads,
    )
