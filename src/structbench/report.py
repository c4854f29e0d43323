"""The Markdown report (SPEC section 15): contrasts (seed 000 Table 1 layout), per-condition means
(Table 2 layout), the metric ladder and the corpus statistics. Pure functions from tables to text."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from structbench.tables import write_table

CELL = ["corpus", "embedder", "reranker"]
ID_COLUMNS = {"qid", "doc_id", "qtype", "corpus", "condition", "embedder", "reranker"}


def metric_columns(scores: pl.DataFrame) -> list[str]:
    return [c for c, dtype in scores.schema.items() if c not in ID_COLUMNS and dtype.is_numeric()]


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


def markdown_table(frame: pl.DataFrame, float_digits: int = 3) -> str:
    def cell(value) -> str:
        if value is None:
            return "–"
        if isinstance(value, float):
            if value != value:  # NaN
                return "n/a"
            return f"{value:.{float_digits}f}"
        return str(value)

    header = "| " + " | ".join(frame.columns) + " |"
    rule = "|" + "|".join("---" for _ in frame.columns) + "|"
    rows = ["| " + " | ".join(cell(v) for v in row) + " |" for row in frame.iter_rows()]
    return "\n".join([header, rule, *rows])


def format_p(p: float | None) -> str:
    if p is None or p != p:
        return "n/a"
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def contrasts_section(contrasts: pl.DataFrame) -> str:
    """Seed 000 Table 1: one row per contrast, delta with 95% CI, Holm p, dz, MixedLM p's, n."""
    lines = []
    for (corpus, embedder, reranker), cell in contrasts.sort(CELL).group_by(CELL, maintain_order=True):
        lines.append(f"### {corpus} · {embedder} · reranker: {reranker}\n")
        table = cell.select(
            pl.col("contrast"),
            (pl.col("treatment") + " − " + pl.col("control")).alias("comparison"),
            pl.col("metric"),
            pl.col("label"),
            pl.format("{} [{}, {}]", *[pl.col(c).round(4) for c in ("delta", "ci_low", "ci_high")]).alias(
                "Δ [95% CI]"
            ),
            pl.col("p_holm").map_elements(format_p, return_dtype=pl.String).alias("Holm p"),
            pl.col("dz").round(3),
            pl.col("p_mixedlm").map_elements(format_p, return_dtype=pl.String).alias("MixedLM p"),
            pl.col("p_mixedlm_nested").map_elements(format_p, return_dtype=pl.String).alias("MixedLM p (nested)"),
            pl.col("n_queries"),
            pl.col("n_docs"),
        )
        lines.append(markdown_table(table))
        lines.append("")
    return "\n".join(lines)


def means_section(means: pl.DataFrame, primary_metric: str, conditions: dict) -> str:
    lines = []
    axes = pl.DataFrame(
        [{"condition": name, **{k: str(v) for k, v in axes.items()}} for name, axes in conditions.items()]
    )
    for (corpus, embedder, reranker), cell in means.group_by(CELL, maintain_order=True):
        lines.append(f"### {corpus} · {embedder} · reranker: {reranker}\n")
        table = cell.join(axes, on="condition", how="left").select(
            "condition", "boundaries", "structure", "prefix", "retrieval", primary_metric, "n_queries", "n_docs"
        )
        lines.append(markdown_table(table))
        lines.append("")
    return "\n".join(lines)


def ladder_section(means: pl.DataFrame) -> str:
    lines = []
    metrics = [c for c in means.columns if c not in set(CELL) | {"condition", "n_queries", "n_docs"}]
    for (corpus, embedder, reranker), cell in means.group_by(CELL, maintain_order=True):
        lines.append(f"### {corpus} · {embedder} · reranker: {reranker}\n")
        lines.append(markdown_table(cell.select(["condition", *metrics])))
        lines.append("")
    return "\n".join(lines)


def corpus_section(stats_by_corpus: dict[str, dict]) -> str:
    lines = []
    for corpus, stats in sorted(stats_by_corpus.items()):
        lines.append(f"### {corpus}\n")
        scalars = {k: v for k, v in stats.items() if not isinstance(v, (dict, list))}
        lines.append(markdown_table(pl.DataFrame({"statistic": list(scalars), "value": [str(v) for v in scalars.values()]})))
        for key, value in sorted(stats.items()):
            if isinstance(value, dict) and value:
                lines.append(f"\n{key}: " + ", ".join(f"{k}: {v}" for k, v in value.items()))
            elif isinstance(value, list) and value and isinstance(value[0], dict):
                lines.append(f"\n{key}:\n")
                lines.append(markdown_table(pl.DataFrame(value)))
        lines.append("")
    return "\n".join(lines)


def render_report(
    scores: pl.DataFrame,
    contrasts: pl.DataFrame,
    stats_by_corpus: dict[str, dict],
    conditions: dict,
    primary_metric: str,
) -> tuple[str, pl.DataFrame]:
    means = condition_means(scores)
    text = "\n".join(
        [
            "# structbench report",
            "",
            f"Primary metric: `{primary_metric}`. Contrasts are paired per query (treatment − control), "
            "tested with a document-clustered bootstrap; p-values are Holm-adjusted within each cell's "
            "declared family. MixedLM p-values are secondary (pre-registered random intercept per document; "
            "'nested' adds a per-query effect).",
            "",
            "## Contrasts",
            "",
            contrasts_section(contrasts),
            "## Per-condition means",
            "",
            means_section(means, primary_metric, conditions),
            "## Metric ladder",
            "",
            ladder_section(means),
            "## Corpora",
            "",
            corpus_section(stats_by_corpus),
        ]
    )
    return text, means


def write_report(
    score_paths: list[str],
    contrast_paths: list[str],
    corpus_stats_paths: list[str],
    conditions: dict,
    primary_metric: str,
    report_path: str,
    means_path: str,
) -> None:
    scores = pl.concat([pl.read_parquet(p) for p in score_paths], how="diagonal_relaxed")
    contrasts = pl.concat([pl.read_parquet(p) for p in contrast_paths], how="diagonal_relaxed")
    stats_by_corpus = {Path(p).parent.parent.name: json.loads(Path(p).read_text()) for p in corpus_stats_paths}
    text, means = render_report(scores, contrasts, stats_by_corpus, conditions, primary_metric)
    Path(report_path).parent.mkdir(parents=True, exist_ok=True)
    Path(report_path).write_text(text)
    write_table(means, means_path)
