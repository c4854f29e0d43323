"""Cross-fitting a learned inducer on a corpus's own headings (structbench.structure.crossfit)."""

import hashlib

import polars as pl
import pytest
from segmentation_testing import TOPICS, HashedBagOfWords, topic_paragraph

from structbench.corpus.build import build_tables
from structbench.corpus.verify import verify_sections
from structbench.datamodel import ParsedDocument, SectionSpec
from structbench.structure import crossfit


def test_folds_depend_on_the_seed_and_ids_alone():
    ids = [f"doc{i}" for i in range(11)]
    folds = crossfit.document_folds(ids, 4, seed=7)
    assert len(folds) == 4 and sorted(sum(folds, [])) == sorted(ids)
    assert [sorted(f) for f in crossfit.document_folds(list(reversed(ids)), 4, seed=7)] == [sorted(f) for f in folds]
    assert crossfit.document_folds(ids, 4, seed=8) != folds
    assert len(crossfit.document_folds(ids[:3], 5, seed=7)) == 3  # at most one fold per document
    with pytest.raises(ValueError, match="at least 2 folds"):
        crossfit.document_folds(ids, 1, seed=7)


def test_training_documents_need_min_sections_and_keep_corpus_order():
    documents = pl.DataFrame({"doc_id": ["c", "a", "b", "d"]})
    sections = pl.DataFrame({"doc_id": ["a", "a", "b", "c", "c", "c", "d", "d"]})
    assert crossfit.training_documents(documents, sections, 2, None, 0) == ["c", "a", "d"]
    assert crossfit.training_documents(documents, sections, 3, None, 0) == ["c"]
    assert crossfit.training_documents(documents, sections, 2, 5, 0) == ["c", "a", "d"]


def test_max_docs_keeps_a_seeded_sample_not_the_head_of_the_file():
    doc_ids = [f"doc{i:02d}" for i in range(40)]
    documents = pl.DataFrame({"doc_id": doc_ids})
    sections = pl.DataFrame({"doc_id": [doc_id for doc_id in doc_ids for _ in range(2)]})
    kept = crossfit.training_documents(documents, sections, 2, 10, 7)
    # the ten smallest sha256("7:<id>"), listed in corpus order; not the first ten ids
    expected = sorted(doc_ids, key=lambda d: hashlib.sha256(f"7:{d}".encode()).hexdigest())[:10]
    assert kept == sorted(expected, key=doc_ids.index)
    assert kept != doc_ids[:10]
    # a document's membership follows its id and the seed, not the corpus order
    assert crossfit.training_documents(documents.reverse(), sections, 2, 10, 7) == kept[::-1]
    assert crossfit.training_documents(documents, sections, 2, 10, 8) != kept


def topic_corpus(n_docs: int):
    """``n_docs`` Markdown-like documents of three topic sections each (a heading per topic), as the corpus
    tables the workflow builds."""
    parsed = []
    for d in range(n_docs):
        topics = list(TOPICS)[d % 3 :] + list(TOPICS)[: d % 3]
        texts = [topic_paragraph(topic, d + v) for topic in topics for v in range(4)]
        specs = [SectionSpec(topic.title(), 1, 4 * i, 4 * i + 4) for i, topic in enumerate(topics)]
        parsed.append(ParsedDocument(f"doc{d}", f"Document {d}", texts, specs))
    return build_tables("test", parsed)


def test_every_document_is_induced_by_a_model_that_never_saw_it(monkeypatch):
    documents, paragraphs, gold = topic_corpus(6)
    trained_on = []
    real_train = crossfit.train_learned_inducer

    def recording_train(documents, paragraphs, sections, encode, source, **options):
        trained_on.append(set(documents["doc_id"]))
        return real_train(documents, paragraphs, sections, encode, source, **options)

    monkeypatch.setattr(crossfit, "train_learned_inducer", recording_train)
    settings = {"corpus": "self", "folds": 3, "min_sections": 2, "max_docs": None, "seed": 1}
    sections, status, folds = crossfit.cross_fitted_induction(
        documents, paragraphs, gold, HashedBagOfWords(), settings, {}, "test"
    )
    held_out = crossfit.document_folds(documents["doc_id"].to_list(), 3, 1)
    assert [set(fold) for fold in held_out] == [set(documents["doc_id"]) - seen for seen in trained_on]
    assert [f["documents"] for f in folds] == [len(fold) for fold in held_out]
    assert status["doc_id"].to_list() == documents["doc_id"].to_list()
    assert sections["doc_id"].unique(maintain_order=True).to_list() == documents["doc_id"].to_list()
    assert verify_sections(paragraphs, sections) == []


def test_no_qualifying_training_document_is_a_named_error():
    documents, paragraphs, gold = topic_corpus(3)
    single = gold.filter(pl.col("section_id") == 0)
    settings = {"corpus": "self", "folds": 3, "min_sections": 2, "max_docs": None, "seed": 1}
    with pytest.raises(ValueError, match=r"inducers\.x, fold 0: no training document has at least 2 gold sections"):
        crossfit.cross_fitted_induction(documents, paragraphs, single, HashedBagOfWords(), settings, {}, "inducers.x")
