"""The report's diagnostic tables (docs/method.md §15): what the measured conditions were made of.

The BM25 non-lexicality probe, size matching, chunk sizes and bounds, prefixes, the embedder's inputs,
structure induction, situating contexts, LLM calls, the corpora and their funnels, and query generation.
Each builder is a pure function of :class:`~structbench.report.registry.ReportInputs`.
"""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

from structbench.defaults import SIZE_MATCH_TOLERANCE
from structbench.metrics.registry import metric_label
from structbench.plan.cells import lexical_chunkset
from structbench.report.formatting import (
    short_number,
)
from structbench.report.registry import (
    Block,
    Omit,
    ReportInputs,
    TableContent,
    blocks_by,
    report_table,
)


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
    f"most 4 tokens): the share of documents whose gap is within {SIZE_MATCH_TOLERANCE:g} tokens "
    "(docs/method.md §15) and the worst per-document gap, flagged when above it.",
)
def size_matching_table(inputs: ReportInputs) -> TableContent:
    if not inputs.size_matches:
        raise Omit("no size-matched condition in this config")
    data = size_matching_rows(inputs.size_matches)
    shown = data.select(
        pl.exclude("docs within tolerance", "share within tolerance", "worst gap above tolerance"),
        pl.struct("docs within tolerance", "documents", "share within tolerance")
        .map_elements(_within_text, return_dtype=pl.String)
        .alias(f"documents within {SIZE_MATCH_TOLERANCE:g} tokens"),
        pl.when(pl.col("worst gap above tolerance"))
        .then(pl.lit(f"above {SIZE_MATCH_TOLERANCE:g}"))
        .otherwise(pl.lit(""))
        .alias("flag"),
    )
    return TableContent(data, (Block("", shown),), float_digits=1)


def size_matching_rows(size_matches: list[dict], tolerance: float = SIZE_MATCH_TOLERANCE) -> pl.DataFrame:
    """One row per size-matched chunk set and corpus: the realized means, the worst per-document gap and
    how many documents are within ``tolerance`` tokens (null for a size-match report that predates the
    count); a worst gap above ``tolerance`` is flagged."""
    rows = pl.DataFrame(size_matches, infer_schema_length=None)
    if "docs_within_tolerance" not in rows.columns:
        rows = rows.with_columns(pl.lit(None, pl.Int64).alias("docs_within_tolerance"))
    return rows.select(
        "corpus",
        "chunk set",
        "documents",
        "reference_chunks",
        "matched_chunks",
        pl.col("reference_mean_tokens").alias("structural mean tokens"),
        pl.col("matched_mean_tokens").alias("matched mean tokens"),
        pl.col("difference").alias("matched − structural"),
        pl.col("max_doc_difference").alias("max per-document gap"),
        pl.col("docs_within_tolerance").cast(pl.Int64).alias("docs within tolerance"),
        (pl.col("docs_within_tolerance") / pl.col("documents")).alias("share within tolerance"),
        # NaN (no document in both sets) is no gap to flag; polars orders NaN above every number
        (pl.col("max_doc_difference").fill_nan(None) > tolerance).fill_null(False).alias("worst gap above tolerance"),
    ).sort("corpus", "chunk set")


def _within_text(row: dict) -> str:
    if row["docs within tolerance"] is None or not row["documents"]:
        return "n/a"
    return f"{row['docs within tolerance']}/{row['documents']} ({100 * row['share within tolerance']:.0f}%)"


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
    "same-document assignments of the permutation; max prefix tokens is the largest prefix of the set "
    "against the allowed (half of the set's t_max), which it never exceeds; shortened: chunks whose prefix "
    "was cut to fit (each title cut to the same number of tokens, ending in an ellipsis; a deep path at a "
    "small t_max loses ancestors, root first, before its leaf is cut between whole characters), of them "
    "dropped ancestors: those that lost ancestors (docs/method.md §7).",
)
def prefixes_table(inputs: ReportInputs) -> TableContent:
    if not inputs.text_reports:
        raise Omit("no text set")
    frame = pl.DataFrame(inputs.text_reports, infer_schema_length=None)
    columns = ["corpus", "boundaries", "structure", "prefix", "chunks", "mean_content_tokens", "mean_prefix_tokens"]
    columns += [
        c
        for c in (
            "max_prefix_tokens",
            "max_prefix_tokens_allowed",
            "shortened_prefixes",
            "dropped_ancestors",
            "capped_chunks",
            "max_path_depth",
            "residual_same_doc",
            "placebo_pairs",
        )
        if c in frame.columns
    ]
    return TableContent(frame.select(columns).sort("corpus", "boundaries", "structure", "prefix"), float_digits=1)


@report_table(
    "embedder_input",
    "Embedder input length",
    "Every text the embedding cache received, per text set: chunk texts, queries, the semantic merge's "
    "paragraphs and the model-free inducer's. Texts longer than the embedder's max_seq_length (counted with "
    "the embedder's own tokenizer, special tokens included) are truncated by the model (n_truncated): a "
    "truncation that grows with the prefix would confound every prefix contrast. The '(merge paragraphs)' "
    "rows are the paragraphs the semantic merge embeds to compare neighbours (chunking.semantic_embedder): a "
    "truncated one is compared on its first max_seq_length tokens. The '(segmentation)' rows are a "
    "segmentation inducer's paragraphs (or sentences) and title candidates (docs/method.md §5). n_texts "
    "counts every text sent, n_distinct the distinct ones (a repeated text, e.g. a question asked twice, is "
    "looked up once): n_encoded + n_from_cache = n_distinct, n_from_cache the vectors served from the "
    "content-addressed embedding cache. Endpoint embedders (kind openai) add their cost: tokens_distinct, "
    "the text set's distinct texts in the configured tokenizer (what a cold run sends: price a grid by it), "
    "tokens_sent, those actually sent this run, and tokens_billed, the sum of the server's usage (Infinity "
    "counts characters there). Late-chunked text sets (docs/method.md §8a) add theirs: late_windows, "
    "tokens_late (window tokens encoded, specials included) against tokens_independent (the same chunks one "
    "by one), and encoder_seconds (their forward passes); max_tokens is their longest window.",
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
            "n_distinct",
            "max_seq_length",
            "max_tokens",
            "n_truncated",
            "n_encoded",
            "n_from_cache",
            "n_quarantined",
            "tokens_distinct",
            "tokens_sent",
            "tokens_billed",
            "late_windows",
            "tokens_late",
            "tokens_independent",
            "encoder_seconds",
        )
        if c in frame.columns
    ]
    data = frame.select(columns).sort(columns[:3])
    return TableContent(data, notes=embedder_input_notes(data), float_digits=1)


def embedder_input_notes(data: pl.DataFrame) -> tuple[str, ...]:
    """The totals over every text set, the repeated texts and the truncations, in words."""
    total, notes = int(data["n_texts"].sum()), []
    distinct = int(data["n_distinct"].fill_null(data["n_texts"]).sum()) if "n_distinct" in data.columns else total
    notes.append(f"In all: {total} texts sent to the embedding cache, {distinct} distinct.")
    if "n_distinct" in data.columns:
        for corpus, embedder, textset, n, n_distinct in data.select(
            "corpus", "embedder", "text set", "n_texts", "n_distinct"
        ).iter_rows():
            if n_distinct is not None and n_distinct < n:
                notes.append(f"{corpus} · {embedder} · {textset}: {n - n_distinct} of {n} texts repeat an earlier one.")
    truncated = data.filter(pl.col("n_truncated").fill_null(0) > 0) if "n_truncated" in data.columns else data.clear()
    if truncated.is_empty():
        notes.append("No text was truncated.")
    for corpus, embedder, textset, n, n_truncated in truncated.select(
        "corpus", "embedder", "text set", "n_texts", "n_truncated"
    ).iter_rows():
        notes.append(f"{corpus} · {embedder} · {textset}: {n_truncated} of {n} texts truncated.")
    return tuple(notes)


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
    "usable = more than one section); an answer breaking its JSON schema (a title over 60 characters, "
    "whatever the server returned) fails the check too, and shortened titles counts the titles the repair "
    "cut to that bound. identical spans is the share of the induced structural chunks "
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
                "shortened titles": stats.get("shortened_titles", 0),
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
