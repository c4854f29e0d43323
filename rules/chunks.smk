rule structural_chunks:
    input:
        documents=paths.documents("{corpus}"),
        paragraphs=paths.paragraphs("{corpus}"),
        sections=structure_sections,
    output:
        chunks=paths.chunks("{corpus}", "structural{size}/{structure}"),
        bounds=paths.chunk_report("{corpus}", "structural{size}/{structure}", "bounds"),
    log:
        f"{LOGS}/chunks/{{corpus}}/structural{{size}}-{{structure}}.log",
    conda:
        "../envs/cpu.yaml"
    params:
        tokenizer=config["tokenizer"],
        # the set's own size (its path's -t/-m suffix), else chunking.t_max / t_min (docs/method.md §6a)
        t_max=chunk_t_max,
        t_min=chunk_t_min,
        code=script_code("structural_chunks"),
    script:
        "../workflow/scripts/structural_chunks.py"


# Fixed windows (boundaries: fixed) and overlapping ones (fixed_overlap:<o>, the windows token: fixed_overlap-<o>).
rule fixed_chunks:
    input:
        documents=paths.documents("{corpus}"),
        paragraphs=paths.paragraphs("{corpus}"),
        sections=structure_sections,
        # size-matched to the structural chunks of its own size
        reference=paths.chunks("{corpus}", "structural{size}/{structure}"),
    output:
        chunks=paths.chunks("{corpus}", "{windows}{size}/{structure}"),
        size_match=paths.chunk_report("{corpus}", "{windows}{size}/{structure}", "size_match"),
        bounds=paths.chunk_report("{corpus}", "{windows}{size}/{structure}", "bounds"),
    log:
        f"{LOGS}/chunks/{{corpus}}/{{windows}}{{size}}-{{structure}}.log",
    wildcard_constraints:
        windows=FIXED_WINDOWS,
    conda:
        "../envs/cpu.yaml"
    params:
        tokenizer=config["tokenizer"],
        snap_tokens=config["chunking"]["fixed_snap_tokens"],
        t_min=chunk_t_min,
        t_max=chunk_t_max,
        overlap=window_overlap,
        code=script_code("fixed_chunks"),
    script:
        "../workflow/scripts/fixed_chunks.py"


# A practitioner's chunker (boundaries: external:<name>, config chunkers.<name>): the library's own cuts,
# located exactly in the flat text; a size-matched one also reads the structural set it is matched to.
rule external_chunks:
    input:
        unpack(external_reference),
        documents=paths.documents("{corpus}"),
        paragraphs=paths.paragraphs("{corpus}"),
        sections=structure_sections,
    output:
        chunks=paths.chunks("{corpus}", "external-{chunker}{size}/{structure}"),
        report=paths.chunk_report("{corpus}", "external-{chunker}{size}/{structure}", "chunker"),
        bounds=paths.chunk_report("{corpus}", "external-{chunker}{size}/{structure}", "bounds"),
    log:
        f"{LOGS}/chunks/{{corpus}}/external-{{chunker}}{{size}}-{{structure}}.log",
    conda:
        "../envs/chunkers.yaml"
    params:
        tokenizer=config["tokenizer"],
        t_max=chunk_t_max,
        t_min=chunk_t_min,
        chunker=chunker_entry,
        code=script_code("external_chunks"),
    script:
        "../workflow/scripts/external_chunks.py"


rule texts:
    input:
        unpack(text_contexts),
        documents=paths.documents("{corpus}"),
        chunks=paths.chunks("{corpus}", "{boundaries}/{structure}"),
    output:
        texts=paths.texts("{corpus}", "{boundaries}/{structure}/{prefix}"),
        report=paths.text_report("{corpus}", "{boundaries}/{structure}/{prefix}"),
    log:
        f"{LOGS}/texts/{{corpus}}/{{boundaries}}-{{structure}}-{{prefix}}.log",
    conda:
        "../envs/cpu.yaml"
    params:
        prefix=prefix_value,
        tokenizer=config["tokenizer"],
        separator=config["prefix"]["separator"],
        seed=config["seed"],
        # A prefix never takes more than half its chunk set's bound (structbench.prefixes.budget).
        max_prefix_tokens=prefix_budget,
        code=script_code("render_texts"),
    script:
        "../workflow/scripts/render_texts.py"


rule semantic_chunks:
    input:
        documents=paths.documents("{corpus}"),
        paragraphs=paths.paragraphs("{corpus}"),
        sections=structure_sections,
    output:
        chunks=paths.chunks("{corpus}", "semantic{size}/{structure}"),
        embed_report=paths.chunk_report("{corpus}", "semantic{size}/{structure}", "embed"),
        bounds=paths.chunk_report("{corpus}", "semantic{size}/{structure}", "bounds"),
    log:
        f"{LOGS}/chunks/{{corpus}}/semantic{{size}}-{{structure}}.log",
    conda:
        "../envs/gpu-embed.yaml"
    threads: 8
    resources:
        gpu=gpus_of(semantic_embedder_spec),
        mem_mb=16000,
        runtime=120,
    params:
        tokenizer=config["tokenizer"],
        t_max=chunk_t_max,
        t_min=chunk_t_min,
        threshold=config["chunking"]["semantic_threshold"],
        embedder=semantic_embedder_spec,
        cache=EMBEDDING_CACHE,
        code=script_code("semantic_chunks"),
    script:
        "../workflow/scripts/semantic_chunks.py"


# Situating contexts (prefix: context): one LLM call per chunk, in llm_shards document batches.


rule chunk_contexts:
    input:
        documents=paths.documents("{corpus}"),
        chunks=paths.chunks("{corpus}", "{boundaries}/{structure}"),
    output:
        contexts=paths.context_shard("{corpus}", "{boundaries}/{structure}", "{shard}", "parquet"),
        usage=paths.context_shard("{corpus}", "{boundaries}/{structure}", "{shard}", "usage.json"),
    log:
        f"{LOGS}/contexts/{{corpus}}/{{boundaries}}-{{structure}}-{{shard}}.log",
    conda:
        "../envs/gpu-llm.yaml"
    threads: context_threads
    resources:
        gpu=1,
        mem_mb=32000,
        runtime=720,
    params:
        llm=named("llms", config["contexts"]["llm"]),
        llm_name=config["contexts"]["llm"],
        max_tokens=config["contexts"]["max_tokens"],
        max_new_tokens=config["contexts"]["max_new_tokens"],
        tokenizer=config["tokenizer"],
        n_shards=config["llm_shards"],
        cache=LLM_CACHE,
        code=script_code("chunk_contexts"),
    script:
        "../workflow/scripts/chunk_contexts.py"


rule merge_contexts:
    input:
        unpack(context_shards),
        chunks=paths.chunks("{corpus}", "{boundaries}/{structure}"),
    output:
        contexts=paths.contexts("{corpus}", "{boundaries}/{structure}"),
        stats=paths.context_stats("{corpus}", "{boundaries}/{structure}"),
    log:
        f"{LOGS}/contexts/{{corpus}}/{{boundaries}}-{{structure}}-merge.log",
    conda:
        "../envs/cpu.yaml"
    params:
        code=script_code("merge_contexts"),
    script:
        "../workflow/scripts/merge_contexts.py"
