"""Rerank the top of one run with a cross-encoder, or with a /rerank endpoint (``kind: endpoint``)."""

from structbench.datamodel import read_table, write_table
from structbench.logs import step_log
from structbench.retrieval.rerank import RerankerSpec, rerank_with_endpoint, rerank_with_model

with step_log(snakemake.log[0], "rerank") as log:
    entry = dict(snakemake.params.reranker)
    tables = (
        read_table(snakemake.input.runs, "runs"),
        read_table(snakemake.input.queries, "queries"),
        read_table(snakemake.input.texts, "texts"),
    )
    if entry.get("kind") == "endpoint":
        # The cache root from the config, not a new param: the local rerank jobs' params stay as they were.
        runs = rerank_with_endpoint(*tables, entry, f"{snakemake.config['cache']}/rerank")
    else:
        runs = rerank_with_model(*tables, RerankerSpec.from_config(entry))
    log.info("reranked the top %d of %d queries with %s", entry["top_n"], runs["qid"].n_unique(), entry["model"])
    write_table(runs, snakemake.output[0])
