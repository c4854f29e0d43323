"""Structural chunks from one structure source (split/merge bounds of docs/method.md §6)."""

from structbench.atomic import write_json
from structbench.chunking.structural import structural_chunks
from structbench.chunking.tiling import assert_tiling, bounds_file
from structbench.datamodel import read_table, write_table
from structbench.logs import step_log
from structbench.tokens import load_tokenizer

with step_log(snakemake.log[0], "structural_chunks") as log:
    documents = read_table(snakemake.input.documents, "documents")
    chunks = structural_chunks(
        documents,
        read_table(snakemake.input.paragraphs, "paragraphs"),
        read_table(snakemake.input.sections, "sections"),
        load_tokenizer(snakemake.params.tokenizer),
        t_max=snakemake.params.t_max,
        t_min=snakemake.params.t_min,
    )
    assert_tiling(documents, chunks)
    log.info("%d chunks, mean %.1f tokens", chunks.height, chunks["n_tokens"].mean())
    write_table(chunks, snakemake.output.chunks)
    write_json(snakemake.output.bounds, bounds_file(chunks, t_max=snakemake.params.t_max, t_min=snakemake.params.t_min))
