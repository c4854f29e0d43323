"""Induce the section tree of one document shard with an LLM (responses cached under <cache>/llm)."""

from structbench.atomic import write_json
from structbench.datamodel import read_table, write_table
from structbench.llm import load_llm
from structbench.logs import step_log
from structbench.shards import select_shard, shard_doc_ids
from structbench.structure.induction import induce_structure

with step_log(snakemake.log[0], "induce_structure") as log:
    documents = read_table(snakemake.input.documents, "documents")
    doc_ids = shard_doc_ids(documents["doc_id"].to_list(), int(snakemake.wildcards.shard), snakemake.params.n_shards)
    llm = load_llm(dict(snakemake.params.llm), cache_dir=snakemake.params.cache, name=snakemake.params.llm_name)
    sections, status = induce_structure(
        select_shard(documents, doc_ids),
        select_shard(read_table(snakemake.input.paragraphs, "paragraphs"), doc_ids),
        llm,
        **dict(snakemake.params.options),
    )
    usage = llm.usage() | {"shard": int(snakemake.wildcards.shard), "documents": len(doc_ids)}
    log.info("shard %s: %d documents, LLM usage %s", snakemake.wildcards.shard, len(doc_ids), usage)
    write_table(sections, snakemake.output.sections)
    write_table(status, snakemake.output.status)
    write_json(snakemake.output.usage, usage)
