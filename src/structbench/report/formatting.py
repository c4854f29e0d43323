"""How the report writes numbers and words (docs/method.md §15): cells, p-values, signed effects, headings.

Pure functions of values to text, shared by every renderer (Markdown, :mod:`.html`, :mod:`.latex`) and
by the table builders (:mod:`.results`, :mod:`.chunk_set_tables`, ...), so a number is rounded one way
everywhere.
"""

from __future__ import annotations

from decimal import ROUND_CEILING, Context, Decimal

import polars as pl

from structbench.metrics.registry import parse_metric


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
        return f"< {p_resolution(bootstrap_iters)}"
    if p < 0.001:
        return f"{p:.{len(str(bootstrap_iters - 1))}f}"  # 1/B needs ceil(log10 B) decimals
    return f"{p:.3f}"


def p_resolution(bootstrap_iters: int) -> str:
    """1/B as a decimal string, rounded up to two significant digits (1/3000 -> 0.00034)."""
    bound = Context(prec=2, rounding=ROUND_CEILING).divide(Decimal(1), Decimal(bootstrap_iters))
    return format(bound.normalize(), "f")


def signed(value: float | None, digits: int = 4) -> str:
    """A signed decimal as the paper prints effects: ``+0.0161``, ``−0.0147`` (a true minus sign)."""
    if value is None or value != value:
        return "n/a"
    return f"{value:+.{digits}f}".replace("-", "−")


def slope_columns(unit: str, bootstrap_iters: int | None) -> list[pl.Expr]:
    """A slope table's two shown columns from its ``slope``, ``slope_ci_low``, ``slope_ci_high`` and ``slope_p``:
    "slope per <unit> [95% CI]" and "p" (the dose-response and size-curve tables)."""
    return [
        pl.struct("slope", "slope_ci_low", "slope_ci_high")
        .map_elements(
            lambda s: f"{signed(s['slope'])} [{signed(s['slope_ci_low'])}, {signed(s['slope_ci_high'])}]",
            return_dtype=pl.String,
        )
        .alias(f"slope per {unit} [95% CI]"),
        pl.col("slope_p").map_elements(lambda p: format_p(p, bootstrap_iters), return_dtype=pl.String).alias("p"),
    ]


def p_text(p: float | None, bootstrap_iters: int | None = None) -> str:
    """``p = 0.012`` or ``p < 0.0001``: :func:`format_p` with the relation spelled out, for running text."""
    shown = format_p(p, bootstrap_iters)
    return f"p {shown}" if shown.startswith("<") else f"p = {shown}"


def cell_heading(corpus: str, embedder: str, reranker: str) -> str:
    return f"{corpus} · {embedder} · reranker: {reranker}"


def comparison_labels(contrast_specs: list[dict]) -> pl.DataFrame:
    """What each contrast compares, in words: "G3 − G2", "slope over G2 → G3-d1 → G3" for a dose-response,
    "size slope per doubling over G2-200 → G2 → G2-800" for a size curve (docs/method.md §6a)."""
    labels = [
        " → ".join(spec["conditions"]).join(
            ("size slope per doubling over " if spec.get("sizes") else "slope over ", "")
        )
        if spec.get("conditions")
        else f"{spec['treatment']} − {spec['control']}"
        for spec in contrast_specs
    ]
    return pl.DataFrame(
        {"contrast": [spec["name"] for spec in contrast_specs], "comparison": labels},
        schema={"contrast": pl.String, "comparison": pl.String},
    )


def short_number(value) -> str:
    """A statistic as the corpus tables print it: ``–`` for missing, floats without trailing zeros."""
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.3f}".rstrip("0").rstrip(".")
    return str(value)
