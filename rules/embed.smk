# GPU-kind rules: the Slurm profile routes them to the GPU partition (profiles/slurm/config.yaml).


rule embed_texts:
    input:
        f"{R}/{{corpus}}/texts/{{boundaries}}/{{structure}}/{{prefix}}.parquet",
    output:
        f"{R}/{{corpus}}/vectors/{{embedder}}/{{boundaries}}/{{structure}}/{{prefix}}.npy",
    log:
        f"{LOGS}/embed/{{corpus}}/{{embedder}}-{{boundaries}}-{{structure}}-{{prefix}}.log",
    params:
        embedder=embedder_spec,
        cache=f"{CACHE}/embeddings",
        code=code_version("embed", "cache"),
    threads: 2
    conda:
        "../envs/gpu-embed.yaml"
    script:
        "../workflow/scripts/embed_texts.py"


rule embed_queries:
    input:
        f"{R}/{{corpus}}/corpus/queries.parquet",
    output:
        f"{R}/{{corpus}}/vectors/{{embedder}}/queries.npy",
    log:
        f"{LOGS}/embed/{{corpus}}/{{embedder}}-queries.log",
    params:
        embedder=embedder_spec,
        cache=f"{CACHE}/embeddings",
        code=code_version("embed", "cache"),
    threads: 2
    conda:
        "../envs/gpu-embed.yaml"
    script:
        "../workflow/scripts/embed_queries.py"
