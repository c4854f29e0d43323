"""Document shards of the LLM steps (structure induction, situating contexts), and their merge.

An LLM step over a whole corpus is hours of generation on a CPU and a long GPU job on a cluster, so the
workflow splits each corpus into ``llm_shards`` document batches and runs one job per batch. The
number of shards is a config value, not derived from the corpus: Snakemake must know every job when
it plans the run, and the number of documents is only known after the corpus is built (a count derived
from it would need a checkpoint, which re-plans the DAG mid-run and hides the LLM jobs from a dry run).

Shard ``k`` of ``n`` holds the documents whose position in ``doc_id`` order is congruent to ``k``
modulo ``n`` (round robin), so every document lies in exactly one shard and the shards differ in size
by at most one document; a shard may be empty when ``n`` exceeds the number of documents. Each shard's
output is merged back into one table, checked to cover every document (or chunk) exactly once.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from structbench.corpus.verify import assert_verified

USAGE_COUNTS = (
    "requests",
    "served_from_cache",
    "generated",
    "failed",
    "backend_calls",
    "prompt_tokens",
    "reused_prompt_tokens",
    "generated_tokens",
)
USAGE_SECONDS = "seconds"  # summed over shards: job time, not wall time when shards run side by side


def shard_doc_ids(doc_ids: Sequence[str], shard: int, n_shards: int) -> list[str]:
    """The documents of shard ``shard`` (0-based) of ``n_shards``: every ``n_shards``-th id in sorted
    order, starting at position ``shard``."""
    if n_shards < 1 or not 0 <= shard < n_shards:
        raise ValueError(f"shard {shard} of {n_shards}: need n_shards >= 1 and 0 <= shard < n_shards")
    return sorted(set(doc_ids))[shard::n_shards]


def select_shard(frame: pl.DataFrame, doc_ids: Sequence[str]) -> pl.DataFrame:
    """The rows of ``frame`` (any table with a ``doc_id`` column) that belong to ``doc_ids``."""
    return frame.filter(pl.col("doc_id").is_in(list(doc_ids)))


def merge_sections(paragraphs: pl.DataFrame, shards: Sequence[pl.DataFrame]) -> pl.DataFrame:
    """The sections of every shard as one table, sorted by (doc_id, section_id), verified against the
    whole corpus's paragraphs (``corpus.verify``): a document missing from every shard, or present in
    two, fails with the documents named."""
    sections = pl.concat(list(shards), how="vertical").sort("doc_id", "section_id")
    owners = pl.concat([shard.select("doc_id").unique() for shard in shards]).group_by("doc_id").len()
    doubled = owners.filter(pl.col("len") > 1)["doc_id"].sort().to_list()
    if doubled:
        raise ValueError(f"documents induced by more than one shard: {doubled[:10]}")
    assert_verified(paragraphs, sections)
    return sections


def merge_rows(shards: Sequence[pl.DataFrame], expected: Sequence, key: str, what: str) -> pl.DataFrame:
    """Shard tables concatenated and sorted by ``key``, which must take each value of ``expected``
    exactly once (a status row per document, a context per chunk)."""
    merged = pl.concat(list(shards), how="vertical").sort(key)
    found = merged[key].to_list()
    if found != sorted(expected):
        missing = sorted(set(expected) - set(found))
        doubled = sorted({value for value in found if found.count(value) > 1})
        raise ValueError(
            f"{what}: shards do not cover every {key} exactly once (missing {missing[:10]}, repeated {doubled[:10]})"
        )
    return merged


def merge_usage(shards: Sequence[dict]) -> dict:
    """The LLM usage counts (``LLM.usage()``) of every shard summed, plus the shards themselves."""
    total = {name: sum(int(shard.get(name, 0)) for shard in shards) for name in USAGE_COUNTS}
    total[USAGE_SECONDS] = round(sum(float(shard.get(USAGE_SECONDS, 0.0)) for shard in shards), 3)
    return total | {"shards": list(shards)}
