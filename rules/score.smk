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
        unpack(bm25_score_inputs),
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
