rule report:
    input:
        scores=all_cells(),
        contrasts=all_contrasts(),
        corpus_stats=all_corpus_stats(),
        size_matches=all_size_matches(),
        text_reports=all_text_reports(),
        bm25_scores=all_bm25_scores(),
    output:
        report=report(REPORT, category="Report", caption="../workflow/report/report.rst"),
        means=f"{R}/report/condition_means.parquet",
    log:
        f"{LOGS}/report.log",
    params:
        corpora=CORPORA,
        primary_metric=config["stats"]["primary_metric"],
        bootstrap_iters=config["stats"]["bootstrap_iters"],
        conditions=config["conditions"],
        contrasts=contrast_params,
        code=code_version("report"),
    conda:
        "../envs/cpu.yaml"
    script:
        "../workflow/scripts/report.py"
