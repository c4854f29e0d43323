"""Corpus statistics for the report (docs/method.md §4: every corpus reports documents, paragraphs,
sections per document, depth histogram, queries by type and its funnel).

``corpus_statistics`` returns plain JSON-serializable values (``json.dumps`` works on it as is).
Depth follows ``build.document_depth``: the document title counts as 1, so a document with only
top-level sections has depth 2 (``depth_histogram``); ``section_level_histogram`` counts sections
by their stored level (the lead section is level 1).
"""

from __future__ import annotations

import json

import polars as pl

from structbench.corpus.build import CorpusTables


def _histogram(series: pl.Series) -> dict[str, int]:
    counts = series.value_counts().sort(series.name)
    return {str(value): int(count) for value, count in counts.iter_rows()}


def corpus_statistics(tables: CorpusTables) -> dict:
    """Counts, means and histograms of one corpus, plus its funnel and skip counts."""
    documents, paragraphs, sections, queries = tables.documents, tables.paragraphs, tables.sections, tables.queries
    n_docs = documents.height
    words = int(documents.select(pl.col("text").str.count_matches(r"\S+").sum()).item()) if n_docs else 0
    para_lengths = paragraphs.select((pl.col("end") - pl.col("start")).alias("chars"))["chars"]
    depth = sections.group_by("doc_id").agg(pl.col("path").list.len().max().alias("depth"))["depth"]
    headed = sections.filter(~((pl.col("section_id") == 0) & (pl.col("level") == 1) & (pl.col("title") == "")))
    stats: dict = {
        "documents": n_docs,
        "paragraphs": paragraphs.height,
        "words": words,
        "chars": int(documents["n_chars"].sum()) if n_docs else 0,
        "sections": sections.height,
        "sections_per_document_mean": round(sections.height / n_docs, 4) if n_docs else 0.0,
        "headings_per_document_mean": round(headed.height / n_docs, 4) if n_docs else 0.0,
        "paragraphs_per_document_mean": round(paragraphs.height / n_docs, 4) if n_docs else 0.0,
        "words_per_document_mean": round(words / n_docs, 2) if n_docs else 0.0,
        "empty_sections": int((sections["para_start"] == sections["para_end"]).sum()),
        "max_paragraph_chars": int(para_lengths.max()) if paragraphs.height else 0,
        "depth_histogram": _histogram(depth.rename("depth")) if sections.height else {},
        "section_level_histogram": (
            _histogram(sections["level"].cast(pl.Int64).rename("level")) if sections.height else {}
        ),
        "queries": queries.height,
        "queries_by_qtype": _histogram(queries["qtype"].rename("qtype")) if queries.height else {},
        "documents_with_queries": int(queries["doc_id"].n_unique()) if queries.height else 0,
    }
    if queries.height:
        span_counts = queries["spans"].list.len()
        stats["spans"] = int(span_counts.sum())
        stats["spans_per_query_mean"] = round(float(span_counts.mean()), 4)
        stats["multi_span_share"] = round(float((span_counts > 1).mean()), 4)
        step_counts: dict[str, int] = {}
        for meta in queries["meta"].to_list():
            for step in json.loads(meta).get("span_steps", []):
                step_counts[step] = step_counts.get(step, 0) + 1
        stats["span_steps"] = dict(sorted(step_counts.items()))
        total = sum(step_counts.values())
        stats["exact_span_share"] = round(step_counts.get("exact", 0) / total, 4) if total else None
    stats["funnel"] = tables.funnel.to_dicts()
    stats["skipped"] = tables.skipped.height
    stats["skipped_by_reason"] = (
        {
            reason: int(count)
            for reason, count in tables.skipped.with_columns(pl.col("reason").str.split(":").list.first())
            .group_by("reason")
            .len()
            .sort("reason")
            .iter_rows()
        }
        if tables.skipped.height
        else {}
    )
    return stats
