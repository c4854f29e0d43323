# GPU-kind rules: each declares resources gpu=1 (gpus_of: 0 for an endpoint embedder, whose job only sends
# HTTP requests), and the Slurm profile sends every job that asks for a GPU to the GPU partition
# (profiles/slurm/partitions.yaml), so none lands on a CPU node by omission.


rule embed_texts:
    input:
        unpack(late_inputs),
        texts=paths.texts("{corpus}", "{boundaries}/{structure}/{prefix}"),
    output:
        vectors=paths.vectors("{corpus}", "{embedder}", "{boundaries}/{structure}/{prefix}"),
        report=paths.embed_report("{corpus}", "{embedder}", "{boundaries}/{structure}/{prefix}"),
    log:
        f"{LOGS}/embed/{{corpus}}/{{embedder}}-{{boundaries}}-{{structure}}-{{prefix}}.log",
    conda:
        "../envs/gpu-embed.yaml"
    threads: 8
    resources:
        gpu=gpus_of(embedder_spec),
        mem_mb=32000,
        runtime=240,
    params:
        embedder=embedder_spec,
        cache=EMBEDDING_CACHE,
        prefix=prefix_value,
        late=late_params,
        code=script_code("embed_texts"),
    script:
        "../workflow/scripts/embed_texts.py"


rule embed_queries:
    input:
        scored_queries,
    output:
        vectors=paths.query_vectors("{corpus}", "{embedder}"),
        report=paths.query_embed_report("{corpus}", "{embedder}"),
    log:
        f"{LOGS}/embed/{{corpus}}/{{embedder}}-queries.log",
    conda:
        "../envs/gpu-embed.yaml"
    threads: 4
    resources:
        gpu=gpus_of(embedder_spec),
        mem_mb=16000,
        runtime=60,
    params:
        embedder=embedder_spec,
        cache=EMBEDDING_CACHE,
        code=script_code("embed_queries"),
    script:
        "../workflow/scripts/embed_queries.py"


rule embed_titles:
    input:
        paths.sections("{corpus}", "{structure}"),
    output:
        vectors=paths.title_vectors("{corpus}", "{embedder}", "{structure}"),
        report=paths.title_embed_report("{corpus}", "{embedder}", "{structure}"),
    log:
        f"{LOGS}/embed/{{corpus}}/{{embedder}}-titles-{{structure}}.log",
    conda:
        "../envs/gpu-embed.yaml"
    threads: 4
    resources:
        gpu=gpus_of(embedder_spec),
        mem_mb=16000,
        runtime=60,
    params:
        embedder=embedder_spec,
        # TOC routing's titles, bounded as its contents are (the smallest budget of the conditions reading them)
        max_title_tokens=structure_title_budget,
        tokenizer=config["tokenizer"],
        cache=EMBEDDING_CACHE,
        code=script_code("embed_titles"),
    script:
        "../workflow/scripts/embed_titles.py"
