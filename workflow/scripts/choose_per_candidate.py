"""Per-candidate prefix choice: each candidate of the prefixed and unprefixed indexes keeps its better version."""

from structbench.datamodel import chunk_texts, query_texts, read_table, read_vectors, write_table
from structbench.logs import step_log
from structbench.retrieval.rerank import RerankerSpec, load_cross_encoder
from structbench.retrieval.search import retrieve


def texts_by_chunk(path):
    return chunk_texts(read_table(path, "texts"))


with step_log(snakemake.log[0], "choose_per_candidate") as log:
    queries = read_table(snakemake.input.queries, "queries")
    spec = RerankerSpec.from_config(dict(snakemake.params.reranker))
    model = load_cross_encoder(spec)
    runs = retrieve(
        snakemake.params.retrieval,
        read_vectors(snakemake.input.chunk_vectors),
        read_vectors(snakemake.input.query_vectors),
        queries["qid"].to_list(),
        top_k=snakemake.params.top_k,
        use_gpu=snakemake.params.use_gpu,
        unprefixed_vectors=read_vectors(snakemake.input.unprefixed_vectors),
        query_texts=query_texts(queries),
        prefixed_texts=texts_by_chunk(snakemake.input.texts),
        unprefixed_texts=texts_by_chunk(snakemake.input.unprefixed_texts),
        score_pairs=lambda pairs: model.predict(
            pairs, batch_size=spec.batch_size, show_progress_bar=False, convert_to_numpy=True
        ),
        candidates=snakemake.params.candidates,
    )
    log.info("%s: %d queries, %d rows", snakemake.params.retrieval, queries.height, runs.height)
    write_table(runs, snakemake.output[0])
