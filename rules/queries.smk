# Query generation (corpora with queries: generated; docs/method.md §9, Kuehlkamp et al., appendix F): the pipeline
# samples gold spans per document, an LLM writes a question about each and paraphrases the ones that pass
# the leakage filter (structbench.querygen). One GPU-kind job per document shard (llm_shards), then a CPU
# merge that balances the survivors per type and writes the queries table the scoring rules read
# (scored_queries), beside the funnel and its summary for the report.


rule generate_queries:
    input:
        documents=paths.documents("{corpus}"),
        paragraphs=paths.paragraphs("{corpus}"),
        sections=paths.sections("{corpus}", "gold"),
    output:
        candidates=paths.querygen_shard("{corpus}", "{shard}", "candidates.parquet"),
        usage=paths.querygen_shard("{corpus}", "{shard}", "usage.json"),
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
        llm=named("llms", config["querygen"]["llm"]),
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
        documents=paths.documents("{corpus}"),
    output:
        queries=paths.generated_queries_file("{corpus}", "queries.parquet"),
        candidates=paths.generated_queries_file("{corpus}", "candidates.parquet"),
        funnel=paths.generated_queries_file("{corpus}", "funnel.parquet"),
        stats=paths.generated_queries_file("{corpus}", "stats.json"),
    log:
        f"{LOGS}/queries/{{corpus}}/merge.log",
    conda:
        "../envs/cpu.yaml"
    params:
        settings=querygen_settings,
        code=script_code("merge_queries"),
    script:
        "../workflow/scripts/merge_queries.py"
