"""Reciprocal rank fusion of a condition's flat run with its partner runs (other text sets, BM25)."""

from structbench.datamodel import read_table, read_vectors, write_table
from structbench.logs import step_log
from structbench.retrieval.search import retrieve

with step_log(snakemake.log[0], "fuse_runs") as log:
    queries = read_table(snakemake.input.queries, "queries")
    runs = retrieve(
        snakemake.params.retrieval,
        read_vectors(snakemake.input.chunk_vectors),
        read_vectors(snakemake.input.query_vectors),
        queries["qid"].to_list(),
        top_k=snakemake.params.top_k,
        use_gpu=snakemake.params.use_gpu,
        partner_vectors=[read_vectors(path) for path in snakemake.input.partner_vectors],
        partner_runs=[read_table(path, "runs") for path in snakemake.input.partner_runs],
        rrf_k=snakemake.params.rrf_k,
    )
    log.info("%s: %d queries, %d fused rows", snakemake.params.retrieval, queries.height, runs.height)
    write_table(runs, snakemake.output[0])
