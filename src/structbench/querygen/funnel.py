"""Merge, balance and count the generated queries (Kuehlkamp et al., appendix F): the CPU half of query generation.

Each query-generation shard writes a **candidates** table (:data:`CANDIDATES`): one row per gold target,
with the question the model wrote, its paraphrase and how each fared in the leakage filter. Here:

- :func:`merge_candidates` joins the shards (each document in at most one shard, qids unique);
- :func:`balance` keeps, per query type, ``per_type`` survivors drawn uniformly without replacement with
  ``random.Random(f"{seed}/balance/{qtype}")`` from the survivors in ``qid`` order (all of them when
  fewer survive: Kuehlkamp et al. shipped 201 multihop against 250 of each other type);
- :func:`queries_table` turns the balanced finals into the ``queries`` table every corpus has
  (``datamodel.QUERIES``), the paraphrase as the query text, so retrieval and scoring read it unchanged;
- :func:`funnel_table` and :func:`querygen_summary` count generated → survivors → balanced finals per
  type with every rejection reason, and the ROUGE-L distribution of the shipped queries, for the report.

No count is ever a NaN: an empty step is 0 and a distribution of no queries is ``None`` throughout.
This module imports neither the LLM layer nor ``rouge-score`` (the merge runs on a CPU node).
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence

import numpy as np
import polars as pl

from structbench.datamodel import conform

CANDIDATES = {
    "qid": pl.String,
    "corpus": pl.String,
    "doc_id": pl.String,
    "qtype": pl.String,
    "spans": pl.List(pl.List(pl.Int64)),  # gold spans, content offsets, sorted and disjoint
    "top_section_ids": pl.List(pl.Int32),  # the top-level section of each span
    "question": pl.String,  # the model's question, cleaned ("" when it gave none)
    "question_reason": pl.String,  # "" passed, else the failed check (leakage.REASONS) or "no_answer"
    "question_rouge_l": pl.Float64,  # null when there was no question to measure
    "question_ngrams": pl.Int32,  # distinct normalized ngram_block-grams shared with the spans
    "paraphrase": pl.String,  # null when the question was rejected (no paraphrase asked)
    "paraphrase_reason": pl.String,
    "paraphrase_rouge_l": pl.Float64,
    "paraphrase_ngrams": pl.Int32,
    "rejected_at": pl.String,  # "" (survived), "question" or "paraphrase"
    "reason": pl.String,  # the rejection reason at that stage, "" for a survivor
}
FUNNEL = {"qtype": pl.String, "step": pl.String, "reason": pl.String, "count": pl.Int64}
STAGES = ("question", "paraphrase")

# Kuehlkamp et al., appendix F: the study's funnel on 200 Wikipedia Featured Articles, for the report to set
# a run's funnel beside.
SEED_000_FUNNEL = {
    "generated": 2306,
    "survivors": 1945,
    "finals": 951,
    "finals_by_type": {"factoid": 250, "underspecified": 250, "multihop": 201, "structural": 250},
    "documents_with_queries": 184,
    "typical_rouge_l": [0.02, 0.13],
}


def empty_candidates() -> pl.DataFrame:
    return pl.DataFrame(schema=CANDIDATES)


def merge_candidates(shards: Sequence[pl.DataFrame]) -> pl.DataFrame:
    """The shards' candidates as one table sorted by ``qid``; a document in two shards or a repeated
    ``qid`` is a ``ValueError`` naming them."""
    frames = [shard.select(list(CANDIDATES)).cast(CANDIDATES) for shard in shards]
    merged = pl.concat(frames, how="vertical") if frames else empty_candidates()
    owners = (
        pl.concat([frame.select("doc_id").unique() for frame in frames])
        if frames
        else pl.DataFrame(schema={"doc_id": pl.String})
    )
    doubled = owners.filter(pl.col("doc_id").is_duplicated())["doc_id"].unique().sort().to_list()
    if doubled:
        raise ValueError(f"query candidates of documents {doubled[:10]} come from more than one shard")
    repeated = merged.filter(pl.col("qid").is_duplicated())["qid"].unique().sort().to_list()
    if repeated:
        raise ValueError(f"query candidates repeat qids {repeated[:10]}")
    return merged.sort("qid")


def survivors(candidates: pl.DataFrame) -> pl.DataFrame:
    return candidates.filter(pl.col("rejected_at") == "")


def balance(candidates: pl.DataFrame, per_type: int, seed: int) -> pl.DataFrame:
    """The balanced finals: per type, ``per_type`` survivors drawn with a seed (module docstring), sorted by qid."""
    kept = []
    for qtype in sorted(candidates["qtype"].unique().to_list()):
        pool = survivors(candidates).filter(pl.col("qtype") == qtype).sort("qid")
        rng = random.Random(f"{seed}/balance/{qtype}")
        chosen = sorted(rng.sample(range(pool.height), min(per_type, pool.height)))
        kept.append(pool.with_row_index("row").filter(pl.col("row").is_in(chosen)).drop("row"))
    return pl.concat(kept).sort("qid") if kept else empty_candidates()


def queries_table(finals: pl.DataFrame) -> pl.DataFrame:
    """The ``queries`` table of the finals: the paraphrase is the query; ``meta`` keeps the first question,
    both ROUGE-L scores and the top-level sections of the spans."""
    meta = [
        json.dumps(
            {
                "generated": True,
                "question": question,
                "rouge_l": rouge,
                "question_rouge_l": question_rouge,
                "top_section_ids": list(tops),
            },
            sort_keys=True,
            ensure_ascii=False,
        )
        for question, rouge, question_rouge, tops in finals.select(
            "question", "paraphrase_rouge_l", "question_rouge_l", "top_section_ids"
        ).iter_rows()
    ]
    frame = finals.select("qid", "corpus", "doc_id", pl.col("paraphrase").alias("text"), "qtype", "spans")
    return conform(frame.with_columns(pl.Series("meta", meta, dtype=pl.String)), "queries").sort("qid")


def _count(frame: pl.DataFrame, qtype: str) -> int:
    return int(frame.filter(pl.col("qtype") == qtype).height)


def funnel_table(candidates: pl.DataFrame, finals: pl.DataFrame, types: Sequence[str]) -> pl.DataFrame:
    """``qtype, step, reason, count``: per type, ``generated`` (gold targets asked about), ``rejected``
    at the ``question`` and the ``paraphrase`` stage by reason, ``paraphrased``, ``survived``, ``balanced``."""
    rows = []
    for qtype in types:
        of_type = candidates.filter(pl.col("qtype") == qtype)
        rows.append((qtype, "generated", "", of_type.height))
        for stage in STAGES:
            if stage == "paraphrase":
                rows.append((qtype, "paraphrased", "", of_type.filter(pl.col("rejected_at") != "question").height))
            rejected = of_type.filter(pl.col("rejected_at") == stage)
            for reason, count in rejected.group_by("reason").len().sort("reason").iter_rows():
                rows.append((qtype, f"rejected at {stage}", reason, count))
        rows.append((qtype, "survived", "", survivors(of_type).height))
        rows.append((qtype, "balanced", "", _count(finals, qtype)))
    return pl.DataFrame(rows, schema=FUNNEL, orient="row")


def rouge_distribution(values: Sequence[float]) -> dict:
    """``n, mean, min, p25, median, p75, max`` of ROUGE-L values (linear-interpolated percentiles);
    every statistic is ``None`` when there are none."""
    array = np.asarray([value for value in values if value is not None], dtype=np.float64)
    if array.size == 0:
        return {"n": 0, **dict.fromkeys(("mean", "min", "p25", "median", "p75", "max"))}
    p25, median, p75 = np.percentile(array, [25, 50, 75])
    return {
        "n": int(array.size),
        "mean": round(float(array.mean()), 4),
        "min": round(float(array.min()), 4),
        "p25": round(float(p25), 4),
        "median": round(float(median), 4),
        "p75": round(float(p75), 4),
        "max": round(float(array.max()), 4),
    }


def querygen_summary(candidates: pl.DataFrame, finals: pl.DataFrame, types: Sequence[str], n_documents: int) -> dict:
    """The report's view of one corpus's query generation (JSON-serializable, no NaN): per type and in all,
    the funnel counts and documents with shipped queries; rejections by stage and reason; the ROUGE-L
    distribution of the shipped queries (against their gold spans); Kuehlkamp et al.'s funnel for comparison."""
    by_type = []
    for qtype in [*types, "all"]:
        of_type = candidates if qtype == "all" else candidates.filter(pl.col("qtype") == qtype)
        shipped = finals if qtype == "all" else finals.filter(pl.col("qtype") == qtype)
        by_type.append(
            {
                "qtype": qtype,
                "generated": of_type.height,
                "rejected_question": of_type.filter(pl.col("rejected_at") == "question").height,
                "paraphrased": of_type.filter(pl.col("rejected_at") != "question").height,
                "rejected_paraphrase": of_type.filter(pl.col("rejected_at") == "paraphrase").height,
                "survivors": survivors(of_type).height,
                "finals": shipped.height,
                "documents": int(shipped["doc_id"].n_unique()) if shipped.height else 0,
            }
        )
    rejections = [
        {"qtype": qtype, "stage": stage, "reason": reason, "count": int(count)}
        for qtype, stage, reason, count in candidates.filter(pl.col("rejected_at") != "")
        .group_by("qtype", "rejected_at", "reason")
        .len()
        .sort("qtype", "rejected_at", "reason")
        .iter_rows()
    ]
    rouge = [
        {
            "qtype": qtype,
            **rouge_distribution(
                (finals if qtype == "all" else finals.filter(pl.col("qtype") == qtype))["paraphrase_rouge_l"].to_list()
            ),
        }
        for qtype in [*types, "all"]
    ]
    return {
        "documents": n_documents,
        "documents_with_targets": int(candidates["doc_id"].n_unique()) if candidates.height else 0,
        "by_type": by_type,
        "rejections": rejections,
        "rouge_l": rouge,
        "seed_000": SEED_000_FUNNEL,
    }
