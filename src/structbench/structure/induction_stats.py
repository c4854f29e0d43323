"""Statistics of induced structure for the report: each inducer's statuses and sections against gold.

Pure functions over tables. This module imports nothing of the LLM layer (``structbench.llm`` reaches
the model libraries), so the CPU jobs that summarize an LLM step stay light.
"""

from __future__ import annotations

import polars as pl

from structbench.structure.agreement import agreement_summary, baseline_agreement, nonempty_sections_per_doc

INDUCTION_STATUSES = ("usable", "repaired", "failed")
# agreement_summary's document and section counts, which induction_summary already reports
AGREEMENT_COUNTS = ("n_docs", "sections_per_doc", "gold_sections_per_doc")


def identical_span_share(induced_chunks: pl.DataFrame, gold_chunks: pl.DataFrame) -> float:
    """Share of induced chunk spans byte-identical to a gold chunk span (Kuehlkamp et al., table 9).

    A span is ``(doc_id, start, end)``; since both chunk sets tile the same flat texts, equal offsets
    mean byte-identical text. Only documents present in both tables count; NaN when there are none."""
    common = set(induced_chunks["doc_id"].unique().to_list()) & set(gold_chunks["doc_id"].unique().to_list())
    induced = induced_chunks.filter(pl.col("doc_id").is_in(list(common))).select("doc_id", "start", "end")
    if induced.height == 0:
        return float("nan")
    gold = gold_chunks.select("doc_id", "start", "end").unique()
    matched = induced.join(gold, on=["doc_id", "start", "end"], how="semi").height
    return matched / induced.height


def mean_sections_per_document(sections: pl.DataFrame, doc_ids: list[str]) -> float:
    """Mean number of section rows per document of ``doc_ids`` (a document with none counts 0)."""
    if not doc_ids:
        return float("nan")
    return sections.filter(pl.col("doc_id").is_in(doc_ids)).height / len(doc_ids)


def induction_summary(
    status: pl.DataFrame,
    induced_sections: pl.DataFrame,
    gold_sections: pl.DataFrame,
    induced_chunks: pl.DataFrame,
    gold_chunks: pl.DataFrame,
) -> dict:
    """One inducer on one corpus: documents per status (``induction.STATUS``: usable = an answer passed
    the check, repaired = the deterministic repair changed it, failed = single-section fallback), how
    many needed the correction round, mean sections per document induced vs gold (same documents), and
    the titles the repair cut to the answer schema's bound (``shortened_titles``), the share of induced
    structural chunk spans byte-identical to gold ones (:func:`identical_span_share`),
    and the segmentation's agreement with gold (:func:`structbench.structure.agreement.agreement_summary`:
    Pk, WindowDiff, boundary precision / recall / F1 within one paragraph, all levels and top level),
    beside the same agreement of the baselines built from gold's counts (``baselines``:
    :data:`structbench.structure.agreement.BASELINES`), and gold's sections per document without its
    empty parent headings (``mean_sections_gold_nonempty``)."""
    doc_ids = status["doc_id"].to_list()
    counts = dict(status["status"].value_counts().iter_rows())
    unknown = sorted(set(counts) - set(INDUCTION_STATUSES))
    if unknown:
        raise ValueError(f"induction status table holds unknown statuses {unknown}")
    return {
        "documents": len(doc_ids),
        **{status_name: int(counts.get(status_name, 0)) for status_name in INDUCTION_STATUSES},
        "corrected": int((status["rounds"] > 1).sum()),
        "shortened_titles": int(status["shortened_titles"].sum()) if "shortened_titles" in status.columns else 0,
        "windows": int(status["windows"].sum()),
        "mean_sections_induced": mean_sections_per_document(induced_sections, doc_ids),
        "mean_sections_gold": mean_sections_per_document(gold_sections, doc_ids),
        "mean_sections_gold_nonempty": nonempty_sections_per_doc(gold_sections, doc_ids),
        "identical_span_share": identical_span_share(induced_chunks, gold_chunks),
        **{
            key: value
            for key, value in agreement_summary(induced_sections, gold_sections, doc_ids).items()
            if key not in AGREEMENT_COUNTS
        },
        "baselines": {
            name: {key: value for key, value in summary.items() if key not in ("n_docs", "gold_sections_per_doc")}
            for name, summary in baseline_agreement(gold_sections, doc_ids).items()
        },
    }
