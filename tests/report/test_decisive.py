"""The questions that decide a contrast (structbench.report.decisive) and their report section
(structbench.report.decisive_table), on the hand-made cell of decisive_testing: the wins and losses are the per-query
scores' largest deltas, ties broken by qid whatever the input order, the flips are the hand counts, the first
evidence rank is the one MRR reads, and the section renders escaped and bounded in HTML and Markdown."""

from __future__ import annotations

import polars as pl
import pytest
from decisive_testing import (
    CONTRAST,
    CONTROL,
    EVIDENCE,
    FLIPS,
    SCORES,
    TREATMENT,
    condition_runs,
    documents,
    queries,
    scores,
)
from report_testing import synthetic_inputs

from structbench.metrics import score_run
from structbench.report.catalog import TABLE_ORDER, build_tables
from structbench.report.decisive import (
    CONTENT_CHARS,
    ConditionRun,
    decisive_questions,
    excerpt,
    first_evidence_ranks,
    ranked_chunks,
)
from structbench.report.decisive_table import decisive_table
from structbench.report.html import render_html
from structbench.report.markdown import render_markdown
from structbench.report.table_registry import Omit, Table


def decide(score_table: pl.DataFrame | None = None, **settings):
    runs = condition_runs()
    loaded = []

    def load(condition: str) -> ConditionRun:
        loaded.append(condition)
        return runs[condition]

    result = decisive_questions(
        scores() if score_table is None else score_table,
        [CONTRAST],
        load,
        queries(),
        documents(),
        "cov_nDCG@10",
        **settings,
    )
    assert loaded == [TREATMENT, CONTROL]  # each condition's run read once
    return result


def shown_questions(questions: pl.DataFrame) -> list[tuple[str, int, str, float]]:
    return questions.select("outcome", "position", "qid", "delta").unique(maintain_order=True).rows()


def test_the_wins_and_losses_are_the_largest_deltas_of_the_per_query_scores_ties_by_qid():
    result = decide(per_side=2, top_k=3)
    assert shown_questions(result.questions) == [
        ("win", 1, "q1", 0.5),
        ("win", 2, "q3", 0.5),  # equal to q1's: qid order
        ("loss", 1, "q2", -0.25),
        ("loss", 2, "q6", -0.25),  # equal to q2's
    ]
    # recomputed from the scores table: every shown delta and score is the per-query scores'
    table = scores()
    for row in result.questions.iter_rows(named=True):
        treated, controlled = (
            table.filter((pl.col("condition") == name) & (pl.col("qid") == row["qid"]))["cov_nDCG@10"][0]
            for name in (TREATMENT, CONTROL)
        )
        assert (row["score_treatment"], row["score_control"]) == (treated, controlled)
        assert row["delta"] == treated - controlled
    # and they are the largest: no unshown question has a larger win or loss
    paired = {qid: t - c for qid, (t, c) in SCORES.items() if t == t}
    wins = sorted((-d, q) for q, d in paired.items() if d > 0)[:2]
    losses = sorted((d, q) for q, d in paired.items() if d < 0)[:2]
    assert [q for _, q in wins] + [q for _, q in losses] == ["q1", "q3", "q2", "q6"]
    assert result.questions["metric"].unique().to_list() == ["cov_nDCG@10"]


def test_the_choice_does_not_depend_on_the_order_of_the_scores():
    first = decide(per_side=2, top_k=3).questions
    shuffled = scores().sample(fraction=1.0, shuffle=True, seed=3)
    assert not shuffled.equals(scores())
    assert decide(shuffled, per_side=2, top_k=3).questions.equals(first)
    reversed_rows = decide(scores().reverse(), per_side=2, top_k=3).questions
    assert reversed_rows.equals(first)


def test_every_side_shows_what_it_has_and_ties_never():
    result = decide(per_side=5, top_k=2)
    assert [(o, q) for o, _, q, _ in shown_questions(result.questions)] == [
        ("win", "q1"),
        ("win", "q3"),
        ("win", "q5"),
        ("loss", "q2"),
        ("loss", "q6"),
    ]  # q4 and q7 tie (delta 0), q8 is not paired (NaN under the treatment)
    # each question once per arm, top_k rows each: the report's size is bounded by per_side × 2 × top_k
    assert result.questions.height == 5 * 2 * 2
    assert result.questions.group_by("qid", "arm").len()["len"].to_list() == [2] * 10


def test_flip_counts_are_the_hand_counts():
    flips = decide().flips
    assert flips.select("contrast", "n_queries", "wins", "ties", "losses", "cutoff").row(0) == (
        "G3-G2",
        7,
        3,
        2,
        2,
        10,
    )
    assert flips.select(*FLIPS).row(0, named=True) == FLIPS


def test_the_first_evidence_rank_is_the_one_mrr_reads():
    for arm, (condition, run) in enumerate(condition_runs().items()):
        first = dict(first_evidence_ranks(run, queries()).rows())
        expected = {qid: ranks[arm] for qid, (_, _, *ranks) in EVIDENCE.items()}
        assert first == expected, condition
        mrr = dict(score_run(run.runs, queries(), run.chunks, metrics=["MRR"]).select("qid", "MRR").rows())
        assert {qid: (1 / rank if rank else 0.0) for qid, rank in first.items()} == pytest.approx(mrr)


def test_each_chunk_says_whether_and_how_much_of_it_is_evidence():
    run = condition_runs()[TREATMENT]
    shown = ranked_chunks(run, queries(), ["q7", "q4"], top_k=3)
    q7 = shown.filter(pl.col("qid") == "q7").select(
        "rank", "chunk_id", "evidence_chars", "chunk_share", "evidence_share", "relevant"
    )
    assert q7.rows() == [
        (1, 5, 4, pytest.approx(0.4), pytest.approx(4 / 14), False),  # partial: below both thresholds
        (2, 0, 0, 0.0, 0.0, False),
        (3, 6, 10, pytest.approx(1.0), pytest.approx(10 / 14), True),  # the first evidence chunk
    ]
    assert dict(first_evidence_ranks(run, queries()).rows())["q7"] == 3
    # q4's document is d2: the d1 chunks ranked above its evidence hold none of it
    q4 = shown.filter(pl.col("qid") == "q4")
    assert q4["chunk_doc_id"].to_list() == ["d1"] * 3 and q4["evidence_chars"].to_list() == [0] * 3
    # the prefix is set apart from the content
    first = shown.filter(pl.col("qid") == "q7").row(0, named=True)
    assert (first["prefix"], first["content"]) == ("[Doc d1 > Section 1]", "d1c05 abc.")


def test_a_ranked_chunk_missing_from_the_texts_is_named():
    run = condition_runs()[TREATMENT]
    short = ConditionRun(run.runs, run.chunks, run.texts.filter(pl.col("chunk_id") != 5))
    with pytest.raises(ValueError, match=r"ranked chunk_id \[5\] not in the condition's texts"):
        ranked_chunks(short, queries(), ["q7"], top_k=2)


def test_excerpts_are_capped_at_a_word_and_flattened():
    text = "word " * 200
    cut = excerpt(text, CONTENT_CHARS)
    assert len(cut) <= CONTENT_CHARS and cut.endswith("word…")
    assert excerpt("a\n\n  b\tc", 300) == "a b c"
    assert excerpt("x" * 400, 10) == "x" * 9 + "…"  # no word boundary: cut mid-word


def test_the_report_section_shows_each_question_and_both_rankings_escaped():
    inputs = synthetic_inputs()  # with decisive_testing's cell, per_side 2 and top_k 3
    content = decisive_table(inputs)
    assert content.data.height == 4 * 2 * 3 and {"enters", "leaves", "corpus"} <= set(content.data.columns)
    assert content.blocks[0].frame.select("first evidence enters", "leaves").row(0) == ("2 (of top 10)", 2)
    (contrast,) = content.details
    assert contrast.summary.startswith("G3-G2: G3 − G2 · kb · minilm · reranker: none")
    assert [child.summary.split(" · ")[0] for child in contrast.children] == ["Win 1", "Win 2", "Loss 1", "Loss 2"]
    q1 = contrast.children[0]
    assert q1.frame.columns == [
        "rank",
        "G3 prefix",
        "G3 content",
        "G3 evidence",
        "G2 prefix",
        "G2 content",
        "G2 evidence",
    ]
    assert q1.frame.row(0) == (
        1,
        "[Doc d1 > Section 0]",
        "d1c02 abc.",
        "first evidence · relevant: 80% of the chunk, 100% of the evidence",
        "–",
        "d1c00 abc.",
        "–",
    )
    assert "rank 1 under G3, 12 under G2" in q1.lines[-1]

    table = Table(next(spec for spec in build_tables(inputs) if spec.spec.name == "decisive_questions").spec, content)
    page = render_html([table])
    assert page.count("<details>") == 1 + 4 and "<summary>Win 1 · Δ +0.500 · q1 (factoid)" in page
    assert "Where is &lt;b&gt;q1&lt;/b&gt;&#x27;s evidence?" in page and "<b>q1</b>" not in page
    assert "d1c02 abc." in page and "[Doc d1 &gt; Section 0]" in page
    markdown = render_markdown([table])
    assert (
        "- Win 1 · Δ +0.500 · q1 (factoid): Where is <b>q1</b>'s evidence? · first evidence chunk: rank 1" in markdown
    )
    assert "d1c02 abc." not in markdown  # the Markdown lists the questions, not the chunks


def test_the_section_sits_after_the_retrieval_layer_and_says_why_it_is_omitted():
    assert TABLE_ORDER.index("decisive_questions") == TABLE_ORDER.index("retrieval_layer") + 1
    nothing = {"decisive": pl.DataFrame(), "decisive_flips": pl.DataFrame()}
    with pytest.raises(Omit, match="no pairwise contrast is run in this config"):
        decisive_table(synthetic_inputs(contrast_specs=[], **nothing))
    with pytest.raises(Omit, match="no pairwise contrast compares two rankings of chunks"):
        decisive_table(synthetic_inputs(**nothing))


def test_a_contrast_of_ties_decides_nothing_and_says_so():
    treated = scores().filter(pl.col("condition") == TREATMENT)
    tied = pl.concat([treated, treated.with_columns(condition=pl.lit(CONTROL))])
    result = decide(tied)
    assert result.questions.is_empty() and result.questions.columns[:4] == [
        "contrast",
        "treatment",
        "control",
        "metric",
    ]
    assert result.flips.select("n_queries", "wins", "ties", "losses").row(0) == (7, 0, 7, 0)
    cell = [pl.lit(value).alias(key) for key, value in (("corpus", "kb"), ("embedder", "minilm"), ("reranker", "none"))]
    inputs = synthetic_inputs(
        decisive=result.questions.with_columns(cell), decisive_flips=result.flips.with_columns(cell)
    )
    (contrast,) = decisive_table(inputs).details
    assert "0 wins, 7 ties, 0 losses" in contrast.summary and not contrast.children
    assert contrast.lines == ("Every paired question scored the same under both: no question decides it.",)
