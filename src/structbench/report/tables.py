"""The report (docs/method.md §15): the paper's tables, each one registered function of the run's outputs.

A table is a function ``build(inputs: ReportInputs) -> TableContent`` registered with
:func:`report_table` (a file stem, a title, a caption). It returns the table's ``data`` (the numbers,
written as Parquet and CSV for readers with and without Arrow) and the ``blocks`` the report shows
(formatted frames under sub-headings), or raises :class:`Omit` with the reason the table has nothing
to show for this configuration ("no routed conditions in this config"), which the report states in its
place. Adding a table is one function and one decorator; figures (:mod:`structbench.report.figures`) are
views of a table's data, registered the same way. :mod:`structbench.report.bundle` reads the run's
files into :class:`ReportInputs` and writes everything; this module only computes (pure functions
from tables to tables and text, no file access).

Kuehlkamp et al.'s layouts: Table 1 (one row per contrast and corpus: delta, 95% CI, Holm p, dz, MixedLM p's,
win/tie/loss query counts, with its family as label) and Table 2 (one row per corpus, one column per
condition); :mod:`structbench.report.latex` writes both as booktabs LaTeX from the same shown frames.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from decimal import ROUND_CEILING, Context, Decimal

import polars as pl

from structbench.cells import lexical_chunkset
from structbench.conditions import AXES, retrieval_kind, routed_kinds
from structbench.defaults import ALPHA, T_MAX, T_MIN
from structbench.metrics.registry import is_metric, metric_label, parse_metric
from structbench.stats.contrasts import HOLM_FAMILIES, MIN_CLUSTERS

CELL = ["corpus", "embedder", "reranker"]
ID_COLUMNS = {"qid", "doc_id", "qtype", "corpus", "condition", "embedder", "reranker"}
ALL_QTYPES = "all"


# ---- formatting ----------------------------------------------------------------------------------


def metric_columns(scores: pl.DataFrame) -> list[str]:
    """The columns of ``scores`` (or of a means table) that are registered metrics, in table order
    (:mod:`structbench.metrics.registry`): ids, counts and any other column are not metrics."""
    return [c for c in scores.columns if c not in ID_COLUMNS and is_metric(c)]


def metric_legend(metrics: list[str]) -> str:
    """One line per registered metric family shown (e.g. the three budgets share one): the labels,
    the column names and the description, from the registry, in the order the metrics come."""
    families: dict[str, list] = {}
    for name in metrics:
        metric = parse_metric(name)
        families.setdefault(metric.definition.name, []).append(metric)
    lines = []
    for members in families.values():
        labels = ", ".join(m.label for m in members)
        columns = ", ".join(f"`{m.name}`" for m in members)
        lines.append(f"- **{labels}** ({columns}): {members[0].description}")
    return "\n".join(lines)


def format_cell(value, float_digits: int = 3) -> str:
    """One table cell as text: ``–`` for a missing value, ``n/a`` for NaN, floats at ``float_digits``."""
    if value is None:
        return "–"
    if isinstance(value, float):
        if value != value:  # NaN
            return "n/a"
        return f"{value:.{float_digits}f}"
    return str(value)


def markdown_table(frame: pl.DataFrame, float_digits: int = 3) -> str:
    header = "| " + " | ".join(frame.columns) + " |"
    rule = "|" + "|".join("---" for _ in frame.columns) + "|"
    rows = [
        "| " + " | ".join(format_cell(v, float_digits).replace("|", "\\|") for v in row) + " |"
        for row in frame.iter_rows()
    ]
    return "\n".join([header, rule, *rows])


def format_p(p: float | None, bootstrap_iters: int | None = None) -> str:
    """A p-value as the report prints it: three decimals, ``n/a`` for a missing or NaN p.

    ``bootstrap_iters`` = B marks a bootstrap p, whose resolution is 1/B
    (:func:`structbench.stats.bootstrap.bootstrap_p`): a p below 1/B (no replicate reached zero, so
    p = 0) prints as ``< 1/B`` (``"< 0.0001"`` for B = 10,000; 1/B rounded UP to two significant
    digits, so the bound is never overstated), and a p under 0.001 gets the decimals 1/B needs
    (``"0.0004"``). Without B (MixedLM p's; callers that predate the parameter) any p under 0.001 is
    ``"<0.001"``.
    """
    if p is None or p != p:
        return "n/a"
    if bootstrap_iters is None:
        return "<0.001" if p < 0.001 else f"{p:.3f}"
    if bootstrap_iters < 1:
        raise ValueError(f"bootstrap_iters must be a positive count of replicates, got {bootstrap_iters}")
    if p * bootstrap_iters < 1:
        return f"< {_resolution(bootstrap_iters)}"
    if p < 0.001:
        return f"{p:.{len(str(bootstrap_iters - 1))}f}"  # 1/B needs ceil(log10 B) decimals
    return f"{p:.3f}"


def _resolution(bootstrap_iters: int) -> str:
    """1/B as a decimal string, rounded up to two significant digits (1/3000 -> 0.00034)."""
    bound = Context(prec=2, rounding=ROUND_CEILING).divide(Decimal(1), Decimal(bootstrap_iters))
    return format(bound.normalize(), "f")


def signed(value: float | None, digits: int = 4) -> str:
    """A signed decimal as the paper prints effects: ``+0.0161``, ``−0.0147`` (a true minus sign)."""
    if value is None or value != value:
        return "n/a"
    return f"{value:+.{digits}f}".replace("-", "−")


def p_text(p: float | None, bootstrap_iters: int | None = None) -> str:
    """``p = 0.012`` or ``p < 0.0001``: :func:`format_p` with the relation spelled out, for running text."""
    shown = format_p(p, bootstrap_iters)
    return f"p {shown}" if shown.startswith("<") else f"p = {shown}"


def cell_heading(corpus: str, embedder: str, reranker: str) -> str:
    return f"{corpus} · {embedder} · reranker: {reranker}"


def comparison_labels(contrast_specs: list[dict]) -> pl.DataFrame:
    """What each contrast compares, in words: "G3 − G2", or "slope over G2 → G3-d1 → G3" for a dose-response."""
    labels = [
        " → ".join(spec["conditions"]).join(("slope over ", ""))
        if spec.get("conditions")
        else f"{spec['treatment']} − {spec['control']}"
        for spec in contrast_specs
    ]
    return pl.DataFrame(
        {"contrast": [spec["name"] for spec in contrast_specs], "comparison": labels},
        schema={"contrast": pl.String, "comparison": pl.String},
    )


def condition_means(scores: pl.DataFrame) -> pl.DataFrame:
    """Mean of every metric per (corpus, embedder, reranker, condition), with query and document counts."""
    metrics = metric_columns(scores)
    return (
        scores.group_by(CELL + ["condition"])
        .agg(
            pl.len().alias("n_queries"),
            pl.col("doc_id").n_unique().alias("n_docs"),
            *[pl.col(m).mean().alias(m) for m in metrics],
        )
        .sort(CELL + ["condition"])
    )


# ---- the registry ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ReportInput:
    """How one report input is found and read: ``files`` names the function of rules/common.smk that
    lists its files (a list of paths, or a dict key -> path), ``read`` the reader of
    :data:`structbench.report.bundle.READERS` that turns them into the field's value."""

    files: str
    read: str


def report_input(files: str, read: str, empty: Callable | None = None):
    """A :class:`ReportInputs` field read from the run's files (:class:`ReportInput`); ``empty`` makes the
    value when the run has none. The report rule and its script iterate these fields
    (:func:`report_inputs`), so a new input is one such field (plus the function listing its files,
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
    ``conditions``: name -> axes of the conditions the run selected (``select.conditions``; every declared
    one when none), as declared (declared order is the order every table and figure shows them in);
    ``contrast_specs``: the contrasts as the statistics step got them; ``bootstrap_iters``: the statistics
    step's B (the resolution of its p-values); ``chunk_sets``: (corpus, chunk set) ->
    chunks table; ``chunk_bounds``: (corpus, chunk set) -> the bounds report its chunk rule wrote
    (:func:`structbench.chunking.tiling.bounds_file`; ``t_max`` and ``t_min`` come from these);
    ``querygen_stats``: the merged query generation's summary per corpus with generated queries
    (:func:`structbench.querygen.funnel.querygen_summary`); ``retrieval_layer``: the title-chain study's run comparisons
    (:func:`structbench.metrics.diagnostics.retrieval_layer_table`).
    """

    scores: pl.DataFrame = report_input("all_cells", "tables")
    contrasts: pl.DataFrame = report_input("all_contrasts", "tables")
    conditions: dict[str, dict]
    primary_metric: str
    contrast_specs: list[dict] = field(default_factory=list)
    bootstrap_iters: int | None = None
    condition_means: pl.DataFrame = report_input("all_condition_means", "tables", pl.DataFrame)
    dose_response: pl.DataFrame = report_input("all_dose_responses", "tables", pl.DataFrame)
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
class TableContent:
    """What a table builder returns: ``data`` is written as Parquet + CSV; ``blocks`` are shown (none:
    the data is shown as it is, unless ``inline`` is False, for a table too long to read in a page);
    ``notes`` follow the blocks as a list."""

    data: pl.DataFrame
    blocks: tuple[Block, ...] = ()
    notes: tuple[str, ...] = ()
    float_digits: int = 3
    inline: bool = True

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


TABLES: dict[str, TableSpec] = {}


def report_table(name: str, title: str, caption: str):
    """Register ``build(inputs) -> TableContent`` as the report table ``name`` (returned unchanged).
    Tables appear in registration order."""

    def register(build: Callable[[ReportInputs], TableContent]):
        if name in TABLES:
            raise ValueError(f"report table {name!r} is registered twice")
        TABLES[name] = TableSpec(name, title, caption, build)
        return build

    return register


def build_tables(inputs: ReportInputs, specs: Sequence[TableSpec] | None = None) -> list[Table | Omitted]:
    """Every registered table (or ``specs``), built or omitted with its reason, in registration order."""
    built: list[Table | Omitted] = []
    for spec in specs if specs is not None else TABLES.values():
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


# ---- conditions, contrasts, means ----------------------------------------------------------------


@report_table(
    "conditions",
    "Conditions",
    "Each condition is a point on four axes: where chunks are cut (boundaries), whose heading "
    "tree (structure), what is prepended to each chunk before embedding (prefix) and how search "
    "runs (retrieval).",
)
def conditions_table(inputs: ReportInputs) -> TableContent:
    if not inputs.conditions:
        raise Omit("no condition is declared")
    rows = [
        {"condition": name, **{axis: str(axes.get(axis, "")) for axis in AXES}}
        for name, axes in inputs.conditions.items()
    ]
    return TableContent(pl.DataFrame(rows, schema={"condition": pl.String, **dict.fromkeys(AXES, pl.String)}))


def contrast_rows(contrasts: pl.DataFrame, contrast_specs: Sequence[dict]) -> pl.DataFrame:
    """Table 1's data: one row per (contrast, corpus, embedder, reranker, metric), contrasts in
    declared order, with what each compares and whether it is Holm-significant (``p_holm`` < ALPHA
    within a Holm family; exploratory rows never are)."""
    order = {spec["name"]: i for i, spec in enumerate(contrast_specs)}
    labels = comparison_labels(list(contrast_specs))
    frame = contrasts.join(labels, on="contrast", how="left").with_columns(
        pl.coalesce("comparison", pl.col("treatment") + " − " + pl.col("control")).alias("comparison"),
        pl.col("contrast").replace_strict(order, default=len(order), return_dtype=pl.Int64).alias("_order"),
    )
    significant = (
        pl.col("label").is_in(list(HOLM_FAMILIES)) & pl.col("p_holm").is_not_nan() & (pl.col("p_holm") < ALPHA)
    )
    columns = [
        "embedder",
        "reranker",
        "contrast",
        "comparison",
        "treatment",
        "control",
        "corpus",
        pl.col("label").alias("family"),
        "metric",
        "delta",
        "ci_low",
        "ci_high",
        "p",
        "p_holm",
        significant.fill_null(False).alias("holm_significant"),
        "dz",
        "p_mixedlm",
        "p_mixedlm_nested",
        "n_queries",
        "n_docs",
        "n_dropped",
        "wins",
        "ties",
        "losses",
        "mixedlm_note",
        "cluster",
        "n_clusters",
        "few_clusters",
    ]
    return frame.sort("embedder", "reranker", "_order", "contrast", "corpus", "metric").select(
        [c for c in columns if not isinstance(c, str) or c in frame.columns]
    )


@report_table(
    "table1_contrasts",
    "Contrasts (Table 1)",
    "Kuehlkamp et al.'s Table 1 layout: each declared contrast per corpus. Δ is the mean paired per-query "
    "difference (treatment − control; for a dose-response, the mean per-query slope per path level), "
    "the 95% CI and p come from the document-clustered bootstrap, p (Holm) is adjusted within the "
    "contrast's family (primary, secondary, model_free or chunkers; exploratory rows are outside any family), dz is "
    "Cohen's dz, and the MixedLM p's are the secondary model (random intercept per document; "
    "nested: plus a per-query effect). The pre-registered MixedLM can disagree with the bootstrap by "
    "design: it has no per-query effect, so it ignores the pairing of a query's two scores and their "
    "query-to-query variance lands in its residual, which makes it conservative (a p of .09 beside a "
    "bootstrap p below 1e-4 is that, not a contradiction); the nested model restores the pairing. "
    "W/T/L counts the paired queries where the treatment scored above, "
    "exactly equal to and below the control (PyTerrier's and ranx's convention; none for a dose-response "
    'slope). clusters: the units the bootstrap resampled (stats.cluster), "few" below 20. n.s.: not '
    "Holm-significant at 0.05.",
)
def contrasts_table(inputs: ReportInputs) -> TableContent:
    require_scores(inputs)
    if inputs.contrasts.is_empty():
        raise Omit("no contrast is declared")
    data = contrast_rows(inputs.contrasts, inputs.contrast_specs)
    B = inputs.bootstrap_iters

    def holm_text(p_holm, family, significant):
        if family not in HOLM_FAMILIES:
            return "– (exploratory)"
        text = format_p(p_holm, B)
        return text if significant or text == "n/a" else f"{text} (n.s.)"

    shown = data.select(
        "embedder",
        "reranker",
        "metric",
        (pl.col("contrast") + ": " + pl.col("comparison")).alias("contrast"),
        "corpus",
        "family",
        pl.col("delta").map_elements(signed, return_dtype=pl.String).alias("Δ"),
        pl.struct("ci_low", "ci_high")
        .map_elements(lambda ci: f"[{signed(ci['ci_low'])}, {signed(ci['ci_high'])}]", return_dtype=pl.String)
        .alias("95% CI"),
        pl.col("p").map_elements(lambda p: format_p(p, B), return_dtype=pl.String).alias("p"),
        pl.struct("p_holm", "family", "holm_significant")
        .map_elements(lambda r: holm_text(r["p_holm"], r["family"], r["holm_significant"]), return_dtype=pl.String)
        .alias("p (Holm)"),
        pl.col("dz").map_elements(lambda v: signed(v, 2), return_dtype=pl.String).alias("dz"),
        pl.col("p_mixedlm").map_elements(format_p, return_dtype=pl.String).alias("p (MixedLM)"),
        pl.col("p_mixedlm_nested").map_elements(format_p, return_dtype=pl.String).alias("p (MixedLM, nested)"),
        pl.when(pl.col("wins").is_null())
        .then(pl.lit("n/a"))
        .otherwise(pl.format("{}/{}/{}", "wins", "ties", "losses"))
        .alias("W/T/L"),
        _queries_docs(data).alias("queries / docs"),
    )
    blocks = blocks_by(
        shown, ["embedder", "reranker", "metric"], lambda e, r, m: f"{e} · reranker: {r} · {metric_label(m)}"
    )
    notes = tuple(
        f"{name} · {corpus} · {embedder} · {reranker}: {note}"
        for name, corpus, embedder, reranker, note in data.select(
            "contrast", "corpus", "embedder", "reranker", "mixedlm_note"
        ).iter_rows()
        if note
    ) + _cluster_notes(data)
    return TableContent(data, blocks, notes)


def _queries_docs(data: pl.DataFrame) -> pl.Expr:
    """``queries / docs``, marked ``(few)`` where the bootstrap had fewer than MIN_CLUSTERS clusters."""
    counts = pl.format("{} / {}", "n_queries", "n_docs")
    if "few_clusters" not in data.columns:
        return counts
    return pl.when(pl.col("few_clusters")).then(counts + pl.lit(" (few)")).otherwise(counts)


def _cluster_notes(data: pl.DataFrame) -> tuple[str, ...]:
    """Say which unit the bootstrap resampled and how many rows have too few clusters to trust its CI and p."""
    if "cluster" not in data.columns or data.is_empty():
        return ()
    units = ", ".join(sorted(set(data["cluster"].drop_nulls().to_list())))
    notes = [f"The bootstrap resampled {units}s (stats.cluster: {units})."]
    few = data.filter(pl.col("few_clusters"))
    if few.height:
        notes.append(
            f"{few.height} of {data.height} rows have fewer than {MIN_CLUSTERS} clusters (marked few; e.g. "
            f"{few['n_clusters'].min()} {few['cluster'][0]}s): a clustered percentile bootstrap then gives too "
            "narrow a CI and too small a p, so read their CI and p with the MixedLM p beside them, or resample "
            "queries (stats.cluster: query) and say so."
        )
    return tuple(notes)


@report_table(
    "table2_condition_means",
    "Per-condition means (Table 2)",
    "Kuehlkamp et al.'s Table 2 layout: the primary metric's mean over queries, one row per corpus and one "
    "column per condition.",
)
def means_table(inputs: ReportInputs) -> TableContent:
    require_scores(inputs)
    metric = inputs.primary_metric
    means = condition_means(inputs.scores)
    order = inputs.condition_order(means["condition"].unique().to_list())
    wide = means.pivot(on="condition", index=CELL, values=metric).sort(CELL)
    conditions = [c for c in order if c in wide.columns]
    data = wide.select(CELL + conditions)
    blocks = blocks_by(
        data.select("embedder", "reranker", "corpus", *conditions),
        ["embedder", "reranker"],
        lambda e, r: f"{e} · reranker: {r} · {metric_label(metric)}",
    )
    return TableContent(data, blocks)


def primary_condition_means(inputs: ReportInputs) -> pl.DataFrame:
    """The statistics step's per-condition means of the primary metric with their CIs
    (:func:`structbench.stats.means.condition_mean_cis`); omitted when it wrote none."""
    means = inputs.condition_means
    if means.is_empty() or not (means["metric"] == inputs.primary_metric).any():
        raise Omit(f"the statistics step wrote no per-condition means of {inputs.primary_metric}")
    return means.filter(pl.col("metric") == inputs.primary_metric)


@report_table(
    "condition_means_ci",
    "Per-condition means with 95% CIs",
    "The primary metric's mean per condition with a 95% document-clustered bootstrap interval "
    "(the statistics step's B and seed): the uncertainty of each condition on its own. Whether two "
    "conditions differ is Table 1's paired test, which is much tighter than overlapping intervals "
    "suggest.",
)
def means_ci_table(inputs: ReportInputs) -> TableContent:
    require_scores(inputs)
    data = primary_condition_means(inputs)
    order = {name: i for i, name in enumerate(inputs.condition_order(data["condition"].unique().to_list()))}
    data = (
        data.with_columns(pl.col("condition").replace_strict(order, return_dtype=pl.Int64).alias("_order"))
        .sort(CELL + ["_order"])
        .drop("_order")
    )
    shown = data.select(
        *CELL,
        "condition",
        "mean",
        pl.struct("ci_low", "ci_high")
        .map_elements(lambda ci: f"[{ci['ci_low']:.3f}, {ci['ci_high']:.3f}]", return_dtype=pl.String)
        .alias("95% CI"),
        "n_queries",
        "n_docs",
    )
    return TableContent(data, blocks_by(shown, CELL, cell_heading))


@report_table(
    "metric_ladder", "Metric ladder", "Every metric's mean per condition, in each cell (corpus · embedder · reranker)."
)
def ladder_table(inputs: ReportInputs) -> TableContent:
    require_scores(inputs)
    data = condition_means(inputs.scores)
    order = {name: i for i, name in enumerate(inputs.condition_order(data["condition"].unique().to_list()))}
    data = (
        data.with_columns(pl.col("condition").replace_strict(order, return_dtype=pl.Int64).alias("_order"))
        .sort(CELL + ["_order"])
        .drop("_order")
    )
    metrics = metric_columns(data)
    blocks = []
    for (corpus, embedder, reranker), cell in data.group_by(CELL, maintain_order=True):
        shown = [m for m in metrics if cell[m].null_count() < cell.height]  # e.g. section recall: routed only
        blocks.append(
            Block(
                cell_heading(corpus, embedder, reranker),
                cell.select("condition", *[pl.col(m).alias(metric_label(m)) for m in shown]),
            )
        )
    legend = tuple(line.removeprefix("- ") for line in metric_legend(metrics).splitlines()) if metrics else ()
    return TableContent(data, tuple(blocks), legend)


# ---- dose-response ------------------------------------------------------------------------------------


@report_table(
    "dose_response",
    "Heading-path dose-response",
    "Exploratory (Kuehlkamp et al., section 6.6): the primary metric against the depth of the injected "
    "heading path (0 = no prefix). The slope is the mean per-query OLS slope per path level over "
    "queries scored under every member (it equals the slope of the condition means), with a "
    "document-clustered bootstrap CI and p. Declared series are the config's dose-response "
    "contrasts (Table 1 shows the same slope); derived series are conditions that differ only in "
    "path depth.",
)
def dose_response_table(inputs: ReportInputs) -> TableContent:
    require_scores(inputs)
    slopes = inputs.dose_response
    if slopes.is_empty() or not (slopes["metric"] == inputs.primary_metric).any():
        raise Omit(
            "no dose-response contrast and no three or more conditions that differ only in heading-path depth "
            "in this config"
        )
    keys = CELL + ["condition"]
    means = primary_condition_means(inputs).select(*keys, "mean", "ci_low", "ci_high")
    data = (
        slopes.filter(pl.col("metric") == inputs.primary_metric)
        .join(means, on=keys, how="left", maintain_order="left")
        .select(
            *CELL,
            "series",
            "declared",
            "condition",
            "depth",
            "mean",
            "ci_low",
            "ci_high",
            "slope",
            "slope_ci_low",
            "slope_ci_high",
            "slope_p",
            "slope_n_queries",
        )
        .sort(CELL, maintain_order=True)
    )
    B = inputs.bootstrap_iters
    shown = (
        data.group_by(CELL + ["series"], maintain_order=True)
        .agg(
            pl.col("declared").first(),
            pl.struct("depth", "mean")
            .map_elements(lambda r: f"{r['depth']:g}: {r['mean']:.3f}", return_dtype=pl.String)
            .str.join(" · ")
            .alias("mean by depth"),
            pl.col("slope").first(),
            pl.col("slope_ci_low").first(),
            pl.col("slope_ci_high").first(),
            pl.col("slope_p").first(),
            pl.col("slope_n_queries").first().alias("queries"),
        )
        .select(
            *CELL,
            "series",
            pl.when("declared").then(pl.lit("declared contrast")).otherwise(pl.lit("derived")).alias("source"),
            "mean by depth",
            pl.struct("slope", "slope_ci_low", "slope_ci_high")
            .map_elements(
                lambda s: f"{signed(s['slope'])} [{signed(s['slope_ci_low'])}, {signed(s['slope_ci_high'])}]",
                return_dtype=pl.String,
            )
            .alias("slope per level [95% CI]"),
            pl.col("slope_p").map_elements(lambda p: format_p(p, B), return_dtype=pl.String).alias("p"),
            "queries",
        )
    )
    return TableContent(data, blocks_by(shown, CELL, cell_heading))


# ---- diagnostics: section recall, retrieval layer, BM25 ------------------------------------------------


@report_table(
    "section_recall",
    "Section recall of routed retrieval",
    "Routed retrieval (two-stage, TOC) first keeps some sections and ranks chunks only inside them: "
    "section recall is the share of queries for which a kept section overlaps the gold evidence "
    "(Kuehlkamp et al., section 6.4). Whatever stage 1 drops, stage 2 cannot recover. By query type, and "
    "over all queries.",
)
def section_recall_table(inputs: ReportInputs) -> TableContent:
    routed = [name for name, axes in inputs.conditions.items() if retrieval_kind(str(axes["retrieval"])).routed]
    if not routed:
        raise Omit(f"no routed conditions (retrieval {' or '.join(routed_kinds())}) in this config")
    require_scores(inputs)
    if "section_recall" not in inputs.scores.columns:
        raise Omit(f"the routed conditions {', '.join(routed)} were scored without section recall")
    scored = inputs.scores.filter(pl.col("section_recall").is_not_null() & pl.col("section_recall").is_not_nan())
    if scored.is_empty():
        raise Omit(f"the routed conditions {', '.join(routed)} were scored without section recall")
    keys = CELL + ["condition"]
    by_type = scored.group_by(keys + ["qtype"]).agg(pl.len().alias("n_queries"), pl.col("section_recall").mean())
    overall = scored.group_by(keys).agg(
        pl.lit(ALL_QTYPES).alias("qtype"), pl.len().alias("n_queries"), pl.col("section_recall").mean()
    )
    data = pl.concat([by_type.sort(keys + ["qtype"]), overall.select(by_type.columns).sort(keys)])
    data = data.sort(keys, maintain_order=True)
    qtypes = sorted(by_type["qtype"].unique().to_list()) + [ALL_QTYPES]
    shown = (
        data.with_columns(
            pl.struct("section_recall", "n_queries")
            .map_elements(lambda r: f"{r['section_recall']:.3f} (n={r['n_queries']})", return_dtype=pl.String)
            .alias("v")
        )
        .pivot(on="qtype", index=keys, values="v")
        .select(keys + [q for q in qtypes if q in data["qtype"].unique().to_list()])
    )
    return TableContent(data, blocks_by(shown, CELL, cell_heading))


@report_table(
    "retrieval_layer",
    "Retrieval-layer comparison (prefixed vs unprefixed index)",
    "The title-chain study's annotation-free check that a prefix restructures retrieval: each prefixed condition "
    "against the condition that ranks the same chunks with no prefix. Shares of queries whose rank-1 "
    "chunk changed, whose top 5 share no chunk or the same set, and the mean top-5 overlap "
    "(the title-chain study: 86.9% top-1 changed, overlap 2.11 / 5).",
)
def retrieval_layer_report(inputs: ReportInputs) -> TableContent:
    require_scores(inputs)
    data = inputs.retrieval_layer
    if data.is_empty():
        raise Omit(
            "no pair of conditions ranks one chunk set with and without a prefix (same boundaries, "
            "structure and retrieval) in this config"
        )
    data = data.sort(CELL, maintain_order=True)
    top = "top-" + "/".join(str(d) for d in data["depth"].unique().sort().to_list())
    shown = data.select(
        *CELL,
        pl.format("{} vs {}", "condition", "baseline").alias("prefixed vs unprefixed"),
        pl.col("n_queries").alias("queries"),
        pl.col("top1_changed").alias("top-1 changed"),
        pl.struct("mean_overlap", "depth")
        .map_elements(lambda r: f"{r['mean_overlap']:.2f} / {r['depth']}", return_dtype=pl.String)
        .alias(f"mean {top} overlap"),
        pl.col("fully_different").alias(f"{top} fully different"),
        pl.col("identical").alias(f"{top} identical"),
    )
    return TableContent(data, blocks_by(shown, CELL, cell_heading))


@report_table(
    "bm25_nonlexicality",
    "BM25 non-lexicality",
    "Share of queries whose rank-1 BM25 chunk (content only, no prefix) is binary-relevant "
    "(Kuehlkamp et al., appendix I): low values mean keyword overlap does not solve the benchmark.",
)
def bm25_table(inputs: ReportInputs) -> TableContent:
    bm25 = inputs.bm25_scores
    if bm25.is_empty():
        raise Omit("no corpus with queries is selected: BM25 ranked nothing")
    shown = [m for m in dict.fromkeys(["gold_top1", "MRR", inputs.primary_metric]) if m in bm25.columns]
    data = (
        bm25.with_columns(pl.col("condition").map_elements(lexical_chunkset, return_dtype=pl.String).alias("chunk set"))
        .group_by("corpus", "chunk set")
        .agg(pl.len().alias("n_queries"), *[pl.col(m).mean().alias(f"BM25 {metric_label(m)}") for m in shown])
        .sort("corpus", "chunk set")
    )
    return TableContent(data)


# ---- chunk sets ---------------------------------------------------------------------------------------------


@report_table(
    "chunk_size_matching",
    "Chunk sets (size matching)",
    "Realized mean content tokens of each size-matched chunk set (fixed windows; external chunkers with "
    "size_match) and the structural set it is size-matched to, per document (Kuehlkamp et al. report gaps of at "
    "most 4 tokens).",
)
def size_matching_table(inputs: ReportInputs) -> TableContent:
    if not inputs.size_matches:
        raise Omit("no size-matched condition in this config")
    data = (
        pl.DataFrame(inputs.size_matches, infer_schema_length=None)
        .select(
            "corpus",
            "chunk set",
            "documents",
            "reference_chunks",
            "matched_chunks",
            pl.col("reference_mean_tokens").alias("structural mean tokens"),
            pl.col("matched_mean_tokens").alias("matched mean tokens"),
            pl.col("difference").alias("matched − structural"),
            pl.col("max_doc_difference").alias("max per-document gap"),
        )
        .sort("corpus", "chunk set")
    )
    return TableContent(data, float_digits=1)


def chunk_size_rows(chunk_sets: dict[tuple[str, str], pl.DataFrame]) -> pl.DataFrame:
    """One row per chunk of every chunk set: ``corpus, chunk set, doc_id, chunk_id, n_tokens``."""
    frames = [
        chunks.select(
            pl.lit(corpus).alias("corpus"),
            pl.lit(chunkset).alias("chunk set"),
            "doc_id",
            "chunk_id",
            pl.col("n_tokens").cast(pl.Int64),
        )
        for (corpus, chunkset), chunks in sorted(chunk_sets.items())
    ]
    return pl.concat(frames) if frames else pl.DataFrame()


@report_table(
    "chunk_sizes",
    "Realized chunk sizes",
    "Content tokens per chunk of every chunk set (prefix tokens excluded): the distribution's "
    "quantiles here, every chunk in the table's files.",
)
def chunk_sizes_table(inputs: ReportInputs) -> TableContent:
    data = chunk_size_rows(inputs.chunk_sets)
    if data.is_empty():
        raise Omit("no chunk set")
    tokens = pl.col("n_tokens")
    shown = data.group_by("corpus", "chunk set", maintain_order=True).agg(
        pl.len().alias("chunks"),
        tokens.mean().alias("mean"),
        tokens.quantile(0.1, "nearest").alias("p10"),
        tokens.median().alias("median"),
        tokens.quantile(0.9, "nearest").alias("p90"),
        tokens.min().alias("min"),
        tokens.max().alias("max"),
    )
    return TableContent(data, (Block("", shown),), float_digits=1)


@report_table(
    "chunk_bounds",
    "Chunk bounds",
    "Every chunk set against its token bounds: how many chunks exceed t_max (always 0: it is a hard "
    "bound) or fall under t_min, and how each chunk's end was cut. line, word and token are the "
    "fallbacks taken where no sentence boundary served (code, lists, tables, unpunctuated text).",
)
def chunk_bounds_table(inputs: ReportInputs) -> TableContent:
    if not inputs.chunk_bounds:
        raise Omit("no chunk set")
    frame = pl.DataFrame(
        [
            {"corpus": corpus, "chunk set": chunkset, **report}
            for (corpus, chunkset), report in sorted(inputs.chunk_bounds.items())
        ],
        infer_schema_length=None,
    )
    cuts = [c for c in frame.columns if c.startswith("cut_")]
    data = frame.select(
        "corpus",
        "chunk set",
        "chunks",
        "mean_tokens",
        "max_tokens",
        "over_t_max",
        "under_t_min",
        "fallback_cuts",
        *[pl.col(c).alias(c.removeprefix("cut_")) for c in cuts],
    ).sort("corpus", "chunk set")
    return TableContent(data, float_digits=1)


@report_table(
    "prefixes",
    "Prefixes",
    "Prefix tokens per text set; for path and placebo sets, how many chunks have a path shorter than "
    "the depth (rendered whole: capped) and the deepest path; for placebo sets, the residual "
    "same-document assignments of the permutation; shortened: chunks whose prefix was cut to half of "
    "t_max tokens (each title cut to the same number of tokens, ending in an ellipsis).",
)
def prefixes_table(inputs: ReportInputs) -> TableContent:
    if not inputs.text_reports:
        raise Omit("no text set")
    frame = pl.DataFrame(inputs.text_reports, infer_schema_length=None)
    columns = ["corpus", "boundaries", "structure", "prefix", "chunks", "mean_content_tokens", "mean_prefix_tokens"]
    columns += [
        c
        for c in ("capped_chunks", "shortened_prefixes", "max_path_depth", "residual_same_doc", "placebo_pairs")
        if c in frame.columns
    ]
    return TableContent(frame.select(columns).sort("corpus", "boundaries", "structure", "prefix"), float_digits=1)


@report_table(
    "embedder_input",
    "Embedder input length",
    "Texts longer than the embedder's max_seq_length (counted with the embedder's own tokenizer, "
    "special tokens included) are truncated by the model: a truncation that grows with the prefix "
    "would confound every prefix contrast, so the shipped configs truncate nothing. The "
    "'(merge paragraphs)' rows are the paragraphs the semantic merge embeds to compare neighbours "
    "(chunking.semantic_embedder): a truncated one is compared on its first max_seq_length tokens. "
    "n_from_cache: vectors served from the content-addressed embedding cache. Endpoint embedders (kind "
    "openai) add their cost: tokens_distinct, the text set's distinct texts in the configured tokenizer "
    "(what a cold run sends: price a grid by it), tokens_sent, those actually sent this run, and "
    "tokens_billed, the sum of the server's usage (Infinity counts characters there).",
)
def embedder_input_table(inputs: ReportInputs) -> TableContent:
    if not inputs.embed_reports:
        raise Omit("no text set was embedded")
    frame = pl.DataFrame(inputs.embed_reports, infer_schema_length=None)
    columns = [
        c
        for c in (
            "corpus",
            "embedder",
            "text set",
            "n_texts",
            "max_seq_length",
            "max_tokens",
            "n_truncated",
            "n_encoded",
            "n_from_cache",
            "n_quarantined",
            "tokens_distinct",
            "tokens_sent",
            "tokens_billed",
        )
        if c in frame.columns
    ]
    return TableContent(frame.select(columns).sort(columns[:3]), float_digits=1)


# ---- LLM steps ---------------------------------------------------------------------------------------------


# The induction table's agreement columns: summary key -> column.
INDUCTION_AGREEMENT = {
    "pk": "Pk",
    "windowdiff": "WindowDiff",
    "boundary_precision": "boundary P",
    "boundary_recall": "boundary R",
    "boundary_f1": "boundary F1",
    "pk_top": "top Pk",
    "windowdiff_top": "top WindowDiff",
    "boundary_f1_top": "top F1",
}


@report_table(
    "induction",
    "Structure induction",
    "Per document: usable = an answer passed the tiling check (first round or after the one correction "
    "round), repaired = the deterministic repair changed the answer, failed = no usable section "
    "(single-section fallback); corrected counts the documents whose first answer failed the check "
    "and went to the correction round, whatever the outcome (a segmentation inducer has no rounds: "
    "usable = more than one section). identical spans is the share of the induced structural chunks "
    "whose span is byte-identical to a gold structural chunk (Kuehlkamp et al., table 9). Agreement with the gold "
    "section starts, over paragraph boundaries of every level: Pk (Beeferman et al. 1999) and WindowDiff "
    "(Pevzner and Hearst 2002), lower is better, probe width half the mean gold section length; boundary "
    "precision, recall and F1 with a tolerance of one paragraph (micro-averaged: matches and counts pooled "
    "over documents, each gold and induced boundary matched at most once); top Pk, WindowDiff and F1 count "
    "top-level sections only (probe width from top-level gold). Baseline rows score, under the same "
    "conventions, a single section per document and an even split of the paragraphs into gold's number of "
    "segments (all levels; top level): what an inducer must beat. Gold sections per document count empty "
    "parent headings (a heading whose text is all in its subsections); non-empty leaves them out.",
)
def induction_table(inputs: ReportInputs) -> TableContent:
    if not inputs.induction_stats:
        raise Omit("no induced structure in this config")
    rows, seen_baselines = [], set()
    for stats in sorted(inputs.induction_stats, key=lambda s: (s["corpus"], s["inducer"])):
        gold = {
            "sections/doc gold": stats["mean_sections_gold"],
            "gold, non-empty": stats.get("mean_sections_gold_nonempty"),
        }
        rows.append(
            {
                "corpus": stats["corpus"],
                "inducer": stats["inducer"],
                "kind": stats["kind"],
                **{key: stats[key] for key in ("documents", "usable", "repaired", "failed", "corrected")},
                "sections/doc induced": stats["mean_sections_induced"],
                **gold,
                "identical spans": stats["identical_span_share"],
                **{column: stats[key] for key, column in INDUCTION_AGREEMENT.items()},
            }
        )
        # The baselines under the same conventions, once per corpus and document set.
        for name, baseline in (stats.get("baselines") or {}).items():
            if (stats["corpus"], name, stats["documents"]) in seen_baselines:
                continue
            seen_baselines.add((stats["corpus"], name, stats["documents"]))
            rows.append(
                {
                    "corpus": stats["corpus"],
                    "inducer": f"baseline: {name}",
                    "kind": "baseline",
                    "documents": stats["documents"],
                    "sections/doc induced": baseline["sections_per_doc"],
                    **gold,
                    **{column: baseline[key] for key, column in INDUCTION_AGREEMENT.items()},
                }
            )
    rows.sort(key=lambda row: (row["corpus"], row["kind"] == "baseline"))  # stable: each corpus's baselines last
    return TableContent(pl.DataFrame(rows, infer_schema_length=None), float_digits=2)


@report_table(
    "situating_contexts",
    "Situating contexts",
    "Context length in study tokens (the tokenizer of every other count), after the cap "
    "contexts.max_tokens; truncated were cut at the cap, empty had no usable answer.",
)
def contexts_table(inputs: ReportInputs) -> TableContent:
    if not inputs.context_stats:
        raise Omit("no situating-context prefix in this config")
    data = (
        pl.DataFrame(inputs.context_stats, infer_schema_length=None)
        .select(
            "corpus",
            "chunk set",
            "chunks",
            "mean_context_tokens",
            "max_context_tokens",
            "truncated",
            "empty",
        )
        .sort("corpus", "chunk set")
    )
    return TableContent(data, float_digits=1)


@report_table(
    "llm_calls",
    "LLM calls",
    "Distinct requests per step, generated by the model or served from the shared response cache "
    "(<cache>/llm): a rerun with the same cache generates nothing. failed requests (the backend "
    "returned an error, e.g. a prompt over the model's context) are not cached and are asked again. "
    "Tokens count the generated requests only: prompt tokens, of them reused from a prefix cache "
    "(prefix reuse on the transformers backend, or the server's reported cached tokens), generated "
    "tokens; seconds is the time inside the backend summed over the step's jobs, tokens/s the "
    "generated tokens per second of it; from cache is the share of distinct requests served from "
    "the response cache.",
)
def llm_calls_table(inputs: ReportInputs) -> TableContent:
    rows = [
        {"step": "induction", "corpus": s["corpus"], "of": s["inducer"], **s["llm"]}
        for s in inputs.induction_stats
        if "llm" in s
    ]
    rows += [
        {"step": "contexts", "corpus": s["corpus"], "of": s["chunk set"], **s["llm"]} for s in inputs.context_stats
    ]
    if not rows:
        raise Omit("no LLM step in this config")
    tokens = ("prompt_tokens", "reused_prompt_tokens", "generated_tokens")
    rows = [dict.fromkeys(tokens, 0) | {"seconds": 0.0} | row for row in rows]  # usage files before tokens
    distinct = pl.col("generated") + pl.col("served_from_cache") + pl.col("failed")
    data = pl.DataFrame(rows, infer_schema_length=None).select(
        "step",
        "corpus",
        "of",
        "requests",
        "generated",
        "served_from_cache",
        "failed",
        "backend_calls",
        *tokens,
        pl.col("seconds").cast(pl.Float64),
        pl.when(pl.col("seconds") > 0)
        .then(pl.col("generated_tokens") / pl.col("seconds"))
        .otherwise(None)
        .alias("tokens/s"),
        pl.when(distinct > 0).then(pl.col("served_from_cache") / distinct).otherwise(None).alias("from cache"),
    )
    return TableContent(data, float_digits=2)


# ---- corpora and funnels ------------------------------------------------------------------------------------


def _short(value) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.3f}".rstrip("0").rstrip(".")
    return str(value)


@report_table(
    "corpus_overview",
    "Corpora",
    "Each corpus's scalar statistics (docs/method.md §4): documents, paragraphs, sections, words, queries "
    "and spans, with per-document means.",
)
def corpus_overview_table(inputs: ReportInputs) -> TableContent:
    if not inputs.corpus_stats:
        raise Omit("no corpus is selected")
    corpora = sorted(inputs.corpus_stats)
    keys = sorted(
        {k for stats in inputs.corpus_stats.values() for k, v in stats.items() if not isinstance(v, (dict, list))}
    )
    data = pl.DataFrame(
        {"statistic": keys, **{c: [_short(inputs.corpus_stats[c].get(k)) for k in keys] for c in corpora}},
        schema={"statistic": pl.String, **dict.fromkeys(corpora, pl.String)},
    )
    return TableContent(data)


@report_table(
    "corpus_distributions",
    "Corpus distributions",
    "Each corpus's histograms: document depth (the title counts as level 1), section levels, queries "
    "by type, how evidence spans were matched, skipped documents by reason.",
)
def corpus_distributions_table(inputs: ReportInputs) -> TableContent:
    rows = [
        {"corpus": corpus, "distribution": key, "value": str(value), "count": int(count)}
        for corpus, stats in sorted(inputs.corpus_stats.items())
        for key, histogram in sorted(stats.items())
        if isinstance(histogram, dict)
        for value, count in histogram.items()
    ]
    if not rows:
        raise Omit("no corpus statistics with histograms")
    data = pl.DataFrame(rows)
    shown = data.group_by("corpus", "distribution", maintain_order=True).agg(
        pl.format("{}: {}", "value", "count").str.join(", ").alias("counts")
    )
    return TableContent(data, (Block("", shown),))


def funnel_rows(corpus_stats: dict[str, dict], units: Callable[[str], bool]) -> pl.DataFrame:
    """The corpora's funnel rows (``unit, step, reason, count``, in the loader's order) whose unit passes."""
    rows = [
        {
            "corpus": corpus,
            "unit": row["unit"],
            "step": row["step"],
            "reason": row.get("reason") or "",
            "count": int(row["count"]),
        }
        for corpus, stats in sorted(corpus_stats.items())
        for row in stats.get("funnel") or []
        if units(row["unit"])
    ]
    return pl.DataFrame(
        rows, schema={"corpus": pl.String, "unit": pl.String, "step": pl.String, "reason": pl.String, "count": pl.Int64}
    )


@report_table(
    "corpus_funnel",
    "Corpus funnel",
    "Documents in, skipped (with the reason) and out, per corpus: every document a loader met is accounted for.",
)
def corpus_funnel_table(inputs: ReportInputs) -> TableContent:
    data = funnel_rows(inputs.corpus_stats, lambda unit: unit == "documents")
    if data.is_empty():
        raise Omit("no corpus reported a document funnel")
    return TableContent(data, blocks_by(data, ["corpus"], str))


@report_table(
    "query_funnel",
    "Query funnel",
    "Questions and their evidence in, dropped (with the reason) and out, and how evidence spans were "
    "matched to the flat text (exact, fuzzy, section fallback), per corpus (Kuehlkamp et al.: QASPER 5,049 → "
    "4,303 usable questions).",
)
def query_funnel_table(inputs: ReportInputs) -> TableContent:
    data = funnel_rows(inputs.corpus_stats, lambda unit: unit != "documents")
    if data.is_empty():
        raise Omit("no corpus with queries reported a query funnel")
    return TableContent(data, blocks_by(data, ["corpus"], str))


def querygen_rows(stats: dict) -> pl.DataFrame:
    """One corpus's generation funnel per type beside Kuehlkamp et al.'s finals, then Kuehlkamp et al.'s own totals."""
    seed = stats["seed_000"]
    funnel = (
        pl.DataFrame(stats["by_type"])
        .select(
            "qtype",
            "generated",
            pl.col("rejected_question").alias("rejected (question)"),
            "paraphrased",
            pl.col("rejected_paraphrase").alias("rejected (paraphrase)"),
            "survivors",
            "finals",
            "documents",
        )
        .with_columns(
            pl.col("qtype")
            .replace_strict(seed["finals_by_type"] | {"all": seed["finals"]}, default=None, return_dtype=pl.Int64)
            .alias("Kuehlkamp et al. finals")
        )
    )
    seed_row = pl.DataFrame(
        [
            {
                "qtype": "Kuehlkamp et al. (all)",
                "generated": seed["generated"],
                "survivors": seed["survivors"],
                "finals": seed["finals"],
                "documents": seed["documents_with_queries"],
                "Kuehlkamp et al. finals": seed["finals"],
            }
        ]
    )
    return (
        pl.concat([funnel, seed_row], how="diagonal_relaxed")
        .select(funnel.columns)
        .with_columns(pl.lit(stats["corpus"]).alias("corpus"))
        .select("corpus", *funnel.columns)
    )


@report_table(
    "query_generation",
    "Query generation",
    "Corpora with queries: generated (Kuehlkamp et al., appendix F). The pipeline samples each query's gold "
    "spans; the LLM writes a question about them, rejected when its ROUGE-L F1 against a gold span "
    "exceeds rouge_max or it shares a normalized ngram_block-gram with one; a question that passes is "
    "paraphrased, and the paraphrase, screened the same way, is the query that ships. Survivors are "
    "balanced to per_type per type with a seed. Kuehlkamp et al. (200 Wikipedia Featured Articles): 2,306 "
    "generated, 1,945 survivors, 951 finals.",
)
def query_generation_table(inputs: ReportInputs) -> TableContent:
    if not inputs.querygen_stats:
        raise Omit("no corpus with queries: generated in this config")
    ordered = sorted(inputs.querygen_stats, key=lambda item: item["corpus"])
    blocks, notes = [], []
    for stats in ordered:
        corpus = stats["corpus"]
        blocks.append(Block(f"{corpus}: funnel", querygen_rows(stats).drop("corpus")))
        if stats["rejections"]:
            blocks.append(
                Block(
                    f"{corpus}: rejections by stage and reason",
                    pl.DataFrame(stats["rejections"]).select("qtype", "stage", "reason", "count"),
                )
            )
        low, high = stats["seed_000"]["typical_rouge_l"]
        blocks.append(
            Block(
                f"{corpus}: ROUGE-L F1 of the shipped queries against their gold spans (Kuehlkamp et al.: "
                f"typically {low}-{high})",
                pl.DataFrame(stats["rouge_l"], infer_schema_length=None).select(
                    "qtype", "n", "mean", "min", "p25", "median", "p75", "max"
                ),
            )
        )
        total = stats["by_type"][-1]
        if total["finals"] == 0:
            notes.append(
                f"**No generated query survived** in corpus {corpus} ({total['generated']} generated): it has "
                "no queries, so its cells hold no scores and it has no contrasts."
            )
        usage = stats.get("llm") or {}
        if usage:
            notes.append(
                f"{corpus}: LLM requests {usage.get('requests', 0)}; of the distinct ones "
                f"{usage.get('generated', 0)} generated, {usage.get('served_from_cache', 0)} from the cache, "
                f"{usage.get('failed', 0)} failed."
            )
    data = pl.concat([querygen_rows(stats) for stats in ordered], how="diagonal_relaxed")
    return TableContent(data, tuple(blocks), tuple(notes), float_digits=3)


@report_table(
    "per_query_scores",
    "Per-query scores",
    "Every metric for every query under every condition, embedder and reranker: the data every other "
    "table is computed from (too long to show here).",
)
def per_query_table(inputs: ReportInputs) -> TableContent:
    require_scores(inputs)
    ids = [
        c
        for c in ("corpus", "embedder", "reranker", "condition", "qid", "doc_id", "qtype")
        if c in inputs.scores.columns
    ]
    data = inputs.scores.select(ids + [c for c in inputs.scores.columns if c not in ids]).sort(ids[:5])
    return TableContent(data, inline=False)


# ---- Markdown ---------------------------------------------------------------------------------------------------


def intro(primary_metric: str, bootstrap_iters: int | None) -> str:
    """The report's opening paragraph: what is tested and how."""
    return (
        f"Primary metric: `{primary_metric}`. Contrasts are paired per query (treatment − control), tested "
        "with a document-clustered bootstrap; p-values are Holm-adjusted within each cell's declared family. "
        "MixedLM p-values are secondary (pre-registered random intercept per document; 'nested' adds a "
        "per-query effect)." + _resolution_note(bootstrap_iters)
    )


def _resolution_note(bootstrap_iters: int | None) -> str:
    if bootstrap_iters is None:
        return ""
    return (
        f" The bootstrap uses B = {bootstrap_iters} replicates, so its p-values resolve to 1/B: "
        f"a p below that (no replicate crossed zero) is shown as < {_resolution(bootstrap_iters)}."
    )


def table_markdown(item: Table | Omitted, files: Sequence[str] = ()) -> str:
    """One table's section: heading, caption, its blocks and notes (or the reason it is omitted), and
    links to its files."""
    spec = item.spec
    lines = [f"## {spec.title}", "", spec.caption, ""]
    if isinstance(item, Omitted):
        return "\n".join(lines + [f"*Omitted: {item.reason}.*", ""])
    content = item.content
    for block in content.shown():
        if block.heading:
            lines += [f"### {block.heading}", ""]
        lines += [markdown_table(block.frame, content.float_digits), ""]
    if not content.inline:
        lines += [f"{content.data.height} rows × {content.data.width} columns.", ""]
    lines += [f"- {note}" for note in content.notes]
    if content.notes:
        lines.append("")
    if files:
        lines += ["Data: " + " · ".join(f"[{name.rsplit('/', 1)[-1]}]({name})" for name in files), ""]
    return "\n".join(lines)


def figure_markdown(item, path: str | None) -> str:
    """A figure's section: its title, the image (relative ``path``) and caption, or why it is omitted."""
    spec = item.spec
    lines = [f"### Figure: {spec.title}", ""]
    if isinstance(item, Omitted):
        return "\n".join(lines + [f"*Omitted: {item.reason}.*", ""])
    return "\n".join(lines + [f"![{spec.title}]({path})", "", spec.caption, ""])


def render_markdown(
    tables: Sequence[Table | Omitted],
    figures: Sequence = (),
    primary_metric: str = "",
    bootstrap_iters: int | None = None,
    files: dict[str, list[str]] | None = None,
    figure_paths: dict[str, str] | None = None,
) -> str:
    """The whole Markdown report: the introduction, then each table followed by the figures drawn from it.

    ``figures`` are built figures or :class:`Omitted` ones (their ``spec.table`` names the source table);
    ``files`` maps a table name to its data files and ``figure_paths`` a figure name to its image, both
    relative to the report."""
    files, figure_paths = files or {}, figure_paths or {}
    parts = ["# structbench report", "", intro(primary_metric, bootstrap_iters), ""]
    for table in tables:
        parts.append(table_markdown(table, files.get(table.spec.name, ())))
        for figure in figures:
            if figure.spec.table == table.spec.name:
                parts.append(figure_markdown(figure, figure_paths.get(figure.spec.name)))
    return "\n".join(parts).rstrip("\n") + "\n"
