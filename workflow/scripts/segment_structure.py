"""Induce every document's section tree without an LLM: TextTiling over the configured embedder's vectors."""

from structbench.atomic import write_json
from structbench.datamodel import read_table, write_table
from structbench.embedding.encoders import make_encoder
from structbench.logs import step_log
from structbench.structure.segmentation import induce_segmentation

with step_log(snakemake.log[0], "segment_structure") as log:
    encoder = make_encoder(dict(snakemake.params.embedder), snakemake.params.cache, snakemake.threads)
    sections, status = induce_segmentation(
        read_table(snakemake.input.documents, "documents"),
        read_table(snakemake.input.paragraphs, "paragraphs"),
        encoder,
        **dict(snakemake.params.options),
    )
    usage = {"embedder": snakemake.params.embedder_name, **encoder.report()}
    log.info("%d documents, %d sections; embedding %s", status.height, sections.height, usage)
    write_table(sections, snakemake.output.sections)
    write_table(status, snakemake.output.status)
    write_json(snakemake.output.usage, usage)
