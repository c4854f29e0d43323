rule retrieve:
    input:
        chunk_vectors=condition_vectors,
        query_vectors=f"{R}/{{corpus}}/vectors/{{embedder}}/queries.npy",
        queries=scored_queries,
    output:
        f"{R}/{{corpus}}/runs/{{embedder}}/{{condition}}.parquet",
    log:
        f"{LOGS}/retrieve/{{corpus}}/{{embedder}}-{{condition}}.log",
    params:
        retrieval=condition_retrieval,
        top_k=config["retrieval"]["top_k"],
        use_gpu=config["retrieval"]["use_gpu"],
        code=code_version("retrieval"),
    conda:
        "../envs/cpu.yaml"
    script:
        "../workflow/scripts/retrieve.py"


rule rerank:
    input:
        runs=f"{R}/{{corpus}}/runs/{{embedder}}/{{condition}}.parquet",
        queries=scored_queries,
        texts=condition_texts,
    output:
        f"{R}/{{corpus}}/runs/{{embedder}}/reranked/{{reranker}}/{{condition}}.parquet",
    log:
        f"{LOGS}/rerank/{{corpus}}/{{embedder}}-{{reranker}}-{{condition}}.log",
    params:
        reranker=reranker_spec,
        code=code_version("rerank", "embed"),
    threads: 8
    resources:
        gpu=1,
        mem_mb=32000,
        runtime=240,
    conda:
        "../envs/gpu-embed.yaml"
    script:
        "../workflow/scripts/rerank.py"


rule bm25:
    input:
        texts=f"{R}/{{corpus}}/texts/{{boundaries}}/{{structure}}/none.parquet",
        queries=scored_queries,
    output:
        f"{R}/{{corpus}}/runs/bm25/{{boundaries}}/{{structure}}.parquet",
    log:
        f"{LOGS}/bm25/{{corpus}}/{{boundaries}}-{{structure}}.log",
    params:
        top_k=config["retrieval"]["top_k"],
        code=code_version("lexical", "retrieval"),
    conda:
        "../envs/cpu.yaml"
    script:
        "../workflow/scripts/bm25.py"
