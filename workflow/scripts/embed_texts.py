"""Embed the rendered chunk texts (row i = chunk_id i), through the content-addressed cache."""

from structbench.datamodel import read_table
from structbench.embedding.encoders import embed_with_cache
from structbench.logs import step_log

with step_log(snakemake.log[0], "embed_texts"):
    texts = read_table(snakemake.input[0], "texts").sort("chunk_id")
    embed_with_cache(
        texts["text_for_embedding"].to_list(),
        dict(snakemake.params.embedder),
        snakemake.params.cache,
        snakemake.output.vectors,
        report_json=snakemake.output.report,
        threads=snakemake.threads,
    )
