"""Embed the rendered chunk texts (row i = chunk_id i), through the content-addressed cache; a late prefix
(docs/method.md §8a) pools each chunk from a pass over its document (or a placebo host) instead."""

from structbench.conditions import is_late
from structbench.datamodel import read_table
from structbench.embedding.encoders import embed_with_cache
from structbench.logs import step_log

with step_log(snakemake.log[0], "embed_texts") as log:
    prefix = snakemake.params.prefix
    if is_late(prefix):
        from structbench.embedding.late import late_embed_with_cache
        from structbench.embedding.local import EmbedderSpec

        report = late_embed_with_cache(
            read_table(snakemake.input.documents, "documents"),
            read_table(snakemake.input.chunks, "chunks"),
            EmbedderSpec.from_config(dict(snakemake.params.embedder)),
            snakemake.params.cache,
            snakemake.params.late["overlap"],
            prefix,
            snakemake.params.late["seed"],
            snakemake.output.vectors,
            snakemake.output.report,
            threads=snakemake.threads,
        )
        log.info("%s: %s", prefix, report)
    else:
        texts = read_table(snakemake.input.texts, "texts").sort("chunk_id")
        embed_with_cache(
            texts["text_for_embedding"].to_list(),
            dict(snakemake.params.embedder),
            snakemake.params.cache,
            snakemake.output.vectors,
            report_json=snakemake.output.report,
            threads=snakemake.threads,
        )
