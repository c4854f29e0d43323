"""Merge the induced-structure shards into one verified sections table, one status table, one usage."""

import json
from pathlib import Path

from structbench.atomic import write_json
from structbench.datamodel import read_table, write_table
from structbench.logs import step_log
from structbench.shards import merge_rows, merge_sections, merge_usage

with step_log(snakemake.log[0], "merge_structure") as log:
    paragraphs = read_table(snakemake.input.paragraphs, "paragraphs")
    sections = merge_sections(paragraphs, [read_table(path, "sections") for path in snakemake.input.sections])
    status = merge_rows(
        [read_table(path) for path in snakemake.input.status],
        paragraphs["doc_id"].unique().to_list(),
        "doc_id",
        "induction status",
    )
    usage = merge_usage([json.loads(Path(path).read_text()) for path in snakemake.input.usage])
    log.info(
        "%d documents, %d sections; LLM usage %s",
        status.height,
        sections.height,
        {key: value for key, value in usage.items() if key != "shards"},
    )
    write_table(sections, snakemake.output.sections)
    write_table(status, snakemake.output.status)
    write_json(snakemake.output.usage, usage)
