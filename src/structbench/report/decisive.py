"""The questions that decide a contrast (docs/method.md §15, "Decisive questions"): computed here, shown by
:mod:`.decisive_table` and by ``structbench show`` (:mod:`structbench.show`).

A contrast's mean delta is a sum over questions, and the few it moved most say what the treatment did to a
ranking: a heading path that put the evidence chunk first, a placebo path that pulled in a chunk of another
paper. For each pairwise contrast of a cell (treatment − control):

- the ``per_side`` questions with the largest wins and the ``per_side`` with the largest losses on the
  contrast's reading (the first metric of its family's reading, :func:`structbench.stats.readings.family_reading`;
  per-question delta ``score_T(q) − score_C(q)`` over the questions scored under both, paired as the statistics
  step pairs them, :func:`structbench.stats.paired.paired_deltas`). Equal deltas are ordered by ``qid``, so the
  choice is deterministic: wins by delta descending, losses by delta ascending, then ``qid`` ascending;
- for each of them, the top ``top_k`` chunks of both rankings: the chunk's prefix (heading path, placebo path or
  situating context: what the condition prepended) apart from its content, each an excerpt, and how much of
  the chunk is evidence (:func:`ranked_chunks`), with the rank of the first evidence chunk of each ranking;
- the flip counts (:func:`flip_counts`): over every paired question, whether the first evidence chunk is in the
  top :data:`FLIP_CUTOFF` under each condition: it *enters* (in under the treatment, not under the control),
  *leaves* (the reverse), stays in or stays out.

The *first evidence chunk* is the highest-ranked chunk that is relevant under the binary rule of §10 (MRR's: its
rank is ``1 / RR``), read from :func:`structbench.metrics.align_run` over the whole run, so it is the rank the
metrics saw. A chunk's evidence marks are the same rule's terms: ``evidence_chars`` = ``|c ∩ ∪g|`` (content
characters of the chunk inside a gold span of the question; a chunk of another document has none),
``chunk_share`` = that over ``|c|``, ``evidence_share`` = ``(1/S) · Σ_j |c ∩ g_j| / |g_j|`` (the share of the
question's evidence the chunk holds, each span weighted as coverage-nDCG weighs it: its gain before the
novelty term), and ``relevant`` = the binary rule (:func:`structbench.metrics.kernels.binary_relevant`) for
some span.

The report's size stays bounded whatever the corpus: excerpts are capped (:data:`CONTENT_CHARS`,
:data:`PREFIX_CHARS`, :data:`QUESTION_CHARS`, :data:`EVIDENCE_CHARS`) and a contrast has at most
``2 · per_side · 2 · top_k`` chunk rows. Memory is bounded by one condition's run and tables at a time: the
runs are read through ``load`` one condition after another, each reduced to its first-evidence ranks and the
few rankings shown before the next is read.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from structbench.datamodel import document_texts
from structbench.defaults import (
    CONTENT_EXCERPT_CHARS,
    DECISIVE_PER_SIDE,
    DECISIVE_TOP_K,
    NDCG_K,
    PREFIX_EXCERPT_CHARS,
)
from structbench.metrics import align_run
from structbench.metrics.kernels import binary_relevant
from structbench.metrics.registry import metric_columns
from structbench.stats.paired import paired_deltas, win_tie_loss
from structbench.stats.readings import family_reading

CONTENT_CHARS = CONTENT_EXCERPT_CHARS  # a chunk's content excerpt, characters
PREFIX_CHARS = PREFIX_EXCERPT_CHARS  # a chunk's prefix excerpt
QUESTION_CHARS = 300  # the question
EVIDENCE_CHARS = 300  # the question's evidence (its gold spans' text)
FLIP_CUTOFF = NDCG_K  # "in the top 10": the primary metric's cutoff
WIN, LOSS = "win", "loss"
TREATMENT, CONTROL = "treatment", "control"
ELLIPSIS = "…"

RANKED_CHUNKS = {
    "qid": pl.String,
    "rank": pl.Int32,
    "chunk_id": pl.Int64,
    "chunk_doc_id": pl.String,
    "prefix": pl.String,
    "content": pl.String,
    "chunk_chars": pl.Int64,
    "evidence_chars": pl.Int64,
    "chunk_share": pl.Float64,
    "evidence_share": pl.Float64,
    "relevant": pl.Boolean,
}
# One row per (contrast, shown question, arm, rank): the question once per arm, each arm's ranked chunks.
QUESTIONS = {
    "contrast": pl.String,
    "treatment": pl.String,
    "control": pl.String,
    "metric": pl.String,
    "outcome": pl.String,
    "position": pl.Int32,
    "qid": pl.String,
    "doc_id": pl.String,
    "qtype": pl.String,
    "question": pl.String,
    "evidence": pl.String,
    "score_treatment": pl.Float64,
    "score_control": pl.Float64,
    "delta": pl.Float64,
    "first_evidence_treatment": pl.Int32,
    "first_evidence_control": pl.Int32,
    "arm": pl.String,
    "condition": pl.String,
    **{name: dtype for name, dtype in RANKED_CHUNKS.items() if name != "qid"},
}
FLIPS = {
    "contrast": pl.String,
    "treatment": pl.String,
    "control": pl.String,
    "metric": pl.String,
    "n_queries": pl.Int64,
    "wins": pl.Int64,
    "ties": pl.Int64,
    "losses": pl.Int64,
    "cutoff": pl.Int64,
    "enters": pl.Int64,
    "leaves": pl.Int64,
    "stays_in": pl.Int64,
    "stays_out": pl.Int64,
}


@dataclass(frozen=True)
class ConditionRun:
    """One condition's ranking in a cell and the tables it is read with: its run (``datamodel.RUNS``), its chunk
    set (``CHUNKS``) and its rendered texts (``TEXTS``: each chunk's prefix and the text it embedded)."""

    runs: pl.DataFrame
    chunks: pl.DataFrame
    texts: pl.DataFrame


@dataclass(frozen=True)
class Decisive:
    """What :func:`decisive_questions` returns: ``questions``, one row per (contrast, shown question, arm, rank),
    and ``flips``, one row per contrast (:data:`FLIPS`)."""

    questions: pl.DataFrame
    flips: pl.DataFrame


def excerpt(text: str | None, limit: int) -> str:
    """``text`` with every run of whitespace made one space, cut to at most ``limit`` characters: at the last
    word boundary of its second half where there is one, ending in "…" when cut."""
    flat = re.sub(r"\s+", " ", text or "").strip()
    if len(flat) <= limit:
        return flat
    cut = flat[: max(limit - 1, 0)]
    space = cut.rfind(" ")
    if space >= limit // 2:
        cut = cut[:space]
    return cut.rstrip() + ELLIPSIS


def evidence_excerpt(text: str, spans: Sequence[Sequence[int]], limit: int = EVIDENCE_CHARS) -> str:
    """The text of a question's gold spans (``[start, end)`` content offsets into its document's ``text``),
    joined by " … " and cut to ``limit`` characters (:func:`excerpt`)."""
    return excerpt(f" {ELLIPSIS} ".join(text[start:end] for start, end in spans), limit)


def reading_metric(family: str, scores: pl.DataFrame, primary_metric: str) -> str:
    """The metric a contrast of ``family`` is read on first (:func:`~structbench.stats.readings.family_reading`
    over the metrics ``scores`` holds): the primary metric for every family of chunk runs."""
    metrics = metric_columns(scores)
    reading = family_reading(family, metrics, primary_metric)
    if not reading:
        raise ValueError(f"scores hold no metric column to read contrasts on (columns: {scores.columns})")
    return reading[0]


def paired_questions(scores: pl.DataFrame, treatment: str, control: str, metric: str) -> pl.DataFrame:
    """``qid, doc_id, qtype, score_treatment, score_control, delta`` for every question scored under both
    conditions in ``scores`` (one cell's per-query scores, a ``condition`` column), ``delta`` =
    ``score_treatment − score_control`` on ``metric``: the pairs of the statistics step
    (:func:`structbench.stats.paired.paired_deltas`), sorted by ``qid``."""
    if metric not in scores.columns:
        raise ValueError(f"scores have no column {metric!r} (they hold {', '.join(metric_columns(scores))})")
    arms = {}
    for arm, condition in ((TREATMENT, treatment), (CONTROL, control)):
        arms[arm] = scores.filter(pl.col("condition") == condition)
        if arms[arm].is_empty():
            raise ValueError(f"scores hold no row of condition {condition!r} (the contrast's {arm})")
    pairs = paired_deltas(arms[TREATMENT], arms[CONTROL], metric)
    paired = pl.DataFrame({"qid": pairs.qid, "delta": pairs.delta}, schema={"qid": pl.String, "delta": pl.Float64})
    treated = arms[TREATMENT].select("qid", "doc_id", "qtype", pl.col(metric).alias("score_treatment"))
    controlled = arms[CONTROL].select("qid", pl.col(metric).alias("score_control"))
    return (
        paired.join(treated, on="qid", how="left", maintain_order="left")
        .join(controlled, on="qid", how="left", maintain_order="left")
        .select("qid", "doc_id", "qtype", "score_treatment", "score_control", "delta")
        .sort("qid")
    )


def decisive_selection(paired: pl.DataFrame, per_side: int = DECISIVE_PER_SIDE) -> pl.DataFrame:
    """The ``per_side`` largest wins (``delta > 0``, by delta descending) and the ``per_side`` largest losses
    (``delta < 0``, by delta ascending) of :func:`paired_questions`, equal deltas in ``qid`` order, with
    ``outcome`` (``win`` / ``loss``) and ``position`` (1-based within the outcome). Ties (``delta == 0``) decide
    nothing and are never shown."""
    if per_side < 1:
        raise ValueError(f"per_side must be at least 1, got {per_side}")
    wins = paired.filter(pl.col("delta") > 0).sort([pl.col("delta"), pl.col("qid")], descending=[True, False])
    losses = paired.filter(pl.col("delta") < 0).sort(["delta", "qid"])
    sides = [
        side.head(per_side).with_columns(
            outcome=pl.lit(outcome), position=pl.int_range(1, pl.len() + 1, dtype=pl.Int32)
        )
        for outcome, side in ((WIN, wins), (LOSS, losses))
    ]
    return pl.concat(sides).select("outcome", "position", *paired.columns)


def first_evidence_ranks(run: ConditionRun, queries: pl.DataFrame) -> pl.DataFrame:
    """``qid, first_evidence``: per question of ``queries``, the rank of the highest-ranked chunk of ``run`` that
    is relevant under the binary rule (docs/method.md §10; null when no ranked chunk is), over the whole run, from
    the alignment every metric reads (:func:`structbench.metrics.align_run`; so ``1 / first_evidence`` is the
    question's reciprocal rank)."""
    evidence = align_run(run.runs, queries, run.chunks)
    first = np.ones(len(evidence.relevant_query), dtype=bool)
    first[1:] = evidence.relevant_query[1:] != evidence.relevant_query[:-1]
    ranks = pl.DataFrame(
        {
            "qid": evidence.qid[evidence.relevant_query[first]].astype(str),
            "first_evidence": evidence.relevant_rank[first],
        },
        schema={"qid": pl.String, "first_evidence": pl.Int32},
    )
    everyone = pl.DataFrame({"qid": evidence.qid.astype(str)}, schema={"qid": pl.String})
    return everyone.join(ranks, on="qid", how="left", maintain_order="left")


def ranked_chunks(
    run: ConditionRun,
    queries: pl.DataFrame,
    qids: Sequence[str],
    top_k: int = DECISIVE_TOP_K,
    *,
    content_chars: int = CONTENT_CHARS,
    prefix_chars: int = PREFIX_CHARS,
) -> pl.DataFrame:
    """The top ``top_k`` chunks of ``run`` for each of ``qids`` (:data:`RANKED_CHUNKS`, by qid then rank): the
    chunk's document, its prefix and content as excerpts (the prefix is what the condition prepended, from its
    texts table; the content is the embedded text after it), and its evidence marks against the question's gold
    spans (module docstring: ``evidence_chars``, ``chunk_share``, ``evidence_share``, ``relevant``). A ranked chunk
    missing from the chunk set or the texts is an error naming it."""
    if top_k < 1:
        raise ValueError(f"top_k must be at least 1, got {top_k}")
    wanted = pl.Series("qid", list(qids), dtype=pl.String)
    rows = (
        run.runs.filter(pl.col("qid").is_in(wanted.implode()) & (pl.col("rank") <= top_k))
        .select("qid", pl.col("rank").cast(pl.Int32), pl.col("chunk_id").cast(pl.Int64))
        .sort("qid", "rank")
    )
    chunk_rows = run.chunks.select(
        "chunk_id", pl.col("doc_id").alias("chunk_doc_id"), pl.col("start").cast(pl.Int64), pl.col("end").cast(pl.Int64)
    )
    text_rows = run.texts.select("chunk_id", "prefix", "text_for_embedding")
    rows = rows.join(chunk_rows, on="chunk_id", how="left", maintain_order="left").join(
        text_rows, on="chunk_id", how="left", maintain_order="left"
    )
    for missing, table in ((rows["start"].is_null(), "chunk set"), (rows["text_for_embedding"].is_null(), "texts")):
        if missing.any():
            absent = sorted(set(rows.filter(missing)["chunk_id"].to_list()))
            raise ValueError(f"ranked chunk_id {absent[:5]} not in the condition's {table} (a run of another set?)")
    marks = _evidence_marks(rows, queries)
    prefix = rows["prefix"].fill_null("")
    contents = [text[len(p) :] for text, p in zip(rows["text_for_embedding"].to_list(), prefix.to_list())]
    return pl.DataFrame(
        {
            "qid": rows["qid"],
            "rank": rows["rank"],
            "chunk_id": rows["chunk_id"],
            "chunk_doc_id": rows["chunk_doc_id"],
            "prefix": [excerpt(p, prefix_chars) for p in prefix.to_list()],
            "content": [excerpt(c, content_chars) for c in contents],
            "chunk_chars": rows["end"] - rows["start"],
            **marks,
        },
        schema=RANKED_CHUNKS,
    )


def _evidence_marks(rows: pl.DataFrame, queries: pl.DataFrame) -> dict[str, np.ndarray]:
    """Per row of ``rows`` (qid, chunk_doc_id, start, end): ``evidence_chars``, ``chunk_share``,
    ``evidence_share`` and ``relevant`` against the gold spans of the row's question (module docstring). Gold spans
    of one question are sorted and disjoint (the corpus check, docs/method.md §3), so their overlaps add up."""
    n = rows.height
    spans = (
        queries.filter(pl.col("qid").is_in(rows["qid"].unique().implode()))
        .select("qid", "doc_id", pl.col("spans").list.len().alias("n_spans"), "spans")
        .explode("spans")
        .select(
            "qid",
            "doc_id",
            "n_spans",
            pl.col("spans").list.get(0).cast(pl.Int64).alias("span_start"),
            pl.col("spans").list.get(1).cast(pl.Int64).alias("span_end"),
        )
    )
    unknown = sorted(set(rows["qid"].to_list()) - set(spans["qid"].to_list()))
    if unknown:
        raise ValueError(f"run qid {unknown[:5]} not among the queries")
    pairs = (
        rows.select("qid", "chunk_doc_id", "start", "end")
        .with_row_index("row")
        .join(spans, on="qid", how="inner")
        .filter(pl.col("doc_id") == pl.col("chunk_doc_id"))
        .with_columns(
            overlap=pl.max_horizontal(
                pl.min_horizontal("end", "span_end") - pl.max_horizontal("start", "span_start"), pl.lit(0)
            )
        )
    )
    row = pairs["row"].to_numpy().astype(np.int64)
    overlap = pairs["overlap"].to_numpy().astype(np.int64)
    span_length = (pairs["span_end"] - pairs["span_start"]).to_numpy().astype(np.int64)
    chunk_length = (pairs["end"] - pairs["start"]).to_numpy().astype(np.int64)
    evidence_chars = np.bincount(row, weights=overlap, minlength=n).astype(np.int64)
    coverage = np.bincount(row, weights=overlap / span_length / pairs["n_spans"].to_numpy(), minlength=n)
    relevant = np.bincount(row, weights=binary_relevant(overlap, chunk_length, span_length), minlength=n) > 0
    lengths = (rows["end"] - rows["start"]).to_numpy().astype(np.int64)
    chunk_share = np.divide(evidence_chars, lengths, out=np.zeros(n), where=lengths > 0)
    return {
        "evidence_chars": evidence_chars,
        "chunk_share": chunk_share,
        "evidence_share": coverage,
        "relevant": relevant,
    }


def evidence_mark(row: Mapping, first_evidence: int | None) -> str:
    """A ranked chunk's evidence in words, from a row of :func:`ranked_chunks` with its question's ``doc_id``:
    relevant or partial with its two shares (marked ``first evidence`` at rank ``first_evidence``), ``–`` for none,
    or ``other document (<doc_id>)``."""
    if row["chunk_doc_id"] != row["doc_id"]:
        return f"other document ({row['chunk_doc_id']})"
    if not row["evidence_chars"]:
        return "–"
    mark = (
        f"{'relevant' if row['relevant'] else 'partial'}: {_percent(row['chunk_share'])} of the chunk, "
        f"{_percent(row['evidence_share'])} of the evidence"
    )
    return f"first evidence · {mark}" if row["rank"] == first_evidence else mark


def _percent(share: float) -> str:
    """A share as a whole percentage; a nonzero share below 0.5% as "<1%", so partial evidence never reads 0%."""
    return "<1%" if 0 < share < 0.005 else f"{share:.0%}"


def flip_counts(first_treatment: pl.DataFrame, first_control: pl.DataFrame, qids: Sequence[str], cutoff: int) -> dict:
    """Over ``qids``: how many questions' first evidence chunk (``qid, first_evidence`` of each arm,
    :func:`first_evidence_ranks`; null: none ranked) *enters* the top ``cutoff`` (within it under the treatment,
    not under the control), *leaves* it (the reverse), ``stays_in`` or ``stays_out``."""
    both = (
        pl.DataFrame({"qid": list(qids)}, schema={"qid": pl.String})
        .join(first_treatment.rename({"first_evidence": "t"}), on="qid", how="left", maintain_order="left")
        .join(first_control.rename({"first_evidence": "c"}), on="qid", how="left", maintain_order="left")
    )
    in_t = (both["t"] <= cutoff).fill_null(False).to_numpy()
    in_c = (both["c"] <= cutoff).fill_null(False).to_numpy()
    return {
        "cutoff": cutoff,
        "enters": int((in_t & ~in_c).sum()),
        "leaves": int((~in_t & in_c).sum()),
        "stays_in": int((in_t & in_c).sum()),
        "stays_out": int((~in_t & ~in_c).sum()),
    }


def decisive_questions(
    scores: pl.DataFrame,
    contrasts: Sequence[Mapping],
    load: Callable[[str], ConditionRun],
    queries: pl.DataFrame,
    documents: pl.DataFrame,
    primary_metric: str,
    *,
    per_side: int = DECISIVE_PER_SIDE,
    top_k: int = DECISIVE_TOP_K,
    cutoff: int = FLIP_CUTOFF,
) -> Decisive:
    """Every pairwise contrast's decisive questions in one cell (module docstring).

    ``scores``: the cell's per-query scores of every condition a contrast names (a ``condition`` column);
    ``contrasts``: ``{name, treatment, control, family}`` each (a dose-response has no place here and is an
    error); ``load(condition)``: that condition's :class:`ConditionRun`, called once per condition, in contrast
    order; ``queries`` and ``documents``: the corpus's (the questions' text, type and gold spans; the documents'
    text for the evidence excerpts). Returns the ``questions`` rows, contrast by contrast in the given order,
    wins before losses, each question's treatment rows before its control rows, by rank; and the ``flips``."""
    selections, flips = {}, []
    for spec in contrasts:
        if not spec.get("treatment") or not spec.get("control"):
            raise ValueError(f"contrast {spec.get('name')!r} is not pairwise (treatment − control)")
        metric = reading_metric(spec.get("family", ""), scores, primary_metric)
        paired = paired_questions(scores, spec["treatment"], spec["control"], metric)
        selections[spec["name"]] = (metric, paired, decisive_selection(paired, per_side))
    conditions = list(dict.fromkeys(c for spec in contrasts for c in (spec["treatment"], spec["control"])))
    first, shown = {}, {}
    for condition in conditions:
        wanted = sorted(
            {
                qid
                for spec in contrasts
                if condition in (spec["treatment"], spec["control"])
                for qid in selections[spec["name"]][2]["qid"].to_list()
            }
        )
        run = load(condition)
        first[condition] = first_evidence_ranks(run, queries)
        shown[condition] = ranked_chunks(run, queries, wanted, top_k)
        del run  # one condition's run and tables in memory at a time
    selected = {qid for _, _, selection in selections.values() for qid in selection["qid"].to_list()}
    questions = _question_texts(queries.filter(pl.col("qid").is_in(sorted(selected))), documents)
    blocks = []
    for spec in contrasts:
        metric, paired, selection = selections[spec["name"]]
        treatment, control = spec["treatment"], spec["control"]
        wins, ties, losses = win_tie_loss(paired["delta"].to_numpy())
        counts = flip_counts(first[treatment], first[control], paired["qid"].to_list(), cutoff)
        flips.append(
            {
                "contrast": spec["name"],
                "treatment": treatment,
                "control": control,
                "metric": metric,
                "n_queries": paired.height,
                "wins": wins,
                "ties": ties,
                "losses": losses,
                **counts,
            }
        )
        blocks.append(_contrast_rows(spec, metric, selection, questions, first, shown))
    rows = pl.concat(blocks).select(list(QUESTIONS)) if blocks else pl.DataFrame(schema=QUESTIONS)
    return Decisive(rows.cast(QUESTIONS), pl.DataFrame(flips, schema=FLIPS))


def _question_texts(queries: pl.DataFrame, documents: pl.DataFrame) -> pl.DataFrame:
    """``qid, question, evidence``: each question's text and its evidence, both as excerpts."""
    texts = document_texts(documents.filter(pl.col("doc_id").is_in(queries["doc_id"].unique().implode())))
    missing = sorted(set(queries["doc_id"].to_list()) - set(texts))
    if missing:
        raise ValueError(f"queries name documents missing from the documents table: {missing[:5]}")
    return pl.DataFrame(
        {
            "qid": queries["qid"],
            "question": [excerpt(text, QUESTION_CHARS) for text in queries["text"].to_list()],
            "evidence": [
                evidence_excerpt(texts[doc], spans)
                for doc, spans in zip(queries["doc_id"].to_list(), queries["spans"].to_list())
            ],
        },
        schema={"qid": pl.String, "question": pl.String, "evidence": pl.String},
    )


def _contrast_rows(
    spec: Mapping,
    metric: str,
    selection: pl.DataFrame,
    questions: pl.DataFrame,
    first: Mapping[str, pl.DataFrame],
    shown: Mapping[str, pl.DataFrame],
) -> pl.DataFrame:
    """One contrast's rows: each selected question (with its text, evidence and both arms' first-evidence ranks)
    once per arm, joined with that arm's ranked chunks (one row with a null rank where the ranking is empty)."""
    treatment, control = spec["treatment"], spec["control"]
    base = (
        selection.with_columns(_order=pl.int_range(pl.len(), dtype=pl.Int64))
        .join(questions, on="qid", how="left", maintain_order="left")
        .join(
            first[treatment].rename({"first_evidence": "first_evidence_treatment"}),
            on="qid",
            how="left",
            maintain_order="left",
        )
        .join(
            first[control].rename({"first_evidence": "first_evidence_control"}),
            on="qid",
            how="left",
            maintain_order="left",
        )
        .with_columns(
            contrast=pl.lit(spec["name"], pl.String),
            treatment=pl.lit(treatment, pl.String),
            control=pl.lit(control, pl.String),
            metric=pl.lit(metric, pl.String),
        )
    )
    arms = []
    for order, (arm, condition) in enumerate(((TREATMENT, treatment), (CONTROL, control))):
        labelled = base.with_columns(arm=pl.lit(arm, pl.String), condition=pl.lit(condition), _arm=pl.lit(order))
        arms.append(labelled.join(shown[condition], on="qid", how="left", maintain_order="left"))
    return pl.concat(arms).sort("_order", "_arm", "rank", nulls_last=True).select(list(QUESTIONS))
