"""Fixed windows size-matched per document to a structural chunk set, sentence-snapped; overlapping ones
(boundaries fixed_overlap:<o>) are checked to cover their documents in order instead of tiling them."""

from structbench.atomic import write_json
from structbench.chunking.fixed import fixed_chunks
from structbench.chunking.tiling import bounds_file, check_chunk_set, size_match_report
from structbench.datamodel import read_table, write_table
from structbench.logs import step_log
from structbench.overlap import parse_overlap
from structbench.tokens import load_tokenizer

with step_log(snakemake.log[0], "fixed_chunks") as log:
    documents = read_table(snakemake.input.documents, "documents")
    reference = read_table(snakemake.input.reference, "chunks")
    overlap = snakemake.params.overlap  # as declared ("50", "0.5"), or None: tiling windows
    chunks = fixed_chunks(
        documents,
        read_table(snakemake.input.paragraphs, "paragraphs"),
        read_table(snakemake.input.sections, "sections"),
        load_tokenizer(snakemake.params.tokenizer),
        reference_chunks=reference,
        snap_tokens=snakemake.params.snap_tokens,
        t_min=snakemake.params.t_min,
        t_max=snakemake.params.t_max,
        overlap=None if overlap is None else parse_overlap(overlap, "fixed_overlap"),
    )
    check_chunk_set(documents, chunks, overlap)
    report = {
        "corpus": snakemake.wildcards.corpus,
        "structure": snakemake.wildcards.structure,
        "chunk set": f"{snakemake.wildcards.windows}{snakemake.wildcards.size}/{snakemake.wildcards.structure}",
        **size_match_report(chunks, reference),
    }
    log.info("size match: %s", report)
    write_table(chunks, snakemake.output.chunks)
    write_json(snakemake.output.size_match, report)
    write_json(
        snakemake.output.bounds,
        bounds_file(chunks, t_max=snakemake.params.t_max, t_min=snakemake.params.t_min, overlap=overlap),
    )
