"""Merge the query shards, balance the survivors per type, and count the funnel for the report."""

import json
from pathlib import Path

from structbench.atomic import write_json
from structbench.datamodel import read_table, write_table
from structbench.logs import step_log
from structbench.querygen.funnel import balance, funnel_table, merge_candidates, queries_table, querygen_summary
from structbench.shards import merge_usage

with step_log(snakemake.log[0], "merge_queries") as log:
    settings = dict(snakemake.params.settings)
    candidates = merge_candidates([read_table(path) for path in snakemake.input.candidates])
    finals = balance(candidates, settings["per_type"], settings["seed"])
    usage = merge_usage([json.loads(Path(path).read_text()) for path in snakemake.input.usage])
    n_documents = read_table(snakemake.input.documents, "documents").height
    stats = querygen_summary(candidates, finals, settings["types"], n_documents) | {
        "corpus": snakemake.wildcards.corpus,
        "settings": settings,
        "llm": {key: value for key, value in usage.items() if key != "shards"},
    }
    log.info("%s", stats["by_type"])
    if finals.height == 0:
        log.warning(
            "no generated query survived the filter: corpus %s has no queries to score", snakemake.wildcards.corpus
        )
    write_table(queries_table(finals), snakemake.output.queries)
    write_table(candidates, snakemake.output.candidates)
    write_table(funnel_table(candidates, finals, settings["types"]), snakemake.output.funnel)
    write_json(snakemake.output.stats, stats)
