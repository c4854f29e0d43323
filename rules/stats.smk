rule contrasts:
    input:
        contrast_inputs,
    output:
        paths.cell_statistics("{corpus}", "{embedder}", "{reranker}", "contrasts"),
    log:
        f"{LOGS}/contrasts/{{corpus}}/{{embedder}}-{{reranker}}.log",
    conda:
        "../envs/cpu.yaml"
    params:
        contrasts=contrast_params,
        primary_metric=config["stats"]["primary_metric"],
        contrast_metrics=config["stats"]["contrast_metrics"],
        bootstrap_iters=config["stats"]["bootstrap_iters"],
        mixedlm=config["stats"]["mixedlm"],
        cluster=config["stats"]["cluster"],
        seed=config["seed"],
        code=script_code("contrasts"),
    script:
        "../workflow/scripts/contrasts.py"


rule condition_stats:
    input:
        contrast_inputs,
    output:
        means=paths.cell_statistics("{corpus}", "{embedder}", "{reranker}", "condition_means"),
        dose_response=paths.cell_statistics("{corpus}", "{embedder}", "{reranker}", "dose_response"),
        decision=paths.cell_statistics("{corpus}", "{embedder}", "{reranker}", "decision"),
    log:
        f"{LOGS}/contrasts/{{corpus}}/{{embedder}}-{{reranker}}-condition_stats.log",
    conda:
        "../envs/cpu.yaml"
    params:
        series=STUDY.dose_series(),
        conditions=STUDY.condition_entries(),
        primary_metric=config["stats"]["primary_metric"],
        bootstrap_iters=config["stats"]["bootstrap_iters"],
        cluster=config["stats"]["cluster"],
        seed=config["seed"],
        code=script_code("condition_stats"),
    script:
        "../workflow/scripts/condition_stats.py"


# Only when config subgroups names moderators and contrasts (the report asks for its tables: Study.all_subgroups).
rule subgroups:
    input:
        unpack(subgroup_inputs),
    output:
        paths.cell_statistics("{corpus}", "{embedder}", "{reranker}", "subgroups"),
    log:
        f"{LOGS}/contrasts/{{corpus}}/{{embedder}}-{{reranker}}-subgroups.log",
    conda:
        "../envs/cpu.yaml"
    params:
        subgroups=STUDY.subgroup_params(),
        qtype_reference=qtype_reference,
        analyzer=config["retrieval"]["bm25_analyzer"],
        primary_metric=config["stats"]["primary_metric"],
        bootstrap_iters=config["stats"]["bootstrap_iters"],
        cluster=config["stats"]["cluster"],
        seed=config["seed"],
        code=script_code("subgroups"),
    script:
        "../workflow/scripts/subgroups.py"
