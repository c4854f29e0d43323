"""Seed 004's semantic merge: adjacent paragraphs of a section merge at cosine >= threshold, then the bounds."""

from structbench.boundaries import assert_tiling, semantic_chunks
from structbench.datamodel import read_table, write_table
from structbench.embed import EmbedderSpec, embed_texts
from structbench.logs import step_log
from structbench.tokens import load_tokenizer

with step_log(snakemake.log[0], "semantic_chunks") as log:
    spec = EmbedderSpec.from_config(dict(snakemake.params.embedder))
    documents = read_table(snakemake.input.documents, "documents")
    chunks = semantic_chunks(
        documents,
        read_table(snakemake.input.paragraphs, "paragraphs"),
        read_table(snakemake.input.sections, "sections"),
        load_tokenizer(snakemake.params.tokenizer),
        lambda texts: embed_texts(texts, spec, snakemake.params.cache, threads=snakemake.threads).vectors,
        threshold=snakemake.params.threshold,
        t_max=snakemake.params.t_max,
        t_min=snakemake.params.t_min,
    )
    assert_tiling(documents, chunks)
    log.info("%d chunks, mean %.1f tokens", chunks.height, chunks["n_tokens"].mean())
    write_table(chunks, snakemake.output[0])
