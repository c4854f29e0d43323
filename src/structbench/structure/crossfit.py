"""Which documents a learned inducer trains on, and cross-fitting: structure for a corpus's own documents
from models that never saw them (docs/method.md §5, the learned inducer).

A learned inducer (:mod:`structbench.structure.learned`) trains on documents with their gold headings and
states the sections of documents without. Its training documents are chosen by one rule,
:func:`training_documents`: a document qualifies when its gold tree has at least ``min_sections`` sections
(a document with one section teaches no boundary); where ``max_docs`` caps them, the ``max_docs`` qualifying
documents first in the order of ``sha256(seed:doc_id)`` are kept, a seeded sample that depends on no file order
(a corpus file's head can be unlike its rest: QASPER's first 300 train papers have no subsection at all),
listed in corpus order.

Where the training corpus is the corpus the inducer is applied to (``train.corpus: self``: a Markdown
folder whose documents have headings, the default run's knowledge base), training on a document and then
inducing its sections would grade the inducer on its own training data. :func:`cross_fitted_induction`
splits the documents into ``folds`` folds by a seeded hash of their ids (independent of corpus order and
of the other documents), trains one model per fold on the qualifying documents of the *other* folds, and
induces each fold's documents with that fold's model. Every document's sections therefore come from a
model that never saw it; the folds' training summaries say what each model learned from."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

import numpy as np
import polars as pl

from structbench.structure.learned import induce_learned
from structbench.structure.learned_training import TRAIN_OPTIONS, seeded_order, train_learned_inducer

Encode = Callable[[Sequence[str]], np.ndarray]


def training_documents(
    documents: pl.DataFrame, sections: pl.DataFrame, min_sections: int, max_docs: int | None, seed: int
) -> list[str]:
    """The ids of the documents a learned inducer trains on (module docstring), in corpus order."""
    counts = dict(sections.group_by("doc_id").len().iter_rows())
    qualifying = [doc_id for doc_id in documents["doc_id"] if counts.get(doc_id, 0) >= min_sections]
    if max_docs is None or max_docs >= len(qualifying):
        return qualifying
    kept = set(seeded_order(qualifying, seed)[:max_docs])
    return [doc_id for doc_id in qualifying if doc_id in kept]


def restrict(documents: pl.DataFrame, paragraphs: pl.DataFrame, sections: pl.DataFrame, doc_ids: Sequence[str]):
    """The three corpus tables narrowed to ``doc_ids`` (order kept as in the tables)."""
    keep = pl.col("doc_id").is_in(list(doc_ids))
    return documents.filter(keep), paragraphs.filter(keep), sections.filter(keep)


def document_folds(doc_ids: Sequence[str], folds: int, seed: int) -> list[list[str]]:
    """``doc_ids`` dealt into ``min(folds, len(doc_ids))`` folds in the order of ``sha256(seed:doc_id)``: a
    document's fold depends on the seed and on its id alone, never on the corpus order."""
    if folds < 2:
        raise ValueError(f"cross-fitting needs at least 2 folds, got {folds}")
    ordered = seeded_order(doc_ids, seed)
    n_folds = min(folds, len(ordered))
    return [ordered[fold::n_folds] for fold in range(n_folds)]


def train_options(settings: dict) -> dict:
    """The keyword arguments of :func:`train_learned_inducer` among a ``train`` entry plus the study seed."""
    return {key: value for key, value in settings.items() if key in TRAIN_OPTIONS}


def train_on(
    documents: pl.DataFrame,
    paragraphs: pl.DataFrame,
    sections: pl.DataFrame,
    encode: Encode,
    settings: dict,
    label: str,
):
    """Train one model on the qualifying documents of the tables (:func:`training_documents` with the
    ``train`` ``settings``); a named ValueError, naming ``label``, when none qualifies."""
    doc_ids = training_documents(documents, sections, settings["min_sections"], settings["max_docs"], settings["seed"])
    if not doc_ids:
        raise ValueError(
            f"{label}: no training document has at least {settings['min_sections']} gold sections "
            f"({documents.height} documents offered): a learned inducer learns boundaries from headings"
        )
    tables = restrict(documents, paragraphs, sections, doc_ids)
    model = train_learned_inducer(*tables, encode, label, **train_options(settings))
    # the documents offered but not trained on: too few gold sections, or left out of a max_docs sample
    return replace(model, training={**model.training, "skipped": documents.height - len(doc_ids)}, _payload=[])


def cross_fitted_induction(
    documents: pl.DataFrame,
    paragraphs: pl.DataFrame,
    gold_sections: pl.DataFrame,
    encode: Encode,
    settings: dict,
    options: dict,
    label: str,
) -> tuple[pl.DataFrame, pl.DataFrame, list[dict]]:
    """``(sections, status, folds)``: every document's sections induced by a model trained on the other
    folds (module docstring), the tables in corpus order, and per fold its documents, training documents,
    the model's fingerprint and training summary. ``settings`` is the ``train`` entry with ``seed``;
    ``options`` are :func:`induce_learned`'s."""
    order = {doc_id: position for position, doc_id in enumerate(documents["doc_id"])}
    sections_parts, status_parts, summaries = [], [], []
    for fold, held_out in enumerate(document_folds(list(order), settings["folds"], settings["seed"])):
        others = [doc_id for doc_id in order if doc_id not in set(held_out)]
        model = train_on(
            *restrict(documents, paragraphs, gold_sections, others), encode, settings, f"{label}, fold {fold}"
        )
        held_documents, held_paragraphs, _ = restrict(documents, paragraphs, gold_sections, held_out)
        fold_sections, fold_status = induce_learned(held_documents, held_paragraphs, encode, model, **options)
        sections_parts.append(fold_sections)
        status_parts.append(fold_status)
        summaries.append(
            {"fold": fold, "documents": len(held_out), "fingerprint": model.fingerprint, "training": model.training}
        )
    rank = pl.col("doc_id").replace_strict(order, return_dtype=pl.Int64)
    sections = pl.concat(sections_parts).sort(rank, "section_id")
    status = pl.concat(status_parts).sort(rank)
    return sections, status, summaries
