"""Where each artifact of a run lives under ``results``: one function per artifact, the only place its path is spelled.

The workflow's rules name their outputs with these functions (called with wildcard placeholders,
``paths.chunks("{corpus}", "{boundaries}/{structure}")``) and its input functions and the study plan
(:mod:`structbench.plan.study`) name the same files with values (``paths.chunks("kb", "structural/gold")``), so a
path written by one rule and read by another cannot drift apart. The keys are the study's: a corpus name, a chunk
set ``<boundaries token>/<structure token>`` (:attr:`structbench.conditions.Condition.chunkset`), a text set
``<chunk set>/<prefix token>`` (:attr:`~structbench.conditions.Condition.textset`), an embedder, reranker or
condition name, a structure token (``gold``, ``induced-<inducer>``) and an LLM shard number."""

from __future__ import annotations

from dataclasses import dataclass

from structbench.conditions import NO_PREFIX

# Where a corpus's query vectors sit among its text sets' (and the label the embedding table shows for them).
QUERIES = "queries"


def chunkset(boundaries: str, structure: str) -> str:
    """The chunk-set key of a boundaries token (with its size suffix) and a structure token."""
    return f"{boundaries}/{structure}"


@dataclass(frozen=True)
class Layout:
    """The artifact paths under one results folder (``config["results"]``)."""

    results: str

    def corpus(self, corpus: str) -> str:
        """The folder of everything one corpus's runs produce."""
        return f"{self.results}/{corpus}"

    # ---- the corpus step: documents, their paragraphs and gold sections, the questions ----

    def corpus_table(self, corpus: str, table: str) -> str:
        """One table of the corpus step: ``documents``, ``paragraphs``, ``queries`` (the corpus's own
        questions), ``funnel`` (what each filter kept) or ``skipped`` (documents left out, with why)."""
        return f"{self.corpus(corpus)}/corpus/{table}.parquet"

    def documents(self, corpus: str) -> str:
        return self.corpus_table(corpus, "documents")

    def paragraphs(self, corpus: str) -> str:
        return self.corpus_table(corpus, "paragraphs")

    def corpus_stats(self, corpus: str) -> str:
        return f"{self.corpus(corpus)}/corpus/stats.json"

    # ---- structure: gold sections (the corpus step's) and induced ones ----

    def structure(self, corpus: str, structure: str) -> str:
        """The folder of one structure source (``gold``, ``induced-<inducer>``)."""
        return f"{self.corpus(corpus)}/structure/{structure}"

    def sections(self, corpus: str, structure: str) -> str:
        return f"{self.structure(corpus, structure)}/sections.parquet"

    def induction_file(self, corpus: str, structure: str, name: str) -> str:
        """An induced structure's ``status.parquet`` (per document), ``usage.json`` or ``stats.json``."""
        return f"{self.structure(corpus, structure)}/{name}"

    def inducer_model(self, inducer: str, name: str) -> str:
        """A learned inducer's trained ``model.bin`` and ``training.json`` (its training step's), trained on the
        corpus its ``train.corpus`` names and applied to every corpus of the run."""
        return f"{self.results}/models/{inducer}/{name}"

    def induction_shard(self, corpus: str, structure: str, shard, name: str) -> str:
        """One LLM shard's ``sections.parquet``, ``status.parquet`` or ``usage.json`` of an induced structure."""
        return f"{self.structure(corpus, structure)}/shards/{shard}.{name}"

    # ---- generated queries ----

    def generated_queries_file(self, corpus: str, name: str) -> str:
        """The query generation merge's ``queries.parquet``, ``candidates.parquet``, ``funnel.parquet`` or
        ``stats.json``."""
        return f"{self.corpus(corpus)}/queries/{name}"

    def querygen_shard(self, corpus: str, shard, name: str) -> str:
        """One generation shard's ``candidates.parquet`` or ``usage.json``."""
        return f"{self.corpus(corpus)}/queries/shards/{shard}.{name}"

    # ---- chunks, situating contexts, rendered texts ----

    def chunks(self, corpus: str, chunkset: str) -> str:
        return f"{self.corpus(corpus)}/chunks/{chunkset}.parquet"

    def chunk_report(self, corpus: str, chunkset: str, report: str) -> str:
        """A report a chunk rule writes beside its chunks: ``bounds``, ``size_match`` (fixed windows),
        ``chunker`` (an external chunker) or ``embed`` (the semantic merge's paragraph embeddings)."""
        return f"{self.corpus(corpus)}/chunks/{chunkset}.{report}.json"

    def contexts(self, corpus: str, chunkset: str) -> str:
        return f"{self.corpus(corpus)}/contexts/{chunkset}.parquet"

    def context_stats(self, corpus: str, chunkset: str) -> str:
        return f"{self.corpus(corpus)}/contexts/{chunkset}.stats.json"

    def context_shard(self, corpus: str, chunkset: str, shard, suffix: str) -> str:
        """One LLM shard's contexts (``parquet``) or usage (``usage.json``)."""
        return f"{self.corpus(corpus)}/contexts/{chunkset}/shards/{shard}.{suffix}"

    def texts(self, corpus: str, textset: str) -> str:
        return f"{self.corpus(corpus)}/texts/{textset}.parquet"

    def text_report(self, corpus: str, textset: str) -> str:
        return f"{self.corpus(corpus)}/texts/{textset}.report.json"

    # ---- vectors: text sets, queries and section titles, per embedder ----

    def vectors(self, corpus: str, embedder: str, textset: str) -> str:
        return f"{self.corpus(corpus)}/vectors/{embedder}/{textset}.npy"

    def embed_report(self, corpus: str, embedder: str, textset: str) -> str:
        """The embedding step's report of one set of vectors (input length, truncation, cache use)."""
        return f"{self.corpus(corpus)}/vectors/{embedder}/{textset}.embed.json"

    def query_vectors(self, corpus: str, embedder: str) -> str:
        """The scored queries of a corpus, encoded by an embedder."""
        return self.vectors(corpus, embedder, QUERIES)

    def query_embed_report(self, corpus: str, embedder: str) -> str:
        return self.embed_report(corpus, embedder, QUERIES)

    def title_vectors(self, corpus: str, embedder: str, structure: str) -> str:
        """A structure's section titles, encoded by an embedder (TOC routing's fallback compares them)."""
        return self.vectors(corpus, embedder, f"titles/{structure}")

    def title_embed_report(self, corpus: str, embedder: str, structure: str) -> str:
        return self.embed_report(corpus, embedder, f"titles/{structure}")

    # ---- runs ----

    def runs(self, corpus: str, embedder: str, condition: str) -> str:
        """A condition's first-stage run under an embedder."""
        return f"{self.corpus(corpus)}/runs/{embedder}/{condition}.parquet"

    def routing(self, corpus: str, embedder: str, condition: str) -> str:
        """A routed condition's routing table (which sections each query searches)."""
        return f"{self.corpus(corpus)}/runs/{embedder}/{condition}.routing.parquet"

    def reranked_runs(self, corpus: str, embedder: str, reranker: str, condition: str) -> str:
        return f"{self.corpus(corpus)}/runs/{embedder}/reranked/{reranker}/{condition}.parquet"

    def readtime_runs(self, corpus: str, embedder: str, reranker: str, condition: str) -> str:
        """A read-time condition's run of spans; its units table sits beside it (:meth:`readtime_units`)."""
        return f"{self.corpus(corpus)}/runs/{embedder}/readtime/{reranker}/{condition}.parquet"

    def readtime_units(self, corpus: str, embedder: str, reranker: str, condition: str) -> str:
        return f"{self.corpus(corpus)}/runs/{embedder}/readtime/{reranker}/{condition}.units.parquet"

    def bm25_runs(self, corpus: str, chunkset: str, prefix: str = NO_PREFIX) -> str:
        """The BM25 run of a chunk set's texts under a prefix token (docs/method.md §8), one file for every embedder
        cell: unprefixed, the chunk set's own file (the probe's run, which hybrids fuse); prefixed, a file of that
        prefix in a folder beside it, as the texts it ranks are laid out (``runs/bm25/structural/gold/path-3``)."""
        if prefix == NO_PREFIX:
            return f"{self.corpus(corpus)}/runs/bm25/{chunkset}.parquet"
        return f"{self.corpus(corpus)}/runs/bm25/{chunkset}/{prefix}.parquet"

    # ---- scores, statistics, diagnostics, report ----

    def scores(self, corpus: str, embedder: str, reranker: str, condition: str) -> str:
        return f"{self.corpus(corpus)}/scores/{embedder}/{reranker}/{condition}.parquet"

    def bm25_scores(self, corpus: str, chunkset: str) -> str:
        return f"{self.corpus(corpus)}/scores/bm25/{chunkset}.parquet"

    def cell_statistics(self, corpus: str, embedder: str, reranker: str, table: str) -> str:
        """One statistics-step table of a cell: ``contrasts``, ``condition_means``, ``dose_response``,
        ``decision`` or ``subgroups``."""
        return f"{self.results}/contrasts/{corpus}/{embedder}/{reranker}/{table}.parquet"

    def retrieval_layer(self, corpus: str, embedder: str, reranker: str) -> str:
        return f"{self.corpus(corpus)}/diagnostics/{embedder}/{reranker}/retrieval_layer.parquet"

    def decisive(self, corpus: str, embedder: str, reranker: str, table: str) -> str:
        """The decisive questions of a cell (:mod:`structbench.report.decisive`): ``questions`` (the largest wins and
        losses of each pairwise contrast with both rankings' top chunks) or ``flips`` (first evidence in or out of
        the top 10)."""
        return f"{self.corpus(corpus)}/diagnostics/{embedder}/{reranker}/decisive_{table}.parquet"

    def report(self, name: str) -> str:
        """A file or folder of the report: ``report.md``, ``index.html``, ``tables``, ``figures``, ``latex``,
        ``manifest.json``, ``summary.txt``."""
        return f"{self.results}/report/{name}"
