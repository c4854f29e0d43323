"""BM25 over one texts table (a chunk set under one prefix): the probe's run (prefix none), a BM25 condition's run."""

from structbench.datamodel import read_table, write_table
from structbench.logs import step_log
from structbench.retrieval.bm25 import bm25_run

with step_log(snakemake.log[0], "bm25") as log:
    texts = read_table(snakemake.input.texts, "texts")
    queries = read_table(snakemake.input.queries, "queries")
    runs = bm25_run(texts, queries, top_k=snakemake.params.top_k, analyzer_name=snakemake.params.analyzer)
    log.info("%d queries over %d chunks, analyzer %s", queries.height, texts.height, snakemake.params.analyzer)
    write_table(runs, snakemake.output[0])
