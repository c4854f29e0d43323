"""Rerank the top of one run with a cross-encoder."""

from structbench.datamodel import read_table, write_table
from structbench.logs import step_log
from structbench.retrieval.rerank import RerankerSpec, rerank_with_model

with step_log(snakemake.log[0], "rerank") as log:
    spec = RerankerSpec.from_config(dict(snakemake.params.reranker))
    runs = rerank_with_model(
        read_table(snakemake.input.runs, "runs"),
        read_table(snakemake.input.queries, "queries"),
        read_table(snakemake.input.texts, "texts"),
        spec,
    )
    log.info("reranked the top %d of %d queries with %s", spec.top_n, runs["qid"].n_unique(), spec.model)
    write_table(runs, snakemake.output[0])
