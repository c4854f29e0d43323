"""The report's figures (docs/method.md §15), each one registered function drawing one report table's data.

A figure is ``draw(data, inputs) -> matplotlib.figure.Figure`` registered with :func:`report_figure`,
which names the report table (:data:`structbench.report.catalog.TABLES`) whose ``data`` it draws: the numbers
behind every figure are in that table's Parquet and CSV files. When the table is omitted for a
configuration, so is the figure, with the table's reason; ``draw`` may also raise
:class:`structbench.report.table_registry.Omit` itself. Adding a figure is one function and one decorator.

Every figure is one PNG file with labelled axes (units in the label), drawn in the Okabe–Ito palette
(distinguishable with the common colour-vision deficiencies; conditions also differ by marker), in one
fixed style. Bytes are deterministic: the fonts are the DejaVu fonts matplotlib ships (never a system
font), size and dpi are fixed, and the PNG carries no metadata (no Software, no timestamp), so the same
data gives the same bytes. matplotlib is imported inside the functions (Agg, no pyplot state), so
importing this module, as the workflow does for the captions, costs nothing.

Over 500 lines as one concern: the figures share one style, palette, marker set and byte-deterministic writer,
which a split would have to import back into each part, and the order they register in here is the order the
report shows them in, which figures spread over modules would leave to import order.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from structbench.artifacts.cells import CELL
from structbench.defaults import ALPHA
from structbench.metrics.registry import is_metric, metric_label, parse_metric
from structbench.report.formatting import cell_heading, p_text, signed
from structbench.report.results import ALL_QTYPES
from structbench.report.subgroup_panel import subgroup_panel
from structbench.report.table_registry import Omit, Omitted, ReportInputs, Table
from structbench.sizes import split_size
from structbench.stats.contrasts import HOLM_FAMILIES

DPI = 100
# Okabe & Ito (2008), "Color Universal Design": black, orange, sky blue, bluish green, blue, vermillion,
# reddish purple. Their yellow is left out: too faint on white for lines and points.
PALETTE = ("#000000", "#E69F00", "#56B4E9", "#009E73", "#0072B2", "#D55E00", "#CC79A7")
MARKERS = ("o", "s", "^", "D", "v", "P")  # six markers against seven colours: a pair repeats after 42
PANEL_INCHES = (4.6, 3.4)
STYLE = {
    "font.family": "DejaVu Sans",
    "font.size": 9,
    "axes.titlesize": 9,
    "axes.labelsize": 9,
    "legend.fontsize": 8,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": "#dddddd",
    "grid.linewidth": 0.6,
    "axes.axisbelow": True,
    "figure.dpi": DPI,
    "savefig.dpi": DPI,
    "figure.facecolor": "white",
    "savefig.facecolor": "white",
    "svg.hashsalt": "structbench",
}


@dataclass(frozen=True)
class FigureSpec:
    name: str  # file stem: figures/<name>.png
    title: str
    caption: str
    table: str  # the report table whose data it draws
    draw: Callable[[pl.DataFrame, ReportInputs], object]


@dataclass(frozen=True)
class RenderedFigure:
    spec: FigureSpec
    png: bytes


FIGURES: dict[str, FigureSpec] = {}


def report_figure(name: str, title: str, caption: str, table: str):
    """Register ``draw(data, inputs) -> Figure`` as the figure ``name`` drawn from the report table
    ``table`` (returned unchanged). Figures appear after their table, in registration order."""

    def register(draw):
        if name in FIGURES:
            raise ValueError(f"report figure {name!r} is registered twice")
        FIGURES[name] = FigureSpec(name, title, caption, table, draw)
        return draw

    return register


def png_bytes(figure) -> bytes:
    """The figure as PNG at :data:`DPI`, without metadata (no Software key, no timestamp)."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=DPI, metadata={"Software": None})
    return buffer.getvalue()


def render_figures(
    tables: Sequence[Table | Omitted], inputs: ReportInputs, specs: Sequence[FigureSpec] | None = None
) -> list[RenderedFigure | Omitted]:
    """Every registered figure (or ``specs``) as PNG bytes, or omitted with the reason: its own, or its
    table's when that table is omitted."""
    import matplotlib

    by_name = {table.spec.name: table for table in tables}
    rendered: list[RenderedFigure | Omitted] = []
    for spec in specs if specs is not None else FIGURES.values():
        source = by_name.get(spec.table)
        if source is None:
            raise ValueError(f"figure {spec.name!r} draws table {spec.table!r}, which was not built")
        if isinstance(source, Omitted):
            rendered.append(Omitted(spec, source.reason))
            continue
        try:
            with matplotlib.rc_context(STYLE):
                figure = spec.draw(source.content.data, inputs)
                rendered.append(RenderedFigure(spec, png_bytes(figure)))
        except Omit as reason:
            rendered.append(Omitted(spec, str(reason)))
    return rendered


# ---- layout helpers -----------------------------------------------------------------------------------


def new_figure(width: float, height: float):
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), dpi=DPI, layout="constrained")


def ordered_unique(values) -> list:
    return list(dict.fromkeys(values))


def cell_axes(
    cells: Sequence[tuple[str, str, str]], panel: tuple[float, float] = PANEL_INCHES, extra_width: float = 0.0
):
    """A figure with one panel per cell: a column per corpus, a row per (embedder, reranker).
    Returns ``(figure, {cell: axes})``; grid positions without a cell are hidden."""
    corpora = ordered_unique(c[0] for c in cells)
    runs = ordered_unique((c[1], c[2]) for c in cells)
    figure = new_figure(panel[0] * len(corpora) + extra_width, panel[1] * len(runs))
    grid = figure.subplots(len(runs), len(corpora), squeeze=False)
    axes = {}
    for row, run in enumerate(runs):
        for column, corpus in enumerate(corpora):
            cell = (corpus, *run)
            if cell in cells:
                axes[cell] = grid[row][column]
            else:
                grid[row][column].set_visible(False)
    return figure, axes


def cells_of(data: pl.DataFrame) -> list[tuple[str, str, str]]:
    return [tuple(row) for row in data.select(CELL).unique(maintain_order=True).iter_rows()]


def series_style(index: int) -> dict:
    """Colour and marker of the ``index``-th condition or series (declared order)."""
    return {"color": PALETTE[index % len(PALETTE)], "marker": MARKERS[index % len(MARKERS)]}


def condition_styles(inputs: ReportInputs, present: Sequence[str]) -> dict[str, dict]:
    """One style per condition, by its declared position, so a condition looks the same in every figure."""
    order = inputs.condition_order(list(inputs.conditions) + [c for c in present if c not in inputs.conditions])
    return {name: series_style(i) for i, name in enumerate(order)}


def primary_label(inputs: ReportInputs) -> str:
    return metric_label(inputs.primary_metric)


# ---- figures ----------------------------------------------------------------------------------------------


@report_figure(
    "forest_contrasts",
    "Every contrast (forest plot)",
    "Each declared contrast per corpus (and embedder · reranker): the mean paired difference with its 95% "
    "document-clustered bootstrap CI; filled = Holm-significant at 0.05 within its family, hollow = not, "
    "diamond = exploratory (outside any Holm family; a dose-response row is a slope per path level). "
    "The numbers are on the right.",
    table="table1_contrasts",
)
def forest_plot(data: pl.DataFrame, inputs: ReportInputs):
    from matplotlib.lines import Line2D

    several_runs = data.select("embedder", "reranker").unique().height > 1
    several_metrics = data["metric"].n_unique() > 1
    rows = data.to_dicts()
    figure = new_figure(8.0, 1.3 + 0.32 * len(rows))
    axes = figure.add_subplot()
    ys = np.arange(len(rows))[::-1].astype(float)
    for y, row in zip(ys, rows):
        exploratory = row["family"] not in HOLM_FAMILIES
        color = PALETTE[4] if exploratory else PALETTE[0]
        axes.plot([row["ci_low"], row["ci_high"]], [y, y], color=color, linewidth=1.4, solid_capstyle="butt")
        axes.plot(
            [row["delta"]],
            [y],
            linestyle="none",
            marker="D" if exploratory else "o",
            markersize=6,
            color=color,
            markerfacecolor=color if row["holm_significant"] else "white",
            markeredgewidth=1.3,
        )
    axes.axvline(0.0, color="#777777", linewidth=0.8, zorder=0)
    labels = []
    for row in rows:
        label = f"{row['contrast']}: {row['comparison']} · {row['corpus']}"
        if several_runs:
            label += f" · {row['embedder']}/{row['reranker']}"
        if several_metrics:
            label += f" · {metric_label(row['metric'])}"
        labels.append(label)
    axes.set_yticks(ys, labels)
    axes.set_ylim(-0.7, len(rows) - 0.3)
    axes.grid(axis="y", visible=False)
    numbers = axes.twinx()
    numbers.set_ylim(axes.get_ylim())
    numbers.set_yticks(ys, [f"{signed(r['delta'])} [{signed(r['ci_low'])}, {signed(r['ci_high'])}]" for r in rows])
    numbers.tick_params(axis="y", length=0)
    numbers.grid(False)
    for side in ("top", "right", "left"):
        numbers.spines[side].set_visible(False)
    metric = primary_label(inputs) if not several_metrics else "metric"
    dose = "; dose-response rows: per path level" if any(r["comparison"].startswith("slope") for r in rows) else ""
    dose += (
        "; size curves: per doubling of t_max" if any(r["comparison"].startswith("size slope") for r in rows) else ""
    )
    axes.set_xlabel(f"Δ {metric}, treatment − control\n(score points on the 0–1 scale{dose})")
    numbers.annotate(
        "Δ [95% CI]",
        xy=(1, 1),
        xycoords="axes fraction",
        xytext=(8, 6),
        textcoords="offset points",
        ha="left",
        va="bottom",
        fontweight="bold",
    )
    kinds = {
        (
            "exploratory"
            if r["family"] not in HOLM_FAMILIES
            else "significant"
            if r["holm_significant"]
            else "not significant"
        )
        for r in rows
    }
    legend = {
        "significant": Line2D(
            [], [], linestyle="none", marker="o", color=PALETTE[0], label=f"Holm-significant (p < {ALPHA:g})"
        ),
        "not significant": Line2D(
            [],
            [],
            linestyle="none",
            marker="o",
            color=PALETTE[0],
            markerfacecolor="white",
            label="not Holm-significant",
        ),
        "exploratory": Line2D(
            [],
            [],
            linestyle="none",
            marker="D",
            color=PALETTE[4],
            markerfacecolor="white",
            label="exploratory (no Holm family)",
        ),
    }
    handles = [handle for kind, handle in legend.items() if kind in kinds]
    figure.legend(handles=handles, loc="outside lower center", ncols=len(handles), frameon=False)
    return figure


SUBGROUP_PANEL_WIDTH = 5.8  # inches: the level labels on the left, the interaction's numbers on the right
SUBGROUP_ROW = 0.26  # inches per level row


@report_figure(
    "forest_subgroups",
    "Subgroups (forest plot)",
    "Each contrast of the subgroup analysis per cell (a panel): every moderator's sides and levels with their mean "
    "paired difference and 95% document-clustered bootstrap CI (filled: a side in at least 20 documents, hollow: "
    "fewer; squares: the levels within a side), the contrast's whole Δ dotted; on the right each moderator's "
    'interaction Δ_A − Δ_B with its CI, p and Holm p over the contrast\'s moderators, or "not testable".',
    table="subgroups",
)
def subgroup_forest(data: pl.DataFrame, inputs: ReportInputs):
    panels = data.select(*CELL, "contrast", "comparison").unique(maintain_order=True).rows()
    cells = ordered_unique(panel[:3] for panel in panels)
    contrasts = ordered_unique(panel[3] for panel in panels)
    rows_per_panel = max(data.filter(pl.col("kind") != "interaction").group_by(*CELL, "contrast").len()["len"])
    moderators = ordered_unique(data["moderator"].to_list())
    height = 1.0 + SUBGROUP_ROW * (rows_per_panel + len(moderators))
    figure = new_figure(SUBGROUP_PANEL_WIDTH * len(contrasts), height * len(cells) + 0.4)
    grid = figure.subplots(len(cells), len(contrasts), squeeze=False)
    whole = {
        (r["corpus"], r["embedder"], r["reranker"], r["contrast"]): r["delta"]
        for r in inputs.contrasts.iter_rows(named=True)
        if r.get("metric") == inputs.primary_metric
    }
    for row_index, cell in enumerate(cells):
        for column, contrast in enumerate(contrasts):
            axes = grid[row_index][column]
            rows = data.filter(
                (pl.col("corpus") == cell[0])
                & (pl.col("embedder") == cell[1])
                & (pl.col("reranker") == cell[2])
                & (pl.col("contrast") == contrast)
            )
            if rows.is_empty():
                axes.set_visible(False)
                continue
            subgroup_panel(axes, rows, moderators, inputs.bootstrap_iters, whole.get((*cell, contrast)), series_style)
            comparison = rows["comparison"][0]
            axes.set_title(f"{contrast}: {comparison} · {cell_heading(*cell)}")
            axes.set_xlabel(f"Δ {primary_label(inputs)} (treatment − control)")
    return figure


@report_figure(
    "condition_means",
    "Per-condition means with 95% CIs",
    "The primary metric's mean per condition in each cell, with a 95% document-clustered bootstrap interval. "
    "Overlapping intervals do not mean two conditions are equal: Table 1's paired test is the comparison.",
    table="condition_means_ci",
)
def means_plot(data: pl.DataFrame, inputs: ReportInputs):
    cells = cells_of(data)
    styles = condition_styles(inputs, data["condition"].unique().to_list())
    n_conditions = data["condition"].n_unique()
    figure, axes_by_cell = cell_axes(cells, (max(PANEL_INCHES[0], 0.45 * n_conditions + 1.2), PANEL_INCHES[1]))
    for cell, axes in axes_by_cell.items():
        rows = data.filter(pl.col("corpus") == cell[0], pl.col("embedder") == cell[1], pl.col("reranker") == cell[2])
        for x, row in enumerate(rows.iter_rows(named=True)):
            style = styles[row["condition"]]
            axes.errorbar(
                [x],
                [row["mean"]],
                yerr=[[row["mean"] - row["ci_low"]], [row["ci_high"] - row["mean"]]],
                linestyle="none",
                marker=style["marker"],
                color=style["color"],
                capsize=3,
                markersize=6,
            )
        axes.set_xticks(
            range(rows.height),
            rows["condition"].to_list(),
            rotation=45 if rows.height > 6 else 0,
            ha="right" if rows.height > 6 else "center",
        )
        axes.set_xlim(-0.6, rows.height - 0.4)
        axes.set_xlabel("condition")
        axes.set_ylabel(f"mean {primary_label(inputs)} (0–1)")
        axes.set_title(f"{cell_heading(*cell)}\n{rows['n_queries'].max()} queries, {rows['n_docs'].max()} documents")
    return figure


def budget_columns(data: pl.DataFrame) -> list[tuple[int, str]]:
    """The token-budget coverage columns of a means table as ``(budget, column)``, by budget."""
    columns = [
        (parse_metric(c).cutoff, c)
        for c in data.columns
        if is_metric(c) and parse_metric(c).definition.name == "budget_cov"
    ]
    return sorted(columns)


@report_figure(
    "budget_curves",
    "Token-budget coverage curves",
    "Mean token-budget coverage per condition: walking down the ranking, whole chunks are taken while their "
    "prefix + content tokens fit the budget, and the score is the share of the gold spans' characters they "
    "cover. Prefix tokens are charged to the budget, so a long prefix costs evidence.",
    table="metric_ladder",
)
def budget_curves(data: pl.DataFrame, inputs: ReportInputs):
    columns = budget_columns(data)
    if len(columns) < 2:
        raise Omit("fewer than two token budgets are computed (metrics.budgets): no curve to draw")
    budgets = [budget for budget, _ in columns]
    styles = condition_styles(inputs, data["condition"].unique().to_list())
    figure, axes_by_cell = cell_axes(cells_of(data), extra_width=1.3)
    for cell, axes in axes_by_cell.items():
        rows = data.filter(pl.col("corpus") == cell[0], pl.col("embedder") == cell[1], pl.col("reranker") == cell[2])
        for row in rows.iter_rows(named=True):
            style = styles[row["condition"]]
            axes.plot(
                budgets,
                [row[column] for _, column in columns],
                label=row["condition"],
                linewidth=1.4,
                markersize=5,
                **style,
            )
        axes.set_xscale("log", base=2)
        axes.set_xticks(budgets, [str(b) for b in budgets])
        axes.minorticks_off()
        axes.set_xlabel("token budget (prefix + content tokens, log scale)")
        axes.set_ylabel("budget coverage (share of gold chars.)")
        axes.set_title(cell_heading(*cell))
    handles, labels = next(iter(axes_by_cell.values())).get_legend_handles_labels()
    figure.legend(handles, labels, loc="outside right upper", title="condition", frameon=False)
    return figure


def slope_series_plot(data: pl.DataFrame, inputs: ReportInputs, dose, unit: str, x_axis):
    """One panel per cell: each series' means with their 95% CIs at its doses (``dose(series)``: the x values),
    the line of the series' slope through their centre, and the slope, CI and p in the legend (``/unit``).
    ``x_axis(axes)`` sets the panel's ticks and label. The dose-response and size-curve figures."""
    figure, axes_by_cell = cell_axes(cells_of(data), (PANEL_INCHES[0] + 0.6, PANEL_INCHES[1] + 0.6))
    series_names = ordered_unique(data["series"].to_list())
    for cell, axes in axes_by_cell.items():
        rows = data.filter(pl.col("corpus") == cell[0], pl.col("embedder") == cell[1], pl.col("reranker") == cell[2])
        for name, series in rows.group_by("series", maintain_order=True):
            style = series_style(series_names.index(name[0]))
            doses, means = dose(series), series["mean"].to_numpy()
            first = series.row(0, named=True)
            label = (
                f"{name[0]}: {signed(first['slope'])}/{unit} [{signed(first['slope_ci_low'])}, "
                f"{signed(first['slope_ci_high'])}], {p_text(first['slope_p'], inputs.bootstrap_iters)}"
            )
            yerr = [means - series["ci_low"].to_numpy(), series["ci_high"].to_numpy() - means]
            axes.errorbar(doses, means, yerr=yerr, linestyle="none", capsize=3, markersize=6, label=label, **style)
            line_x = np.array([doses.min(), doses.max()])
            line_y = means.mean() + first["slope"] * (line_x - doses.mean())
            axes.plot(line_x, line_y, linestyle="--", linewidth=1.2, color=style["color"])
        x_axis(axes)
        axes.set_ylabel(f"mean {primary_label(inputs)} (0–1)")
        axes.set_title(cell_heading(*cell))
        axes.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), frameon=False, fontsize=7)
    return figure


@report_figure(
    "dose_response",
    "Heading-path dose-response",
    "The primary metric's mean (with 95% bootstrap CI) against the depth of the injected heading path, "
    "0 = no prefix, for each series of conditions that differ only in depth; the line has the series' "
    "slope (mean per-query OLS slope), whose 95% CI and p are in the legend. Exploratory.",
    table="dose_response",
)
def dose_response_plot(data: pl.DataFrame, inputs: ReportInputs):
    max_depth = int(data["depth"].max())

    def depth_axis(axes):
        axes.set_xticks(range(max_depth + 1))
        axes.set_xlim(-0.3, max_depth + 0.3)
        axes.set_xlabel("heading-path depth (levels; 0 = no prefix)")

    return slope_series_plot(data, inputs, lambda series: series["depth"].to_numpy(), "level", depth_axis)


@report_figure(
    "section_recall",
    "Section recall of routed retrieval by query type",
    "Share of queries for which the routing stage kept a section overlapping the gold evidence, per routed "
    "condition and query type (n = queries of that type).",
    table="section_recall",
)
def section_recall_plot(data: pl.DataFrame, inputs: ReportInputs):
    styles = condition_styles(inputs, data["condition"].unique().to_list())
    figure, axes_by_cell = cell_axes(cells_of(data), extra_width=1.2)
    for cell, axes in axes_by_cell.items():
        rows = data.filter(pl.col("corpus") == cell[0], pl.col("embedder") == cell[1], pl.col("reranker") == cell[2])
        qtypes = sorted(q for q in rows["qtype"].unique().to_list() if q != ALL_QTYPES) + [ALL_QTYPES]
        conditions = inputs.condition_order(rows["condition"].unique().to_list())
        width = 0.8 / len(conditions)
        for i, condition in enumerate(conditions):
            values = rows.filter(pl.col("condition") == condition)
            by_type = dict(zip(values["qtype"].to_list(), values["section_recall"].to_list()))
            xs = np.arange(len(qtypes)) - 0.4 + width * (i + 0.5)
            axes.bar(
                xs,
                [by_type.get(q, np.nan) for q in qtypes],
                width=width * 0.95,
                color=styles[condition]["color"],
                label=condition,
                edgecolor="black",
                linewidth=0.5,
            )
        counts = rows.group_by("qtype").agg(pl.col("n_queries").max())
        n_by_type = dict(counts.iter_rows())
        axes.set_xticks(range(len(qtypes)), [f"{q}\n(n={n_by_type.get(q, 0)})" for q in qtypes])
        axes.set_ylim(0, 1.05)
        axes.set_xlabel("query type")
        axes.set_ylabel("section recall (share of queries)")
        axes.set_title(cell_heading(*cell))
    handles, labels = next(iter(axes_by_cell.values())).get_legend_handles_labels()
    figure.legend(handles, labels, loc="outside right upper", title="routed condition", frameon=False)
    return figure


@report_figure(
    "size_curve",
    "Chunk-size curve",
    "The primary metric's mean (with 95% bootstrap CI) against each condition's t_max (log2 scale), for each "
    "declared size curve; the line has the curve's slope per doubling of t_max (mean per-query OLS slope on "
    "log2 t_max), whose 95% CI and p are in the legend. Exploratory (docs/method.md §6a).",
    table="size_curve",
)
def size_curve_plot(data: pl.DataFrame, inputs: ReportInputs):
    sizes = sorted(set(data["t_max"].to_list()))

    def size_axis(axes):
        axes.set_xticks(np.log2(sizes), [f"{size:g}" for size in sizes])
        axes.set_xlabel("t_max (content tokens, log2 scale)")

    return slope_series_plot(data, inputs, lambda series: np.log2(series["t_max"].to_numpy()), "doubling", size_axis)


CHUNK_BIN_TOKENS = 10


@report_figure(
    "chunk_sizes",
    "Chunk sizes: size-matched fixed windows vs structural chunks",
    "Content tokens per chunk (prefix excluded) of each fixed-window chunk set and the structural set it is "
    "size-matched to, per document: the means (dashed) should nearly agree while the shapes differ; the "
    "dotted lines are t_min and t_max.",
    table="chunk_sizes",
)
def chunk_size_plot(data: pl.DataFrame, inputs: ReportInputs):
    from matplotlib.ticker import MaxNLocator

    # one panel per corpus, structure and size: a fixed-window set beside the structural set of its own size
    pairs = sorted(
        {(m["corpus"], m["structure"], split_size(m["chunk set"].split("/")[0])[1]) for m in inputs.size_matches}
    )
    if not pairs:
        raise Omit("no fixed-window condition in this config: no size-matched pair to compare")
    columns = min(3, len(pairs))
    n_rows = -(-len(pairs) // columns)
    figure = new_figure(PANEL_INCHES[0] * columns, (PANEL_INCHES[1] + 0.5) * n_rows)
    grid = figure.subplots(n_rows, columns, squeeze=False)
    top = max(int(data["n_tokens"].max()), inputs.t_max)
    bins = np.arange(0, top + 2 * CHUNK_BIN_TOKENS, CHUNK_BIN_TOKENS)
    for index, axes in enumerate(grid.flat):
        if index >= len(pairs):
            axes.set_visible(False)
            continue
        corpus, structure, size = pairs[index]
        bounds = inputs.chunk_bounds.get((corpus, f"structural{size}/{structure}"), {})
        t_min, t_max = bounds.get("t_min", inputs.t_min), bounds.get("t_max", inputs.t_max)
        for chunkset, color, linestyle in (
            (f"structural{size}/{structure}", PALETTE[4], "-"),
            (f"fixed{size}/{structure}", PALETTE[5], "--"),
        ):
            sizes = data.filter(pl.col("corpus") == corpus, pl.col("chunk set") == chunkset)["n_tokens"].to_numpy()
            if len(sizes) == 0:
                continue
            mean = float(sizes.mean())
            axes.hist(
                sizes,
                bins=bins,
                histtype="step",
                linewidth=1.6,
                color=color,
                linestyle=linestyle,
                label=f"{chunkset}: {len(sizes)} chunks, mean {mean:.1f}",
            )
            axes.axvline(mean, color=color, linestyle=(0, (4, 2)), linewidth=1.0)
        for bound in (t_min, t_max):
            axes.axvline(bound, color="#777777", linestyle=":", linewidth=1.0)
        axes.set_xlim(0, bins[-1])
        axes.set_xlabel(f"content tokens per chunk ({CHUNK_BIN_TOKENS}-token bins)")
        axes.set_ylabel("chunks")
        axes.yaxis.set_major_locator(MaxNLocator(integer=True))
        axes.set_title(f"{corpus} · {structure}{size}: fixed vs structural (t_min {t_min}, t_max {t_max})")
        axes.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), frameon=False)
    return figure
