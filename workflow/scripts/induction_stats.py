"""Summarize one inducer on one corpus for the report: statuses, sections vs gold, identical spans."""

import json
from pathlib import Path

from structbench.atomic import write_json
from structbench.datamodel import read_table
from structbench.logs import step_log
from structbench.structure.induction_stats import induction_summary

with step_log(snakemake.log[0], "induction_stats") as log:
    summary = induction_summary(
        read_table(snakemake.input.status),
        read_table(snakemake.input.sections, "sections"),
        read_table(snakemake.input.gold_sections, "sections"),
        read_table(snakemake.input.chunks, "chunks"),
        read_table(snakemake.input.gold_chunks, "chunks"),
    )
    usage = json.loads(Path(snakemake.input.usage).read_text())
    # an LLM inducer's usage is its LLM calls (the report's LLM calls table); a segmentation
    # inducer's is its embedding (texts encoded and served from the vector cache)
    kind = snakemake.params.kind
    summary |= {
        "corpus": snakemake.wildcards.corpus,
        "inducer": snakemake.wildcards.inducer,
        "kind": kind,
        "llm" if kind == "llm" else "embedding": {key: value for key, value in usage.items() if key != "shards"},
    }
    log.info("%s", summary)
    write_json(snakemake.output[0], summary)
