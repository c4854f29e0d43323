"""BM25 over the chunks' content: the non-lexicality probe's run."""

from structbench.datamodel import read_table, write_table
from structbench.logs import step_log
from structbench.retrieval.bm25 import bm25_search

with step_log(snakemake.log[0], "bm25") as log:
    texts = read_table(snakemake.input.texts, "texts").sort("chunk_id")
    queries = read_table(snakemake.input.queries, "queries")
    runs = bm25_search(
        texts["text_for_embedding"].to_list(),
        queries["text"].to_list(),
        queries["qid"].to_list(),
        top_k=snakemake.params.top_k,
        analyzer_name=snakemake.params.analyzer,
    )
    log.info("%d queries over %d chunks, analyzer %s", queries.height, texts.height, snakemake.params.analyzer)
    write_table(runs, snakemake.output[0])
