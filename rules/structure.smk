# Structure induction (structure: induced:<inducer>), by the inducer's kind. An LLM inducer
# (structbench.structure.induction) reads each document's paragraphs with the headings stripped and states
# its sections: one GPU-kind job per document shard (llm_shards), then a CPU merge that verifies the whole
# corpus's induced sections. A segmentation inducer (structbench.structure.segmentation) needs no LLM: one
# embedding job segments the whole corpus; a learned inducer (structbench.structure.learned, below) likewise, after
# its training step. Whatever the kind, the table sits where every structure source does,
# so chunking reads it like the gold one.


rule induce_structure:
    input:
        documents=paths.documents("{corpus}"),
        paragraphs=paths.paragraphs("{corpus}"),
    output:
        sections=paths.induction_shard("{corpus}", "induced-{inducer}", "{shard}", "sections.parquet"),
        status=paths.induction_shard("{corpus}", "induced-{inducer}", "{shard}", "status.parquet"),
        usage=paths.induction_shard("{corpus}", "induced-{inducer}", "{shard}", "usage.json"),
    log:
        f"{LOGS}/structure/{{corpus}}/induced-{{inducer}}-{{shard}}.log",
    wildcard_constraints:
        inducer=LLM_INDUCERS,
    conda:
        "../envs/gpu-llm.yaml"
    threads: inducer_threads
    resources:
        gpu=1,
        mem_mb=32000,
        runtime=720,
    params:
        llm=inducer_llm,
        llm_name=inducer_llm_name,
        options=inducer_options,
        n_shards=config["llm_shards"],
        cache=LLM_CACHE,
        code=script_code("induce_structure"),
    script:
        "../workflow/scripts/induce_structure.py"


rule merge_structure:
    input:
        unpack(induction_shards),
        paragraphs=paths.paragraphs("{corpus}"),
    output:
        sections=paths.sections("{corpus}", "induced-{inducer}"),
        status=paths.induction_file("{corpus}", "induced-{inducer}", "status.parquet"),
        usage=paths.induction_file("{corpus}", "induced-{inducer}", "usage.json"),
    log:
        f"{LOGS}/structure/{{corpus}}/induced-{{inducer}}-merge.log",
    wildcard_constraints:
        inducer=LLM_INDUCERS,
    conda:
        "../envs/cpu.yaml"
    params:
        code=script_code("merge_structure"),
    script:
        "../workflow/scripts/merge_structure.py"


rule segment_structure:
    input:
        documents=paths.documents("{corpus}"),
        paragraphs=paths.paragraphs("{corpus}"),
    output:
        sections=paths.sections("{corpus}", "induced-{inducer}"),
        status=paths.induction_file("{corpus}", "induced-{inducer}", "status.parquet"),
        usage=paths.induction_file("{corpus}", "induced-{inducer}", "usage.json"),
    log:
        f"{LOGS}/structure/{{corpus}}/induced-{{inducer}}.log",
    wildcard_constraints:
        inducer=SEGMENTATION_INDUCERS,
    conda:
        "../envs/gpu-embed.yaml"
    threads: 4
    resources:
        gpu=gpus_of(inducer_embedder_spec),
        mem_mb=16000,
        runtime=120,
    params:
        embedder=inducer_embedder_spec,
        embedder_name=inducer_embedder,
        options=inducer_options,
        cache=EMBEDDING_CACHE,
        code=script_code("segment_structure"),
    script:
        "../workflow/scripts/segment_structure.py"


# A learned inducer (structbench.structure.learned) trains on a declared corpus's documents with their gold
# headings (one CPU job per inducer; its model serves every corpus of the run), or, with train.corpus: self,
# cross-fits inside its induction job (each document's sections from a model that never saw it).
rule train_inducer:
    input:
        unpack(training_tables),
    output:
        model=paths.inducer_model("{inducer}", "model.bin"),
        training=paths.inducer_model("{inducer}", "training.json"),
    log:
        f"{LOGS}/structure/train-{{inducer}}.log",
    wildcard_constraints:
        inducer=LEARNED_INDUCERS,
    conda:
        "../envs/gpu-embed.yaml"
    threads: 4
    resources:
        gpu=gpus_of(inducer_embedder_spec),
        mem_mb=16000,
        runtime=120,
    params:
        embedder=inducer_embedder_spec,
        embedder_name=inducer_embedder,
        train=learned_training,
        cache=EMBEDDING_CACHE,
        code=script_code("train_inducer"),
    script:
        "../workflow/scripts/train_inducer.py"


rule learned_structure:
    input:
        unpack(learned_inputs),
        documents=paths.documents("{corpus}"),
        paragraphs=paths.paragraphs("{corpus}"),
    output:
        sections=paths.sections("{corpus}", "induced-{inducer}"),
        status=paths.induction_file("{corpus}", "induced-{inducer}", "status.parquet"),
        usage=paths.induction_file("{corpus}", "induced-{inducer}", "usage.json"),
    log:
        f"{LOGS}/structure/{{corpus}}/induced-{{inducer}}.log",
    wildcard_constraints:
        inducer=LEARNED_INDUCERS,
    conda:
        "../envs/gpu-embed.yaml"
    threads: 4
    resources:
        gpu=gpus_of(inducer_embedder_spec),
        mem_mb=16000,
        runtime=120,
    params:
        embedder=inducer_embedder_spec,
        embedder_name=inducer_embedder,
        options=inducer_options,
        train=crossfit_training,
        cache=EMBEDDING_CACHE,
        code=script_code("learned_structure"),
    script:
        "../workflow/scripts/learned_structure.py"


rule induction_stats:
    input:
        status=paths.induction_file("{corpus}", "induced-{inducer}", "status.parquet"),
        usage=paths.induction_file("{corpus}", "induced-{inducer}", "usage.json"),
        sections=paths.sections("{corpus}", "induced-{inducer}"),
        gold_sections=paths.sections("{corpus}", "gold"),
        chunks=paths.chunks("{corpus}", "structural/induced-{inducer}"),
        gold_chunks=paths.chunks("{corpus}", "structural/gold"),
    output:
        paths.induction_file("{corpus}", "induced-{inducer}", "stats.json"),
    log:
        f"{LOGS}/structure/{{corpus}}/induced-{{inducer}}-stats.log",
    conda:
        "../envs/cpu.yaml"
    params:
        kind=inducer_kind,
        code=script_code("induction_stats"),
    script:
        "../workflow/scripts/induction_stats.py"
