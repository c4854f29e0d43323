"""Expand a condition's hits at read time (parent, automerge, window; docs/method.md §18): a run of spans."""

from structbench.datamodel import read_table, write_table
from structbench.logs import step_log
from structbench.retrieval.unit_runs import readtime_run, shallower_documents
from structbench.tokens import load_tokenizer

with step_log(snakemake.log[0], "readtime") as log:
    sections = read_table(snakemake.input.sections, "sections")
    documents = read_table(snakemake.input.documents, "documents")
    shallower, n_documents = shallower_documents(snakemake.params.retrieval, sections, documents)
    if shallower:  # their level-L blocks are their deepest level's (structbench.retrieval.checks.check_readtime_config)
        log.warning(
            "%s: %d of %d documents have no section that deep; they get their deepest level's blocks",
            snakemake.params.retrieval,
            shallower,
            n_documents,
        )
    runs, units = readtime_run(
        snakemake.params.retrieval,
        read_table(snakemake.input.runs, "runs"),
        read_table(snakemake.input.chunks, "chunks"),
        sections,
        documents,
        load_tokenizer(snakemake.params.tokenizer),
        hits=snakemake.params.hits,
        seed=snakemake.params.seed,
    )
    log.info(
        "%s: %d ranked spans, %d units beyond the chunk set",
        snakemake.params.retrieval,
        runs.height,
        units.height - read_table(snakemake.input.chunks, "chunks").height,
    )
    write_table(runs, snakemake.output.runs)
    write_table(units, snakemake.output.units)
