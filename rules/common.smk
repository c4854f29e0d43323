# Helpers, config validation and named input functions. No logic lives in the rules themselves:
# the library decides (structbench.config, .conditions, .corpus, .cells), the workflow asks.
import functools
import os
import re
import time

from snakemake.logging import logger

from structbench import cells
from structbench.conditions import dropped_contrasts, from_token, is_late, is_lexical, parse_conditions
from structbench.conditions import parse_contrasts, parse_value, retrieval_kind, to_token
from structbench.conditions import AXES, FIXED_KINDS, TOKEN_SEPARATOR, fixed_overlap
from structbench import plan
from structbench.conditions import wildcard_constraints as axis_constraints
from structbench.config import check_config, truncation_warnings, validate_config
from structbench.report.figures import FIGURES
from structbench.retrieval.fusion import LEXICAL_SOURCE, fusion_sources
from structbench.corpus import generates_queries, has_queries, source_files
from structbench.endpoints import kinds as model_kinds
from structbench.metrics import metrics_from_config
from structbench.metrics.diagnostics import retrieval_layer_pairs
from structbench.provenance import code_version
from structbench.report.catalog import TABLES
from structbench.report.registry import report_inputs
from structbench.retrieval.search import kind_inputs
from structbench.retrieval.readtime_runs import is_readtime
from structbench.structure.segmentation import OPTIONS as SEGMENTATION_OPTIONS
from structbench.querygen.settings import QuerygenSettings
from structbench.stats.means import dose_series
from structbench.endpoints.probe import probe_endpoints
from structbench.sizes import chunkset_size, parse_size_token

# Validate against the schema and fill its defaults; then the cross-key checks. Both run before any job.
validate_config(config, os.path.join(workflow.basedir, "workflow", "schemas", "config.schema.yaml"))
# The metric names the scoring step computes (from the metric registry): checked here, so a bad name or
# a primary metric that is not computed fails the dry run, not a job.
SCORE_METRICS = metrics_from_config(config["metrics"])
CONDITIONS, CONTRASTS = check_config(config, SCORE_METRICS)
# The declared contrasts the selection leaves out, with their missing conditions: the report lists them
# under Table 1 (docs/method.md §15), so what was not run is in the report, not only in this log.
DROPPED_CONTRASTS = dropped_contrasts(
    parse_contrasts(
        config["contrasts"],
        parse_conditions(config["conditions"], config["chunking"], config["chunkers"]),
        config["chunkers"],
        config["chunking"],
    ),
    CONDITIONS,
)
if DROPPED_CONTRASTS:
    logger.info(
        "structbench config: select.conditions leaves out the contrasts "
        + ", ".join(f"{c['name']} (missing {', '.join(c['missing'])})" for c in DROPPED_CONTRASTS)
    )
for message in truncation_warnings(config, CONDITIONS):
    logger.warning(f"structbench config: {message}")
# One request to every endpoint the run uses, before any job (not in a dry run, nor in each job's own
# parse of this file, e.g. under Slurm): an unreachable base_url is named now, not after chunking.
if config["probe_endpoints"] and workflow.is_main_process and not workflow.dryrun:
    for line in probe_endpoints(config, f"{config['cache']}/embeddings"):
        logger.info(f"structbench endpoint probe: {line}")
R = config["results"]
CACHE = config["cache"]
LOGS = config["logs"]
SELECT = config.get("select") or {}


def script_code(script):
    """What a rule's rerun depends on in the library: every structbench module its script reaches
    (structbench.provenance), derived from the script's imports, so no list can drift.

    A params function, so it is computed for the jobs a Snakemake process plans, once per script: a
    job-side Snakemake (a cluster job) plans one job and hashes one script's modules, not every rule's."""
    path = os.path.join(workflow.basedir, "workflow", "scripts", f"{script}.py")
    return lambda wildcards: script_code_version(path)


@functools.cache
def script_code_version(path):
    return code_version(path)


def selected(kind):
    """Declared names of one kind (corpora, embedders, rerankers), narrowed by ``select`` if given."""
    return SELECT.get(kind) or list(config[kind])


CORPORA = selected("corpora")
SCORED_CORPORA = [name for name in CORPORA if has_queries(config["corpora"][name])]
EMBEDDERS = selected("embedders")
RERANKERS = selected("rerankers")
REPORT = f"{R}/report/report.md"
SUMMARY = f"{R}/report/summary.txt"
STARTED = time.time()  # the end-of-run summary is printed only if this run wrote it
# LLM responses are content-addressed (structbench.llm.cache), so every workflow pointing at one cache
# folder shares them: a rerun, or another config with the same prompts, asks the model nothing new.
LLM_CACHE = f"{CACHE}/llm"
# Document batches per corpus for every LLM step; fixed in config so the DAG is known at plan time
# (structbench.shards explains why the count is not derived from the corpus).
LLM_SHARDS = list(range(config["llm_shards"]))


def alternation(names):
    """A wildcard constraint matching exactly ``names`` (none: a pattern that matches nothing)."""
    return "|".join(re.escape(name) for name in names) or "(?!)"


wildcard_constraints:
    **axis_constraints(),
    corpus=alternation(CORPORA),
    embedder=alternation(EMBEDDERS),
    reranker=alternation(RERANKERS),
    condition=alternation(CONDITIONS),
    inducer=alternation(config["inducers"]),
    chunker=alternation(config["chunkers"]),
    shard=r"\d+",


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


def gpus_of(spec):
    """``resources: gpu`` of a model rule: 1 for a model loaded in the job, 0 for an endpoint (embedders
    ``kind: openai``, rerankers ``kind: endpoint``), whose job only sends HTTP requests: Slurm then puts
    it on a CPU node (structbench.endpoints.kinds.gpus_of)."""
    return lambda wildcards: model_kinds.gpus_of(spec(wildcards))


# ---- runs, scores, contrasts -----------------------------------------------------------------


def runs_path(corpus, embedder, reranker, condition):
    if reranker == cells.NO_RERANKER and is_lexical(CONDITIONS[condition]):
        # retrieval: bm25 reads its chunk set's BM25 run, one file for every embedder cell (docs/method.md §8)
        return f"{R}/{corpus}/runs/bm25/{CONDITIONS[condition].chunkset}.parquet"
    if reranker == cells.NO_RERANKER:
        return f"{R}/{corpus}/runs/{embedder}/{condition}.parquet"
    return f"{R}/{corpus}/runs/{embedder}/reranked/{reranker}/{condition}.parquet"


def condition_runs(wildcards):
    return runs_path(wildcards.corpus, wildcards.embedder, wildcards.reranker, wildcards.condition)


def unreranked_runs(wildcards):
    """The run a reranker rescores: the condition's own run under the embedder (a bm25 condition's BM25 run)."""
    return runs_path(wildcards.corpus, wildcards.embedder, cells.NO_RERANKER, wildcards.condition)


def reranker_spec(wildcards):
    return config["rerankers"][wildcards.reranker]


def dense_cell(wildcards):
    """The identifying columns a score table carries (structbench.cells)."""
    return cells.dense_cell(wildcards.corpus, wildcards.condition, wildcards.embedder, wildcards.reranker)


def lexical_cell(wildcards):
    return cells.lexical_cell(wildcards.corpus, f"{wildcards.boundaries}/{wildcards.structure}")


def all_bm25_scores():
    """The non-lexicality probe on every chunk set a scored condition uses (docs/method.md §8)."""
    chunksets = plan.used_chunk_sets(CONDITIONS.values())
    return [f"{R}/{corpus}/scores/bm25/{chunkset}.parquet" for corpus in SCORED_CORPORA for chunkset in chunksets]


def cell_scores(corpus, embedder, reranker, conditions=None):
    return [f"{R}/{corpus}/scores/{embedder}/{reranker}/{name}.parquet" for name in (conditions or CONDITIONS)]


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


def cell_statistics(table):
    """One statistics-step table (``contrasts``, ``condition_means``, ``dose_response``) of every scored cell."""
    return [
        f"{R}/contrasts/{corpus}/{embedder}/{reranker}/{table}.parquet"
        for corpus in SCORED_CORPORA
        for embedder in EMBEDDERS
        for reranker in RERANKERS
    ]


def all_contrasts():
    return cell_statistics("contrasts")


def all_condition_means():
    return cell_statistics("condition_means")


def all_dose_responses():
    return cell_statistics("dose_response")


# The dose-response series of the statistics step (structbench.stats.means.dose_series): the declared
# dose-response contrasts, then the selected conditions that differ only in heading-path depth.
DOSE_SERIES = [
    series.as_params()
    for series in dose_series(
        {name: condition.entry() for name, condition in CONDITIONS.items()}, [c.as_params() for c in CONTRASTS.values()]
    )
]


def all_corpus_stats():
    """corpus -> its statistics."""
    return {corpus: f"{R}/{corpus}/corpus/stats.json" for corpus in CORPORA}


def chunker_entry(wildcards):
    """The ``chunkers.<name>`` entry an external chunk set runs, with its name."""
    return {"name": wildcards.chunker, **config["chunkers"][wildcards.chunker]}


def chunk_size(wildcards):
    """``(t_max, t_min)`` of a chunk rule's set: its ``size`` suffix, the run's ``chunking`` bounds where
    silent (docs/method.md §6a)."""
    return parse_size_token(wildcards.size, config["chunking"])


def chunk_t_max(wildcards):
    return chunk_size(wildcards)[0]


def chunk_t_min(wildcards):
    return chunk_size(wildcards)[1]


def prefix_budget(wildcards):
    """A prefix never takes more than half its chunk set's t_max (structbench.prefixes.budget)."""
    return chunkset_size(wildcards.boundaries, config["chunking"])[0] // 2


# the windows tokens of fixed_chunks outputs (fixed, fixed_overlap-<o>)
FIXED_WINDOWS = "|".join(kind.value_regex(TOKEN_SEPARATOR) for kind in AXES["boundaries"] if kind.name in FIXED_KINDS)


def window_overlap(wildcards):
    """The overlap a fixed_chunks job's windows declare, as written (``"0.5"``, ``"50"``), or None (tiling)."""
    overlap = fixed_overlap(from_token(wildcards.windows))
    return None if overlap is None else overlap.text


def external_reference(wildcards):
    """The structural chunks a size-matched external chunker matches (no input otherwise)."""
    if not config["chunkers"][wildcards.chunker]["size_match"]:
        return {}
    return {"reference": f"{R}/{wildcards.corpus}/chunks/structural{wildcards.size}/{wildcards.structure}.parquet"}


def all_size_matches():
    """Realized mean sizes of every size-matched chunk set (fixed windows, size-matched external chunkers)
    against its structural reference (docs/method.md §6)."""
    matched = plan.matched_chunk_sets(CONDITIONS.values(), config["chunkers"])
    return [f"{R}/{corpus}/chunks/{chunkset}.{report}.json" for corpus in CORPORA for chunkset, report in matched]


def all_chunk_sets():
    """(corpus, chunk set) -> chunks table, for every chunk set a condition uses and the structural set
    each size-matched set is matched to."""
    chunksets = plan.chunk_sets(CONDITIONS.values(), config["chunkers"])
    return {
        (corpus, chunkset): f"{R}/{corpus}/chunks/{chunkset}.parquet" for corpus in CORPORA for chunkset in chunksets
    }


def all_chunk_bounds():
    """(corpus, chunk set) -> the chunk rule's bounds report (structbench.chunking.tiling.bounds_file) of
    every chunk set all_chunk_sets reads."""
    return {key: path.removesuffix(".parquet") + ".bounds.json" for key, path in all_chunk_sets().items()}


def all_embed_reports():
    """(corpus, embedder, text set) -> the embedding step's report (input length, truncation, cache use);
    the semantic merge's paragraph embeddings (every corpus it chunks) are the text set
    ``semantic/<structure> (merge paragraphs)``, and a segmentation inducer's paragraphs and title
    candidates (its usage report, every corpus it induces) ``induced-<inducer> (segmentation)``: so the
    table counts every text the embedding cache received (docs/method.md §15)."""
    textsets = plan.embedded_text_sets(CONDITIONS.values())
    reports = {
        (corpus, embedder, textset): f"{R}/{corpus}/vectors/{embedder}/{textset}.embed.json"
        for corpus in SCORED_CORPORA
        for embedder in EMBEDDERS
        for textset in textsets
    }
    semantic = plan.semantic_chunk_sets(CONDITIONS.values())
    reports |= {
        (corpus, config["chunking"]["semantic_embedder"], f"{chunkset} (merge paragraphs)"): (
            f"{R}/{corpus}/chunks/{chunkset}.embed.json"
        )
        for corpus in CORPORA
        for chunkset in semantic
    }
    reports |= {
        (corpus, config["inducers"][inducer]["embedder"], f"induced-{inducer} (segmentation)"): (
            f"{R}/{corpus}/structure/induced-{inducer}/usage.json"
        )
        for corpus in CORPORA
        for inducer in used_inducers()
        if inducer in SEGMENTATION_INDUCERS
    }
    return reports | {
        (corpus, embedder, "queries"): f"{R}/{corpus}/vectors/{embedder}/queries.embed.json"
        for corpus in SCORED_CORPORA
        for embedder in EMBEDDERS
    }


def all_text_reports():
    textsets = plan.text_sets(CONDITIONS.values())
    return [f"{R}/{corpus}/texts/{textset}.report.json" for corpus in CORPORA for textset in textsets]


def condition_retrieval(wildcards):
    return condition_of(wildcards).retrieval


# ---- routed retrieval (two-stage, TOC): a router writes a routing table, retrieval and scoring read it --


def condition_routing(wildcards):
    return f"{R}/{wildcards.corpus}/runs/{wildcards.embedder}/{wildcards.condition}.routing.parquet"


def condition_sections(wildcards):
    return f"{R}/{wildcards.corpus}/structure/{condition_of(wildcards).structure_token}/sections.parquet"


def condition_title_vectors(wildcards):
    """The section titles the TOC fallback compares the query with, embedded by the condition's embedder."""
    return f"{R}/{wildcards.corpus}/vectors/{wildcards.embedder}/titles/{condition_of(wildcards).structure_token}.npy"


def retrieve_inputs(wildcards):
    """The vectors every retrieval kind ranks, plus the tables its kind takes (retrieval.kind_inputs)."""
    inputs = {
        "chunk_vectors": condition_vectors(wildcards),
        "query_vectors": f"{R}/{wildcards.corpus}/vectors/{wildcards.embedder}/queries.npy",
        "queries": scored_queries(wildcards),
    }
    if "routing" in kind_inputs(condition_retrieval(wildcards))[0]:
        inputs["routing"] = condition_routing(wildcards)
    return inputs


def score_inputs(wildcards):
    """A run, its queries and chunk set; for a routed condition also the routing table (section recall)."""
    inputs = {
        "runs": condition_runs(wildcards),
        "queries": scored_queries(wildcards),
        "chunks": condition_chunks(wildcards),
        "texts": condition_texts(wildcards),
    }
    if is_readtime(condition_retrieval(wildcards)):  # a run of spans: its units table (docs/method.md §18)
        inputs["runs"], inputs["units"] = readtime_outputs(wildcards)
    if retrieval_kind(condition_retrieval(wildcards)).metrics:
        inputs["routing"] = condition_routing(wildcards)
    return inputs


def readtime_outputs(wildcards):
    """The read-time run of a condition and its units table, over the (reranked) run of its hits."""
    folder = f"{R}/{wildcards.corpus}/runs/{wildcards.embedder}/readtime/{wildcards.reranker}"
    return f"{folder}/{wildcards.condition}.parquet", f"{folder}/{wildcards.condition}.units.parquet"


def readtime_conditions():
    """A rule-level wildcard constraint: the conditions whose retrieval is a read-time mode."""
    return alternation([name for name, c in CONDITIONS.items() if is_readtime(c.retrieval)])


def score_metrics(wildcards):
    """The configured metrics, plus the metrics the condition's retrieval kind adds (``Kind.metrics``:
    a routed kind's routing diagnostics)."""
    return SCORE_METRICS + list(retrieval_kind(condition_retrieval(wildcards)).metrics)


def toc_llm(wildcards):
    """The ``llms`` entry named by ``retrieval.toc_llm`` (check_config refuses a toc condition without one)."""
    return llm_entry(config["retrieval"]["toc_llm"])


def semantic_embedder_spec(wildcards):
    """Semantic merge embeds paragraphs with one declared embedder (``chunking.semantic_embedder``)."""
    return config["embedders"][config["chunking"]["semantic_embedder"]]


# ---- LLM steps: structure induction, situating contexts --------------------------------------


def used_inducers():
    """The inducers some condition uses (``structure: induced:<inducer>``), in name order."""
    return plan.used_inducers(CONDITIONS.values())


def llm_entry(name):
    return config["llms"][name]


def inducers_of_kind(kind):
    return [name for name, inducer in config["inducers"].items() if inducer["kind"] == kind]


# Which rule induces an inducer's structure follows from its kind (rule-level wildcard constraints).
LLM_INDUCERS = inducers_of_kind("llm")
SEGMENTATION_INDUCERS = inducers_of_kind("segmentation")


def inducer_llm(wildcards):
    """The ``llms`` entry of the inducer."""
    return llm_entry(config["inducers"][wildcards.inducer]["llm"])


def inducer_name(wildcards):
    return config["inducers"][wildcards.inducer]["llm"]


def llm_threads(name):
    """Cores of a job running LLM ``name``: its ``threads`` when set (a CPU run, where one torch thread
    per job and jobs side by side beat threads fighting over the cores), else 4 (a GPU job's host side)."""
    return config["llms"][name].get("threads") or 4


def inducer_options(wildcards):
    """The inducer's keyword arguments of structbench.structure.induction.induce_structure."""
    inducer = config["inducers"][wildcards.inducer]
    return {key: inducer[key] for key in ("window_tokens", "overlap_paragraphs", "max_new_tokens")}


def segmentation_embedder(wildcards):
    return config["inducers"][wildcards.inducer]["embedder"]


def segmentation_embedder_spec(wildcards):
    """The embedder whose vectors a segmentation inducer compares (a declared ``embedders`` entry)."""
    return config["embedders"][segmentation_embedder(wildcards)]


def segmentation_options(wildcards):
    """The inducer's keyword arguments of structbench.structure.segmentation.induce_segmentation."""
    inducer = config["inducers"][wildcards.inducer]
    return {key: inducer[key] for key in SEGMENTATION_OPTIONS}


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


def late_inputs(wildcards):
    """A late prefix pools chunks from their documents (structbench.embedding.late): it reads both tables."""
    if not is_late(from_token(wildcards.prefix)):
        return {}
    return {
        "documents": f"{R}/{wildcards.corpus}/corpus/documents.parquet",
        "chunks": f"{R}/{wildcards.corpus}/chunks/{wildcards.boundaries}/{wildcards.structure}.parquet",
    }


def late_params(wildcards):
    """The late step's settings (window overlap, the placebo's seed); None for any other prefix, so a changed
    seed or overlap reruns no text-by-text embedding."""
    if not is_late(from_token(wildcards.prefix)):
        return None
    return {"overlap": config["late"]["overlap"], "seed": config["seed"]}


def all_induction_stats():
    return [f"{R}/{corpus}/structure/induced-{inducer}/stats.json" for corpus in CORPORA for inducer in used_inducers()]


def all_context_stats():
    chunksets = plan.context_chunk_sets(CONDITIONS.values())
    return [f"{R}/{corpus}/contexts/{chunkset}.stats.json" for corpus in CORPORA for chunkset in chunksets]


# ---- retrieval kinds beyond flat search; run comparisons -------------------------------------


def retrieval_kind_conditions(kind):
    """A rule-level wildcard constraint: the conditions whose retrieval is ``kind`` (matches none when none is)."""
    names = [name for name, c in CONDITIONS.items() if retrieval_kind(c.retrieval).name == kind]
    return alternation(names) or "(?!)"


def retrieval_parameter(wildcards):
    return parse_value("retrieval", condition_of(wildcards).retrieval)[1]


def fusion_inputs(wildcards):
    """The runs an ``rrf:<sources>`` condition fuses with its own (structbench.retrieval.fusion): the vectors of the
    other text sets of its chunk set under the same embedder, and the chunk set's BM25 run."""
    condition = condition_of(wildcards)
    sources = fusion_sources(retrieval_parameter(wildcards), condition.prefix)
    base = f"{R}/{wildcards.corpus}"
    return {
        "partner_vectors": [
            f"{base}/vectors/{wildcards.embedder}/{condition.chunkset}/{to_token(source)}.npy"
            for source in sources
            if source != LEXICAL_SOURCE
        ],
        "partner_runs": [
            f"{base}/runs/bm25/{condition.chunkset}.parquet" for source in sources if source == LEXICAL_SOURCE
        ],
    }


def unprefixed_texts(wildcards):
    return f"{R}/{wildcards.corpus}/texts/{condition_of(wildcards).chunkset}/none.parquet"


def unprefixed_vectors(wildcards):
    return f"{R}/{wildcards.corpus}/vectors/{wildcards.embedder}/{condition_of(wildcards).chunkset}/none.npy"


def candidate_reranker(wildcards):
    """The cross-encoder a ``per_candidate:<reranker>`` condition names (check_config: a declared one)."""
    return config["rerankers"][retrieval_parameter(wildcards)]


def title_depth(wildcards):
    return int(retrieval_parameter(wildcards))


# ---- report ------------------------------------------------------------------------------------------

# The title-chain study's retrieval-layer comparison, per scored cell: the pairs report.compare_runs names, or else each
# prefixed condition against the unprefixed one that ranks the same chunk set
# (structbench.metrics.diagnostics.retrieval_layer_pairs).
RETRIEVAL_LAYER_PAIRS = [list(pair) for pair in config["report"]["compare_runs"]] or [
    list(pair) for pair in retrieval_layer_pairs({name: condition.entry() for name, condition in CONDITIONS.items()})
]


def retrieval_layer_conditions():
    """The conditions of the retrieval-layer pairs, each once, in pair order."""
    return list(dict.fromkeys(name for pair in RETRIEVAL_LAYER_PAIRS for name in pair))


def retrieval_layer_runs(wildcards):
    return [
        runs_path(wildcards.corpus, wildcards.embedder, wildcards.reranker, name)
        for name in retrieval_layer_conditions()
    ]


def all_retrieval_layers():
    if not RETRIEVAL_LAYER_PAIRS:
        return []
    return [
        f"{R}/{corpus}/diagnostics/{embedder}/{reranker}/retrieval_layer.parquet"
        for corpus in SCORED_CORPORA
        for embedder in EMBEDDERS
        for reranker in RERANKERS
    ]


def report_files():
    """Report input name -> the files the report reads, from the file list each input names
    (structbench.report.registry.report_inputs: the one place a report input is declared)."""
    files = {}
    for name, spec in report_inputs().items():
        if spec.files not in FILE_LISTS:
            raise NameError(f"report input {name!r} names file list {spec.files!r}, which FILE_LISTS does not hold")
        files[name] = FILE_LISTS[spec.files]()
    return files


def report_input_files():
    """The report rule's named inputs: one list of files per report input (a keyed input's, in key order)."""
    return {name: list(files.values()) if isinstance(files, dict) else files for name, files in report_files().items()}


def report_input_keys():
    """The keys of each keyed report input (a dict key -> path), in file order, tuples as lists."""
    return {
        name: [list(key) if isinstance(key, tuple) else key for key in files]
        for name, files in report_files().items()
        if isinstance(files, dict)
    }


def table_captions():
    """Report table name -> caption, for the captions of ``snakemake --report``."""
    return {name: spec.caption for name, spec in TABLES.items()}


def figure_captions():
    """Report figure name -> caption, naming the table that holds its numbers."""
    return {name: f"{spec.caption} Its numbers: tables/{spec.table}.csv." for name, spec in FIGURES.items()}


def print_run_summary():
    """Print the report's one-line summary (structbench.report.bundle.run_summary) when this run wrote it."""
    if (
        os.path.exists(SUMMARY) and os.path.getmtime(SUMMARY) >= STARTED - 1
    ):  # 1 s: file system timestamps may be coarse
        with open(SUMMARY, encoding="utf-8") as summary:
            print(summary.read().strip(), flush=True)


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


# The file lists a report input may name (structbench.report.registry.ReportInput.files), by function name: an
# explicit table, at the end of this file after every function it holds; a name the registry spells that none
# answers fails the dry run, named.
FILE_LISTS = {
    function.__name__: function
    for function in (
        all_bm25_scores,
        all_cells,
        all_chunk_bounds,
        all_chunk_sets,
        all_condition_means,
        all_context_stats,
        all_contrasts,
        all_corpus_stats,
        all_dose_responses,
        all_embed_reports,
        all_induction_stats,
        all_querygen_stats,
        all_retrieval_layers,
        all_size_matches,
        all_text_reports,
    )
}
