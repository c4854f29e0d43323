"""Merge the context shards into one table (a context per chunk) and summarize its lengths and LLM use."""

import json
from pathlib import Path

from structbench.atomic import write_json
from structbench.datamodel import read_table, write_table
from structbench.logs import step_log
from structbench.prefixes.context_stats import context_summary
from structbench.shards import merge_rows, merge_usage

with step_log(snakemake.log[0], "merge_contexts") as log:
    chunk_ids = read_table(snakemake.input.chunks, "chunks")["chunk_id"].to_list()
    contexts = merge_rows(
        [read_table(path) for path in snakemake.input.contexts], chunk_ids, "chunk_id", "situating contexts"
    )
    usage = merge_usage([json.loads(Path(path).read_text()) for path in snakemake.input.usage])
    stats = context_summary(contexts) | {
        "corpus": snakemake.wildcards.corpus,
        "chunk set": f"{snakemake.wildcards.boundaries}/{snakemake.wildcards.structure}",
        "llm": {key: value for key, value in usage.items() if key != "shards"},
        "shards": usage["shards"],
    }
    log.info("%s", {key: value for key, value in stats.items() if key != "shards"})
    write_table(contexts, snakemake.output.contexts)
    write_json(snakemake.output.stats, stats)
