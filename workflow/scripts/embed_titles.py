"""Embed the section titles TOC routing falls back to (row u = unit u of
structbench.retrieval.routing.section_units)."""

from structbench.datamodel import read_table
from structbench.embedding.encoders import embed_with_cache
from structbench.logs import step_log
from structbench.retrieval.routing import section_units

with step_log(snakemake.log[0], "embed_titles"):
    titles = section_units(
        read_table(snakemake.input[0], "sections"),
        max_title_tokens=snakemake.params.max_title_tokens,
        tokenizer=snakemake.params.tokenizer,
    )["title"].to_list()
    embed_with_cache(
        titles,
        dict(snakemake.params.embedder),
        snakemake.params.cache,
        snakemake.output.vectors,
        report_json=snakemake.output.report,
        threads=snakemake.threads,
    )
