rule retrieval_layer:
    input:
        runs=retrieval_layer_runs,
    output:
        f"{R}/{{corpus}}/diagnostics/{{embedder}}/{{reranker}}/retrieval_layer.parquet",
    log:
        f"{LOGS}/diagnostics/{{corpus}}/{{embedder}}-{{reranker}}-retrieval_layer.log",
    conda:
        "../envs/cpu.yaml"
    params:
        conditions=retrieval_layer_conditions(),
        pairs=RETRIEVAL_LAYER_PAIRS,
        code=script_code("retrieval_layer"),
    script:
        "../workflow/scripts/retrieval_layer.py"


rule report:
    input:
        # every report input declared in structbench.report.registry.ReportInputs (report_inputs)
        **report_input_files(),
    output:
        report=report(REPORT, category="Report", caption="../workflow/report/report.rst"),
        html=f"{R}/report/index.html",
        tables=report(
            directory(f"{R}/report/tables"),
            patterns=["{name}.csv"],
            category="Tables",
            caption="../workflow/report/table.rst",
            labels={"table": "{name}"},
        ),
        figures=report(
            directory(f"{R}/report/figures"),
            patterns=["{name}.png"],
            category="Figures",
            caption="../workflow/report/figure.rst",
            labels={"figure": "{name}"},
        ),
        # Table 1 and Table 2 as booktabs LaTeX, and tables.tex that inputs both (structbench.report.latex)
        latex=directory(f"{R}/report/latex"),
        manifest=f"{R}/report/manifest.json",
        summary=SUMMARY,
    log:
        f"{LOGS}/report.log",
    conda:
        "../envs/cpu.yaml"
    params:
        input_keys=report_input_keys(),
        primary_metric=config["stats"]["primary_metric"],
        bootstrap_iters=config["stats"]["bootstrap_iters"],
        # the axes, and a condition's own size where it has one (docs/method.md §6a)
        conditions={name: condition.entry() for name, condition in CONDITIONS.items()},
        contrasts=contrast_params,
        dropped_contrasts=DROPPED_CONTRASTS,
        table_captions=table_captions(),
        figure_captions=figure_captions(),
        code=script_code("report"),
    script:
        "../workflow/scripts/report.py"


onsuccess:
    print_run_summary()
