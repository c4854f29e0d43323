rule retrieval_layer:
    input:
        runs=retrieval_layer_runs,
    output:
        paths.retrieval_layer("{corpus}", "{embedder}", "{reranker}"),
    log:
        f"{LOGS}/diagnostics/{{corpus}}/{{embedder}}-{{reranker}}-retrieval_layer.log",
    conda:
        "../envs/cpu.yaml"
    params:
        conditions=STUDY.retrieval_layer_conditions(),
        pairs=STUDY.retrieval_layer_pairs(),
        code=script_code("retrieval_layer"),
    script:
        "../workflow/scripts/retrieval_layer.py"


rule decisive_questions:
    input:
        unpack(decisive_inputs),
    output:
        questions=paths.decisive("{corpus}", "{embedder}", "{reranker}", "questions"),
        flips=paths.decisive("{corpus}", "{embedder}", "{reranker}", "flips"),
    log:
        f"{LOGS}/diagnostics/{{corpus}}/{{embedder}}-{{reranker}}-decisive_questions.log",
    conda:
        "../envs/cpu.yaml"
    params:
        conditions=STUDY.decisive_conditions(),
        contrasts=STUDY.decisive_contrasts(),
        settings=STUDY.decisive_settings(),
        code=script_code("decisive_questions"),
    script:
        "../workflow/scripts/decisive_questions.py"


rule report:
    input:
        # every report input declared in structbench.report.table_registry.ReportInputs (report_inputs)
        **STUDY.report_input_files(),
    output:
        report=report(REPORT, category="Report", caption="../workflow/report/report.rst"),
        html=paths.report("index.html"),
        tables=report(
            directory(paths.report("tables")),
            patterns=[bundled_table_pattern()],  # the corpus-sized tables stay files only
            category="Tables",
            caption="../workflow/report/table.rst",
            labels={"table": "{name}"},
        ),
        figures=report(
            directory(paths.report("figures")),
            patterns=["{name}.png"],
            category="Figures",
            caption="../workflow/report/figure.rst",
            labels={"figure": "{name}"},
        ),
        # the decision, Table 1 and Table 2 as booktabs LaTeX, and tables.tex that inputs them (structbench.report.latex)
        latex=directory(paths.report("latex")),
        manifest=paths.report("manifest.json"),
        summary=paths.report("summary.txt"),
    log:
        f"{LOGS}/report.log",
    conda:
        "../envs/cpu.yaml"
    params:
        input_keys=STUDY.report_input_keys(),
        primary_metric=config["stats"]["primary_metric"],
        bootstrap_iters=config["stats"]["bootstrap_iters"],
        # the axes, and a condition's own size where it has one (docs/method.md §6a)
        conditions=STUDY.condition_entries(),
        contrasts=contrast_params,
        dropped_contrasts=STUDY.dropped_contrasts,
        table_captions=TABLE_CAPTIONS,
        figure_captions=FIGURE_CAPTIONS,
        code=script_code("report"),
    script:
        "../workflow/scripts/report.py"
