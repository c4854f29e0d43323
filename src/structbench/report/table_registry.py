"""The report's table registry (docs/method.md §15): what a table reads, what it returns, how it is declared.

A table is a function ``build(inputs: ReportInputs) -> TableContent`` declared with :func:`report_table`
(a file stem, a title, a caption). It returns the table's ``data`` (the numbers, written as Parquet and
CSV for readers with and without Arrow) and the ``blocks`` the report shows (formatted frames under
sub-headings), or raises :class:`Omit` with the reason the table has nothing to show for this
configuration ("no routed conditions in this config"), which the report states in its place. The
builders live in :mod:`.results`, :mod:`.chunk_set_tables` and its siblings; :mod:`.catalog` lists them in
report order; :mod:`.bundle` reads the run's files into :class:`ReportInputs` and writes everything.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields

import polars as pl

from structbench.artifacts.cells import CELL
from structbench.defaults import T_MAX, T_MIN


@dataclass(frozen=True)
class ReportInput:
    """How one report input is found and read: ``files`` names the method of :class:`structbench.plan.study.Study`
    that lists its files (a list of paths, or a dict key -> path), ``read`` the reader of
    :data:`structbench.report.bundle.READERS` that turns them into the field's value."""

    files: str
    read: str


def report_input(files: str, read: str, empty: Callable | None = None):
    """A :class:`ReportInputs` field read from the run's files (:class:`ReportInput`); ``empty`` makes the
    value when the run has none. The report rule and its script iterate these fields
    (:func:`report_inputs`), so a new input is one such field (plus the Study method listing its files,
    unless one already does) and the table that reads it."""
    metadata = {"report_input": ReportInput(files, read)}
    return field(metadata=metadata) if empty is None else field(default_factory=empty, metadata=metadata)


@dataclass
class ReportInputs:
    """Everything the report reads, as plain tables and dicts (:func:`structbench.report.bundle.load_inputs`
    builds it from the run's files: every field declared with :func:`report_input`; the others are
    settings from the workflow's params).

    ``scores``: every dense cell's per-query scores, concatenated; ``contrasts``: every cell's contrasts
    table with its cell columns; ``condition_means`` and ``dose_response``: the statistics step's
    per-condition means with CIs and dose-response slopes per cell (:mod:`structbench.stats.means`);
    ``decisions``: its ranking of each cell's conditions against the leader (:mod:`structbench.stats.decision`);
    ``subgroups``: its subgroup (moderator) analysis per cell, where the config asks for one
    (:mod:`structbench.stats.subgroups`);
    ``conditions``: name -> axes of the conditions the run selected (``select.conditions``; every declared
    one when none), as declared (declared order is the order every table and figure shows them in);
    ``contrast_specs``: the contrasts as the statistics step got them; ``dropped_contrasts``: the declared
    ones the selection left out, each with its ``missing`` conditions
    (:func:`structbench.conditions.dropped_contrasts`); ``bootstrap_iters``: the statistics
    step's B (the resolution of its p-values); ``chunk_sets``: (corpus, chunk set) ->
    chunks table; ``chunk_bounds``: (corpus, chunk set) -> the bounds report its chunk rule wrote
    (:func:`structbench.chunking.tiling.bounds_file`; ``t_max`` and ``t_min`` come from these);
    ``querygen_stats``: the merged query generation's summary per corpus with generated queries
    (:func:`structbench.querygen.funnel.querygen_summary`); ``retrieval_layer``: the title-chain study's run comparisons
    (:func:`structbench.metrics.diagnostics.retrieval_layer_table`); ``decisive`` and ``decisive_flips``: each
    pairwise contrast's decisive questions and first-evidence flips per cell (:mod:`structbench.report.decisive`).
    """

    scores: pl.DataFrame = report_input("all_cells", "tables")
    contrasts: pl.DataFrame = report_input("all_contrasts", "tables")
    conditions: dict[str, dict]
    primary_metric: str
    contrast_specs: list[dict] = field(default_factory=list)
    dropped_contrasts: list[dict] = field(default_factory=list)
    bootstrap_iters: int | None = None
    condition_means: pl.DataFrame = report_input("all_condition_means", "tables", pl.DataFrame)
    dose_response: pl.DataFrame = report_input("all_dose_responses", "tables", pl.DataFrame)
    decisions: pl.DataFrame = report_input("all_decisions", "tables", pl.DataFrame)
    subgroups: pl.DataFrame = report_input("all_subgroups", "tables", pl.DataFrame)
    bm25_scores: pl.DataFrame = report_input("all_bm25_scores", "tables", pl.DataFrame)
    corpus_stats: dict[str, dict] = report_input("all_corpus_stats", "json_by_key", dict)
    size_matches: list[dict] = report_input("all_size_matches", "json", list)
    text_reports: list[dict] = report_input("all_text_reports", "json", list)
    chunk_sets: dict[tuple[str, str], pl.DataFrame] = report_input("all_chunk_sets", "chunks_by_key", dict)
    chunk_bounds: dict[tuple[str, str], dict] = report_input("all_chunk_bounds", "json_by_key", dict)
    embed_reports: list[dict] = report_input("all_embed_reports", "embed_reports", list)
    induction_stats: list[dict] = report_input("all_induction_stats", "json", list)
    context_stats: list[dict] = report_input("all_context_stats", "json", list)
    querygen_stats: list[dict] = report_input("all_querygen_stats", "json", list)
    retrieval_layer: pl.DataFrame = report_input("all_retrieval_layers", "tables", pl.DataFrame)
    decisive: pl.DataFrame = report_input("all_decisive", "tables", pl.DataFrame)
    decisive_flips: pl.DataFrame = report_input("all_decisive_flips", "tables", pl.DataFrame)

    @property
    def t_max(self) -> int:
        """The ``t_max`` the chunk sets were held to (their bounds reports; the default without one)."""
        return max((report["t_max"] for report in self.chunk_bounds.values()), default=T_MAX)

    @property
    def t_min(self) -> int:
        """The ``t_min`` the chunk sets were held to (their bounds reports; the default without one)."""
        return min((report["t_min"] for report in self.chunk_bounds.values()), default=T_MIN)

    @property
    def scored(self) -> bool:
        return not self.scores.is_empty()

    def condition_order(self, present: Sequence[str]) -> list[str]:
        """``present`` conditions in declared order (any undeclared ones after, by name)."""
        declared = [name for name in self.conditions if name in set(present)]
        return declared + sorted(set(present) - set(declared))

    def by_condition(self, data: pl.DataFrame) -> pl.DataFrame:
        """``data`` (one row per cell and condition) sorted by cell, then by condition in declared order."""
        order = {name: i for i, name in enumerate(self.condition_order(data["condition"].unique().to_list()))}
        rank = pl.col("condition").replace_strict(order, return_dtype=pl.Int64)
        return data.sort([*CELL, rank])


def report_inputs() -> dict[str, ReportInput]:
    """The report's file inputs, field name -> :class:`ReportInput`, in field order: the one table the
    report rule (rules/report.smk), its script and :func:`structbench.report.bundle.load_inputs` iterate."""
    return {f.name: f.metadata["report_input"] for f in fields(ReportInputs) if "report_input" in f.metadata}


class Omit(Exception):
    """Raised by a table or figure that has nothing to show for this configuration; the message is the
    reason the report prints in its place."""


@dataclass(frozen=True)
class Block:
    """One formatted frame the report shows, under an optional sub-heading."""

    heading: str
    frame: pl.DataFrame


@dataclass(frozen=True)
class Details:
    """A collapsible section a table shows below its blocks (HTML ``<details>``: closed until clicked, no script):
    ``summary`` is its one line, ``lines`` (paragraphs) and ``frame`` its body, then its ``children`` (nested
    sections). The Markdown report is shorter: it shows ``brief`` (the summary when empty) and its children's,
    never the lines or the frame."""

    summary: str
    lines: tuple[str, ...] = ()
    frame: pl.DataFrame | None = None
    children: tuple[Details, ...] = ()
    brief: str = ""


@dataclass(frozen=True)
class TableContent:
    """What a table builder returns: ``data`` is written as Parquet + CSV; ``blocks`` are shown (none:
    the data is shown as it is, unless ``inline`` is False, for a table too long to read in a page);
    ``notes`` follow the blocks as a list, ``details`` (collapsible sections) the notes."""

    data: pl.DataFrame
    blocks: tuple[Block, ...] = ()
    notes: tuple[str, ...] = ()
    float_digits: int = 3
    inline: bool = True
    details: tuple[Details, ...] = ()

    def shown(self) -> tuple[Block, ...]:
        if not self.inline:
            return ()
        return self.blocks or (Block("", self.data),)


@dataclass(frozen=True)
class TableSpec:
    name: str  # file stem: tables/<name>.parquet and .csv
    title: str
    caption: str
    build: Callable[[ReportInputs], TableContent]


@dataclass(frozen=True)
class Table:
    spec: TableSpec
    content: TableContent


@dataclass(frozen=True)
class Omitted:
    """A table or figure left out, with the reason."""

    spec: object  # TableSpec or figures.FigureSpec
    reason: str


DECLARED: dict[str, TableSpec] = {}  # every table a builder module declared, by name; the order is catalog's


def report_table(name: str, title: str, caption: str):
    """Declare ``build(inputs) -> TableContent`` as the report table ``name`` (returned unchanged). Where
    it appears in the report is :data:`structbench.report.catalog.TABLE_ORDER`'s business, not the order
    modules are imported in."""

    def register(build: Callable[[ReportInputs], TableContent]):
        if name in DECLARED:
            raise ValueError(f"report table {name!r} is registered twice")
        DECLARED[name] = TableSpec(name, title, caption, build)
        return build

    return register


def build_specs(inputs: ReportInputs, specs: Sequence[TableSpec]) -> list[Table | Omitted]:
    """Each of ``specs``, built or omitted with its reason, in the order given."""
    built: list[Table | Omitted] = []
    for spec in specs:
        try:
            built.append(Table(spec, spec.build(inputs)))
        except Omit as reason:
            built.append(Omitted(spec, str(reason)))
    return built


def require_scores(inputs: ReportInputs) -> None:
    if not inputs.scored:
        raise Omit("no corpus with queries is selected: nothing was scored")


def blocks_by(frame: pl.DataFrame, keys: list[str], heading: Callable[..., str]) -> tuple[Block, ...]:
    """One block per distinct ``keys`` (in the frame's order), without the key columns."""
    blocks = []
    for values, group in frame.group_by(keys, maintain_order=True):
        blocks.append(Block(heading(*values), group.drop(keys)))
    return tuple(blocks)
