# GPU-kind rules: each declares resources gpu=1 (gpus_of: 0 for an endpoint embedder, whose job only sends
# HTTP requests), and the Slurm profile sends every job that asks for a GPU to the GPU partition
# (profiles/slurm/partitions.yaml), so none lands on a CPU node by omission.


rule embed_texts:
    input:
        unpack(late_inputs),
        texts=f"{R}/{{corpus}}/texts/{{boundaries}}/{{structure}}/{{prefix}}.parquet",
    output:
        vectors=f"{R}/{{corpus}}/vectors/{{embedder}}/{{boundaries}}/{{structure}}/{{prefix}}.npy",
        report=f"{R}/{{corpus}}/vectors/{{embedder}}/{{boundaries}}/{{structure}}/{{prefix}}.embed.json",
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
        cache=f"{CACHE}/embeddings",
        prefix=prefix_value,
        late=late_params,
        code=script_code("embed_texts"),
    script:
        "../workflow/scripts/embed_texts.py"


rule embed_queries:
    input:
        scored_queries,
    output:
        vectors=f"{R}/{{corpus}}/vectors/{{embedder}}/queries.npy",
        report=f"{R}/{{corpus}}/vectors/{{embedder}}/queries.embed.json",
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
        cache=f"{CACHE}/embeddings",
        code=script_code("embed_queries"),
    script:
        "../workflow/scripts/embed_queries.py"


rule embed_titles:
    input:
        f"{R}/{{corpus}}/structure/{{structure}}/sections.parquet",
    output:
        vectors=f"{R}/{{corpus}}/vectors/{{embedder}}/titles/{{structure}}.npy",
        report=f"{R}/{{corpus}}/vectors/{{embedder}}/titles/{{structure}}.embed.json",
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
        cache=f"{CACHE}/embeddings",
        code=script_code("embed_titles"),
    script:
        "../workflow/scripts/embed_titles.py"
