"""Write and screen the queries of one document shard (responses cached under <cache>/llm)."""

from structbench.atomic import write_json
from structbench.datamodel import read_table, write_table
from structbench.llm import load_llm
from structbench.logs import step_log
from structbench.querygen.generate import generate_candidates
from structbench.querygen.settings import QuerygenSettings
from structbench.shards import select_shard, shard_doc_ids

with step_log(snakemake.log[0], "generate_queries") as log:
    documents = read_table(snakemake.input.documents, "documents")
    doc_ids = shard_doc_ids(documents["doc_id"].to_list(), int(snakemake.wildcards.shard), snakemake.params.n_shards)
    llm = load_llm(dict(snakemake.params.llm), cache_dir=snakemake.params.cache, name=snakemake.params.llm_name)
    candidates = generate_candidates(
        select_shard(documents, doc_ids),
        select_shard(read_table(snakemake.input.paragraphs, "paragraphs"), doc_ids),
        select_shard(read_table(snakemake.input.sections, "sections"), doc_ids),
        llm,
        QuerygenSettings(**dict(snakemake.params.settings)),
        corpus=snakemake.wildcards.corpus,
    )
    usage = llm.usage() | {"shard": int(snakemake.wildcards.shard), "documents": len(doc_ids)}
    log.info("shard %s: %d candidates, LLM usage %s", snakemake.wildcards.shard, candidates.height, usage)
    write_table(candidates, snakemake.output.candidates)
    write_json(snakemake.output.usage, usage)
