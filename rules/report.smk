rule report:
    input:
        scores=all_cells(),
        contrasts=all_contrasts(),
        corpus_stats=all_corpus_stats(),
        size_matches=all_size_matches(),
        text_reports=all_text_reports(),
        bm25_scores=all_bm25_scores(),
        chunk_sets=list(all_chunk_sets().values()),
        embed_reports=list(all_embed_reports().values()),
        induction_stats=all_induction_stats(),
        context_stats=all_context_stats(),
        querygen_stats=all_querygen_stats(),
    output:
        report=report(REPORT, category="Report", caption="../workflow/report/report.rst"),
        means=f"{R}/report/condition_means.parquet",
    log:
        f"{LOGS}/report.log",
    params:
        corpora=CORPORA,
        chunk_sets=list(all_chunk_sets()),
        embed_reports=list(all_embed_reports()),
        t_max=config["chunking"]["t_max"],
        t_min=config["chunking"]["t_min"],
        primary_metric=config["stats"]["primary_metric"],
        bootstrap_iters=config["stats"]["bootstrap_iters"],
        conditions=config["conditions"],
        contrasts=contrast_params,
        code=code_version("report", "boundaries", "cells"),
    conda:
        "../envs/cpu.yaml"
    script:
        "../workflow/scripts/report.py"
