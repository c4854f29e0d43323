"""TOC routing: the LLM names a section from the candidate documents' contents (the routing table)."""

from structbench.datamodel import read_table, read_vectors, write_table
from structbench.llm import load_llm
from structbench.logs import step_log
from structbench.retrieval.toc import route_toc

with step_log(snakemake.log[0], "route_toc") as log:
    llm = load_llm(dict(snakemake.params.llm), cache_dir=snakemake.params.cache, name=snakemake.params.llm_name)
    routing = route_toc(
        read_vectors(snakemake.input.chunk_vectors),
        read_vectors(snakemake.input.query_vectors),
        read_table(snakemake.input.queries, "queries"),
        chunks=read_table(snakemake.input.chunks, "chunks"),
        sections=read_table(snakemake.input.sections, "sections"),
        title_vectors=read_vectors(snakemake.input.title_vectors),
        llm=llm,
        candidate_hits=snakemake.params.candidate_hits,
        use_gpu=snakemake.params.use_gpu,
        max_title_tokens=snakemake.params.max_title_tokens,
        tokenizer=snakemake.params.tokenizer,
    )
    log.info("%d queries routed, LLM usage %s", routing.height, llm.usage())
    write_table(routing, snakemake.output[0])
