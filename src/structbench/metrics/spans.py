"""Character-overlap span metrics after Chroma's chunking evaluation (Smith & Troynikov, 2024).

"Evaluating Chunking Strategies for Retrieval" (Chroma technical report, July 2024,
https://research.trychroma.com/evaluating-chunking; reference code ``chunking_evaluation``,
``BaseEvaluation._scores_from_dataset_and_retrievals`` and ``_full_precision_score``) scores a query by
the overlap between the relevant excerpts t_e and the retrieved chunks t_r::

    IoU_q       = |t_e ∩ t_r| / (|t_e| + |t_r| - |t_e ∩ t_r|)
    Precision_q = |t_e ∩ t_r| / |t_r|
    Recall_q    = |t_e ∩ t_r| / |t_e|
    Precision-Ω = precision when every chunk holding an excerpt is retrieved

What this module follows, and where it differs (each difference is on purpose):

- Units: characters of the document's content (the study's offsets), not tokens; a prefix is not
  document content, so it never counts (as everywhere in :mod:`structbench.metrics`).
- |t_r| is the UNION of the retrieved ranges (docs/method.md §10, "one rule: the union"): every
  retrieved character counts once, in precision's and IoU's denominators as in the numerator's
  |t_e ∩ t_r| (the merged intersections, as in Chroma's numerator). Chroma's code instead sums the
  lengths of the top-k chunks (``sum_of_ranges`` of the chunk ranges, never merged), so two overlapping
  chunks pay for their shared characters twice there. The two agree whenever the retrieved chunks of a
  document do not overlap (every tiling chunk set; chunks of different documents never share a
  character) and differ only for an overlapping chunk set (``fixed_overlap``, a peer chunker with an
  overlap), where Chroma's denominator is larger by the repeated characters: on such a set these
  numbers are not Chroma's, by that rule. Chroma's rule is scored beside it, by name:
  ``span_IoU_sum@k`` and ``span_precision_sum@k`` (:func:`span_iou_sum`, :func:`span_precision_sum`).
- Rankings span the corpus: a chunk of another document counts its characters in |t_r| and
  intersects nothing (Chroma likewise skips other corpora only in the numerator).
- Several gold spans per question: t_e is the union of the query's spans, a character set. Chroma
  sums its references' lengths in recall's denominator, which differs only when spans overlap.
- Precision-Ω's chunk set is every chunk of the condition's chunk set in the query's document with
  POSITIVE overlap with a gold span. Chroma's ``intersect_two_ranges`` also accepts an empty overlap
  (a chunk ending where a span starts), which puts a merely adjacent chunk in the set; the default
  (``span_precision_omega``) does not, and ``span_precision_omega_touching`` follows Chroma's rule
  (on Chroma's benchmark, LangChain's recursive splitter at 200 tokens, they differ on 116 of 472
  questions, mean 0.297 against 0.265: benchmarks/chroma_acceptance.py, docs/method.md §10). Most of that gap
  is the chunk extents, not the rule: the condition's chunks hold the whitespace after them, Chroma's do not
  (it places each chunk's stripped text with ``str.find``), so ``span_precision_omega_chroma`` takes both
  Chroma's rule and Chroma's extents (:func:`chroma_extents`; 0.2942 there, Chroma's code 0.2943). As in Chroma's
  code, Ω's denominator is the MERGED union of those chunks plus any gold
  characters no chunk covers (so it is the IoU of t_e with that union; with chunks that tile the
  document it is |t_e| / |∪ chunks|), and does not depend on the run or the embedder. Chroma calls
  it an upper bound; it bounds the precision of retrieving all of t_e, not every precision@k (one
  chunk lying inside a span has precision 1).
- A query without gold spans is refused upstream (:func:`~structbench.metrics.evidence.align_run`),
  as for every metric; a query without run rows scores 0 (Chroma: 0 when a denominator is 0). A
  cutoff above the run's length takes the whole run.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from structbench.datamodel import document_texts
from structbench.defaults import NDCG_K
from structbench.metrics import kernels
from structbench.metrics.evidence import RunEvidence, align_run
from structbench.metrics.registry import ExtraInput, register


def union_length_by(group: np.ndarray, lo: np.ndarray, hi: np.ndarray, n: int, disjoint: bool) -> np.ndarray:
    """``|∪ [lo, hi)|`` per group (``n`` groups), as float64.

    ``disjoint`` (no two intervals of a group overlap) skips the union: the sum of lengths is exact.
    """
    if disjoint:
        return kernels.sum_by(group, hi - lo, n)
    return kernels.union_length_by(group, lo, hi, n)


def gold_characters(evidence: RunEvidence) -> tuple[np.ndarray, bool]:
    """|t_e| per query (the union of its gold spans), and whether every query's spans are disjoint."""
    ev = evidence
    total = kernels.sum_by(ev.span_query, ev.span_length, ev.n_queries)
    union = union_length_by(ev.span_query, ev.span_start, ev.span_end, ev.n_queries, disjoint=False)
    return union, bool((union == total).all())


def retrieved_characters(evidence: RunEvidence, k: int) -> np.ndarray:
    """|t_r| per query: the union of the content ranges of the top k chunks, all documents (a character two
    overlapping chunks share counts once; documents kept apart by ``chunk_key``)."""
    ev = evidence
    row_query = np.repeat(ev.block_query, ev.block_len)
    keep = ev.row_rank <= k
    chunk = ev.row_chunk[keep]
    start = ev.chunk_key[chunk]
    return kernels.union_length_by(row_query[keep], start, start + ev.chunk_length[chunk], ev.n_queries)


def summed_retrieved_characters(evidence: RunEvidence, k: int) -> np.ndarray:
    """Σ_{i<=k} |c_i| per query: the lengths of the top k chunks' content ranges summed, never merged (Chroma's
    ``sum_of_ranges`` of the retrieved chunks), so a character two overlapping chunks share counts twice."""
    ev = evidence
    row_query = np.repeat(ev.block_query, ev.block_len)
    keep = ev.row_rank <= k
    return kernels.sum_by(row_query[keep], ev.chunk_length[ev.row_chunk[keep]], ev.n_queries)


def span_overlap(evidence: RunEvidence, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(|t_e ∩ t_r|, |t_r|, |t_e|)`` per query for the top k chunks (the three counts of every metric)."""
    ev = evidence
    gold, spans_disjoint = gold_characters(ev)
    keep = ev.hit_rank <= k
    # hits are (chunk ∩ span) pieces grouped by query; their union is t_e ∩ t_r
    intersection = union_length_by(
        ev.hit_query[keep], ev.hit_lo[keep], ev.hit_hi[keep], ev.n_queries, ev.chunks_disjoint and spans_disjoint
    )
    return intersection, retrieved_characters(ev, k), gold


def _ratio(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    return np.divide(numerator, denominator, out=np.zeros_like(numerator), where=denominator > 0)


@register(
    "span_IoU",
    cutoff="k",
    label="span IoU@{cutoff}",
    description="Chroma's intersection over union of the gold spans' characters and the top k chunks' "
    "characters (the union of the retrieved ranges: a character two chunks share counts once).",
)
def span_iou(evidence: RunEvidence, k: int = NDCG_K) -> np.ndarray:
    """span IoU@k (Chroma, Smith & Troynikov 2024; conventions in :mod:`structbench.metrics.spans`).

        IoU@k = |t_e ∩ t_r| / (|t_e| + |t_r| - |t_e ∩ t_r|)

    with t_e the union of the query's gold spans and t_r the union of the content ranges of c_1..c_k
    (chunks of other documents included). Worked example: one span [150, 250) of
    document d, chunks [0,100) [100,200) [200,300) of d and [0,50) of e, run [100,200), e[0,50),
    [200,300): IoU@1 = 50 / (100 + 100 - 50) = 1/3, IoU@2 = 50 / (100 + 150 - 50) = 0.25,
    IoU@3 = 100 / (100 + 250 - 100) = 0.4.
    """
    intersection, retrieved, gold = span_overlap(evidence, k)
    return _ratio(intersection, gold + retrieved - intersection)


@register(
    "span_precision",
    cutoff="k",
    label="span precision@{cutoff}",
    description="Chroma's precision: share of the top k chunks' characters (their union) that lie in a gold span.",
)
def span_precision(evidence: RunEvidence, k: int = NDCG_K) -> np.ndarray:
    """span precision@k (Chroma, Smith & Troynikov 2024; conventions in :mod:`structbench.metrics.spans`).

        precision@k = |t_e ∩ t_r| / |t_r|,   0 when the run is empty

    Worked example (the one of :func:`span_iou`): precision@1 = 50/100 = 0.5, precision@2 = 50/150 =
    1/3 (the other document's 50 characters are retrieved but never relevant), precision@3 =
    100/250 = 0.4. Overlapping chunks [0,100), [50,150) against a span [25,125): precision@2 =
    100/150 = 2/3 (the 50 shared characters are retrieved once; Chroma's sum would pay them twice,
    100/200 = 0.5).
    """
    intersection, retrieved, _ = span_overlap(evidence, k)
    return _ratio(intersection, retrieved)


@register(
    "span_IoU_sum",
    cutoff="k",
    label="span IoU@{cutoff} (sum: Chroma's rule)",
    description="span IoU with Chroma's denominator: the top k chunks' lengths summed, not merged (a character two "
    "overlapping chunks share counts twice); equal to span IoU on a chunk set that tiles.",
)
def span_iou_sum(evidence: RunEvidence, k: int = NDCG_K) -> np.ndarray:
    """span IoU@k under Chroma's sum rule (``chunking_evaluation``'s ``iou_denominator``: the
    ``sum_of_ranges`` of the retrieved chunks plus the gold characters they miss)::

        IoU_sum@k = |t_e ∩ t_r| / (Σ_{i<=k} |c_i| + |t_e| - |t_e ∩ t_r|)

    with t_e, t_r as in :func:`span_iou` and |c_i| the content length of the chunk at rank i (other
    documents' chunks included). Σ|c_i| >= |t_r|, with equality when no two retrieved chunks overlap, so
    IoU_sum@k <= IoU@k. Worked example: chunks [0,100), [50,150) against a span [25,125), both
    retrieved: IoU_sum@2 = 100 / (200 + 100 - 100) = 0.5 (IoU@2 = 100/150 = 2/3).
    """
    intersection, _, gold = span_overlap(evidence, k)
    return _ratio(intersection, summed_retrieved_characters(evidence, k) + gold - intersection)


@register(
    "span_precision_sum",
    cutoff="k",
    label="span precision@{cutoff} (sum: Chroma's rule)",
    description="span precision with Chroma's denominator: the top k chunks' lengths summed, not merged (a "
    "character two overlapping chunks share counts twice); equal to span precision on a chunk set that tiles.",
)
def span_precision_sum(evidence: RunEvidence, k: int = NDCG_K) -> np.ndarray:
    """span precision@k under Chroma's sum rule (``chunking_evaluation``'s ``precision_denominator``,
    the ``sum_of_ranges`` of the retrieved chunks)::

        precision_sum@k = |t_e ∩ t_r| / Σ_{i<=k} |c_i|,   0 when the run is empty

    Worked example: chunks [0,100), [50,150) against a span [25,125), both retrieved:
    precision_sum@2 = 100/200 = 0.5 (precision@2 = 100/150 = 2/3: the 50 shared characters paid once).
    """
    intersection, _, _ = span_overlap(evidence, k)
    return _ratio(intersection, summed_retrieved_characters(evidence, k))


@register(
    "span_recall",
    cutoff="k",
    label="span recall@{cutoff}",
    description="Chroma's recall: share of the gold spans' characters that lie in the top k chunks.",
)
def span_char_recall(evidence: RunEvidence, k: int = NDCG_K) -> np.ndarray:
    """span recall@k (Chroma, Smith & Troynikov 2024; conventions in :mod:`structbench.metrics.spans`).

        recall@k = |t_e ∩ t_r| / |t_e|

    Unlike ``R@k`` (share of spans at least half covered) this is the share of gold characters, t_e
    being the union of the spans. Worked example (the one of :func:`span_iou`): recall@1 = 50/100 =
    0.5, recall@3 = 100/100 = 1. Overlapping spans [10,60), [40,90) have |t_e| = 80 (not 100), so a
    chunk [0,100) has recall 1.
    """
    intersection, _, gold = span_overlap(evidence, k)
    return _ratio(intersection, gold)


@register(
    "span_precision_omega",
    label="precision-Ω",
    description="precision-Ω after Chroma (a chunk counts when it shares a character with a gold span): precision "
    "of the condition's chunks that hold any gold character, all retrieved (perfect recall); a property of the "
    "chunking alone.",
)
def precision_omega(evidence: RunEvidence) -> np.ndarray:
    """precision-Ω (Chroma, Smith & Troynikov 2024; conventions in :mod:`structbench.metrics.spans`).

    With C_Ω the chunks of the condition's chunk set in the query's document that overlap a gold span
    by at least one character, U = ∪ C_Ω (merged) and t_e the union of the gold spans::

        Ω = |t_e ∩ U| / |U ∪ t_e| = |t_e ∩ U| / (|U| + |t_e| - |t_e ∩ U|)

    It does not read the run. Worked examples: span [150, 250) over the tiling [0,100) [100,200)
    [200,300): C_Ω = {[100,200), [200,300)}, Ω = 100/200 = 0.5. Overlapping chunks [0,100), [50,150)
    and span [25,125): U = [0,150), Ω = 100/150 = 2/3. Chunks [0,40), [60,100) and span [30,70): the
    gap's 20 gold characters count in the denominator, Ω = 20/100 = 0.2.
    """
    ev = evidence
    gold, spans_disjoint = gold_characters(ev)
    chunks_union = union_length_by(ev.cand_query, ev.cand_start, ev.cand_end, ev.n_queries, ev.chunks_disjoint)
    pair_query = ev.cand_query[ev.pair_cand]
    intersection = union_length_by(
        pair_query, ev.pair_lo, ev.pair_hi, ev.n_queries, ev.chunks_disjoint and spans_disjoint
    )
    return _ratio(intersection, chunks_union + gold - intersection)


@register(
    "span_precision_omega_touching",
    label="precision-Ω (Chroma's rule: touching counts)",
    description="precision-Ω with Chroma's rule: a chunk that only touches a gold span (ends where it starts, "
    "or starts where it ends) also joins the chunk set, as Chroma's intersect_two_ranges accepts an empty overlap.",
)
def precision_omega_touching(evidence: RunEvidence) -> np.ndarray:
    """precision-Ω under Chroma's rule (``_full_precision_score``): C_Ω also holds every chunk of the query's
    document whose overlap with a gold span is empty but that meets it. Such a chunk adds no gold character,
    only its own characters to U, so Ω can only fall: span [100, 200) over the tiling [0,100) [100,200)
    [200,300) has Ω = 1 by :func:`precision_omega` and 100/300 = 1/3 here (both neighbours touch).
    """
    ev = evidence
    gold, spans_disjoint = gold_characters(ev)
    group = np.concatenate((ev.cand_query, ev.touch_query))
    chunks_union = kernels.union_length_by(
        group,
        np.concatenate((ev.cand_start, ev.touch_start)),
        np.concatenate((ev.cand_end, ev.touch_end)),
        ev.n_queries,
    )
    pair_query = ev.cand_query[ev.pair_cand]
    intersection = union_length_by(
        pair_query, ev.pair_lo, ev.pair_hi, ev.n_queries, ev.chunks_disjoint and spans_disjoint
    )
    return _ratio(intersection, chunks_union + gold - intersection)


# ---- Chroma's chunk extents -----------------------------------------------------------------------


def chroma_placement(document_text: str, start: int, end: int) -> tuple[int, int]:
    """Where Chroma's code puts the chunk ``document_text[start:end]``: its text without surrounding whitespace,
    found by ``str.find`` (``chunking_evaluation``'s ``_get_chunks_and_metadata``)::

        placed_start = document_text.find(stripped),   placed_end = placed_start + len(stripped)

    so the whitespace after a chunk is never part of it, and text that occurs twice lands on its first occurrence
    whatever the chunk's own offsets (``"ab ab"``: the chunk ``[3, 5)`` is placed at ``[0, 2)``).
    """
    stripped = document_text[start:end].strip()
    placed_start = document_text.find(stripped)
    return placed_start, placed_start + len(stripped)


def chroma_extents(chunks: pl.DataFrame, documents: pl.DataFrame) -> pl.DataFrame:
    """The chunk set with every chunk's ``start, end`` replaced by :func:`chroma_placement` in its document's
    text (``documents``: doc_id, text); ids, order and every other column kept. A chunk of whitespace only has
    no extent and is an error naming it."""
    texts = document_texts(documents)
    placed = [
        chroma_placement(texts[doc], start, end)
        for doc, start, end in chunks.select("doc_id", "start", "end").iter_rows()
    ]
    starts, ends = (list(column) for column in zip(*placed)) if placed else ([], [])
    empty = [chunk for chunk, a, b in zip(chunks["chunk_id"], starts, ends) if b <= a]
    if empty:
        raise ValueError(f"chunks without non-space text cannot be placed as Chroma places them: chunk_id {empty[:5]}")
    return chunks.with_columns(
        pl.Series("start", starts, dtype=chunks.schema["start"]), pl.Series("end", ends, dtype=chunks.schema["end"])
    )


def gold_queries(evidence: RunEvidence) -> pl.DataFrame:
    """The queries of ``evidence`` as a queries table (qid, doc_id, qtype, spans), to align them with another
    placement of the chunk set."""
    ev = evidence
    spans = [[] for _ in range(ev.n_queries)]
    for query, start, end in zip(ev.span_query.tolist(), ev.span_start.tolist(), ev.span_end.tolist()):
        spans[query].append([start, end])
    return pl.DataFrame(
        {"qid": ev.qid, "doc_id": ev.doc_id, "qtype": ev.qtype, "spans": spans},
        schema={"qid": pl.String, "doc_id": pl.String, "qtype": pl.String, "spans": pl.List(pl.List(pl.Int64))},
    )


_NO_RUN = pl.DataFrame(schema={"qid": pl.String, "rank": pl.Int64, "chunk_id": pl.Int64})


@register(
    "span_precision_omega_chroma",
    label="precision-Ω (Chroma's rule and chunk extents)",
    description="precision-Ω as Chroma's code computes it: touching counts, and each chunk is its text without "
    "surrounding whitespace placed by str.find (repeated text on its first occurrence).",
    requires=(
        ExtraInput(
            "chroma_chunks",
            "the condition's chunk set placed as Chroma places it (structbench.metrics.spans.chroma_extents)",
        ),
    ),
)
def precision_omega_chroma(evidence: RunEvidence, chroma_chunks: pl.DataFrame) -> np.ndarray:
    """precision-Ω as Chroma's ``_full_precision_score`` computes it: :func:`precision_omega_touching` over the
    chunk set with Chroma's extents (:func:`chroma_extents`), not the condition's own::

        c'     = [find(strip(c)), find(strip(c)) + |strip(c)|)      for each chunk c of the query's document
        C_Ω    = {c' : |c' ∩ g| > 0 or c' meets g, for a gold span g}
        Ω      = |t_e ∩ U| / (|U| + |t_e| - |t_e ∩ U|),   U = ∪ C_Ω

    The condition's chunks include the whitespace after them (a tiling set covers every character), so a
    span that starts after a chunk's final space touches that chunk there, and under the touching rule the
    whole chunk joins U; with Chroma's extents the space lies between chunks and only a span starting exactly
    at a chunk's stripped end touches it. Worked example: text ``"aaaa bbbb"``, chunks [0,5) (``"aaaa "``)
    and [5,9), span [5,9): :func:`precision_omega_touching` = 4/9, this = 4/4 = 1 (the first chunk ends at
    4 here). Does not read the run.
    """
    return precision_omega_touching(align_run(_NO_RUN, gold_queries(evidence), chroma_chunks))
