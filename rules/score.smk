rule score:
    input:
        unpack(score_inputs),
    output:
        f"{R}/{{corpus}}/scores/{{embedder}}/{{reranker}}/{{condition}}.parquet",
    log:
        f"{LOGS}/score/{{corpus}}/{{embedder}}-{{reranker}}-{{condition}}.log",
    conda:
        "../envs/cpu.yaml"
    params:
        cell=dense_cell,
        metrics=score_metrics,
        code=script_code("score"),
    script:
        "../workflow/scripts/score.py"


rule score_bm25:
    input:
        runs=f"{R}/{{corpus}}/runs/bm25/{{boundaries}}/{{structure}}.parquet",
        queries=scored_queries,
        chunks=f"{R}/{{corpus}}/chunks/{{boundaries}}/{{structure}}.parquet",
        texts=f"{R}/{{corpus}}/texts/{{boundaries}}/{{structure}}/none.parquet",
    output:
        f"{R}/{{corpus}}/scores/bm25/{{boundaries}}/{{structure}}.parquet",
    log:
        f"{LOGS}/score/{{corpus}}/bm25-{{boundaries}}-{{structure}}.log",
    conda:
        "../envs/cpu.yaml"
    params:
        cell=lexical_cell,
        metrics=SCORE_METRICS,
        code=script_code("score"),
    script:
        "../workflow/scripts/score.py"
