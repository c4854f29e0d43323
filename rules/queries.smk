# Query generation (corpora with queries: generated; docs/method.md §9, Kuehlkamp et al., appendix F): the pipeline
# samples gold spans per document, an LLM writes a question about each and paraphrases the ones that pass
# the leakage filter (structbench.querygen). One GPU-kind job per document shard (llm_shards), then a CPU
# merge that balances the survivors per type and writes the queries table the scoring rules read
# (scored_queries), beside the funnel and its summary for the report.


rule generate_queries:
    input:
        documents=f"{R}/{{corpus}}/corpus/documents.parquet",
        paragraphs=f"{R}/{{corpus}}/corpus/paragraphs.parquet",
        sections=f"{R}/{{corpus}}/structure/gold/sections.parquet",
    output:
        candidates=f"{R}/{{corpus}}/queries/shards/{{shard}}.candidates.parquet",
        usage=f"{R}/{{corpus}}/queries/shards/{{shard}}.usage.json",
    log:
        f"{LOGS}/queries/{{corpus}}/generate-{{shard}}.log",
    conda:
        "../envs/gpu-llm.yaml"
    threads: 4
    resources:
        gpu=1,
        mem_mb=32000,
        runtime=720,
    params:
        llm=querygen_llm,
        llm_name=config["querygen"]["llm"],
        settings=querygen_generation,
        n_shards=config["llm_shards"],
        cache=LLM_CACHE,
        code=script_code("generate_queries"),
    script:
        "../workflow/scripts/generate_queries.py"


rule merge_queries:
    input:
        unpack(querygen_shards),
        documents=f"{R}/{{corpus}}/corpus/documents.parquet",
    output:
        queries=f"{R}/{{corpus}}/queries/queries.parquet",
        candidates=f"{R}/{{corpus}}/queries/candidates.parquet",
        funnel=f"{R}/{{corpus}}/queries/funnel.parquet",
        stats=f"{R}/{{corpus}}/queries/stats.json",
    log:
        f"{LOGS}/queries/{{corpus}}/merge.log",
    conda:
        "../envs/cpu.yaml"
    params:
        settings=querygen_settings,
        code=script_code("merge_queries"),
    script:
        "../workflow/scripts/merge_queries.py"
