"""Two-stage retrieval, stage 1: keep each query's top sections by centroid (the routing table)."""

from structbench.datamodel import read_table, read_vectors, write_table
from structbench.logs import step_log
from structbench.retrieval.routing import route_two_stage

with step_log(snakemake.log[0], "route_sections") as log:
    queries = read_table(snakemake.input.queries, "queries")
    routing = route_two_stage(
        read_vectors(snakemake.input.chunk_vectors),
        read_vectors(snakemake.input.query_vectors),
        queries["qid"].to_list(),
        chunks=read_table(snakemake.input.chunks, "chunks"),
        sections=read_table(snakemake.input.sections, "sections"),
        top_sections=snakemake.params.top_sections,
    )
    log.info("%d queries, %d kept sections", queries.height, routing.height)
    write_table(routing, snakemake.output[0])
