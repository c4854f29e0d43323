rule corpus:
    input:
        corpus_sources,
    output:
        documents=paths.documents("{corpus}"),
        paragraphs=paths.paragraphs("{corpus}"),
        queries=paths.corpus_table("{corpus}", "queries"),
        funnel=paths.corpus_table("{corpus}", "funnel"),
        skipped=paths.corpus_table("{corpus}", "skipped"),
        sections=paths.sections("{corpus}", "gold"),
    log:
        f"{LOGS}/corpus/{{corpus}}.log",
    conda:
        "../envs/cpu.yaml"
    params:
        spec=corpus_spec,
        sources=corpus_source_digest,
        code=script_code("build_corpus"),
    script:
        "../workflow/scripts/build_corpus.py"


rule corpus_stats:
    input:
        documents=rules.corpus.output.documents,
        paragraphs=rules.corpus.output.paragraphs,
        queries=scored_queries,
        funnel=rules.corpus.output.funnel,
        skipped=rules.corpus.output.skipped,
        sections=rules.corpus.output.sections,
    output:
        paths.corpus_stats("{corpus}"),
    log:
        f"{LOGS}/corpus_stats/{{corpus}}.log",
    conda:
        "../envs/cpu.yaml"
    params:
        code=script_code("corpus_stats"),
    script:
        "../workflow/scripts/corpus_stats.py"
