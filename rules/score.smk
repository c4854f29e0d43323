rule score:
    input:
        runs=condition_runs,
        queries=f"{R}/{{corpus}}/corpus/queries.parquet",
        chunks=condition_chunks,
        texts=condition_texts,
    output:
        f"{R}/{{corpus}}/scores/{{embedder}}/{{reranker}}/{{condition}}.parquet",
    log:
        f"{LOGS}/score/{{corpus}}/{{embedder}}-{{reranker}}-{{condition}}.log",
    params:
        ndcg_k=config["metrics"]["ndcg_k"],
        recall_k=config["metrics"]["recall_k"],
        budgets=config["metrics"]["budgets"],
        code=code_version("metrics"),
    script:
        "../workflow/scripts/score.py"
