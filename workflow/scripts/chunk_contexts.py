"""Write a situating context for every chunk of one document shard (responses cached under <cache>/llm)."""

from structbench.atomic import write_json
from structbench.datamodel import read_table, write_table
from structbench.llm import load_llm
from structbench.logs import step_log
from structbench.prefixes.contexts import situate_chunks
from structbench.shards import select_shard, shard_doc_ids

with step_log(snakemake.log[0], "chunk_contexts") as log:
    documents = read_table(snakemake.input.documents, "documents")
    doc_ids = shard_doc_ids(documents["doc_id"].to_list(), int(snakemake.wildcards.shard), snakemake.params.n_shards)
    llm = load_llm(dict(snakemake.params.llm), cache_dir=snakemake.params.cache, name=snakemake.params.llm_name)
    contexts = situate_chunks(
        select_shard(documents, doc_ids),
        select_shard(read_table(snakemake.input.chunks, "chunks"), doc_ids),
        llm,
        tokenizer=snakemake.params.tokenizer,
        context_max_tokens=snakemake.params.max_tokens,
        max_new_tokens=snakemake.params.max_new_tokens,
    )
    usage = llm.usage() | {"shard": int(snakemake.wildcards.shard), "documents": len(doc_ids)}
    log.info("shard %s: %d chunks, LLM usage %s", snakemake.wildcards.shard, contexts.height, usage)
    write_table(contexts, snakemake.output.contexts)
    write_json(snakemake.output.usage, usage)
