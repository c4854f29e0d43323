"""A synthetic but complete set of report inputs: two corpora, fixed and structural chunk sets, a path
depth ladder, a placebo and a routed (two-stage) condition with section recall, declared contrasts of
every family (computed by the real statistics code), BM25 scores, corpus statistics with funnels, and the decisive
questions of decisive_testing's hand-made cell.

Scores are drawn from a seeded generator with known per-condition offsets, so tests can check numbers
the report computes against values they compute independently.
"""

from __future__ import annotations

import numpy as np
import polars as pl
from decisive_testing import decisive_tables

from structbench.chunking.tiling import bounds_file
from structbench.defaults import T_MAX, T_MIN
from structbench.metrics.diagnostics import retrieval_layer_pairs, retrieval_layer_table
from structbench.report.table_registry import ReportInputs
from structbench.stats import contrast_table
from structbench.stats.decision import decision_table
from structbench.stats.means import condition_mean_cis, dose_response_slopes, dose_series
from structbench.stats.moderators import MODERATORS, moderator_labels
from structbench.stats.subgroups import subgroup_table

CONDITIONS = {
    "F0": {"boundaries": "fixed", "structure": "gold", "prefix": "none", "retrieval": "flat"},
    "G2": {"boundaries": "structural", "structure": "gold", "prefix": "none", "retrieval": "flat"},
    "G3-d1": {"boundaries": "structural", "structure": "gold", "prefix": "path:1", "retrieval": "flat"},
    "G3": {"boundaries": "structural", "structure": "gold", "prefix": "path:3", "retrieval": "flat"},
    "P3": {"boundaries": "structural", "structure": "gold", "prefix": "placebo:3", "retrieval": "flat"},
    "G4": {"boundaries": "structural", "structure": "gold", "prefix": "path:3", "retrieval": "two_stage"},
}
OFFSETS = {"F0": 0.0, "G2": 0.04, "G3-d1": 0.06, "G3": 0.07, "P3": 0.03, "G4": 0.01}
CONTRAST_SPECS = [
    {"name": "G3-G2", "treatment": "G3", "control": "G2", "family": "primary"},
    {"name": "G3-P3", "treatment": "G3", "control": "P3", "family": "primary"},
    {"name": "G4-G3", "treatment": "G4", "control": "G3", "family": "secondary"},
    {"name": "depth", "conditions": ["G2", "G3-d1", "G3"], "depths": [0, 1, 3], "family": "exploratory"},
]
QTYPES = ("factoid", "multihop", "structural")
B = 400
SEED = 7


def synthetic_scores(corpora=("alpha", "beta"), n_docs: int = 12, per_doc: int = 4) -> pl.DataFrame:
    rng = np.random.default_rng(1)
    rows = []
    for corpus in corpora:
        base = rng.uniform(0.2, 0.7, size=(n_docs, per_doc))
        for condition, offset in OFFSETS.items():
            noise = rng.normal(0, 0.05, size=base.shape)
            for d in range(n_docs):
                for q in range(per_doc):
                    value = float(np.clip(base[d, q] + offset + noise[d, q], 0, 1))
                    row = {
                        "qid": f"{corpus}-q{d:02d}{q}",
                        "doc_id": f"{corpus}-d{d:02d}",
                        "qtype": QTYPES[q % 3],
                        "cov_nDCG@10": value,
                        "MRR": value**0.5,
                        "budget_cov@512": value * 0.6,
                        "budget_cov@1024": value * 0.8,
                        "budget_cov@2048": value,
                        "section_recall": float((d + q) % 3 != 0) if condition == "G4" else None,
                        "corpus": corpus,
                        "condition": condition,
                        "embedder": "e5",
                        "reranker": "none",
                    }
                    rows.append(row)
    return pl.DataFrame(rows, schema_overrides={"section_recall": pl.Float64})


def synthetic_runs(scores: pl.DataFrame, corpus: str) -> dict[str, pl.DataFrame]:
    """Runs over one chunk set of 30 chunks: G2's ranking, and each prefixed condition's ranking with
    its first ``k`` chunks rotated (k from the condition), so top-1 and top-5 change by a known amount."""
    qids = scores.filter(pl.col("corpus") == corpus)["qid"].unique().sort().to_list()
    runs = {}
    for shift, condition in enumerate(["G2", "G3-d1", "G3", "P3", "G4", "F0"]):
        rows = []
        for i, qid in enumerate(qids):
            order = [(i + j) % 30 for j in range(30)]
            order = order[shift:] + order[:shift]  # rotate by the condition's index
            rows += [
                {"qid": qid, "rank": r + 1, "chunk_id": c, "score": 1.0 - r / 100, "stage": "flat"}
                for r, c in enumerate(order[:10])
            ]
        runs[condition] = pl.DataFrame(
            rows,
            schema={"qid": pl.String, "rank": pl.Int32, "chunk_id": pl.Int64, "score": pl.Float32, "stage": pl.String},
        )
    return runs


def chunk_table(n_tokens: list[int], n_docs: int = 4) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "chunk_id": list(range(len(n_tokens))),
            "doc_id": [f"d{i % n_docs}" for i in range(len(n_tokens))],
            "start": [0] * len(n_tokens),
            "end": [1] * len(n_tokens),
            "n_tokens": n_tokens,
            "section_id": [0] * len(n_tokens),
            "path": [["T"]] * len(n_tokens),
            "cut": ["sentence"] * len(n_tokens),
        },
        schema_overrides={"n_tokens": pl.Int32, "section_id": pl.Int32},
    )


def condition_statistics(scores: pl.DataFrame, conditions=CONDITIONS, contrast_specs=CONTRAST_SPECS, b=B, seed=SEED):
    """What the statistics step writes per cell (workflow rule condition_stats), for every cell of ``scores``:
    ``condition_means`` and ``dose_response`` of the primary metric, and the ``decisions`` ranking."""
    return {
        "decisions": decision_table(scores, conditions, "cov_nDCG@10", n_boot=b, seed=seed),
        "condition_means": condition_mean_cis(scores, "cov_nDCG@10", b, seed),
        "dose_response": dose_response_slopes(scores, dose_series(conditions, contrast_specs), "cov_nDCG@10", b, seed),
    }


def synthetic_corpus_tables(scores: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Queries and gold sections for the questions of ``scores``: an even document has a subsection (depth 2), an
    odd one only top-level sections (depth 1); a question's evidence is one span in its document's "Methods"
    section, or two (the second in the lead) for every other question; questions ending in 0 ask about methods."""
    questions = scores.select("qid", "doc_id", "qtype").unique().sort("qid")
    documents = questions["doc_id"].unique().sort().to_list()
    section_rows = []
    for index, doc in enumerate(documents):
        titles = [("", 1, 0, 100), ("Methods", 1, 100, 200)] + ([("Baseline runs", 2, 200, 300)] * (index % 2 == 0))
        paths = [[doc], [doc, "Methods"], [doc, "Methods", "Baseline runs"]]
        for section_id, (title, level, start, end) in enumerate(titles):
            section_rows.append(
                {
                    "doc_id": doc,
                    "section_id": section_id,
                    "title": title,
                    "level": level,
                    "path": paths[section_id],
                    "para_start": section_id,
                    "para_end": section_id + 1,
                    "start": start,
                    "end": end,
                    "top_section_id": min(section_id, 1),
                }
            )
    sections = pl.DataFrame(section_rows, schema_overrides={"section_id": pl.Int32, "level": pl.Int8})
    queries = questions.with_columns(
        pl.when(pl.col("qid").str.ends_with("0"))
        .then(pl.lit("Which methods?"))
        .otherwise(pl.lit("Why?"))
        .alias("text"),
        pl.when(pl.col("qid").str.ends_with("1"))
        .then(pl.lit([[110, 150], [10, 20]]))
        .otherwise(pl.lit([[110, 150]]))
        .alias("spans"),
    )
    return queries, sections


def synthetic_subgroups(scores: pl.DataFrame, b: int = B, seed: int = SEED) -> pl.DataFrame:
    """What the statistics step's subgroups rule writes for every cell of ``scores``: the pairwise contrasts of
    CONTRAST_SPECS split by every moderator (word tokens as the analyzer, ``factoid`` against the rest)."""
    queries, sections = synthetic_corpus_tables(scores)
    labellings = moderator_labels(MODERATORS, queries, sections, tokenize=lambda text: text.lower().strip("?").split())
    pairwise = [spec for spec in CONTRAST_SPECS if "treatment" in spec]
    return pl.concat(
        [
            subgroup_table(cell, pairwise, labellings, "cov_nDCG@10", B=b, seed=seed).with_columns(
                corpus=pl.lit(corpus), embedder=pl.lit("e5"), reranker=pl.lit("none")
            )
            for (corpus,), cell in scores.group_by(["corpus"], maintain_order=True)
        ]
    )


def synthetic_inputs(**overrides) -> ReportInputs:
    scores = synthetic_scores()
    contrasts = pl.concat(
        [
            contrast_table(cell, CONTRAST_SPECS, ["cov_nDCG@10"], B=B, seed=SEED, mixedlm=False).with_columns(
                corpus=pl.lit(corpus), embedder=pl.lit("e5"), reranker=pl.lit("none")
            )
            for (corpus,), cell in scores.group_by(["corpus"], maintain_order=True)
        ]
    )
    pairs = retrieval_layer_pairs(CONDITIONS)
    layers = pl.concat(
        [
            retrieval_layer_table(synthetic_runs(scores, corpus), pairs).with_columns(
                corpus=pl.lit(corpus), embedder=pl.lit("e5"), reranker=pl.lit("none")
            )
            for corpus in ("alpha", "beta")
        ]
    )
    bm25 = scores.filter(pl.col("condition") == "G2").with_columns(
        condition=pl.lit("bm25:structural/gold"),
        embedder=pl.lit("bm25"),
        gold_top1=(pl.col("cov_nDCG@10") > 0.5).cast(pl.Float64),
    )
    funnel = [
        {"unit": "documents", "step": "in", "reason": "", "count": 14},
        {"unit": "documents", "step": "skipped", "reason": "no_paragraphs", "count": 2},
        {"unit": "documents", "step": "out", "reason": "", "count": 12},
        {"unit": "questions", "step": "in", "reason": "", "count": 60},
        {"unit": "questions", "step": "dropped", "reason": "unanswerable", "count": 12},
        {"unit": "questions", "step": "out", "reason": "", "count": 48},
    ]
    stats = {
        corpus: {
            "documents": 12,
            "queries": 48,
            "sections_per_document_mean": 5.25,
            "depth_histogram": {"2": 5, "3": 7},
            "queries_by_qtype": dict.fromkeys(QTYPES, 16),
            "funnel": funnel,
        }
        for corpus in ("alpha", "beta")
    }
    structural = [70, 90, 120, 150, 200, 340, 65, 110]
    fixed = [100, 110, 120, 125, 130, 140, 118, 122]
    values = dict(
        scores=scores,
        contrasts=contrasts,
        conditions=CONDITIONS,
        primary_metric="cov_nDCG@10",
        contrast_specs=CONTRAST_SPECS,
        bootstrap_iters=B,
        **condition_statistics(scores),
        subgroups=synthetic_subgroups(scores),
        bm25_scores=bm25,
        corpus_stats=stats,
        size_matches=[
            {
                "corpus": c,
                "structure": "gold",
                "chunk set": "fixed/gold",
                "documents": 4,
                "reference_chunks": 8,
                "matched_chunks": 8,
                "reference_mean_tokens": float(np.mean(structural)),
                "matched_mean_tokens": float(np.mean(fixed)),
                "difference": float(np.mean(fixed) - np.mean(structural)),
                "max_doc_difference": 9.0,
            }
            for c in ("alpha", "beta")
        ],
        text_reports=[
            {
                "corpus": "alpha",
                "boundaries": "structural",
                "structure": "gold",
                "prefix": "path:3",
                "chunks": 8,
                "mean_content_tokens": 143.1,
                "mean_prefix_tokens": 12.5,
                "capped_chunks": 2,
                "max_path_depth": 3,
            },
            {
                "corpus": "alpha",
                "boundaries": "structural",
                "structure": "gold",
                "prefix": "none",
                "chunks": 8,
                "mean_content_tokens": 143.1,
                "mean_prefix_tokens": 0.0,
            },
        ],
        chunk_sets={
            (c, s): chunk_table(sizes)
            for c in ("alpha", "beta")
            for s, sizes in (("structural/gold", structural), ("fixed/gold", fixed))
        },
        chunk_bounds={
            (c, s): bounds_file(chunk_table(sizes), t_max=T_MAX, t_min=T_MIN)
            for c in ("alpha", "beta")
            for s, sizes in (("structural/gold", structural), ("fixed/gold", fixed))
        },
        embed_reports=[
            {
                "corpus": "alpha",
                "embedder": "e5",
                "text set": "structural/gold/none",
                "n_texts": 8,
                "max_seq_length": 512,
                "max_tokens": 343,
                "n_truncated": 0,
                "n_encoded": 5,
                "n_from_cache": 3,
                "n_quarantined": 0,
                "dimensions": 384,
                "vector_bytes": 8 * 384 * 4,
            }
        ],
        retrieval_layer=layers,
        **decisive_tables(),
    )
    values.update(overrides)
    return ReportInputs(**values)
