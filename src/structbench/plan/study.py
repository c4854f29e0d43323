"""The study a config describes, decided once: what runs, what is left out and why, and which files each step reads.

:meth:`Study.from_config` takes a validated config (:func:`structbench.config.validate_config`), runs the cross-key
checks (:func:`structbench.crosskeys.check_cross_keys`) and holds their answer: the selected conditions, the contrasts
that run and the declared ones the selection drops (with the conditions each misses), the metrics the scoring
step computes. Everything else is a question asked of it: the cells (corpus x embedder x reranker), the runs a
condition's scores read (a BM25 condition reads the one BM25 run of its chunk set and prefix), the runs an ``rrf``
condition fuses, the dose-response series, the title-chain study's run pairs, and the file lists the report reads (those
from :class:`structbench.plan.report_files.ReportFiles`).

The workflow (``rules/common.smk``) builds one :class:`Study` and turns Snakemake's wildcards into these calls;
tests call the same methods with plain names. Paths come from :class:`structbench.artifacts.layout.Layout`, so each is
spelled once. No Snakemake here: conditions are data read from config.

Over 500 lines as one concern: :class:`Study` is the one object the workflow asks every question of, one short
method a question, so its methods read as one list; the report's file lists already live apart in
:mod:`.report_files`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property

from structbench.artifacts import cells, keys, selection
from structbench.artifacts.layout import Layout, chunkset
from structbench.conditions import (
    NO_PREFIX,
    Condition,
    Contrast,
    fixed_overlap,
    from_token,
    is_late,
    is_lexical,
    is_readtime,
    parse_value,
    retrieval_kind,
)
from structbench.config import ConfigError, config_file_problems, validate_config
from structbench.corpus import generates_queries, has_queries, source_files
from structbench.crosskeys import check_cross_keys
from structbench.embedding.checks import truncation_warnings
from structbench.metrics import metrics_from_config, parse_metrics
from structbench.metrics.diagnostics import retrieval_layer_pairs
from structbench.plan.report_files import ReportFiles
from structbench.querygen.settings import QuerygenSettings
from structbench.retrieval.fusion import LEXICAL_SOURCE, fusion_sources
from structbench.retrieval.search import kind_inputs
from structbench.sizes import chunkset_size, parse_size_token
from structbench.stats.checks import subgroup_entry, subgroups_requested
from structbench.stats.means import dose_series
from structbench.stats.moderators import qtype_reference
from structbench.structure.learned import OPTIONS as LEARNED_OPTIONS
from structbench.structure.segmentation import OPTIONS as SEGMENTATION_OPTIONS

# The keyword arguments of structbench.structure.induction.induce_structure an LLM inducer's entry sets.
LLM_INDUCER_OPTIONS = ("window_tokens", "overlap_paragraphs", "max_new_tokens")


@dataclass(frozen=True)
class StartUp:
    """What the start-up checks answer: the ``study`` and the ``warnings`` to log (chunks an embedder truncates)."""

    study: Study
    warnings: list[str]


def start_up(config: dict, schema_path, config_files: Sequence = ()) -> StartUp:
    """Every check the workflow runs before any job, in its order: the ``config_files`` read again with the
    bounded YAML reader (:func:`structbench.config.config_file_problems`), the schema (filling its defaults
    into ``config``), the cross-key, per-condition and library checks (:meth:`Study.from_config`), then the
    truncation warnings. ``rules/common.smk`` and ``structbench check-config`` both call this, so the
    command refuses exactly the configs the workflow refuses; a :class:`structbench.config.ConfigError`
    names the key. Endpoint probes are not here: they send requests (the workflow's ``onstart``, the
    command's ``--probe``).

    ``config_files`` are the files Snakemake read ``config`` from: its loader keeps a key written twice at
    its last value and bounds no alias, so the workflow hands them here, and a problem is a ``ConfigError``
    naming FILE:LINE (``check-config`` reads them itself first and passes none)."""
    problems = config_file_problems(config_files)
    if problems:
        raise ConfigError("config files refused before any job:\n" + "\n".join(problems))
    validate_config(config, schema_path)
    study = Study.from_config(config)
    return StartUp(study, truncation_warnings(config, study.conditions))


@dataclass(frozen=True)
class Study(ReportFiles):
    """One config's study: its selected ``conditions`` (name -> condition, declared order), the ``contrasts``
    that run among them, the ``dropped_contrasts`` the selection leaves out (each a contrast's params plus the
    ``missing`` conditions, for the report's note under Table 1) and the ``score_metrics`` scoring computes."""

    config: Mapping
    conditions: dict[str, Condition]
    contrasts: dict[str, Contrast]
    dropped_contrasts: list[dict] = field(default_factory=list)
    score_metrics: list[str] = field(default_factory=list)

    @classmethod
    def from_config(cls, config: Mapping) -> Study:
        """The study of a validated config (schema defaults filled); raises
        :class:`structbench.config.ConfigError` naming the key of a config that cannot run."""
        score_metrics = metrics_from_config(config["metrics"])
        checked = check_cross_keys(config, score_metrics)
        return cls(config, checked.selected, checked.selected_contrasts, checked.dropped_contrasts, score_metrics)

    @cached_property
    def paths(self) -> Layout:
        return Layout(self.config["results"])

    # ---- what runs ----

    def selected(self, kind: str) -> list[str]:
        """Declared names of one kind (``corpora``, ``embedders``, ``rerankers``), narrowed by ``select``."""
        return selection.selected(self.config, kind)

    @property
    def corpora(self) -> list[str]:
        return self.selected("corpora")

    @property
    def built_corpora(self) -> list[str]:
        """The corpora whose corpus step runs: the selected ones, then the corpora learned inducers train on
        (built, never scored or reported as study corpora)."""
        training = [self.training_corpus(inducer) for inducer in self.used_inducers()]
        return list(dict.fromkeys(self.corpora + [corpus for corpus in training if corpus is not None]))

    @property
    def scored_corpora(self) -> list[str]:
        """The selected corpora with queries (their own or generated): the ones retrieval is scored on."""
        return [name for name in self.corpora if has_queries(self.config["corpora"][name])]

    @property
    def embedders(self) -> list[str]:
        return self.selected("embedders")

    @property
    def rerankers(self) -> list[str]:
        return self.selected("rerankers")

    def cells(self) -> Iterator[tuple[str, str, str]]:
        """Every scored cell ``(corpus, embedder, reranker)``, corpus-major."""
        for corpus in self.scored_corpora:
            for embedder in self.embedders:
                for reranker in self.rerankers:
                    yield corpus, embedder, reranker

    @property
    def llm_shards(self) -> list[int]:
        """The document batches of every LLM step (fixed in config, so the plan is known before the corpus)."""
        return list(range(self.config["llm_shards"]))

    def condition_entries(self) -> dict[str, dict]:
        """name -> the condition as a config entry (its axes, its own size where it has one)."""
        return {name: condition.entry() for name, condition in self.conditions.items()}

    def contrast_params(self) -> list[dict]:
        """The running contrasts as the statistics step takes them."""
        return [contrast.as_params() for contrast in self.contrasts.values()]

    def subgroup_contrasts(self) -> list[str]:
        """The contrasts the subgroup analysis splits (``subgroups.contrasts``, in its order): the running ones
        (a declared contrast the selection drops is left out, as from Table 1); none without a ``subgroups``
        request (:func:`structbench.stats.checks.subgroups_requested`)."""
        if not subgroups_requested(self.config):
            return []
        return [name for name in subgroup_entry(self.config)[1] if name in self.contrasts]

    def subgroup_params(self) -> dict:
        """The subgroup step's settings: its moderators and its contrasts as the statistics step takes them."""
        return {
            "moderators": subgroup_entry(self.config)[0],
            "contrasts": [self.contrasts[name].as_params() for name in self.subgroup_contrasts()],
        }

    def qtype_reference(self, corpus: str) -> str:
        """The question type the ``qtype`` moderator tests against the rest on ``corpus`` (by its kind:
        :data:`structbench.stats.moderators.QTYPE_REFERENCE`)."""
        return qtype_reference(self.config["corpora"][corpus]["kind"])

    def dose_series(self) -> list[dict]:
        """The statistics step's dose-response series (:func:`structbench.stats.means.dose_series`): the
        declared dose-response contrasts, then the selected conditions that differ only in heading-path depth."""
        return [series.as_params() for series in dose_series(self.condition_entries(), self.contrast_params())]

    def retrieval_layer_pairs(self) -> list[list[str]]:
        """The title-chain study's run comparisons per cell: ``report.compare_runs`` where given, else each
        prefixed condition against the unprefixed one that ranks its chunk set
        (:func:`structbench.metrics.diagnostics.retrieval_layer_pairs`)."""
        declared = self.config["report"]["compare_runs"]
        return [list(pair) for pair in declared or retrieval_layer_pairs(self.condition_entries())]

    def decisive_contrasts(self) -> list[dict]:
        """The contrasts whose decisive questions the report shows (:mod:`structbench.report.decisive`): every running
        pairwise (treatment − control) contrast whose two conditions rank chunks (a read-time condition ranks spans,
        docs/method.md §18), as the statistics step takes them."""
        return [
            contrast.as_params()
            for contrast in self.contrasts.values()
            if contrast.treatment
            and not any(is_readtime(self.conditions[name].retrieval) for name in (contrast.treatment, contrast.control))
        ]

    def decisive_conditions(self) -> list[str]:
        """The conditions of :meth:`decisive_contrasts`, each once, in contrast order."""
        pairs = [(spec["treatment"], spec["control"]) for spec in self.decisive_contrasts()]
        return list(dict.fromkeys(name for pair in pairs for name in pair))

    def decisive_settings(self) -> dict:
        """The decisive questions' settings: ``report.decisive`` (``per_side``, ``top_k``) and the primary metric."""
        return {**self.config["report"]["decisive"], "primary_metric": self.config["stats"]["primary_metric"]}

    def retrieval_layer_conditions(self) -> list[str]:
        """The conditions of the retrieval-layer pairs, each once, in pair order."""
        return list(dict.fromkeys(name for pair in self.retrieval_layer_pairs() for name in pair))

    def conditions_retrieved_by(self, kind: str) -> list[str]:
        """The conditions whose retrieval is of ``kind`` (``two_stage``, ``rrf``, ...): the ones its rule runs."""
        return [name for name, c in self.conditions.items() if retrieval_kind(c.retrieval).name == kind]

    def readtime_conditions(self) -> list[str]:
        """The conditions whose retrieval is a read-time mode (docs/method.md §18)."""
        return [name for name, c in self.conditions.items() if is_readtime(c.retrieval)]

    def inducers_of_kind(self, kind: str) -> list[str]:
        """The declared inducers of ``kind`` (``llm``, ``segmentation``, ``learned``): the kind decides the rule
        inducing them."""
        return [name for name, inducer in self.config["inducers"].items() if inducer["kind"] == kind]

    def used_inducers(self) -> list[str]:
        return keys.used_inducers(self.conditions.values())

    def bm25_prefixes(self) -> list[str]:
        """The prefix tokens of the prefixed BM25 runs (:func:`structbench.artifacts.keys.prefixed_lexical_text_sets`),
        in order: the ones the workflow's prefixed BM25 rule writes."""
        textsets = keys.prefixed_lexical_text_sets(self.conditions.values())
        return sorted({textset.rsplit("/", 1)[1] for textset in textsets})

    # ---- the settings one job takes ----

    def condition_retrieval(self, condition: str) -> str:
        return self.conditions[condition].retrieval

    def retrieval_parameter(self, condition: str) -> str | None:
        """The parameter of a condition's retrieval value (``rrf:bm25`` -> ``bm25``)."""
        return parse_value("retrieval", self.conditions[condition].retrieval)[1]

    def candidate_reranker(self, condition: str) -> dict:
        """The cross-encoder a ``per_candidate:<reranker>`` condition names (check_cross_keys: a declared one)."""
        return self.config["rerankers"][self.retrieval_parameter(condition)]

    def title_depth(self, condition: str) -> int:
        """The heading-path depth a ``query_titles:<depth>`` condition injects into the query."""
        return int(self.retrieval_parameter(condition))

    def condition_metrics(self, condition: str) -> list[str]:
        """The configured metrics, plus the ones the condition's retrieval kind adds (a routed kind's routing
        diagnostics: ``Kind.metrics``)."""
        return self.score_metrics + list(retrieval_kind(self.conditions[condition].retrieval).metrics)

    def chunk_t_max(self, size: str) -> int:
        """The ``t_max`` of a chunk set with size suffix ``size`` (``-t200``; empty: ``chunking.t_max``)."""
        return parse_size_token(size, self.config["chunking"])[0]

    def chunk_t_min(self, size: str) -> int:
        """The ``t_min`` of a chunk set with size suffix ``size`` (``-m40``; empty: ``chunking.t_min``)."""
        return parse_size_token(size, self.config["chunking"])[1]

    def prefix_budget(self, boundaries: str) -> int:
        """A prefix never takes more than half its chunk set's t_max (structbench.prefixes.budget)."""
        return chunkset_size(boundaries, self.config["chunking"])[0] // 2

    def title_budget(self, condition: str) -> int:
        """The tokens a title read by a condition's retrieval may take (TOC contents, query-side titles): its chunk
        set's prefix budget, half of the condition's own t_max (structbench.prefixes.budget)."""
        return self.prefix_budget(self.conditions[condition].boundaries_token)

    def structure_title_budget(self, structure: str) -> int:
        """The title budget of a structure's title vectors (TOC routing's fallback): the smallest
        :meth:`title_budget` of the TOC conditions reading them (the run's half of t_max when none does)."""
        readers = [
            name for name in self.conditions_retrieved_by("toc") if self.conditions[name].structure_token == structure
        ]
        return min((self.title_budget(name) for name in readers), default=self.chunk_t_max("") // 2)

    @staticmethod
    def window_overlap(windows: str) -> str | None:
        """The overlap a fixed-window token declares, as written (``"0.5"``, ``"50"``), or None (tiling)."""
        overlap = fixed_overlap(from_token(windows))
        return None if overlap is None else overlap.text

    @staticmethod
    def lexical_cell(corpus: str, boundaries: str, structure: str) -> dict:
        """The identifying columns of a chunk set's BM25 score table (structbench.artifacts.cells)."""
        return cells.lexical_cell(corpus, chunkset(boundaries, structure))

    def late_params(self, prefix: str) -> dict | None:
        """The late step's settings (window overlap, the placebo's seed) for a prefix token; None for a prefix
        that is not late, so a changed seed or overlap reruns no text-by-text embedding."""
        if not is_late(from_token(prefix)):
            return None
        return {"overlap": self.config["late"]["overlap"], "seed": self.config["seed"]}

    def llm_threads(self, llm: str) -> int:
        """Cores of a job running LLM ``llm``: its ``threads`` when set (a CPU run, where one torch thread per job
        and jobs side by side beat threads fighting over the cores), else 4 (a GPU job's host side)."""
        return self.config["llms"][llm].get("threads") or 4

    def inducer_threads(self, inducer: str) -> int:
        return self.llm_threads(self.config["inducers"][inducer]["llm"])

    def context_threads(self) -> int:
        return self.llm_threads(self.config["contexts"]["llm"])

    def inducer_llm(self, inducer: str) -> dict:
        """The ``llms`` entry an LLM inducer runs."""
        return self.config["llms"][self.config["inducers"][inducer]["llm"]]

    def inducer_embedder(self, inducer: str) -> dict:
        """The ``embedders`` entry whose vectors a segmentation or learned inducer reads."""
        return self.config["embedders"][self.config["inducers"][inducer]["embedder"]]

    def inducer_options(self, inducer: str) -> dict:
        """An inducer's keyword arguments: of structbench.structure.induction.induce_structure for an LLM
        inducer, of structbench.structure.segmentation.induce_segmentation for a segmentation one, of
        structbench.structure.learned.induce_learned for a learned one."""
        entry = self.config["inducers"][inducer]
        keys = {"llm": LLM_INDUCER_OPTIONS, "segmentation": SEGMENTATION_OPTIONS, "learned": LEARNED_OPTIONS}
        return {key: entry[key] for key in keys[entry["kind"]] if key in entry}

    def training_corpus(self, inducer: str) -> str | None:
        """The corpus a learned inducer's training step reads (``train.corpus``); None where no training step
        runs: another kind, a declared ``model`` file, or ``self`` (cross-fitted inside the induction job)."""
        entry = self.config["inducers"][inducer]
        if entry["kind"] != "learned" or entry["model"] is not None or entry["train"]["corpus"] == "self":
            return None
        return entry["train"]["corpus"]

    def training_tables(self, inducer: str) -> dict[str, str]:
        """The training step's inputs: the training corpus's documents, paragraphs and gold sections."""
        corpus = self.training_corpus(inducer)
        return {
            "documents": self.paths.documents(corpus),
            "paragraphs": self.paths.paragraphs(corpus),
            "sections": self.paths.sections(corpus, "gold"),
        }

    def learned_inputs(self, corpus: str, inducer: str) -> dict[str, str]:
        """What a learned induction job reads besides the corpus's documents and paragraphs: the model (its
        training step's, or the declared file), or, for ``train.corpus: self``, the corpus's own gold
        sections to cross-fit on."""
        entry = self.config["inducers"][inducer]
        if entry["model"] is not None:
            return {"model": entry["model"]}
        if entry["train"]["corpus"] == "self":
            return {"gold_sections": self.paths.sections(corpus, "gold")}
        return {"model": self.paths.inducer_model(inducer, "model.bin")}

    def learned_training(self, inducer: str) -> dict:
        """A learned inducer's ``train`` settings with the study's seed (the learner's and the folds')."""
        return {**self.config["inducers"][inducer]["train"], "seed": self.config["seed"]}

    def crossfit_training(self, inducer: str) -> dict | None:
        """The training settings a learned induction job uses itself: :meth:`learned_training` where it
        cross-fits (``train.corpus: self``), None where it reads a model, so that a training setting reruns
        the induction only through the model file it changes."""
        entry = self.config["inducers"][inducer]
        cross_fitted = entry["model"] is None and entry["train"]["corpus"] == "self"
        return self.learned_training(inducer) if cross_fitted else None

    def chunker_entry(self, chunker: str) -> dict:
        """The ``chunkers.<name>`` entry an external chunk set runs, with its name."""
        return {"name": chunker, **self.config["chunkers"][chunker]}

    def querygen_settings(self) -> dict:
        """Every ``querygen`` threshold (structbench.querygen.settings); a null seed is the global seed."""
        return QuerygenSettings.from_config(self.config["querygen"], self.config["seed"]).as_config()

    def querygen_generation(self) -> dict:
        """The settings a query generation shard uses: all but ``per_type``, which only the merge's balancing
        reads, so changing it reruns no LLM job."""
        return {key: value for key, value in self.querygen_settings().items() if key != "per_type"}

    # ---- the files one job reads ----

    def corpus_sources(self, corpus: str) -> list[str]:
        """The files a corpus is built from, so an edited document or questions file rebuilds it (the workflow
        hashes them with :func:`structbench.corpus.sources.source_digest`: the plan reads no file's content)."""
        return source_files(self.config["corpora"][corpus])

    def scored_queries(self, corpus: str) -> str:
        """The queries a corpus is scored on: its own, or for ``queries: generated`` the balanced generated ones."""
        if generates_queries(self.config["corpora"][corpus]):
            return self.paths.generated_queries_file(corpus, "queries.parquet")
        return self.paths.corpus_table(corpus, "queries")

    def condition_run(self, corpus: str, embedder: str, reranker: str, condition: str) -> str:
        """The run a condition's scores read in one cell: BM25, dense or reranked (:meth:`Layout.runs` is only
        the unreranked dense path). A BM25 condition without a reranker reads the BM25 run of its chunk set's
        texts under its prefix, one file for every embedder cell (docs/method.md §8): prefix ``none``, the chunk
        set's own run (the probe's)."""
        own = self.conditions[condition]
        if reranker == cells.NO_RERANKER and is_lexical(own):
            return self.paths.bm25_runs(corpus, own.chunkset, own.prefix_token)
        if reranker == cells.NO_RERANKER:
            return self.paths.runs(corpus, embedder, condition)
        return self.paths.reranked_runs(corpus, embedder, reranker, condition)

    def unreranked_runs(self, corpus: str, embedder: str, condition: str) -> str:
        """The run a reranker rescores: the condition's own run under the embedder (a BM25 condition's BM25 run)."""
        return self.condition_run(corpus, embedder, cells.NO_RERANKER, condition)

    def condition_chunks(self, corpus: str, condition: str) -> str:
        """The chunk set a condition ranks (:meth:`Layout.chunks` takes the chunk set itself)."""
        return self.paths.chunks(corpus, self.conditions[condition].chunkset)

    def condition_texts(self, corpus: str, condition: str, prefix: str | None = None) -> str:
        """The condition's rendered texts, or (``prefix``) those of its chunk set under another prefix."""
        return self.paths.texts(corpus, self._textset(condition, prefix))

    def condition_vectors(self, corpus: str, embedder: str, condition: str, prefix: str | None = None) -> str:
        """The condition's vectors under an embedder, or (``prefix``) its chunk set's under another prefix."""
        return self.paths.vectors(corpus, embedder, self._textset(condition, prefix))

    def unprefixed_texts(self, corpus: str, condition: str) -> str:
        """The texts of the condition's chunk set without a prefix (per-candidate choice compares both)."""
        return self.condition_texts(corpus, condition, NO_PREFIX)

    def unprefixed_vectors(self, corpus: str, embedder: str, condition: str) -> str:
        return self.condition_vectors(corpus, embedder, condition, NO_PREFIX)

    def _textset(self, condition: str, prefix: str | None) -> str:
        own = self.conditions[condition]
        return (own if prefix is None else replace(own, prefix=prefix)).textset

    def condition_sections(self, corpus: str, condition: str) -> str:
        """The sections of a condition's structure (:meth:`Layout.sections` takes the structure token itself)."""
        return self.paths.sections(corpus, self.conditions[condition].structure_token)

    def title_vectors(self, corpus: str, embedder: str, condition: str) -> str:
        """The section titles TOC routing's fallback compares the query with, under the condition's embedder."""
        return self.paths.title_vectors(corpus, embedder, self.conditions[condition].structure_token)

    def fusion_inputs(self, corpus: str, embedder: str, condition: str) -> dict[str, list[str]]:
        """The runs an ``rrf:<sources>`` condition fuses with its own (structbench.retrieval.fusion): the vectors
        of its chunk set's other text sets under the same embedder, and the chunk set's BM25 run."""
        own = self.conditions[condition]
        sources = fusion_sources(self.retrieval_parameter(condition), own.prefix)
        return {
            "partner_vectors": [
                self.condition_vectors(corpus, embedder, condition, source)
                for source in sources
                if source != LEXICAL_SOURCE
            ],
            "partner_runs": [self.paths.bm25_runs(corpus, own.chunkset) for s in sources if s == LEXICAL_SOURCE],
        }

    def retrieve_inputs(self, corpus: str, embedder: str, condition: str) -> dict[str, str]:
        """The vectors every retrieval kind ranks, plus the routing table a routed kind takes."""
        inputs = {
            "chunk_vectors": self.condition_vectors(corpus, embedder, condition),
            "query_vectors": self.paths.query_vectors(corpus, embedder),
            "queries": self.scored_queries(corpus),
        }
        if "routing" in kind_inputs(self.conditions[condition].retrieval)[0]:
            inputs["routing"] = self.paths.routing(corpus, embedder, condition)
        return inputs

    def score_inputs(self, corpus: str, embedder: str, reranker: str, condition: str) -> dict[str, str]:
        """A run, its queries, chunks and texts; a read-time run's spans and units table; a routed condition's
        routing table (section recall); the documents when a metric places chunks as Chroma does
        (``span_precision_omega_chroma``)."""
        retrieval = self.conditions[condition].retrieval
        inputs = {
            "runs": self.condition_run(corpus, embedder, reranker, condition),
            "queries": self.scored_queries(corpus),
            "chunks": self.condition_chunks(corpus, condition),
            "texts": self.condition_texts(corpus, condition),
        }
        if is_readtime(retrieval):
            inputs["runs"] = self.paths.readtime_runs(corpus, embedder, reranker, condition)
            inputs["units"] = self.paths.readtime_units(corpus, embedder, reranker, condition)
        if retrieval_kind(retrieval).metrics:
            inputs["routing"] = self.paths.routing(corpus, embedder, condition)
        return inputs | self.placement_inputs(corpus)

    def bm25_score_inputs(self, corpus: str, boundaries: str, structure: str) -> dict[str, str]:
        """A chunk set's BM25 run, its queries, chunks and unprefixed texts (the non-lexicality probe), and the
        documents when a metric places chunks as Chroma does."""
        chunks = chunkset(boundaries, structure)
        inputs = {
            "runs": self.paths.bm25_runs(corpus, chunks),
            "queries": self.scored_queries(corpus),
            "chunks": self.paths.chunks(corpus, chunks),
            "texts": self.paths.texts(corpus, f"{chunks}/none"),
        }
        return inputs | self.placement_inputs(corpus)

    def placement_inputs(self, corpus: str) -> dict[str, str]:
        """``{"documents": ...}`` when a scored metric needs the chunk set placed as Chroma places it (its
        ``chroma_chunks`` input: chunk text found in the documents), else nothing."""
        needs = {needed.name for metric in parse_metrics(self.score_metrics) for needed in metric.requires}
        return {"documents": self.paths.documents(corpus)} if "chroma_chunks" in needs else {}

    def late_inputs(self, corpus: str, boundaries: str, structure: str, prefix: str) -> dict[str, str]:
        """A late prefix pools chunks from their documents (structbench.embedding.late): both tables; else none."""
        if not is_late(from_token(prefix)):
            return {}
        return {
            "documents": self.paths.documents(corpus),
            "chunks": self.paths.chunks(corpus, chunkset(boundaries, structure)),
        }

    def text_contexts(self, corpus: str, boundaries: str, structure: str, prefix: str) -> dict[str, str]:
        """The situating contexts a ``context`` prefix renders; no extra input for any other prefix."""
        if from_token(prefix) != "context":
            return {}
        return {"contexts": self.paths.contexts(corpus, chunkset(boundaries, structure))}

    def external_reference(self, corpus: str, chunker: str, size: str, structure: str) -> dict[str, str]:
        """The structural chunks a size-matched external chunker matches (no input otherwise)."""
        if not self.config["chunkers"][chunker]["size_match"]:
            return {}
        return {"reference": self.paths.chunks(corpus, f"structural{size}/{structure}")}

    def induction_shards(self, corpus: str, inducer: str) -> dict[str, list[str]]:
        structure = f"induced-{inducer}"
        return {
            part: [
                self.paths.induction_shard(corpus, structure, shard, f"{part}.{suffix}") for shard in self.llm_shards
            ]
            for part, suffix in (("sections", "parquet"), ("status", "parquet"), ("usage", "json"))
        }

    def context_shards(self, corpus: str, boundaries: str, structure: str) -> dict[str, list[str]]:
        """The LLM shards a chunk set's contexts merge reads: each shard's contexts and usage."""
        chunks = chunkset(boundaries, structure)
        return {
            name: [self.paths.context_shard(corpus, chunks, shard, suffix) for shard in self.llm_shards]
            for name, suffix in (("contexts", "parquet"), ("usage", "usage.json"))
        }

    def querygen_shards(self, corpus: str) -> dict[str, list[str]]:
        return {
            part: [self.paths.querygen_shard(corpus, shard, f"{part}.{suffix}") for shard in self.llm_shards]
            for part, suffix in (("candidates", "parquet"), ("usage", "json"))
        }

    def cell_scores(self, corpus: str, embedder: str, reranker: str) -> list[str]:
        """Every selected condition's scores in one cell: what its statistics read."""
        return [self.paths.scores(corpus, embedder, reranker, name) for name in self.conditions]

    def decisive_inputs(self, corpus: str, embedder: str, reranker: str) -> dict[str, list[str] | str]:
        """What one cell's decisive questions read: the scores, run, chunks and texts of each of
        :meth:`decisive_conditions` (lists in that order; the files the scoring step read, :meth:`score_inputs`), the
        corpus's scored queries and its documents (the evidence excerpts)."""
        conditions = self.decisive_conditions()
        inputs = [self.score_inputs(corpus, embedder, reranker, name) for name in conditions]
        return {
            "scores": [self.paths.scores(corpus, embedder, reranker, name) for name in conditions],
            **{key: [files[key] for files in inputs] for key in ("runs", "chunks", "texts")},
            "queries": self.scored_queries(corpus),
            "documents": self.paths.documents(corpus),
        }

    def subgroup_inputs(self, corpus: str, embedder: str, reranker: str) -> dict[str, list[str] | str]:
        """What the subgroup step reads in one cell: the scores of the conditions its contrasts compare, the scored
        queries (types, evidence spans, texts) and the gold sections (heading depth and paths)."""
        compared = dict.fromkeys(
            member for name in self.subgroup_contrasts() for member in self.contrasts[name].members
        )
        return {
            "scores": [self.paths.scores(corpus, embedder, reranker, name) for name in compared],
            "queries": self.scored_queries(corpus),
            "sections": self.paths.sections(corpus, "gold"),
        }

    def retrieval_layer_runs(self, corpus: str, embedder: str, reranker: str) -> list[str]:
        return [self.condition_run(corpus, embedder, reranker, name) for name in self.retrieval_layer_conditions()]
