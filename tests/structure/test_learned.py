"""The learned inducer (structbench.structure.learned): training, the model file, decoding, the tables."""

import inspect
import logging
import os
import subprocess
import sys

import numpy as np
import pytest
import yaml
from conftest import REPO, absolute_pythonpath
from segmentation_testing import HashedBagOfWords, topic_documents, topic_paragraph

from structbench.corpus.build import build_tables
from structbench.corpus.verify import verify_sections
from structbench.datamodel import SECTIONS, ParsedDocument, SectionSpec
from structbench.structure.learned import OPTIONS, decode_boundaries, induce_learned
from structbench.structure.learned_features import FEATURES, gap_features, normal_title
from structbench.structure.learned_training import TRAIN_OPTIONS, train_learned_inducer
from structbench.structure.sections import STATUS


@pytest.fixture(scope="module")
def trained():
    documents, paragraphs, gold = topic_documents(range(12))
    return train_learned_inducer(documents, paragraphs, gold, HashedBagOfWords(), seed=3)


def test_training_summary_and_options(trained):
    summary = trained.training
    assert summary["documents"] == 12 and summary["positives"] == 24
    assert summary["gaps"] == summary["paragraphs"] - 12
    assert summary["features"] == list(FEATURES)
    assert {"seconds", "fit_seconds", "embedding_seconds", "threshold", "level_threshold"} <= set(summary)
    assert sorted(summary["recurring_titles"]) == ["Compiler", "Violin", "Volcano"]
    assert "seed" in TRAIN_OPTIONS
    assert len(trained.fingerprint) == 64


def test_held_out_documents_get_the_topic_boundaries_and_learned_titles(trained):
    documents, paragraphs, gold = topic_documents(range(100, 104))
    encoder = HashedBagOfWords()
    sections, status = induce_learned(documents, paragraphs, encoder, trained)
    assert dict(sections.schema) == SECTIONS and dict(status.schema) == STATUS
    assert verify_sections(paragraphs, sections) == []
    assert len(encoder.calls[0]) == paragraphs.height  # every paragraph in one call
    assert sections.select("doc_id", "para_start").rows() == gold.select("doc_id", "para_start").rows()
    assert status["status"].to_list() == ["usable"] * 4
    assert set(sections["title"]) == {"Volcano", "Violin", "Compiler"}


def test_keyphrase_titles_when_learned_titles_are_off(trained):
    documents, paragraphs, _ = topic_documents([100])
    sections, _ = induce_learned(documents, paragraphs, HashedBagOfWords(), trained, title_confidence=1.1)
    assert all(title and title not in {"Volcano", "Violin", "Compiler"} for title in sections["title"])


def test_one_paragraph_and_unsplittable_documents(trained):
    parsed = [
        ParsedDocument("one", "One", ["A single volcano paragraph."], [SectionSpec("", 1, 0, 1)]),
        ParsedDocument(
            "two",
            "Two",
            [topic_paragraph("volcano", 0), topic_paragraph("violin", 0)],
            [SectionSpec("", 1, 0, 2)],
        ),
    ]
    documents, paragraphs, _ = build_tables("test", parsed)
    sections, status = induce_learned(documents, paragraphs, HashedBagOfWords(), trained, min_section_paragraphs=2)
    assert verify_sections(paragraphs, sections) == []
    assert status["status"].to_list() == ["failed", "failed"]
    assert status["reason"][0].startswith("one paragraph")
    assert status["reason"][1].startswith("2 paragraphs: too short")
    assert gap_features(["only"], np.ones((1, 4))).shape == (0, len(FEATURES))


def test_a_flat_training_set_gives_level_one_sections_only(trained):
    documents, paragraphs, _ = topic_documents([100])
    sections, _ = induce_learned(documents, paragraphs, HashedBagOfWords(), trained, max_levels=2)
    assert set(sections["level"]) == {1}  # training had top-level sections only
    with pytest.raises(ValueError, match="max_levels must be 1 or 2"):
        induce_learned(documents, paragraphs, HashedBagOfWords(), trained, max_levels=3)


def test_decoding_keeps_strong_gaps_and_the_minimum_length():
    p = np.array([0.9, 0.2, 0.8, 0.85, 0.1])  # gaps before paragraphs 1..5 of 6
    assert decode_boundaries(p, 0.5, 1) == [1, 3, 4]
    assert decode_boundaries(p, 0.5, 2) == [4]  # 4 first (0.85), then 1 and 3 would leave one-paragraph sections
    assert decode_boundaries(p, 0.95, 1) == []


def test_titles_are_normalised_for_classes():
    assert normal_title("3.1 Related  Work") == "related work"
    assert normal_title("IV. Experiments") == "experiments"
    assert normal_title("Introduction") == "introduction"


def test_the_config_schema_states_the_inducers_defaults():
    """inducers.<name> of kind learned: every option is a schema key whose default is the function's."""
    schema = yaml.safe_load((REPO / "workflow/schemas/config.schema.yaml").read_text())
    branches = schema["properties"]["inducers"]["additionalProperties"]["allOf"]
    branch = next(b for b in branches if b["if"]["properties"]["kind"] == {"const": "learned"})
    keys = branch["then"]["properties"]
    signature = inspect.signature(induce_learned).parameters
    assert set(keys) - {"embedder", "model", "train"} == set(OPTIONS)
    assert {name: keys[name]["default"] for name in OPTIONS} == {name: signature[name].default for name in OPTIONS}
    readme = (REPO / "config/README.md").read_text()
    assert all(f"`inducers.<name>.{name}`" in readme for name in OPTIONS)


def test_planning_imports_no_scikit_learn():
    code = "import sys, structbench.plan.study; assert 'sklearn' not in sys.modules, 'sklearn imported'"
    subprocess.run([sys.executable, "-c", code], check=True, env={**os.environ, **absolute_pythonpath()})


def test_training_without_both_boundary_classes_is_named_and_one_level_is_warned(caplog):
    topics = ["volcano", "violin", "compiler"]
    one_paragraph_sections = [
        ParsedDocument(
            "d",
            "D",
            [topic_paragraph(t, 0) for t in topics],
            [SectionSpec(t, 1, i, i + 1) for i, t in enumerate(topics)],
        )
    ]
    with pytest.raises(ValueError, match=r"^notes/: every one of the 2 gaps .* 1 document\(s\) starts a section"):
        train_learned_inducer(*build_tables("test", one_paragraph_sections), HashedBagOfWords(), "notes/")
    with caplog.at_level(logging.WARNING, logger="structbench.structure.learned_training"):
        train_learned_inducer(*topic_documents(range(3)), HashedBagOfWords(), "flat/")
    assert "flat/: every one of the 6 section starts is top-level" in caplog.text
