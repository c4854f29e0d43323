"""Render the text to embed for each chunk under one prefix (none, heading path, placebo, context)."""

from structbench.atomic import write_json
from structbench.datamodel import read_table, write_table
from structbench.logs import step_log
from structbench.prefixes import render_texts
from structbench.tokens import load_tokenizer

with step_log(snakemake.log[0], "texts") as log:
    texts, report = render_texts(
        read_table(snakemake.input.documents, "documents"),
        read_table(snakemake.input.chunks, "chunks"),
        snakemake.params.prefix,
        load_tokenizer(snakemake.params.tokenizer),
        separator=snakemake.params.separator,
        seed=snakemake.params.seed,
        max_prefix_tokens=snakemake.params.max_prefix_tokens,
        # snakemake.input is a Namedlist: `in` would read its values, not its names
        contexts=read_table(snakemake.input.contexts) if "contexts" in snakemake.input.keys() else None,  # noqa: SIM118
    )
    report = {**report, **{key: snakemake.wildcards[key] for key in ("corpus", "boundaries", "structure")}}
    log.info("prefix %s: %s", snakemake.params.prefix, report)
    write_table(texts, snakemake.output.texts)
    write_json(snakemake.output.report, report)
