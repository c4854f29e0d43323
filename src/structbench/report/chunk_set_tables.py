"""The report's diagnostic tables on the chunk sets (docs/method.md §15): what the measured conditions ranked.

The BM25 non-lexicality probe on each chunk set, size matching against the structural reference, chunk sizes
and bounds, the prefixes, and what the embedder was given (truncation). Each builder is a pure function of
:class:`~structbench.report.table_registry.ReportInputs`."""

from __future__ import annotations

import polars as pl

from structbench.artifacts.cells import lexical_chunkset
from structbench.defaults import SIZE_MATCH_TOLERANCE
from structbench.metrics.registry import metric_label
from structbench.report.table_registry import Block, Omit, ReportInputs, TableContent, report_table


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
