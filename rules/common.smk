# Helpers, config validation and named input functions. No logic lives in the rules themselves:
# the library decides (structbench.config, .conditions, .corpus, .cells), the workflow asks.
import os
import re

from snakemake.logging import logger

from structbench import cells
from structbench.conditions import from_token, parse_value, wildcard_constraints as axis_constraints
from structbench.config import check_config, truncation_warnings, validate_config
from structbench.corpus import generates_queries, has_queries, source_files
from structbench.metrics import metrics_from_config
from structbench.provenance import code_version
from structbench.querygen.settings import QuerygenSettings


# Validate against the schema and fill its defaults; then the cross-key checks. Both run before any job.
validate_config(config, os.path.join(workflow.basedir, "workflow", "schemas", "config.schema.yaml"))
# The metric names the scoring step computes (from the metric registry): checked here, so a bad name or
# a primary metric that is not computed fails the dry run, not a job.
SCORE_METRICS = metrics_from_config(config["metrics"])
CONDITIONS, CONTRASTS = check_config(config, SCORE_METRICS)
for message in truncation_warnings(config, CONDITIONS):
    logger.warning(f"structbench config: {message}")
R = config["results"]
CACHE = config["cache"]
LOGS = config["logs"]
SELECT = config.get("select") or {}


def selected(kind):
    """Declared names of one kind (corpora, embedders, rerankers), narrowed by ``select`` if given."""
    return SELECT.get(kind) or list(config[kind])


CORPORA = selected("corpora")
SCORED_CORPORA = [name for name in CORPORA if has_queries(config["corpora"][name])]
EMBEDDERS = selected("embedders")
RERANKERS = selected("rerankers")
REPORT = f"{R}/report/report.md"
# LLM responses are content-addressed (structbench.llm.cache), so every workflow pointing at one cache
# folder shares them: a rerun, or another config with the same prompts, asks the model nothing new.
LLM_CACHE = f"{CACHE}/llm"
# Document batches per corpus for every LLM step; fixed in config so the DAG is known at plan time
# (structbench.shards explains why the count is not derived from the corpus).
LLM_SHARDS = list(range(config["llm_shards"]))


def alternation(names):
    return "|".join(re.escape(name) for name in names)


wildcard_constraints:
    corpus=alternation(CORPORA),
    embedder=alternation(EMBEDDERS),
    reranker=alternation(RERANKERS),
    condition=alternation(CONDITIONS),
    inducer=alternation(config["inducers"]) or "(?!)",
    shard=r"\d+",
    **axis_constraints(),


# ---- corpus -------------------------------------------------------------------------------------


def corpus_spec(wildcards):
    return config["corpora"][wildcards.corpus]


def corpus_sources(wildcards):
    """The files a corpus is built from, so an edited document or questions file rebuilds it."""
    return source_files(corpus_spec(wildcards))


# ---- chunks, texts, vectors ------------------------------------------------------------------


def prefix_value(wildcards):
    return from_token(wildcards.prefix)


def structure_sections(wildcards):
    return f"{R}/{wildcards.corpus}/structure/{wildcards.structure}/sections.parquet"


def condition_of(wildcards):
    return CONDITIONS[wildcards.condition]


def condition_chunks(wildcards):
    return f"{R}/{wildcards.corpus}/chunks/{condition_of(wildcards).chunkset}.parquet"


def condition_texts(wildcards):
    return f"{R}/{wildcards.corpus}/texts/{condition_of(wildcards).textset}.parquet"


def condition_vectors(wildcards):
    return f"{R}/{wildcards.corpus}/vectors/{wildcards.embedder}/{condition_of(wildcards).textset}.npy"


def embedder_spec(wildcards):
    return config["embedders"][wildcards.embedder]


# ---- runs, scores, contrasts -----------------------------------------------------------------


def condition_runs(wildcards):
    if wildcards.reranker == "none":
        return f"{R}/{wildcards.corpus}/runs/{wildcards.embedder}/{wildcards.condition}.parquet"
    return f"{R}/{wildcards.corpus}/runs/{wildcards.embedder}/reranked/{wildcards.reranker}/{wildcards.condition}.parquet"


def reranker_spec(wildcards):
    return config["rerankers"][wildcards.reranker]


def dense_cell(wildcards):
    """The identifying columns a score table carries (structbench.cells)."""
    return cells.dense_cell(wildcards.corpus, wildcards.condition, wildcards.embedder, wildcards.reranker)


def lexical_cell(wildcards):
    return cells.lexical_cell(wildcards.corpus, f"{wildcards.boundaries}/{wildcards.structure}")


def all_bm25_scores():
    """The non-lexicality probe on every chunk set a scored condition uses (SPEC section 8)."""
    chunksets = sorted({c.chunkset for c in CONDITIONS.values()})
    return [f"{R}/{corpus}/scores/bm25/{chunkset}.parquet" for corpus in SCORED_CORPORA for chunkset in chunksets]


def cell_scores(corpus, embedder, reranker, conditions=None):
    return [
        f"{R}/{corpus}/scores/{embedder}/{reranker}/{name}.parquet" for name in (conditions or CONDITIONS)
    ]


def contrast_inputs(wildcards):
    return cell_scores(wildcards.corpus, wildcards.embedder, wildcards.reranker)


def contrast_params(wildcards):
    return [contrast.as_params() for contrast in CONTRASTS.values()]


def all_cells():
    return [
        path
        for corpus in SCORED_CORPORA
        for embedder in EMBEDDERS
        for reranker in RERANKERS
        for path in cell_scores(corpus, embedder, reranker)
    ]


def all_contrasts():
    return [
        f"{R}/contrasts/{corpus}/{embedder}/{reranker}/contrasts.parquet"
        for corpus in SCORED_CORPORA
        for embedder in EMBEDDERS
        for reranker in RERANKERS
    ]


def all_corpus_stats():
    return [f"{R}/{corpus}/corpus/stats.json" for corpus in CORPORA]


def all_size_matches():
    """Realized mean sizes of every fixed chunk set against its structural reference (SPEC section 6)."""
    fixed = sorted({c.chunkset for c in CONDITIONS.values() if c.boundaries == "fixed"})
    return [f"{R}/{corpus}/chunks/{chunkset}.size_match.json" for corpus in CORPORA for chunkset in fixed]


def all_chunk_sets():
    """(corpus, chunk set) -> chunks table, for every chunk set a condition uses."""
    chunksets = sorted({c.chunkset for c in CONDITIONS.values()})
    return {(corpus, chunkset): f"{R}/{corpus}/chunks/{chunkset}.parquet" for corpus in CORPORA for chunkset in chunksets}


def all_embed_reports():
    """(corpus, embedder, text set) -> the embedding step's report (input length, truncation, cache use)."""
    textsets = sorted({c.textset for c in CONDITIONS.values()})
    reports = {
        (corpus, embedder, textset): f"{R}/{corpus}/vectors/{embedder}/{textset}.embed.json"
        for corpus in SCORED_CORPORA for embedder in EMBEDDERS for textset in textsets
    }
    return reports | {
        (corpus, embedder, "queries"): f"{R}/{corpus}/vectors/{embedder}/queries.embed.json"
        for corpus in SCORED_CORPORA for embedder in EMBEDDERS
    }


def all_text_reports():
    textsets = sorted({c.textset for c in CONDITIONS.values()})
    return [f"{R}/{corpus}/texts/{textset}.report.json" for corpus in CORPORA for textset in textsets]


def condition_retrieval(wildcards):
    return condition_of(wildcards).retrieval


def semantic_embedder_spec(wildcards):
    """Semantic merge embeds paragraphs with one declared embedder (``chunking.semantic_embedder``)."""
    return config["embedders"][config["chunking"]["semantic_embedder"]]


# ---- LLM steps: structure induction, situating contexts --------------------------------------


def used_inducers():
    """The inducers some condition uses (``structure: induced:<inducer>``), in name order."""
    return sorted({parse_value("structure", c.structure)[1] for c in CONDITIONS.values()
                   if c.structure.startswith("induced:")})


def llm_entry(name):
    return config["llms"][name]


def inducer_llm(wildcards):
    """The ``llms`` entry of the inducer."""
    return llm_entry(config["inducers"][wildcards.inducer]["llm"])


def inducer_name(wildcards):
    return config["inducers"][wildcards.inducer]["llm"]


def inducer_options(wildcards):
    """The inducer's keyword arguments of structbench.induction.induce_structure."""
    inducer = config["inducers"][wildcards.inducer]
    return {key: inducer[key] for key in ("window_tokens", "overlap_paragraphs", "max_new_tokens")}


def induction_shards(wildcards):
    base = f"{R}/{wildcards.corpus}/structure/induced-{wildcards.inducer}/shards"
    return {
        "sections": [f"{base}/{shard}.sections.parquet" for shard in LLM_SHARDS],
        "status": [f"{base}/{shard}.status.parquet" for shard in LLM_SHARDS],
        "usage": [f"{base}/{shard}.usage.json" for shard in LLM_SHARDS],
    }


def context_llm(wildcards):
    """The ``llms`` entry named by ``contexts.llm`` (check_config refuses a context prefix without one)."""
    return llm_entry(config["contexts"]["llm"])


def context_shards(wildcards):
    base = f"{R}/{wildcards.corpus}/contexts/{wildcards.boundaries}/{wildcards.structure}/shards"
    return {
        "contexts": [f"{base}/{shard}.parquet" for shard in LLM_SHARDS],
        "usage": [f"{base}/{shard}.usage.json" for shard in LLM_SHARDS],
    }


def text_contexts(wildcards):
    """The situating contexts a ``context`` prefix renders; no extra input for any other prefix."""
    if from_token(wildcards.prefix) != "context":
        return {}
    return {"contexts": f"{R}/{wildcards.corpus}/contexts/{wildcards.boundaries}/{wildcards.structure}.parquet"}


def all_induction_stats():
    return [
        f"{R}/{corpus}/structure/induced-{inducer}/stats.json" for corpus in CORPORA for inducer in used_inducers()
    ]


def all_context_stats():
    chunksets = sorted({c.chunkset for c in CONDITIONS.values() if c.prefix == "context"})
    return [f"{R}/{corpus}/contexts/{chunkset}.stats.json" for corpus in CORPORA for chunkset in chunksets]


# ---- query generation (corpora with queries: generated) ----------------------------------------


def scored_queries(wildcards):
    """The queries a corpus is scored on: its own (the corpus step's table) or, for a corpus with
    ``queries: generated``, the balanced generated ones (structbench.querygen)."""
    if generates_queries(corpus_spec(wildcards)):
        return f"{R}/{wildcards.corpus}/queries/queries.parquet"
    return f"{R}/{wildcards.corpus}/corpus/queries.parquet"


def querygen_llm(wildcards):
    """The ``llms`` entry named by ``querygen.llm`` (check_config refuses generated queries without one)."""
    return llm_entry(config["querygen"]["llm"])


def querygen_settings(wildcards):
    """Every ``querygen`` threshold (structbench.querygen.settings); a null seed is the global seed."""
    return QuerygenSettings.from_config(config["querygen"], config["seed"]).as_config()


def querygen_generation(wildcards):
    """The settings a generation shard uses: all but ``per_type``, which only the merge's balancing
    reads, so changing it reruns no LLM job."""
    return {key: value for key, value in querygen_settings(wildcards).items() if key != "per_type"}


def querygen_shards(wildcards):
    base = f"{R}/{wildcards.corpus}/queries/shards"
    return {
        "candidates": [f"{base}/{shard}.candidates.parquet" for shard in LLM_SHARDS],
        "usage": [f"{base}/{shard}.usage.json" for shard in LLM_SHARDS],
    }


def all_querygen_stats():
    return [f"{R}/{corpus}/queries/stats.json" for corpus in CORPORA if generates_queries(config["corpora"][corpus])]
