# Helpers, config validation and named input functions. No logic lives in the rules themselves.
import re
from pathlib import Path

from snakemake.utils import validate

from structbench.conditions import parse_conditions, parse_contrasts
from structbench.provenance import code_version


validate(config, "../workflow/schemas/config.schema.yaml")

CONDITIONS = parse_conditions(config["conditions"])
CONTRASTS = parse_contrasts(config["contrasts"], CONDITIONS)
R = config.get("results", "results")
CACHE = config.get("cache", "cache")
LOGS = config.get("logs", "logs")
SELECT = config.get("select") or {}


def selected(kind):
    """Declared names of one kind (corpora, embedders, rerankers), narrowed by ``select`` if given."""
    declared = list(config[kind])
    chosen = SELECT.get(kind) or declared
    unknown = [name for name in chosen if name not in declared]
    if unknown:
        raise ValueError(f"select.{kind} names {unknown}, which config.{kind} does not declare ({declared})")
    return chosen


CORPORA = selected("corpora")


def has_queries(spec):
    """Corpora whose queries exist before any LLM step: QASPER, and Markdown with a questions file.
    WikiText and Wikipedia-FA get theirs from query generation (a later stage), so until then they are
    built, verified and reported, but not scored."""
    return spec["kind"] == "qasper" or (spec["kind"] == "markdown" and bool(spec.get("questions")))


SCORED_CORPORA = [name for name in CORPORA if has_queries(config["corpora"][name])]
EMBEDDERS = selected("embedders")
RERANKERS = selected("rerankers")
REPORT = f"{R}/report/report.md"


def alternation(names):
    return "|".join(re.escape(name) for name in names)


wildcard_constraints:
    corpus=alternation(CORPORA),
    embedder=alternation(EMBEDDERS),
    reranker=alternation(RERANKERS),
    condition=alternation(CONDITIONS),
    boundaries="structural|fixed|semantic",
    structure=r"gold|induced-[A-Za-z0-9_]+",
    prefix=r"none|context|path-[1-9]|placebo-[1-9]",


# ---- corpus -------------------------------------------------------------------------------------


def corpus_spec(wildcards):
    return config["corpora"][wildcards.corpus]


def corpus_sources(wildcards):
    """The files a corpus is built from, so an edited document or questions file rebuilds it."""
    spec = corpus_spec(wildcards)
    if spec["kind"] == "markdown":
        sources = sorted(str(p) for p in Path(spec["path"]).rglob("*.md"))
        if not sources:
            raise ValueError(f"corpora.{wildcards.corpus}.path = {spec['path']!r} holds no .md files")
        return sources + ([spec["questions"]] if spec.get("questions") else [])
    if spec["kind"] == "qasper":
        return list(spec["paths"])
    if spec["kind"] == "wikitext":
        return [spec["path"]]
    return []


# ---- chunks, texts, vectors ------------------------------------------------------------------


def prefix_value(wildcards):
    return wildcards.prefix.replace("-", ":", 1)


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
    """The identifying columns a score table carries."""
    return {key: wildcards[key] for key in ("corpus", "condition", "embedder", "reranker")}


def bm25_cell(wildcards):
    chunkset = f"{wildcards.boundaries}/{wildcards.structure}"
    return {"corpus": wildcards.corpus, "condition": f"bm25:{chunkset}", "embedder": "bm25", "reranker": "none"}


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


def all_text_reports():
    textsets = sorted({c.textset for c in CONDITIONS.values()})
    return [f"{R}/{corpus}/texts/{textset}.report.json" for corpus in CORPORA for textset in textsets]


def condition_retrieval(wildcards):
    return condition_of(wildcards).retrieval


def semantic_embedder_spec(wildcards):
    """Semantic merge embeds paragraphs with one declared embedder (``chunking.semantic_embedder``)."""
    name = config["chunking"]["semantic_embedder"]
    if name not in config["embedders"]:
        raise ValueError(f"chunking.semantic_embedder = {name!r} names no declared embedder ({list(config['embedders'])})")
    return config["embedders"][name]
