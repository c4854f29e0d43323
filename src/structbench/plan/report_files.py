"""The files the report reads, as lists a run's config decides: every cell's scores and statistics, the BM25
probe on each used chunk set, the size reports of the size-matched sets, the embedding reports, the induction,
context and query-generation statistics. Each list is a method :class:`ReportFiles` gives
:class:`structbench.plan.study.Study`; a report input (:func:`structbench.report.table_registry.report_inputs`) names
its method, so an input is declared in one place and the report rule's inputs are these lists."""

from __future__ import annotations

from structbench.artifacts import keys
from structbench.artifacts.layout import QUERIES
from structbench.corpus import generates_queries
from structbench.report.table_registry import report_inputs


class ReportFiles:
    """The report's file lists of a :class:`structbench.plan.study.Study` (its ``config``, ``conditions``,
    ``paths``, corpora, embedders and cells), one ``all_*`` method per report input."""

    def all_cells(self) -> list[str]:
        return [path for cell in self.cells() for path in self.cell_scores(*cell)]

    def all_contrasts(self) -> list[str]:
        return [self.paths.cell_statistics(*cell, "contrasts") for cell in self.cells()]

    def all_condition_means(self) -> list[str]:
        return [self.paths.cell_statistics(*cell, "condition_means") for cell in self.cells()]

    def all_dose_responses(self) -> list[str]:
        return [self.paths.cell_statistics(*cell, "dose_response") for cell in self.cells()]

    def all_decisions(self) -> list[str]:
        return [self.paths.cell_statistics(*cell, "decision") for cell in self.cells()]

    def all_subgroups(self) -> list[str]:
        """Every cell's subgroup table, where the config asks for one (``subgroups``; none: no file, no job)."""
        if not self.subgroup_contrasts():
            return []
        return [self.paths.cell_statistics(*cell, "subgroups") for cell in self.cells()]

    def all_bm25_scores(self) -> list[str]:
        """The non-lexicality probe on every chunk set a scored condition uses (docs/method.md §8)."""
        chunksets = keys.used_chunk_sets(self.conditions.values())
        return [self.paths.bm25_scores(corpus, chunkset) for corpus in self.scored_corpora for chunkset in chunksets]

    def all_corpus_stats(self) -> dict[str, str]:
        return {corpus: self.paths.corpus_stats(corpus) for corpus in self.corpora}

    def all_size_matches(self) -> list[str]:
        """Realized mean sizes of every size-matched chunk set (fixed windows, size-matched external chunkers)
        against its structural reference (docs/method.md §6)."""
        matched = keys.matched_chunk_sets(self.conditions.values(), self.config["chunkers"])
        return [
            self.paths.chunk_report(corpus, chunkset, report) for corpus in self.corpora for chunkset, report in matched
        ]

    def all_chunk_sets(self) -> dict[tuple[str, str], str]:
        """(corpus, chunk set) -> chunks table, for every chunk set a condition uses and the structural set
        each size-matched set is matched to."""
        chunksets = keys.chunk_sets(self.conditions.values(), self.config["chunkers"])
        return {
            (corpus, chunkset): self.paths.chunks(corpus, chunkset) for corpus in self.corpora for chunkset in chunksets
        }

    def all_chunk_bounds(self) -> dict[tuple[str, str], str]:
        """(corpus, chunk set) -> the bounds report of every chunk set :meth:`all_chunk_sets` reads."""
        return {key: self.paths.chunk_report(*key, "bounds") for key in self.all_chunk_sets()}

    def all_embed_reports(self) -> dict[tuple[str, str, str], str]:
        """(corpus, embedder, text set) -> the embedding step's report, for every text the embedding cache
        received (docs/method.md §15): the conditions' text sets and the queries per scored cell, the semantic
        merge's paragraphs as ``<chunk set> (merge paragraphs)`` and a segmentation or learned inducer's paragraphs
        and title candidates (its usage report) as ``induced-<inducer> (segmentation)`` / ``(learned)``."""
        textsets = keys.embedded_text_sets(self.conditions.values())
        reports = {
            (corpus, embedder, textset): self.paths.embed_report(corpus, embedder, textset)
            for corpus in self.scored_corpora
            for embedder in self.embedders
            for textset in textsets
        }
        semantic_embedder = self.config["chunking"]["semantic_embedder"]
        reports |= {
            (corpus, semantic_embedder, f"{chunkset} (merge paragraphs)"): self.paths.chunk_report(
                corpus, chunkset, "embed"
            )
            for corpus in self.corpora
            for chunkset in keys.semantic_chunk_sets(self.conditions.values())
        }
        embedding_inducers = [
            (name, self.config["inducers"][name]["kind"])
            for name in self.used_inducers()
            if self.config["inducers"][name]["kind"] != "llm"
        ]
        reports |= {
            (corpus, self.config["inducers"][inducer]["embedder"], f"induced-{inducer} ({kind})"): (
                self.paths.induction_file(corpus, f"induced-{inducer}", "usage.json")
            )
            for corpus in self.corpora
            for inducer, kind in embedding_inducers
        }
        return reports | {
            (corpus, embedder, QUERIES): self.paths.query_embed_report(corpus, embedder)
            for corpus in self.scored_corpora
            for embedder in self.embedders
        }

    def all_text_reports(self) -> list[str]:
        textsets = keys.text_sets(self.conditions.values())
        return [self.paths.text_report(corpus, textset) for corpus in self.corpora for textset in textsets]

    def all_induction_stats(self) -> list[str]:
        return [
            self.paths.induction_file(corpus, f"induced-{inducer}", "stats.json")
            for corpus in self.corpora
            for inducer in self.used_inducers()
        ]

    def all_context_stats(self) -> list[str]:
        chunksets = keys.context_chunk_sets(self.conditions.values())
        return [self.paths.context_stats(corpus, chunkset) for corpus in self.corpora for chunkset in chunksets]

    def all_querygen_stats(self) -> list[str]:
        generating = [corpus for corpus in self.corpora if generates_queries(self.config["corpora"][corpus])]
        return [self.paths.generated_queries_file(corpus, "stats.json") for corpus in generating]

    def all_retrieval_layers(self) -> list[str]:
        if not self.retrieval_layer_pairs():
            return []
        return [self.paths.retrieval_layer(*cell) for cell in self.cells()]

    def all_decisive(self) -> list[str]:
        """Every cell's decisive questions (:mod:`structbench.report.decisive`), where a pairwise contrast runs."""
        return self._decisive_tables("questions")

    def all_decisive_flips(self) -> list[str]:
        """Every cell's first-evidence flip counts, beside :meth:`all_decisive`."""
        return self._decisive_tables("flips")

    def _decisive_tables(self, table: str) -> list[str]:
        if not self.decisive_contrasts():
            return []
        return [self.paths.decisive(*cell, table) for cell in self.cells()]

    def report_files(self) -> dict[str, list[str] | dict]:
        """Report input name -> the files the report reads: the file list (a method of this class) each input
        of :func:`structbench.report.table_registry.report_inputs` names, so an input is declared in one place."""
        files = {}
        for name, spec in report_inputs().items():
            if not spec.files.startswith("all_") or not callable(getattr(self, spec.files, None)):
                raise NameError(f"report input {name!r} names file list {spec.files!r}, which Study does not hold")
            files[name] = getattr(self, spec.files)()
        return files

    def report_input_files(self) -> dict[str, list[str]]:
        """The report rule's named inputs: one list of files per report input (a keyed input's in key order)."""
        return {
            name: list(files.values()) if isinstance(files, dict) else files
            for name, files in self.report_files().items()
        }

    def report_input_keys(self) -> dict[str, list]:
        """The keys of each keyed report input (a dict key -> path), in file order, tuples as lists."""
        return {
            name: [list(key) if isinstance(key, tuple) else key for key in files]
            for name, files in self.report_files().items()
            if isinstance(files, dict)
        }
