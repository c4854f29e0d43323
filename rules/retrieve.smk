# Routed kinds: a router writes the routing table the retrieve rule (and scoring) reads. Two-stage's
# stage 1 is a CPU job; TOC routing asks an LLM, so it is a GPU-kind job.


rule route_sections:
    input:
        chunk_vectors=condition_vectors,
        query_vectors=paths.query_vectors("{corpus}", "{embedder}"),
        queries=scored_queries,
        chunks=condition_chunks,
        sections=condition_sections,
    output:
        paths.routing("{corpus}", "{embedder}", "{condition}"),
    log:
        f"{LOGS}/route/{{corpus}}/{{embedder}}-{{condition}}.log",
    wildcard_constraints:
        condition=conditions_retrieved_by("two_stage"),
    conda:
        "../envs/cpu.yaml"
    params:
        top_sections=config["retrieval"]["hier_top_sections"],
        code=script_code("route_sections"),
    script:
        "../workflow/scripts/route_sections.py"


rule route_toc:
    input:
        chunk_vectors=condition_vectors,
        query_vectors=paths.query_vectors("{corpus}", "{embedder}"),
        queries=scored_queries,
        chunks=condition_chunks,
        sections=condition_sections,
        title_vectors=condition_title_vectors,
    output:
        paths.routing("{corpus}", "{embedder}", "{condition}"),
    log:
        f"{LOGS}/route/{{corpus}}/{{embedder}}-{{condition}}.log",
    wildcard_constraints:
        condition=conditions_retrieved_by("toc"),
    conda:
        "../envs/gpu-llm.yaml"
    threads: 4
    resources:
        gpu=1,
        mem_mb=32000,
        runtime=240,
    params:
        llm=named("llms", config["retrieval"]["toc_llm"]),
        llm_name=config["retrieval"]["toc_llm"],
        candidate_hits=config["retrieval"]["toc_candidate_hits"],
        use_gpu=config["retrieval"]["use_gpu"],
        # A title never takes more than half the condition's t_max, as a prefix (structbench.prefixes.budget).
        max_title_tokens=title_budget,
        tokenizer=config["tokenizer"],
        cache=LLM_CACHE,
        code=script_code("route_toc"),
    script:
        "../workflow/scripts/route_toc.py"


rule retrieve:
    input:
        unpack(retrieve_inputs),
    output:
        paths.runs("{corpus}", "{embedder}", "{condition}"),
    log:
        f"{LOGS}/retrieve/{{corpus}}/{{embedder}}-{{condition}}.log",
    conda:
        "../envs/cpu.yaml"
    params:
        retrieval=condition_retrieval,
        top_k=config["retrieval"]["top_k"],
        use_gpu=config["retrieval"]["use_gpu"],
        code=script_code("retrieve"),
    script:
        "../workflow/scripts/retrieve.py"


# Read-time modes (docs/method.md §18): the condition's flat (or reranked) hits expanded into the spans a
# reader gets; scoring reads the spans and their units table.
rule readtime:
    input:
        runs=condition_runs,
        chunks=condition_chunks,
        sections=condition_sections,
        documents=paths.documents("{corpus}"),
    output:
        runs=paths.readtime_runs("{corpus}", "{embedder}", "{reranker}", "{condition}"),
        units=paths.readtime_units("{corpus}", "{embedder}", "{reranker}", "{condition}"),
    log:
        f"{LOGS}/readtime/{{corpus}}/{{embedder}}-{{reranker}}-{{condition}}.log",
    wildcard_constraints:
        condition=READTIME_CONDITIONS,
    conda:
        "../envs/cpu.yaml"
    params:
        retrieval=condition_retrieval,
        hits=config["retrieval"]["readtime_hits"],
        seed=config["seed"],
        tokenizer=config["tokenizer"],
        code=script_code("readtime"),
    script:
        "../workflow/scripts/readtime.py"


rule rerank:
    input:
        runs=unreranked_runs,
        queries=scored_queries,
        texts=condition_texts,
    output:
        paths.reranked_runs("{corpus}", "{embedder}", "{reranker}", "{condition}"),
    log:
        f"{LOGS}/rerank/{{corpus}}/{{embedder}}-{{reranker}}-{{condition}}.log",
    conda:
        "../envs/gpu-embed.yaml"
    threads: 8
    resources:
        gpu=gpus_of(reranker_spec),
        mem_mb=32000,
        runtime=240,
    params:
        reranker=reranker_spec,
        code=script_code("rerank"),
    script:
        "../workflow/scripts/rerank.py"


rule bm25:
    input:
        texts=paths.texts("{corpus}", "{boundaries}/{structure}/none"),
        queries=scored_queries,
    output:
        paths.bm25_runs("{corpus}", "{boundaries}/{structure}"),
    log:
        f"{LOGS}/bm25/{{corpus}}/{{boundaries}}-{{structure}}.log",
    conda:
        "../envs/cpu.yaml"
    params:
        top_k=config["retrieval"]["top_k"],
        analyzer=config["retrieval"]["bm25_analyzer"],
        code=script_code("bm25"),
    script:
        "../workflow/scripts/bm25.py"


# A BM25 condition with a prefix (B3: path:3) ranks its text set's texts, prefix and content as embedded: a run of
# its own beside the chunk set's, with the same analyzer, parameters and script.
rule bm25_prefixed:
    input:
        texts=paths.texts("{corpus}", "{boundaries}/{structure}/{prefix}"),
        queries=scored_queries,
    output:
        paths.bm25_runs("{corpus}", "{boundaries}/{structure}", "{prefix}"),
    log:
        f"{LOGS}/bm25/{{corpus}}/{{boundaries}}-{{structure}}-{{prefix}}.log",
    wildcard_constraints:
        prefix=BM25_PREFIXES,
    conda:
        "../envs/cpu.yaml"
    params:
        top_k=config["retrieval"]["top_k"],
        analyzer=config["retrieval"]["bm25_analyzer"],
        code=script_code("bm25"),
    script:
        "../workflow/scripts/bm25.py"


# The retrieval kinds that read more than the condition's own vectors write the same run file as
# `retrieve`: each rule below is constrained to the conditions of its kind and outranks `retrieve` there.
ruleorder: fuse_runs > retrieve
ruleorder: inject_query_titles > retrieve
ruleorder: choose_per_candidate > retrieve


rule fuse_runs:
    input:
        unpack(fusion_inputs),
        chunk_vectors=condition_vectors,
        query_vectors=paths.query_vectors("{corpus}", "{embedder}"),
        queries=scored_queries,
    output:
        paths.runs("{corpus}", "{embedder}", "{condition}"),
    log:
        f"{LOGS}/retrieve/{{corpus}}/{{embedder}}-{{condition}}.log",
    wildcard_constraints:
        condition=conditions_retrieved_by("rrf"),
    conda:
        "../envs/cpu.yaml"
    params:
        retrieval=condition_retrieval,
        top_k=config["retrieval"]["top_k"],
        use_gpu=config["retrieval"]["use_gpu"],
        rrf_k=config["retrieval"]["rrf_k"],
        code=script_code("fuse_runs"),
    script:
        "../workflow/scripts/fuse_runs.py"


rule inject_query_titles:
    input:
        chunk_vectors=condition_vectors,
        query_vectors=paths.query_vectors("{corpus}", "{embedder}"),
        queries=scored_queries,
        chunks=condition_chunks,
    output:
        paths.runs("{corpus}", "{embedder}", "{condition}"),
    log:
        f"{LOGS}/retrieve/{{corpus}}/{{embedder}}-{{condition}}.log",
    wildcard_constraints:
        condition=conditions_retrieved_by("query_titles"),
    conda:
        "../envs/gpu-retrieve.yaml"
    threads: 4
    resources:
        gpu=gpus_of(embedder_spec),
        mem_mb=16000,
        runtime=120,
    params:
        retrieval=condition_retrieval,
        depth=title_depth,
        separator=config["prefix"]["separator"],
        # The injected title chain is held to a path:d prefix's budget (structbench.prefixes.budget).
        max_title_tokens=title_budget,
        tokenizer=config["tokenizer"],
        top_k=config["retrieval"]["top_k"],
        use_gpu=config["retrieval"]["use_gpu"],
        candidates=config["retrieval"]["candidates"],
        embedder=embedder_spec,
        cache=EMBEDDING_CACHE,
        code=script_code("inject_query_titles"),
    script:
        "../workflow/scripts/inject_query_titles.py"


rule choose_per_candidate:
    input:
        chunk_vectors=condition_vectors,
        unprefixed_vectors=unprefixed_vectors,
        query_vectors=paths.query_vectors("{corpus}", "{embedder}"),
        queries=scored_queries,
        texts=condition_texts,
        unprefixed_texts=unprefixed_texts,
    output:
        paths.runs("{corpus}", "{embedder}", "{condition}"),
    log:
        f"{LOGS}/retrieve/{{corpus}}/{{embedder}}-{{condition}}.log",
    wildcard_constraints:
        condition=conditions_retrieved_by("per_candidate"),
    conda:
        "../envs/gpu-retrieve.yaml"
    threads: 8
    resources:
        gpu=1,
        mem_mb=32000,
        runtime=240,
    params:
        retrieval=condition_retrieval,
        top_k=config["retrieval"]["top_k"],
        use_gpu=config["retrieval"]["use_gpu"],
        candidates=config["retrieval"]["candidates"],
        reranker=candidate_reranker,
        code=script_code("choose_per_candidate"),
    script:
        "../workflow/scripts/choose_per_candidate.py"
