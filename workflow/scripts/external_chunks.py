"""A practitioner's chunker (LangChain, chonkie, semchunk, text-splitter) on every document, its chunks
located exactly in the flat text; size-matched per document to the structural set when configured."""

from structbench.atomic import write_json
from structbench.chunking.external.chunker_spec import ChunkerSpec
from structbench.chunking.external.locate import external_chunks
from structbench.chunking.tiling import bounds_file, check_chunk_set
from structbench.datamodel import read_table, write_table
from structbench.logs import step_log

with step_log(snakemake.log[0], "external_chunks") as log:
    entry = dict(snakemake.params.chunker)
    spec = ChunkerSpec.from_config(entry.pop("name"), entry)
    reference = read_table(snakemake.input.reference, "chunks") if spec.size_match else None
    documents = read_table(snakemake.input.documents, "documents")
    chunks, report = external_chunks(
        documents,
        read_table(snakemake.input.paragraphs, "paragraphs"),
        read_table(snakemake.input.sections, "sections"),
        snakemake.params.tokenizer,
        spec=spec,
        t_max=snakemake.params.t_max,
        reference=reference,
    )
    overlap = None if spec.overlap is None else spec.overlap.text  # None: the chunks tile
    check_chunk_set(documents, chunks, overlap)
    report = {
        "corpus": snakemake.wildcards.corpus,
        "structure": snakemake.wildcards.structure,
        "chunk set": f"external-{spec.name}{snakemake.wildcards.size}/{snakemake.wildcards.structure}",
        **report,  # with a reference: size_match_report's keys, as fixed windows write them
    }
    log.info("%s: %d chunks, mean %.1f tokens", spec.name, chunks.height, chunks["n_tokens"].mean())
    write_table(chunks, snakemake.output.chunks)
    write_json(snakemake.output.report, report)
    write_json(
        snakemake.output.bounds,
        bounds_file(chunks, t_max=snakemake.params.t_max, t_min=snakemake.params.t_min, overlap=overlap),
    )
