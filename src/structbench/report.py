"""The Markdown report (SPEC section 15): contrasts (seed 000 Table 1 layout), per-condition means
(Table 2 layout), the metric ladder and the corpus statistics. Pure functions from tables to text."""

from __future__ import annotations

import json
from decimal import ROUND_CEILING, Context, Decimal
from pathlib import Path

import polars as pl

from structbench.atomic import write_text
from structbench.boundaries import bounds_report
from structbench.cells import lexical_chunkset
from structbench.defaults import T_MAX, T_MIN
from structbench.metrics.registry import is_metric, metric_label, parse_metric
from structbench.tables import read_table, write_table

CELL = ["corpus", "embedder", "reranker"]
ID_COLUMNS = {"qid", "doc_id", "qtype", "corpus", "condition", "embedder", "reranker"}


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


def comparison_labels(contrast_specs: list[dict]) -> pl.DataFrame:
    """What each contrast compares, in words: "G3 − G2", or "slope over G2 → G3-d1 → G3" for a dose-response."""
    labels = [
        " → ".join(spec["conditions"]).join(("slope over ", "")) if spec.get("conditions")
        else f"{spec['treatment']} − {spec['control']}"
        for spec in contrast_specs
    ]
    return pl.DataFrame({"contrast": [spec["name"] for spec in contrast_specs], "comparison": labels}, schema={"contrast": pl.String, "comparison": pl.String})


def contrasts_section(contrasts: pl.DataFrame, contrast_specs: list[dict] = (), bootstrap_iters: int | None = None) -> str:
    """Seed 000 Table 1: one row per contrast, delta with 95% CI, Holm p, dz, MixedLM p's, n.

    ``bootstrap_iters`` is the B the contrasts were bootstrapped with (config ``stats.bootstrap_iters``;
    the contrasts table does not carry it): it sets how the Holm p, a bootstrap p, is printed
    (:func:`format_p`). MixedLM fits that failed or sat on a boundary are footnoted with the reason
    statsmodels gave."""
    lines = []
    labels = comparison_labels(list(contrast_specs))
    for (corpus, embedder, reranker), cell in contrasts.sort(CELL).group_by(CELL, maintain_order=True):
        lines.append(f"### {corpus} · {embedder} · reranker: {reranker}\n")
        cell = cell.join(labels, on="contrast", how="left").with_columns(
            pl.coalesce("comparison", pl.col("treatment") + " − " + pl.col("control")).alias("comparison")
        )
        table = cell.select(
            pl.col("contrast"),
            pl.col("comparison"),
            pl.col("metric"),
            pl.col("label"),
            pl.format("{} [{}, {}]", *[pl.col(c).round(4) for c in ("delta", "ci_low", "ci_high")]).alias(
                "Δ [95% CI]"
            ),
            pl.col("p_holm").map_elements(lambda p: format_p(p, bootstrap_iters), return_dtype=pl.String).alias("Holm p"),
            pl.col("dz").round(3),
            pl.col("p_mixedlm").map_elements(format_p, return_dtype=pl.String).alias("MixedLM p"),
            pl.col("p_mixedlm_nested").map_elements(format_p, return_dtype=pl.String).alias("MixedLM p (nested)"),
            pl.col("n_queries"),
            pl.col("n_docs"),
        )
        lines.append(markdown_table(table))
        if "mixedlm_note" in cell.columns:
            for name, note in cell.select("contrast", "mixedlm_note").iter_rows():
                if note:
                    lines.append(f"\n- {name}: {note}")
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
    """Every metric's mean per condition, one table per cell, headed by the metrics' registry labels
    and followed by a legend of their definitions."""
    lines = []
    metrics = metric_columns(means)
    labelled = [pl.col(name).alias(metric_label(name)) for name in metrics]
    for (corpus, embedder, reranker), cell in means.group_by(CELL, maintain_order=True):
        lines.append(f"### {corpus} · {embedder} · reranker: {reranker}\n")
        lines.append(markdown_table(cell.select(pl.col("condition"), *labelled)))
        lines.append("")
    if metrics:
        lines += [metric_legend(metrics), ""]
    return "\n".join(lines)


def corpus_section(stats_by_corpus: dict[str, dict]) -> str:
    """One table of scalar statistics (a column per corpus), then each corpus's histograms and funnel."""
    corpora = sorted(stats_by_corpus)
    keys = sorted({k for stats in stats_by_corpus.values() for k, v in stats.items() if not isinstance(v, (dict, list))})
    overview = pl.DataFrame(
        {"statistic": keys, **{c: [_short(stats_by_corpus[c].get(k)) for k in keys] for c in corpora}}
    )
    lines = [markdown_table(overview), ""]
    for corpus in corpora:
        lines.append(f"### {corpus}\n")
        for key, value in sorted(stats_by_corpus[corpus].items()):
            if isinstance(value, dict) and value:
                lines.append(f"- {key}: " + ", ".join(f"{k}: {v}" for k, v in value.items()))
        for key, value in sorted(stats_by_corpus[corpus].items()):
            if isinstance(value, list) and value and isinstance(value[0], dict):
                lines.append(f"\n{key}:\n")
                lines.append(markdown_table(pl.DataFrame(value)))
        lines.append("")
    return "\n".join(lines)


def _short(value) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.3f}".rstrip("0").rstrip(".")
    return str(value)


def chunk_sets_section(size_matches: list[dict]) -> str:
    """Realized mean content tokens of each fixed set and the structural set it is size-matched to."""
    if not size_matches:
        return "No fixed-window condition is declared.\n"
    table = pl.DataFrame(size_matches).select(
        "corpus",
        "structure",
        "documents",
        "reference_chunks",
        "fixed_chunks",
        pl.col("reference_mean_tokens").alias("structural mean tokens"),
        pl.col("fixed_mean_tokens").alias("fixed mean tokens"),
        pl.col("difference").alias("fixed − structural"),
        pl.col("max_doc_difference").alias("max per-document gap"),
    )
    return markdown_table(table.sort("corpus", "structure"), float_digits=1) + "\n"


def prefixes_section(text_reports: list[dict]) -> str:
    """Prefix tokens per text set; for path and placebo sets, how many chunks have a path shorter than the
    depth (rendered whole: "capped") and the deepest path; for placebo sets, the residual same-document
    assignments."""
    if not text_reports:
        return ""
    frame = pl.DataFrame(text_reports, infer_schema_length=None)
    columns = ["corpus", "boundaries", "structure", "prefix", "chunks", "mean_content_tokens", "mean_prefix_tokens"]
    columns += [c for c in ("capped_chunks", "max_path_depth", "residual_same_doc", "placebo_pairs") if c in frame.columns]
    return markdown_table(frame.select(columns).sort("corpus", "boundaries", "structure", "prefix"), 1) + "\n"


def bm25_section(bm25_scores: pl.DataFrame, primary_metric: str) -> str:
    """Seed 000 appendix I: how often plain keyword overlap (BM25) puts a relevant chunk first."""
    if bm25_scores.is_empty():
        return ""
    shown = [m for m in dict.fromkeys(["gold_top1", "MRR", primary_metric]) if m in bm25_scores.columns]
    table = (
        bm25_scores.with_columns(
            pl.col("condition").map_elements(lexical_chunkset, return_dtype=pl.String).alias("chunk set")
        )
        .group_by("corpus", "chunk set")
        .agg(pl.len().alias("n_queries"), *[pl.col(m).mean().alias(f"BM25 {metric_label(m)}") for m in shown])
        .sort("corpus", "chunk set")
    )
    return markdown_table(table) + "\n"


def render_report(
    scores: pl.DataFrame,
    contrasts: pl.DataFrame,
    stats_by_corpus: dict[str, dict],
    conditions: dict,
    primary_metric: str,
    size_matches: list[dict] = (),
    text_reports: list[dict] = (),
    contrast_specs: list[dict] = (),
    bm25_scores: pl.DataFrame | None = None,
    bootstrap_iters: int | None = None,
    chunk_bounds: list[dict] = (),
    embed_reports: list[dict] = (),
    induction_stats: list[dict] = (),
    context_stats: list[dict] = (),
    querygen_stats: list[dict] = (),
) -> tuple[str, pl.DataFrame]:
    """The report's Markdown text and the per-condition means table. ``bootstrap_iters`` (config
    ``stats.bootstrap_iters``, optional) is the B of the contrasts' bootstrap, used to print p-values
    at its resolution (:func:`format_p`); without it p's under 0.001 print as ``<0.001``."""
    if scores.is_empty():
        means = pl.DataFrame()
        no_cells = ("No selected corpus has queries, or query generation kept none (see Query generation): "
                    "nothing was scored.\n")
        contrast_text = means_text = ladder_text = no_cells
    else:
        means = condition_means(scores)
        contrast_text = contrasts_section(contrasts, contrast_specs, bootstrap_iters)
        means_text = means_section(means, primary_metric, conditions)
        ladder_text = ladder_section(means)
    text = "\n".join(
        [
            "# structbench report",
            "",
            f"Primary metric: `{primary_metric}`. Contrasts are paired per query (treatment − control), "
            "tested with a document-clustered bootstrap; p-values are Holm-adjusted within each cell's "
            "declared family. MixedLM p-values are secondary (pre-registered random intercept per document; "
            "'nested' adds a per-query effect)." + _resolution_note(bootstrap_iters),
            "",
            "## Contrasts",
            "",
            contrast_text,
            "## Per-condition means",
            "",
            means_text,
            "## Metric ladder",
            "",
            ladder_text,
            "## BM25 non-lexicality",
            "",
            "Share of queries whose rank-1 BM25 chunk (content only, no prefix) is binary-relevant: low "
            "values mean keyword overlap does not solve the benchmark.",
            "",
            bm25_section(bm25_scores if bm25_scores is not None else pl.DataFrame(), primary_metric),
            "## Chunk sets (size matching)",
            "",
            chunk_sets_section(list(size_matches)),
            "## Chunk bounds",
            "",
            "Every chunk set against its token bounds: how many chunks exceed `t_max` (always 0: it is a "
            "hard bound) or fall under `t_min`, and how each chunk's end was cut. `line`, `word` and `token` "
            "are the fallbacks taken where no sentence boundary served (code, lists, tables, unpunctuated "
            "text).",
            "",
            chunk_bounds_section(list(chunk_bounds)),
            "## Embedder input length",
            "",
            "Texts longer than the embedder's `max_seq_length` (counted with the embedder's own tokenizer, "
            "special tokens included) are truncated by the model: a truncation that grows with the prefix "
            "would confound every prefix contrast, so the shipped configs truncate nothing.",
            "",
            truncation_section(list(embed_reports)),
            "## Prefixes",
            "",
            prefixes_section(list(text_reports)),
            llm_sections(list(induction_stats), list(context_stats)),
            querygen_section(list(querygen_stats)),
            "## Corpora",
            "",
            corpus_section(stats_by_corpus),
        ]
    )
    return text, means


def induction_section(induction_stats: list[dict]) -> str:
    """One row per (corpus, inducer): document statuses, sections per document against gold, and the
    share of induced structural chunk spans byte-identical to gold ones (``llm_stats.induction_summary``)."""
    frame = pl.DataFrame(induction_stats, infer_schema_length=None)
    table = frame.select(
        "corpus", "inducer", "documents", "usable", "repaired", "failed", "corrected",
        pl.col("mean_sections_induced").alias("sections/doc induced"),
        pl.col("mean_sections_gold").alias("sections/doc gold"),
        pl.col("identical_span_share").alias("identical spans"),
    ).sort("corpus", "inducer")
    return markdown_table(table, float_digits=2) + "\n"


def contexts_section(context_stats: list[dict]) -> str:
    """One row per (corpus, chunk set) with situating contexts: length in study tokens, cut and empty."""
    frame = pl.DataFrame(context_stats, infer_schema_length=None)
    table = frame.select("corpus", "chunk set", "chunks", "mean_context_tokens", "max_context_tokens", "truncated",
                         "empty").sort("corpus", "chunk set")
    return markdown_table(table, float_digits=1) + "\n"


def llm_usage_section(induction_stats: list[dict], context_stats: list[dict]) -> str:
    """LLM requests per step: generated by the model vs served from the response cache."""
    rows = [{"step": "induction", "corpus": s["corpus"], "of": s["inducer"], **s["llm"]} for s in induction_stats]
    rows += [{"step": "contexts", "corpus": s["corpus"], "of": s["chunk set"], **s["llm"]} for s in context_stats]
    table = pl.DataFrame(rows, infer_schema_length=None).select(
        "step", "corpus", "of", "requests", "generated", "served_from_cache", "failed", "backend_calls")
    return markdown_table(table) + "\n"


def llm_sections(induction_stats: list[dict], context_stats: list[dict]) -> str:
    """The report's LLM part; empty when the config uses neither induced structure nor contexts."""
    if not induction_stats and not context_stats:
        return ""
    parts = []
    if induction_stats:
        parts += ["## Structure induction", "",
                  "Per document: `usable` = an answer passed the tiling check (first round or after the one "
                  "correction round), `repaired` = the deterministic repair changed the answer, `failed` = no "
                  "usable section (single-section fallback); `corrected` counts the documents whose first answer "
                  "failed the check and went to the correction round, whatever the outcome. "
                  "`identical spans` is the share of the induced structural chunks whose span is byte-identical "
                  "to a gold structural chunk.", "", induction_section(induction_stats)]
    if context_stats:
        parts += ["## Situating contexts", "",
                  "Context length in study tokens (the tokenizer of every other count), after the cap "
                  "`contexts.max_tokens`; `truncated` were cut at the cap, `empty` had no usable answer.", "",
                  contexts_section(context_stats)]
    parts += ["## LLM calls", "",
              "Distinct requests per step, generated by the model or served from the shared response cache "
              "(`<cache>/llm`): a rerun with the same cache generates nothing. `failed` requests (the backend "
              "returned an error, e.g. a prompt over the model's context) are not cached and are asked again.", "",
              llm_usage_section(induction_stats, context_stats)]
    return "\n".join(parts)


def querygen_section(querygen_stats: list[dict]) -> str:
    """Seed 000 appendix F, per corpus with generated queries: the funnel per type (generated → survivors →
    balanced finals) beside seed 000's, the rejections by stage and reason, and the ROUGE-L of the shipped
    queries against their gold spans (``querygen.funnel.querygen_summary``). Empty without such a corpus."""
    if not querygen_stats:
        return ""
    seed = querygen_stats[0]["seed_000"]
    finals_000 = seed["finals_by_type"]
    low, high = seed["typical_rouge_l"]
    lines = ["## Query generation", "",
             "The pipeline samples each query's gold spans; the LLM writes a question about them, which is "
             "rejected when its ROUGE-L F1 against a gold span exceeds `rouge_max` or it shares a normalized "
             "`ngram_block`-gram with one; a question that passes is paraphrased, and the paraphrase, screened "
             "the same way, is the query that ships. Survivors are balanced to `per_type` per type with a seed. "
             f"Seed 000 (200 Wikipedia Featured Articles): {seed['generated']:,} generated → {seed['survivors']:,} "
             f"survivors → {seed['finals']:,} finals over {seed['documents_with_queries']} documents; its shipped "
             f"queries' ROUGE-L is typically {low}–{high}.", ""]
    for stats in sorted(querygen_stats, key=lambda item: item["corpus"]):
        settings = stats.get("settings", {})
        total = stats["by_type"][-1]
        lines += [f"### {stats['corpus']}", "",
                  f"{stats['documents']} documents, {stats['documents_with_targets']} with gold targets; "
                  + ", ".join(f"`{key}` = {settings[key]}" for key in ("per_document", "per_type", "rouge_max",
                                                                        "ngram_block", "seed") if key in settings)
                  + ".", ""]
        if total["finals"] == 0:
            lines += [f"**No generated query survived** ({total['generated']} generated): corpus "
                      f"`{stats['corpus']}` has no queries, so its cells hold no scores and it has no contrasts.", ""]
        funnel = pl.DataFrame(stats["by_type"]).select(
            "qtype", "generated", pl.col("rejected_question").alias("rejected (question)"), "paraphrased",
            pl.col("rejected_paraphrase").alias("rejected (paraphrase)"), "survivors", "finals", "documents",
        ).with_columns(pl.col("qtype").replace_strict(finals_000 | {"all": seed["finals"]}, default=None,
                                                       return_dtype=pl.Int64).alias("seed 000 finals"))
        seed_row = pl.DataFrame([{"qtype": "seed 000 (all)", "generated": seed["generated"], "survivors": seed["survivors"],
                                  "finals": seed["finals"], "documents": seed["documents_with_queries"],
                                  "seed 000 finals": seed["finals"]}])
        lines += [markdown_table(pl.concat([funnel, seed_row], how="diagonal_relaxed").select(funnel.columns)), ""]
        if stats["rejections"]:
            lines += ["Rejections by stage and reason:", "",
                      markdown_table(pl.DataFrame(stats["rejections"]).select("qtype", "stage", "reason", "count")), ""]
        lines += [f"ROUGE-L F1 of the shipped queries against their gold spans (seed 000: typically {low}–{high}):", "",
                  markdown_table(pl.DataFrame(stats["rouge_l"], infer_schema_length=None).select(
                      "qtype", "n", "mean", "min", "p25", "median", "p75", "max"), float_digits=3), ""]
        usage = stats.get("llm") or {}
        if usage:
            lines += [f"LLM requests: {usage.get('requests', 0)}; of the distinct ones, {usage.get('generated', 0)} "
                      f"generated, {usage.get('served_from_cache', 0)} from the cache, {usage.get('failed', 0)} "
                      "failed.", ""]
    return "\n".join(lines)


def chunk_bounds_section(chunk_bounds: list[dict]) -> str:
    """One row per (corpus, chunk set): size distribution, bound violations and cut kinds."""
    if not chunk_bounds:
        return "No chunk set.\n"
    frame = pl.DataFrame(chunk_bounds, infer_schema_length=None)
    cuts = [c for c in frame.columns if c.startswith("cut_")]
    table = frame.select(
        "corpus", "chunk set", "chunks", "mean_tokens", "max_tokens", "over_t_max", "under_t_min", "fallback_cuts",
        *[pl.col(c).alias(c.removeprefix("cut_")) for c in cuts],
    ).sort("corpus", "chunk set")
    return markdown_table(table, float_digits=1) + "\n"


def truncation_section(embed_reports: list[dict]) -> str:
    """One row per embedded text set: how many texts the embedder truncated (should be 0)."""
    if not embed_reports:
        return "No text set was embedded.\n"
    frame = pl.DataFrame(embed_reports, infer_schema_length=None)
    columns = [c for c in ("corpus", "embedder", "text set", "n_texts", "max_seq_length", "max_tokens",
                           "n_truncated", "n_encoded", "n_from_cache", "n_quarantined") if c in frame.columns]
    return markdown_table(frame.select(columns).sort(columns[:3]), float_digits=1) + "\n"


def _resolution_note(bootstrap_iters: int | None) -> str:
    if bootstrap_iters is None:
        return ""
    return (
        f" The bootstrap uses B = {bootstrap_iters} replicates, so its p-values resolve to 1/B: "
        f"a p below that (no replicate crossed zero) is shown as < {_resolution(bootstrap_iters)}."
    )


def write_report(
    score_paths: list[str],
    contrast_paths: list[str],
    corpus_stats_paths: dict[str, str],
    conditions: dict,
    primary_metric: str,
    report_path: str,
    means_path: str,
    size_match_paths: list[str] = (),
    text_report_paths: list[str] = (),
    contrast_specs: list[dict] = (),
    bm25_score_paths: list[str] = (),
    bootstrap_iters: int | None = None,
    chunk_paths: dict[tuple[str, str], str] | None = None,
    embed_reports: dict[tuple[str, str, str], str] | None = None,
    t_max: int = T_MAX,
    t_min: int = T_MIN,
    induction_stats_paths: list[str] = (),
    context_stats_paths: list[str] = (),
    querygen_stats_paths: list[str] = (),
) -> None:
    """Read every input and write the report and the means table.

    ``chunk_paths`` maps (corpus, chunk set) to a chunks table, for the chunk-bounds section;
    ``embed_reports`` maps (corpus, embedder, text set) to an embedding step's JSON report (input length,
    truncation, cache use). ``induction_stats_paths`` and ``context_stats_paths`` are the LLM steps'
    summaries (``llm_stats``); the LLM sections appear only when there are some, and so does the query
    generation section (``querygen_stats_paths``: the merged query generation's ``stats.json`` per corpus)."""
    def concat(paths):
        return pl.concat([read_table(p) for p in paths], how="diagonal_relaxed") if paths else pl.DataFrame()

    scores, contrasts, bm25_scores = concat(score_paths), concat(contrast_paths), concat(bm25_score_paths)
    stats_by_corpus = {corpus: json.loads(Path(p).read_text()) for corpus, p in corpus_stats_paths.items()}
    text, means = render_report(
        scores,
        contrasts,
        stats_by_corpus,
        conditions,
        primary_metric,
        [json.loads(Path(p).read_text()) for p in size_match_paths],
        [json.loads(Path(p).read_text()) for p in text_report_paths],
        contrast_specs,
        bm25_scores,
        bootstrap_iters,
        chunk_bounds=[
            {"corpus": corpus, "chunk set": chunkset, **bounds_report(read_table(path, "chunks"), t_max=t_max, t_min=t_min)}
            for (corpus, chunkset), path in (chunk_paths or {}).items()
        ],
        embed_reports=[
            {"corpus": corpus, "embedder": embedder, "text set": textset, **json.loads(Path(path).read_text())}
            for (corpus, embedder, textset), path in (embed_reports or {}).items()
        ],
        induction_stats=[json.loads(Path(p).read_text()) for p in induction_stats_paths],
        context_stats=[json.loads(Path(p).read_text()) for p in context_stats_paths],
        querygen_stats=[json.loads(Path(p).read_text()) for p in querygen_stats_paths],
    )
    write_text(report_path, text)
    write_table(means, means_path)
