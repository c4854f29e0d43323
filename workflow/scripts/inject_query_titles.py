"""Query-side title injection: rescore the flat run's top candidates with title-carrying query embeddings."""

from structbench.datamodel import query_texts, read_table, read_vectors, write_table
from structbench.embedding.encoders import embed_texts, prefixed_queries
from structbench.logs import step_log
from structbench.retrieval.rescoring import title_blocks
from structbench.retrieval.search import retrieve

with step_log(snakemake.log[0], "inject_query_titles") as log:
    queries = read_table(snakemake.input.queries, "queries")
    spec = dict(snakemake.params.embedder)  # any kind: embed_texts picks the encoder

    def encode_queries(texts):
        return embed_texts(
            prefixed_queries(texts, spec), spec, snakemake.params.cache, threads=snakemake.threads
        ).vectors

    runs = retrieve(
        snakemake.params.retrieval,
        read_vectors(snakemake.input.chunk_vectors),
        read_vectors(snakemake.input.query_vectors),
        queries["qid"].to_list(),
        top_k=snakemake.params.top_k,
        use_gpu=snakemake.params.use_gpu,
        query_texts=query_texts(queries),
        titles=title_blocks(
            read_table(snakemake.input.chunks, "chunks"),
            snakemake.params.depth,
            snakemake.params.separator,
            max_tokens=snakemake.params.max_title_tokens,
            tokenizer=snakemake.params.tokenizer,
        ),
        encode_queries=encode_queries,
        candidates=snakemake.params.candidates,
    )
    log.info("%s: %d queries, top %d rescored", snakemake.params.retrieval, queries.height, snakemake.params.candidates)
    write_table(runs, snakemake.output[0])
