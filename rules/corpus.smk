rule corpus:
    input:
        corpus_sources,
    output:
        documents=f"{R}/{{corpus}}/corpus/documents.parquet",
        paragraphs=f"{R}/{{corpus}}/corpus/paragraphs.parquet",
        queries=f"{R}/{{corpus}}/corpus/queries.parquet",
        funnel=f"{R}/{{corpus}}/corpus/funnel.parquet",
        skipped=f"{R}/{{corpus}}/corpus/skipped.parquet",
        sections=f"{R}/{{corpus}}/structure/gold/sections.parquet",
    log:
        f"{LOGS}/corpus/{{corpus}}.log",
    conda:
        "../envs/cpu.yaml"
    params:
        spec=corpus_spec,
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
        f"{R}/{{corpus}}/corpus/stats.json",
    log:
        f"{LOGS}/corpus_stats/{{corpus}}.log",
    conda:
        "../envs/cpu.yaml"
    params:
        code=script_code("corpus_stats"),
    script:
        "../workflow/scripts/corpus_stats.py"
