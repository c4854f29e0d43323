"""Rank the corpus's chunks for every query with the condition's retrieval kind (corpus-wide top k)."""

from structbench.datamodel import read_table, read_vectors, write_table
from structbench.logs import step_log
from structbench.retrieval.search import kind_inputs, retrieve

with step_log(snakemake.log[0], "retrieve") as log:
    queries = read_table(snakemake.input.queries, "queries")
    # a routed kind also takes its router's table; each input is named after the table it holds
    tables = {name: read_table(snakemake.input[name], name) for name in kind_inputs(snakemake.params.retrieval)[0]}
    runs = retrieve(
        snakemake.params.retrieval,
        read_vectors(snakemake.input.chunk_vectors),
        read_vectors(snakemake.input.query_vectors),
        queries["qid"].to_list(),
        top_k=snakemake.params.top_k,
        use_gpu=snakemake.params.use_gpu,
        **tables,
    )
    log.info("%d queries, %d ranked rows", queries.height, runs.height)
    write_table(runs, snakemake.output[0])
