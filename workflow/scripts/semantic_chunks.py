"""The title-chain study's semantic merge: adjacent paragraphs of a section merge at cosine >= threshold, then the
bounds.

Besides the chunks, the step writes the embedding report of the paragraphs it compared (input length,
truncation, cache use: ``embedding.encoders.embed_texts``), which the report's embedder-input table shows."""

from structbench.atomic import write_json
from structbench.chunking.structural import semantic_chunks
from structbench.chunking.tiling import assert_tiling, bounds_file
from structbench.datamodel import read_table, write_table
from structbench.embedding.encoders import embed_texts
from structbench.logs import step_log
from structbench.tokens import load_tokenizer

with step_log(snakemake.log[0], "semantic_chunks") as log:
    spec = dict(snakemake.params.embedder)  # any kind: embed_texts picks the encoder
    documents = read_table(snakemake.input.documents, "documents")
    reports = []

    def embed(texts):
        embedded = embed_texts(texts, spec, snakemake.params.cache, threads=snakemake.threads)
        reports.append(embedded.report)
        return embedded.vectors

    chunks = semantic_chunks(
        documents,
        read_table(snakemake.input.paragraphs, "paragraphs"),
        read_table(snakemake.input.sections, "sections"),
        load_tokenizer(snakemake.params.tokenizer),
        embed_fn=embed,
        threshold=snakemake.params.threshold,
        t_max=snakemake.params.t_max,
        t_min=snakemake.params.t_min,
    )
    assert_tiling(documents, chunks)
    log.info("%d chunks, mean %.1f tokens", chunks.height, chunks["n_tokens"].mean())
    # No section with two paragraphs: nothing was embedded, nothing truncated.
    report = reports[0] if reports else {"n_texts": 0, "n_truncated": 0}
    write_table(chunks, snakemake.output.chunks)
    write_json(snakemake.output.embed_report, report)
    write_json(snakemake.output.bounds, bounds_file(chunks, t_max=snakemake.params.t_max, t_min=snakemake.params.t_min))
