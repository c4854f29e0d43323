# Config validation, wildcard constraints and named input functions. The library decides what runs and where
# each file lives (structbench.plan.study.Study, structbench.artifacts.layout.Layout); the input functions here only
# hand it the wildcards of a job.
import functools
import os
import re
import time

from snakemake.logging import logger

from structbench.artifacts import cells
from structbench.conditions import AXES, FIXED_KINDS, TOKEN_SEPARATOR, from_token
from structbench.conditions import wildcard_constraints as axis_constraints
from structbench.corpus.sources import source_digest
from structbench.endpoints import kinds as model_kinds
from structbench.endpoints.probe import probe_endpoints
from structbench.plan.study import start_up
from structbench.provenance import code_version
from structbench.report.catalog import TABLES, bundled_table_pattern
from structbench.report.figures import FIGURES

# Every start-up check (structbench.plan.study.start_up: the config files re-read by the bounded YAML reader, which
# names a key Snakemake kept at its last value, the schema, the cross-key checks), as `structbench check-config` runs.
STARTUP = start_up(config, os.path.join(workflow.basedir, "workflow/schemas/config.schema.yaml"), workflow.configfiles)
STUDY = STARTUP.study
paths = STUDY.paths
if STUDY.dropped_contrasts:  # the report lists them under Table 1 too (docs/method.md §15)
    left_out = (f"{c['name']} (missing {', '.join(c['missing'])})" for c in STUDY.dropped_contrasts)
    logger.info("structbench config: select.conditions leaves out the contrasts " + ", ".join(left_out))
for message in STARTUP.warnings:
    logger.warning(f"structbench config: {message}")
CACHE, LOGS = config["cache"], config["logs"]
# LLM responses are content-addressed (structbench.llm.cache), so every workflow pointing at one cache
# folder shares them: a rerun, or another config with the same prompts, asks the model nothing new.
LLM_CACHE = f"{CACHE}/llm"
EMBEDDING_CACHE = f"{CACHE}/embeddings"
REPORT = paths.report("report.md")
TABLE_CAPTIONS = {name: spec.caption for name, spec in TABLES.items()}  # for snakemake --report
FIGURE_CAPTIONS = {name: f"{spec.caption} Its numbers: tables/{spec.table}.csv." for name, spec in FIGURES.items()}
STARTED = time.time()  # the end-of-run summary is printed only if this run wrote it


def alternation(names):
    """A wildcard constraint matching exactly ``names`` (none: a pattern that matches nothing)."""
    return "|".join(re.escape(name) for name in names) or "(?!)"


wildcard_constraints:
    **axis_constraints(),
    corpus=alternation(STUDY.built_corpora),
    embedder=alternation(STUDY.embedders),
    reranker=alternation(STUDY.rerankers),
    condition=alternation(STUDY.conditions),
    inducer=alternation(config["inducers"]),
    chunker=alternation(config["chunkers"]),
    shard=r"\d+",


# the windows tokens of fixed_chunks outputs (fixed, fixed_overlap-<o>)
FIXED_WINDOWS = "|".join(kind.value_regex(TOKEN_SEPARATOR) for kind in AXES["boundaries"] if kind.name in FIXED_KINDS)
LLM_INDUCERS = alternation(STUDY.inducers_of_kind("llm"))
SEGMENTATION_INDUCERS = alternation(STUDY.inducers_of_kind("segmentation"))
LEARNED_INDUCERS = alternation(STUDY.inducers_of_kind("learned"))
READTIME_CONDITIONS = alternation(STUDY.readtime_conditions())
BM25_PREFIXES = alternation(STUDY.bm25_prefixes())  # the prefix tokens of the prefixed BM25 runs


def conditions_retrieved_by(kind):
    """A rule-level wildcard constraint: the conditions whose retrieval is ``kind``."""
    return alternation(STUDY.conditions_retrieved_by(kind))


def script_code(script):
    """What a rule's rerun depends on in the library: every structbench module its script reaches (structbench.
    provenance). A params function, so a cluster job's own Snakemake hashes one script's modules, not every rule's."""
    path = os.path.join(workflow.basedir, "workflow", "scripts", f"{script}.py")
    return lambda wildcards: script_code_version(path)


script_code_version = functools.cache(code_version)  # once per script in a Snakemake process


def asks(method, *names):
    """An input function: ``method`` called with the job's wildcards ``names``, in order."""
    return lambda wildcards: method(*(getattr(wildcards, name) for name in names))


def entry(section, wildcard, key=None):
    """An input function: the ``config[section]`` entry the job's ``wildcard`` names (or that entry's ``key``)."""

    def lookup(wildcards):
        found = config[section][getattr(wildcards, wildcard)]
        return found if key is None else found[key]

    return lookup


def named(section, name):
    """A params function: the ``config[section][name]`` entry, read only by the jobs that need it."""
    return lambda wildcards: config[section][name]


def gpus_of(spec):
    """``resources: gpu`` of a model rule: 0 for an endpoint, whose job only sends HTTP requests
    (structbench.endpoints.kinds.gpus_of), so Slurm puts it on a CPU node; else 1."""
    return lambda wildcards: model_kinds.gpus_of(spec(wildcards))


# ---- input functions: config entries --------------------------------------------------------------
corpus_spec = entry("corpora", "corpus")
embedder_spec = entry("embedders", "embedder")
reranker_spec = entry("rerankers", "reranker")
semantic_embedder_spec = named("embedders", config["chunking"]["semantic_embedder"])
inducer_kind = entry("inducers", "inducer", "kind")
inducer_llm_name = entry("inducers", "inducer", "llm")
inducer_llm = asks(STUDY.inducer_llm, "inducer")
inducer_options = asks(STUDY.inducer_options, "inducer")
inducer_embedder = entry("inducers", "inducer", "embedder")
inducer_embedder_spec = asks(STUDY.inducer_embedder, "inducer")
learned_training = asks(STUDY.learned_training, "inducer")
crossfit_training = asks(STUDY.crossfit_training, "inducer")
chunker_entry = asks(STUDY.chunker_entry, "chunker")
querygen_settings = asks(STUDY.querygen_settings)
querygen_generation = asks(STUDY.querygen_generation)

# ---- input functions: files -----------------------------------------------------------------------


def corpus_sources(wildcards):
    """A corpus's source files as inputs whose modification time is ignored (``ancient``): the corpus step
    reruns on their content instead, through its ``sources`` params (:func:`corpus_source_digest`)."""
    return [ancient(source) for source in STUDY.corpus_sources(wildcards.corpus)]


corpus_source_digest = asks(lambda corpus: source_digest(STUDY.corpus_sources(corpus)), "corpus")  # path + content
scored_queries = asks(STUDY.scored_queries, "corpus")
structure_sections = asks(paths.sections, "corpus", "structure")
external_reference = asks(STUDY.external_reference, "corpus", "chunker", "size", "structure")
induction_shards = asks(STUDY.induction_shards, "corpus", "inducer")
training_tables = asks(STUDY.training_tables, "inducer")
learned_inputs = asks(STUDY.learned_inputs, "corpus", "inducer")
querygen_shards = asks(STUDY.querygen_shards, "corpus")
condition_chunks = asks(STUDY.condition_chunks, "corpus", "condition")
condition_texts = asks(STUDY.condition_texts, "corpus", "condition")
condition_vectors = asks(STUDY.condition_vectors, "corpus", "embedder", "condition")
condition_sections = asks(STUDY.condition_sections, "corpus", "condition")
condition_title_vectors = asks(STUDY.title_vectors, "corpus", "embedder", "condition")
condition_runs = asks(STUDY.condition_run, "corpus", "embedder", "reranker", "condition")
unreranked_runs = asks(STUDY.unreranked_runs, "corpus", "embedder", "condition")
unprefixed_texts = asks(STUDY.unprefixed_texts, "corpus", "condition")
unprefixed_vectors = asks(STUDY.unprefixed_vectors, "corpus", "embedder", "condition")
retrieve_inputs = asks(STUDY.retrieve_inputs, "corpus", "embedder", "condition")
fusion_inputs = asks(STUDY.fusion_inputs, "corpus", "embedder", "condition")
score_inputs = asks(STUDY.score_inputs, "corpus", "embedder", "reranker", "condition")
bm25_score_inputs = asks(STUDY.bm25_score_inputs, "corpus", "boundaries", "structure")
contrast_inputs = asks(STUDY.cell_scores, "corpus", "embedder", "reranker")
subgroup_inputs = asks(STUDY.subgroup_inputs, "corpus", "embedder", "reranker")
retrieval_layer_runs = asks(STUDY.retrieval_layer_runs, "corpus", "embedder", "reranker")
decisive_inputs = asks(STUDY.decisive_inputs, "corpus", "embedder", "reranker")
context_shards = asks(STUDY.context_shards, "corpus", "boundaries", "structure")
text_contexts = asks(STUDY.text_contexts, "corpus", "boundaries", "structure", "prefix")
late_inputs = asks(STUDY.late_inputs, "corpus", "boundaries", "structure", "prefix")

# ---- params functions ------------------------------------------------------------------------------
condition_retrieval = asks(STUDY.condition_retrieval, "condition")
candidate_reranker = asks(STUDY.candidate_reranker, "condition")
title_depth = asks(STUDY.title_depth, "condition")
score_metrics = asks(STUDY.condition_metrics, "condition")
contrast_params = asks(STUDY.contrast_params)
qtype_reference = asks(STUDY.qtype_reference, "corpus")
dense_cell = asks(cells.dense_cell, "corpus", "condition", "embedder", "reranker")
lexical_cell = asks(STUDY.lexical_cell, "corpus", "boundaries", "structure")
prefix_value = asks(from_token, "prefix")
late_params = asks(STUDY.late_params, "prefix")
chunk_t_max = asks(STUDY.chunk_t_max, "size")
chunk_t_min = asks(STUDY.chunk_t_min, "size")
prefix_budget = asks(STUDY.prefix_budget, "boundaries")
title_budget = asks(STUDY.title_budget, "condition")
structure_title_budget = asks(STUDY.structure_title_budget, "structure")
window_overlap = asks(STUDY.window_overlap, "windows")
inducer_threads = asks(STUDY.inducer_threads, "inducer")
context_threads = asks(STUDY.context_threads)


onstart:
    # One request to every endpoint the run uses, before any job (onstart: not in a dry run, nor in a
    # cluster job's own Snakemake): an unreachable base_url is named now, not after chunking.
    if config["probe_endpoints"]:
        for line in probe_endpoints(config, EMBEDDING_CACHE):
            logger.info(f"structbench endpoint probe: {line}")


onsuccess:
    # the report's one-line summary (structbench.report.bundle.run_summary), when this run wrote it
    summary = paths.report("summary.txt")
    if os.path.exists(summary) and os.path.getmtime(summary) >= STARTED - 1:  # 1 s: coarse file times
        with open(summary, encoding="utf-8") as lines:
            print(lines.read().strip(), flush=True)
