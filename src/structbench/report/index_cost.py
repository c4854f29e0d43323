"""The report's index-cost table (docs/method.md §6, "Overlap"; §15): what each embedded chunk text set costs
the index (chunks, embedded tokens, vector bytes), beside whether its chunk set tiles or overlaps.

A pure function of :class:`~structbench.report.table_registry.ReportInputs`, declared like every table
(:func:`report_table`); the decision table reads its rows for each condition's index cost.
"""

from __future__ import annotations

import polars as pl

from structbench.conditions import to_token
from structbench.overlap import parse_overlap, shared_characters
from structbench.report.table_registry import Omit, ReportInputs, TableContent, report_table


@report_table(
    "index_cost",
    "Index cost",
    "What each embedded chunk text set costs the index, per embedder, so an overlapping set's price stands beside "
    'its gain (docs/method.md §6, "Overlap"): chunks (vectors), embedded tokens (content + prefix tokens, study '
    "tokenizer; a repeated token is embedded again each time), vector bytes (chunks × dimensions × 4, float32, "
    "the .npy header aside), and indexed / text: the characters of every chunk (repeats included) over the "
    "documents' characters, 1 for a set that tiles. tiles says whether the set tiles its documents or the "
    "overlap it declares (tokens, or a share of the chunk's size); declared tokens is that overlap in tokens at the "
    "set's t_max, and beside it the overlap realized between consecutive chunks of a document: shared tokens, the "
    "mean over those pairs of their shared characters times the set's tokens per character (an estimate: no "
    "tokenizer runs in the report), and no share, the share of pairs that share nothing (a splitter overlaps only "
    "where a split falls).",
)
def index_cost_table(inputs: ReportInputs) -> TableContent:
    data = index_cost_rows(inputs.embed_reports, inputs.text_reports, inputs.chunk_sets, inputs.chunk_bounds)
    if data.is_empty():
        raise Omit("no chunk text set was embedded")
    return TableContent(data, float_digits=3)


def index_cost_rows(
    embed_reports: list[dict],
    text_reports: list[dict],
    chunk_sets: dict[tuple[str, str], pl.DataFrame],
    chunk_bounds: dict[tuple[str, str], dict],
) -> pl.DataFrame:
    """One row per (corpus, embedder, chunk text set) an embedding step reported: the text set's chunks and
    tokens (its texts report and chunk set), its vectors' bytes (the embedding report; null for a report
    without them), and the chunk set's declared tiling or overlap (its bounds report)."""
    texts = {
        (r["corpus"], f"{r['boundaries']}/{r['structure']}/{to_token(r['prefix'])}"): r
        for r in text_reports
        if "boundaries" in r
    }
    rows = []
    for report in embed_reports:
        key = (report["corpus"], report["text set"])
        if key not in texts:
            continue  # queries, merge paragraphs, an inducer's texts: not an index of chunks
        chunkset = report["text set"].rsplit("/", 1)[0]
        chunks = chunk_sets.get((report["corpus"], chunkset))
        bounds = chunk_bounds.get((report["corpus"], chunkset), {})
        if chunks is None:
            continue
        content = int(chunks["n_tokens"].sum())
        prefix = round(texts[key].get("mean_prefix_tokens", 0.0) * chunks.height)
        document = int(chunks.group_by("doc_id").agg(pl.col("end").max())["end"].sum()) if chunks.height else 0
        shared_tokens, no_share = realized_overlap(chunks)
        rows.append(
            {
                "corpus": report["corpus"],
                "embedder": report["embedder"],
                "text set": report["text set"],
                "tiles": "yes" if bounds.get("tiles", True) else f"overlap {bounds.get('overlap')}",
                "chunks": chunks.height,
                "embedded tokens": content + prefix,
                "vector bytes": report.get("vector_bytes"),
                "indexed / text": int((chunks["end"] - chunks["start"]).sum()) / document if document else None,
                "declared tokens": declared_overlap_tokens(bounds),
                "shared tokens": shared_tokens,
                "no share": no_share,
            }
        )
    schema = {
        "corpus": pl.String,
        "embedder": pl.String,
        "text set": pl.String,
        "tiles": pl.String,
        "chunks": pl.Int64,
        "embedded tokens": pl.Int64,
        "vector bytes": pl.Int64,
        "indexed / text": pl.Float64,
        "declared tokens": pl.Int64,
        "shared tokens": pl.Float64,
        "no share": pl.Float64,
    }
    return pl.DataFrame(rows, schema=schema, orient="row").sort("corpus", "embedder", "text set")


def declared_overlap_tokens(bounds: dict) -> int | None:
    """The overlap a chunk set declares, in tokens at its ``t_max`` (``floor(share · t_max)`` for a share; a fixed
    window's size-matched target can be shorter): 0 for a set that tiles, None when the bounds report lacks it."""
    if bounds.get("tiles", True):
        return 0
    overlap = parse_overlap(bounds.get("overlap"), "overlap") if bounds.get("overlap") is not None else None
    return overlap.tokens_at(bounds["t_max"]) if overlap and "t_max" in bounds else None


def realized_overlap(chunks: pl.DataFrame) -> tuple[float | None, float | None]:
    """``(shared tokens, no share)`` over the pairs of consecutive chunks of a document (chunk_id order)::

        shared_i      = max(0, end_{i-1} - start_i)                           characters chunks i-1 and i share
        shared tokens = mean_i(shared_i) · Σ n_tokens / Σ (end - start)       the set's tokens per character
        no share      = #{i : shared_i = 0} / #pairs

    Both None for a set without a pair (one chunk per document)."""
    shared = shared_characters(chunks)
    characters = int((chunks["end"] - chunks["start"]).sum())
    if shared.is_empty() or not characters:
        return None, None
    tokens_per_character = int(chunks["n_tokens"].sum()) / characters
    return float(shared.mean()) * tokens_per_character, float((shared == 0).mean())
