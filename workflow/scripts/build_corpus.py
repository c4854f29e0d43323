"""Load one corpus into the data-model tables (load_corpus verifies the gold structure and queries)."""

from structbench.corpus import load_corpus
from structbench.datamodel import write_table
from structbench.logs import step_log

with step_log(snakemake.log[0], "corpus") as log:
    tables = load_corpus({**snakemake.params.spec, "name": snakemake.wildcards.corpus})
    log.info(
        "%s: %d documents, %d sections, %d queries",
        snakemake.wildcards.corpus,
        tables.documents.height,
        tables.sections.height,
        tables.queries.height,
    )
    for name in ("documents", "paragraphs", "queries", "funnel", "skipped", "sections"):
        write_table(getattr(tables, name), snakemake.output[name])
