"""Rerank the top of one run with a cross-encoder, or with a /rerank endpoint (``kind: endpoint``)."""

from structbench.datamodel import read_table, write_table
from structbench.logs import step_log
from structbench.retrieval.rerank import rerank_with_entry

with step_log(snakemake.log[0], "rerank") as log:
    entry = dict(snakemake.params.reranker)
    tables = (
        read_table(snakemake.input.runs, "runs"),
        read_table(snakemake.input.queries, "queries"),
        read_table(snakemake.input.texts, "texts"),
    )
    # The cache root from the config, not a new param: the local rerank jobs' params stay as they were
    # (a local model does not use it).
    runs = rerank_with_entry(*tables, entry, f"{snakemake.config['cache']}/rerank", threads=snakemake.threads)
    log.info("reranked the top %d of %d queries with %s", entry["top_n"], runs["qid"].n_unique(), entry["model"])
    write_table(runs, snakemake.output[0])
