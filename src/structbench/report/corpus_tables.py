"""The report's diagnostic tables on the corpora (docs/method.md §15): their overview and distributions, the
corpus and query funnels, and query generation. Each builder is a pure function of
:class:`~structbench.report.table_registry.ReportInputs`."""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

from structbench.report.formatting import short_number
from structbench.report.table_registry import Block, Omit, ReportInputs, TableContent, blocks_by, report_table


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
        {"statistic": keys, **{c: [short_number(inputs.corpus_stats[c].get(k)) for k in keys] for c in corpora}},
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
