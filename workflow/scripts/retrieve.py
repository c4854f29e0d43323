"""Rank the corpus's chunks for every query with the condition's retrieval kind (corpus-wide top k)."""
from structbench.logs import step_log
from structbench.retrieval import retrieve
from structbench.tables import read_table, read_vectors, write_table

with step_log(snakemake.log[0], "retrieve") as log:
    queries = read_table(snakemake.input.queries, "queries")
    runs = retrieve(
        snakemake.params.retrieval,
        read_vectors(snakemake.input.chunk_vectors),
        read_vectors(snakemake.input.query_vectors),
        queries["qid"].to_list(),
        top_k=snakemake.params.top_k,
        use_gpu=snakemake.params.use_gpu,
    )
    log.info("%d queries, %d ranked rows", queries.height, runs.height)
    write_table(runs, snakemake.output[0])
