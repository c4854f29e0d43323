rule score:
    input:
        unpack(score_inputs),
    output:
        paths.scores("{corpus}", "{embedder}", "{reranker}", "{condition}"),
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
        runs=paths.bm25_runs("{corpus}", "{boundaries}/{structure}"),
        queries=scored_queries,
        chunks=paths.chunks("{corpus}", "{boundaries}/{structure}"),
        texts=paths.texts("{corpus}", "{boundaries}/{structure}/none"),
    output:
        paths.bm25_scores("{corpus}", "{boundaries}/{structure}"),
    log:
        f"{LOGS}/score/{{corpus}}/bm25-{{boundaries}}-{{structure}}.log",
    conda:
        "../envs/cpu.yaml"
    params:
        cell=lexical_cell,
        metrics=STUDY.score_metrics,
        code=script_code("score"),
    script:
        "../workflow/scripts/score.py"
