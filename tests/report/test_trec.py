"""TREC export (structbench.report.trec, structbench.export, ``structbench export``): runs and chunk qrels written as
TREC files and read back by ir_measures (trec_eval's code) give the study's own binary measures, query by query.

The example is the embedded knowledge base (data/kb: real documents, questions and verbatim gold spans) with
hand-built chunk sets (its gold sections; fixed 300-character windows) and rankings whose scores tie often, or
rise down the ranking as a two-stage or reranked run's do, so the round trip also checks that the tools read
structbench's order under either kind of written score. (ranx reads the same files: its evaluation compiles for
seconds, so most measures are checked here with ir_measures, and ranx once, by the check a workflow run's export
gets, tests/trec_testing.py.)"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import yaml
from conftest import REPO, local_env
from trec_testing import assert_tools_read_the_study, ir_measures_values

from structbench import datamodel
from structbench.atomic import FolderNotEmpty
from structbench.cli import main
from structbench.corpus import load_corpus
from structbench.export import export_trec, qrels_file, run_file, run_study
from structbench.metrics import align_run, chunk_judgments, score_run
from structbench.report.trec import RANK_SCORES, RETRIEVAL_SCORES, trec_qrels, trec_run, write_trec, written_scores

KB = REPO / "data/kb"
BINARY = {"nDCG@10": "nDCG@10", "MRR": "RR"}  # ours: ir_measures's name


@pytest.fixture(scope="module")
def kb():
    return load_corpus({"kind": "markdown", "path": str(KB / "docs"), "questions": str(KB / "questions.jsonl")})


def chunk_set(bounds: list[tuple[str, int, int]]) -> pl.DataFrame:
    """A chunk set (datamodel.CHUNKS) of ``(doc_id, start, end)`` intervals, ids in (doc_id, start) order."""
    doc_id, start, end = (list(column) for column in zip(*sorted(set(bounds))))
    return datamodel.conform(
        pl.DataFrame({"doc_id": doc_id, "start": start, "end": end}).with_columns(
            chunk_id=pl.int_range(pl.len()),
            n_tokens=(pl.col("end") - pl.col("start")) // 4,
            section_id=pl.lit(0),
            path=pl.lit([], dtype=pl.List(pl.String)),
            cut=pl.lit("paragraph"),
        ),
        "chunks",
    )


def section_chunks(kb) -> pl.DataFrame:
    """One chunk per non-empty gold section."""
    sections = kb.sections.filter(pl.col("end") > pl.col("start"))
    return chunk_set(list(zip(sections["doc_id"], sections["start"], sections["end"])))


def window_chunks(kb, width: int) -> pl.DataFrame:
    """Windows of ``width`` characters tiling each document."""
    lengths = zip(kb.documents["doc_id"], kb.documents["n_chars"])
    return chunk_set([(doc, lo, min(lo + width, n)) for doc, n in lengths for lo in range(0, n, width)])


def ranking(queries: pl.DataFrame, chunks: pl.DataFrame, depth: int, seed: int) -> pl.DataFrame:
    """Each query ranks ``depth`` chunks (its own document's first among them more often than chance), scores on a
    coarse grid so that many tie; ranks by score, ties to the smaller chunk_id (the study's rule)."""
    rng = np.random.default_rng(seed)
    rows = []
    for qid, doc in zip(queries["qid"], queries["doc_id"]):
        own = (chunks["doc_id"] == doc).to_numpy()
        weight = np.where(own, 8.0, 1.0)
        picked = rng.choice(chunks.height, size=min(depth, chunks.height), replace=False, p=weight / weight.sum())
        rows += [(qid, int(chunk), float(rng.integers(0, 6)) / 5) for chunk in picked]
    frame = pl.DataFrame(rows, schema={"qid": pl.String, "chunk_id": pl.Int64, "score": pl.Float64}, orient="row")
    frame = frame.sort(["qid", "score", "chunk_id"], descending=[False, True, False])
    ranked = frame.with_columns(rank=pl.int_range(1, pl.len() + 1).over("qid"), stage=pl.lit("flat"))
    return datamodel.conform(ranked, "runs")


def routed_ranking(queries: pl.DataFrame, chunks: pl.DataFrame, depth: int, seed: int) -> pl.DataFrame:
    """A two-stage run's shape: the query's own document's chunks first ("stage2"), then a backfill of other
    chunks whose scores are higher, as a flat search's cosines above the routed sections' can be."""
    routed = ranking(queries, chunks, depth, seed).join(chunks.select("chunk_id", "doc_id"), on="chunk_id")
    own = routed.join(queries.select("qid", "doc_id"), on=["qid", "doc_id"], how="semi")
    stage2 = own.with_columns(stage=pl.lit("stage2"), score=pl.col("score") / 10)
    backfill = routed.join(own, on=["qid", "chunk_id"], how="anti").with_columns(stage=pl.lit("backfill"))
    order = pl.concat([stage2, backfill]).with_columns(rank=pl.int_range(1, pl.len() + 1).over("qid"))
    return datamodel.conform(order.drop("doc_id"), "runs")


def export_pair(tmp_path, runs, queries, chunks, scores="rank"):
    """Write the run and its chunk set's qrels as TREC files; return their paths."""
    qrels, run = tmp_path / "kb.qrels", tmp_path / "kb.run"
    write_trec(trec_qrels(chunk_judgments(align_run(runs, queries, chunks))), qrels)
    write_trec(trec_run(runs, "G2/minilm/none", scores), run)
    return qrels, run


def read_back(qrels, run, measures):
    """Per-query values of ir_measures (pytrec_eval: trec_eval's own code) reading the files."""
    import ir_measures

    parsed = [ir_measures.parse_measure(name) for name in measures]
    found = ir_measures.iter_calc(parsed, ir_measures.read_trec_qrels(str(qrels)), ir_measures.read_trec_run(str(run)))
    return {(str(value.measure), value.query_id): value.value for value in found}


@pytest.mark.parametrize("scores", [RANK_SCORES, RETRIEVAL_SCORES])
@pytest.mark.parametrize(
    ("chunker", "ranked"), [("sections", ranking), ("windows", ranking), ("sections", routed_ranking)]
)
def test_binary_ndcg_and_mrr_come_back_from_ir_measures(kb, tmp_path, chunker, ranked, scores):
    chunks = section_chunks(kb) if chunker == "sections" else window_chunks(kb, 300)
    runs = ranked(kb.queries, chunks, depth=60, seed=3)
    assert runs.select(pl.struct("qid", "score").is_duplicated().mean()).item() > 0.3  # ties are the rule here
    ours = score_run(runs, kb.queries, chunks, metrics=list(BINARY))
    theirs = read_back(*export_pair(tmp_path, runs, kb.queries, chunks, scores), BINARY.values())
    for metric, measure in BINARY.items():
        for qid, value in zip(ours["qid"], ours[metric]):
            assert theirs[(measure, qid)] == pytest.approx(value, abs=1e-12), (metric, qid)
        mean = ours[metric].mean()
        assert np.mean([theirs[(measure, qid)] for qid in ours["qid"]]) == pytest.approx(mean, abs=1e-12)
        assert (ours[metric] > 0).sum() >= 5 and (ours[metric] < 1).sum() >= 5, metric  # not a degenerate case


def test_recall_comes_back_where_every_gold_span_is_one_chunk(kb, tmp_path):
    """structbench's R@50 counts gold spans at least half covered by the top 50, the tools' R@50 relevant chunks
    retrieved: the same number on a chunk set cut at every quote's ends, for the queries whose quotes are whole
    chunks there (docs/method.md §10)."""
    cuts = {doc: {0, n} for doc, n in zip(kb.documents["doc_id"], kb.documents["n_chars"])}
    for doc, spans in zip(kb.queries["doc_id"], kb.queries["spans"].to_list()):
        cuts[doc].update(bound for span in spans for bound in span)
    chunks = chunk_set([(doc, lo, hi) for doc, ends in cuts.items() for lo, hi in zip(sorted(ends), sorted(ends)[1:])])
    bounds = set(zip(chunks["doc_id"], chunks["start"], chunks["end"]))
    whole = [
        qid
        for qid, doc, spans in zip(kb.queries["qid"], kb.queries["doc_id"], kb.queries["spans"].to_list())
        if all((doc, lo, hi) in bounds for lo, hi in spans)
    ]
    assert len(whole) >= 30
    runs = ranking(kb.queries, chunks, depth=80, seed=4)
    ours = score_run(runs, kb.queries, chunks, metrics=["R@50", "nDCG@10"])
    theirs = read_back(*export_pair(tmp_path, runs, kb.queries, chunks), ["R@50"])
    recalls = dict(zip(ours["qid"], ours["R@50"]))
    for qid in whole:
        assert theirs[("R@50", qid)] == pytest.approx(recalls[qid], abs=1e-12), qid
    assert 0.05 < np.mean([recalls[qid] for qid in whole]) < 0.95


def strictly_descending(run: pl.DataFrame) -> bool:
    return run.group_by("qid").agg((pl.col("score").diff().drop_nulls() < 0).all())["score"].all()


def test_rank_scores_fix_the_order_and_retrieval_scores_keep_the_retrievers(kb, tmp_path):
    chunks = section_chunks(kb)
    runs = ranking(kb.queries, chunks, depth=20, seed=5)
    by_rank = trec_run(runs, "G2/minilm/none")
    assert by_rank.columns == ["qid", "q0", "docno", "rank", "score", "tag"]
    # strictly decreasing down each ranking, from the depth to 1
    assert strictly_descending(by_rank)
    assert by_rank.group_by("qid").agg(pl.col("score").min())["score"].to_list() == [1] * kb.queries.height
    # the retriever's scores, each tie stepped one 32-bit float below the line above: strictly decreasing, the
    # first of each tied group as it was, the others a few 32-bit steps below it
    assert written_scores(runs, RETRIEVAL_SCORES) == RETRIEVAL_SCORES
    kept = trec_run(runs, "G2/minilm/none", RETRIEVAL_SCORES)
    native = runs.sort("qid", "rank")["score"].to_numpy()
    assert strictly_descending(kept) and kept["score"].dtype == pl.Float32
    ranked = runs.sort("qid", "rank")
    first_of_tie = ranked.select((pl.col("score").diff().over("qid") != 0).fill_null(True))[:, 0].to_numpy()
    stepped = kept["score"].to_numpy()
    assert (stepped[first_of_tie] == native[first_of_tie]).all() and (
        stepped[~first_of_tie] < native[~first_of_tie]
    ).all()
    assert np.abs(stepped - native).max() < 1e-5 and (~first_of_tie).sum() > 100
    _, run = export_pair(tmp_path, runs, kb.queries, chunks)
    first = run.read_text().splitlines()[0].split(" ")
    assert first[1:4] == ["Q0", str(runs.sort("qid", "rank")["chunk_id"][0]), "1"] and first[5] == "G2/minilm/none"


def test_a_run_whose_scores_rise_down_a_ranking_gets_rank_scores(kb, tmp_path):
    """A two-stage run's native scores, re-sorted by a tool, give flat search's order: the file holds rank scores."""
    chunks = section_chunks(kb)
    runs = routed_ranking(kb.queries, chunks, depth=60, seed=3)
    assert written_scores(runs, RETRIEVAL_SCORES) == RANK_SCORES
    assert trec_run(runs, "G4/minilm/none", RETRIEVAL_SCORES).equals(trec_run(runs, "G4/minilm/none"))
    # what the tools read from the native scores: not the study's numbers
    ours = score_run(runs, kb.queries, chunks, metrics=["nDCG@10"])
    native = trec_run(runs, "G4/minilm/none").with_columns(score=runs.sort("qid", "rank")["score"])
    qrels, run = tmp_path / "kb.qrels", tmp_path / "native.run"
    write_trec(trec_qrels(chunk_judgments(align_run(runs, kb.queries, chunks))), qrels)
    write_trec(native, run)
    theirs = read_back(qrels, run, ["nDCG@10"])
    assert sum(abs(theirs[("nDCG@10", qid)] - value) > 1e-9 for qid, value in zip(ours["qid"], ours["nDCG@10"])) >= 5


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"score": [1.0, float("nan")]}, "score nan \\(not finite\\) for query 'q1' at rank 2"),
        ({"score": [float("inf"), 1.0]}, "score inf \\(not finite\\) for query 'q1' at rank 1"),
        ({"chunk_id": [4, 4]}, "a chunk \\(docno\\) repeated within query 'q1': 4"),
        ({"rank": [1, 1]}, "a rank repeated within query 'q1': 1"),
    ],
)
def test_a_run_a_tool_would_misread_is_refused(change, message):
    table = {"qid": ["q1", "q1"], "rank": [1, 2], "chunk_id": [4, 7], "score": [1.0, 0.5], "stage": ["flat"] * 2}
    runs = datamodel.conform(pl.DataFrame(table | change), "runs")
    for scores in (RANK_SCORES, RETRIEVAL_SCORES):
        with pytest.raises(ValueError, match=message):
            trec_run(runs, "G2/minilm/none", scores)


def test_qrels_hold_the_judged_chunks_with_the_studys_rule(kb, tmp_path):
    chunks = window_chunks(kb, 300)
    evidence = align_run(ranking(kb.queries, chunks, depth=5, seed=6), kb.queries, chunks)
    qrels = trec_qrels(chunk_judgments(evidence))
    assert qrels.columns == ["qid", "iteration", "docno", "rel"] and set(qrels["iteration"]) == {0}
    # the relevant chunks per query are binary nDCG's R; some touching chunks are judged not relevant
    relevant = qrels.group_by("qid").agg(pl.col("rel").sum()).sort("qid")
    assert relevant["rel"].to_list() == evidence.query_n_relevant.tolist()
    assert 0 < (qrels["rel"] == 0).sum() < qrels.height


@pytest.mark.parametrize(("field", "runs_qid"), [("tag", "q1"), ("qid", "q 1")])
def test_a_field_with_whitespace_is_refused(field, runs_qid):
    runs = datamodel.conform(
        pl.DataFrame({"qid": [runs_qid], "rank": [1], "chunk_id": [0], "score": [1.0], "stage": ["flat"]}), "runs"
    )
    with pytest.raises(ValueError, match=f"TREC {field}"):
        trec_run(runs, "G2 minilm" if field == "tag" else "G2/minilm/none")


@pytest.fixture
def finished(kb, tmp_path):
    """A finished run's files where the workflow writes them: G2 and G3 ranked flat, G4 as two-stage runs are, and
    each condition's per-query scores as the scores step writes them; ``(config file, results folder, study)``."""
    config = tmp_path / "run.yaml"
    corpus = {"kind": "markdown", "path": str(KB / "docs"), "questions": str(KB / "questions.jsonl")}
    config.write_text(yaml.safe_dump({"corpora": {"kb": corpus}, "select": {"conditions": ["G2", "G3", "G4"]}}))
    results = tmp_path / "results"
    study = run_study([config], REPO, str(results))
    chunks = section_chunks(kb)
    datamodel.write_table(kb.queries, study.scored_queries("kb"))
    datamodel.write_table(chunks, study.condition_chunks("kb", "G2"))
    for seed, condition in enumerate(["G2", "G3", "G4"]):
        runs = (routed_ranking if condition == "G4" else ranking)(kb.queries, chunks, 60, seed)
        datamodel.write_table(runs, study.condition_run("kb", "minilm", "none", condition))
        scores = score_run(runs, kb.queries, chunks, metrics=list(BINARY))
        datamodel.write_table(scores, study.paths.scores("kb", "minilm", "none", condition))
    return config, results, study


def test_the_command_exports_a_finished_runs_conditions(kb, tmp_path, capsys, finished):
    """``structbench export`` finds each condition's run and chunk set where the workflow wrote them."""
    config, results, _ = finished
    out = tmp_path / "trec"
    arguments = ["export", "--workflow", str(REPO), "--configfile", str(config), "--results", str(results)]
    arguments.append("--no-check")  # files written here, not by Snakemake: it holds no record of them
    assert main([*arguments, "--out", str(out), "--condition", "G3"]) == 0
    run, qrels = run_file(out, "kb", "minilm", "none", "G3"), qrels_file(out, "kb", "G3")
    assert f"{run}  (qrels {qrels}; rank scores)" in capsys.readouterr().out
    assert {line.split(" ")[5] for line in run.read_text().splitlines()} == {"G3/minilm/none"}
    assert len(run.read_text().splitlines()) == 60 * kb.queries.height and qrels.read_text().startswith("kb-")
    assert not qrels_file(out, "kb", "G2").exists()  # only the named condition
    # asked for the retrievers' scores, the two-stage run says it holds rank scores
    assert main([*arguments, "--out", str(out), "--scores", "retrieval", "--overwrite"]) == 0
    printed = capsys.readouterr()
    g4 = run_file(out, "kb", "minilm", "none", "G4")
    assert f"{run}  (qrels {qrels}; retrieval scores)" in printed.out and f"{g4}: rank scores" in printed.err
    assert main([*arguments, "--out", str(out), "--condition", "X9"]) == 2
    assert "condition 'X9' not in this run; it has G2, G3, G4" in capsys.readouterr().err


@pytest.mark.parametrize("scores", [RANK_SCORES, RETRIEVAL_SCORES])
def test_the_tools_read_an_exports_every_run_as_the_study_scored_it(tmp_path, finished, scores):
    _, _, study = finished
    export = export_trec(study, tmp_path / "trec", scores=scores)
    assert [(run.condition, run.scores) for run in export.runs] == [
        ("G2", scores),
        ("G3", scores),
        ("G4", RANK_SCORES),
    ]
    assert assert_tools_read_the_study(study, export, tools=[ir_measures_values]) == 3 * 3 * 35


def files(folder: Path) -> dict[str, bytes]:
    return {str(path.relative_to(folder)): path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()}


def test_an_export_is_the_same_bytes_each_time(tmp_path, finished):
    _, _, study = finished
    for scores in (RANK_SCORES, RETRIEVAL_SCORES):
        export_trec(study, tmp_path / f"{scores}-1", scores=scores)
        export_trec(study, tmp_path / f"{scores}-2", scores=scores)
        first = files(tmp_path / f"{scores}-1")
        assert len(first) == 3 + 3 and first == files(tmp_path / f"{scores}-2")


def test_an_export_that_fails_part_way_leaves_nothing(tmp_path, finished, monkeypatch):
    """Files are written to a folder beside the output and moved in once all are written: a failure on the
    fourth file leaves no output folder, no temporary one, and an earlier export's files as they were."""
    _, _, study = finished
    out = tmp_path / "exports" / "trec"
    calls = []

    def failing_on_the_fourth(frame, path):
        calls.append(path)
        if len(calls) == 4:
            raise OSError(f"disk full writing {path}")
        write_trec(frame, path)

    monkeypatch.setattr("structbench.export.write_trec", failing_on_the_fourth)
    with pytest.raises(OSError, match="disk full"):
        export_trec(study, out)
    assert len(calls) == 4 and list((tmp_path / "exports").iterdir()) == []
    monkeypatch.setattr("structbench.export.write_trec", write_trec)
    export_trec(study, out, conditions=["G2", "G3"])
    before = files(out)
    monkeypatch.setattr("structbench.export.write_trec", failing_on_the_fourth)
    calls.clear()
    with pytest.raises(OSError, match="disk full"):
        export_trec(study, out, scores=RETRIEVAL_SCORES, overwrite=True)
    assert files(out) == before and [path.name for path in (tmp_path / "exports").iterdir()] == ["trec"]


# ---- the output folder holds one export, whole -------------------------------------------------------------------


def siblings(out: Path) -> list[str]:
    """What lies beside ``out`` in its parent: an export's temporary folders, left by one killed."""
    return sorted(path.name for path in out.parent.iterdir() if path != out)


def test_a_folder_with_files_is_refused_naming_them_and_replaced_whole_on_request(tmp_path, finished):
    _, _, study = finished
    out = tmp_path / "exports" / "trec"
    export_trec(study, out, conditions=["G2", "G3"])
    (out / "notes.txt").write_text("mine")  # a file no export writes
    before = files(out)
    with pytest.raises(
        FolderNotEmpty, match=r"trec is not empty \(it holds notes.txt, kb/G2.qrels, kb/G3.qrels, \.\.\.\)"
    ):
        export_trec(study, out, conditions=["G4"])
    assert files(out) == before
    export = export_trec(study, out, conditions=["G4"], overwrite=True)
    # nothing of the earlier export is left beside the new one, nor anything of the swap beside the folder
    assert sorted(files(out)) == ["kb/G4.qrels", "kb/minilm/none/G4.run"] and siblings(out) == []
    assert [run.run for run in export.runs] == [run_file(out, "kb", "minilm", "none", "G4")] and export.recovered == []
    # a folder that is there and empty (one the user made for it) takes an export as a new one does
    (tmp_path / "empty").mkdir()
    assert len(export_trec(study, tmp_path / "empty", conditions=["G2"]).runs) == 1


def test_a_blank_out_a_file_a_link_and_a_folder_holding_the_run_are_refused_by_name(tmp_path, finished, monkeypatch):
    config, results, study = finished
    monkeypatch.chdir(tmp_path)
    for blank in ("", "  "):
        with pytest.raises(ValueError, match=f"out '{blank}' names no folder"):
            export_trec(study, blank)
    (tmp_path / "file").write_text("x")
    (tmp_path / "target").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "target")
    for out, says in (("file", "file is a file, not a folder"), ("link", "link is a symbolic link")):
        with pytest.raises(FileExistsError, match=says):
            export_trec(study, out, overwrite=True)
    # replacing a folder that holds the run's results (or the current folder) would delete them
    for out in (results, tmp_path, "."):
        with pytest.raises(ValueError, match="holds the run's results folder"):
            export_trec(study, out, overwrite=True)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["file", "link", "results", "run.yaml", "target"]
    assert files(results) and not list((tmp_path / "target").iterdir())


def test_the_command_refuses_a_blank_out_and_a_folder_with_files(tmp_path, finished, monkeypatch, capsys):
    config, results, _ = finished
    monkeypatch.chdir(tmp_path)
    arguments = [
        "export",
        "--workflow",
        str(REPO),
        "--configfile",
        str(config),
        "--results",
        str(results),
        "--no-check",
    ]
    assert main([*arguments, "--out", ""]) == 2
    assert "structbench export: error: out '' names no folder" in capsys.readouterr().err
    assert not (tmp_path / "kb").exists()
    (tmp_path / "trec").mkdir()
    (tmp_path / "trec" / "old.run").write_text("x")
    assert main([*arguments, "--out", "trec"]) == 2
    assert "trec is not empty (it holds old.run): name a new or empty folder, or replace this one as a whole with " in (
        capsys.readouterr().err
    )
    assert main([*arguments, "--out", "trec", "--overwrite"]) == 0
    assert sorted(files(tmp_path / "trec")) == sorted(
        [f"kb/{c}.qrels" for c in ("G2", "G3", "G4")] + [f"kb/minilm/none/{c}.run" for c in ("G2", "G3", "G4")]
    )


# A process that exports the ``finished`` run into OUT (a folder holding an earlier export) and is killed with a real
# SIGKILL at one step (the export's or the swap's own functions wrapped to kill the process there), on a swap
# that exchanges the two folders in one step or, as where the platform cannot, by two renames.
KILLED_EXPORT = """
import os, shutil, signal, sys
from pathlib import Path

import structbench.atomic as atomic
import structbench.export as export

repo, config, results, out, swap, point = sys.argv[1:]
written, renamed = [], []
write, rename, exchange = export.write_trec, os.rename, atomic._exchange


def die():
    os.kill(os.getpid(), signal.SIGKILL)


def write_three(frame, path):
    write(frame, path)
    written.append(path)
    if len(written) == 3:
        die()


def rename_then_die(source, target):
    rename(source, target)
    renamed.append(target)
    if len(renamed) == {"set-aside": 1, "swapped": 2}[point]:
        die()


def remove_one_file_then_die(path, *args, **kwargs):
    next(found for found in sorted(Path(path).rglob("*")) if found.is_file()).unlink()
    die()


if swap == "renames":
    atomic._exchange = lambda first, second: False
if point == "writing":
    export.write_trec = write_three
elif point == "staged":
    atomic._swap_in = lambda staged, target: die()
elif point == "swapped" and swap == "exchange":
    atomic._exchange = lambda first, second: exchange(first, second) and die()
elif point in ("set-aside", "swapped"):
    os.rename = rename_then_die
elif point == "removing":
    atomic.shutil.rmtree = remove_one_file_then_die
export.export_trec(export.run_study([config], repo, results), out, overwrite=True, scores="retrieval")
sys.exit(3)  # the point was never reached
"""


@pytest.fixture
def old_and_new(tmp_path, finished):
    """``(out, old, new)``: ``out`` holding an earlier export (G2 and G3, rank scores), and the files of the
    export that replaces it (every condition, retrieval scores), each as ``{relative path: bytes}``."""
    _, _, study = finished
    export_trec(study, tmp_path / "reference", scores=RETRIEVAL_SCORES)
    out = tmp_path / "exports" / "trec"
    export_trec(study, out, conditions=["G2", "G3"])
    old, new = files(out), files(tmp_path / "reference")
    assert len(old) == 4 and len(new) == 6 and old.keys() < new.keys() and old != {k: new[k] for k in old}
    return out, old, new


def killed_export(tmp_path, finished, out: Path, swap: str, point: str) -> subprocess.Popen:
    config, results, _ = finished
    script = tmp_path / "killed_export.py"
    script.write_text(KILLED_EXPORT)
    command = [sys.executable, str(script), str(REPO), str(config), str(results), str(out), swap, point]
    return subprocess.Popen(command, env=local_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.parametrize(
    ("swap", "point", "left"),
    [
        ("exchange", "writing", "old"),
        ("exchange", "staged", "old"),
        ("exchange", "swapped", "new"),
        ("exchange", "removing", "new"),
        ("renames", "set-aside", None),  # the one instant without the folder: both lie whole beside it
        ("renames", "swapped", "new"),
        ("renames", "removing", "new"),
    ],
)
def test_an_export_killed_at_any_step_leaves_the_old_folder_or_the_new_one(
    tmp_path, finished, old_and_new, swap, point, left
):
    _, _, study = finished
    out, old, new = old_and_new
    process = killed_export(tmp_path, finished, out, swap, point)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == -signal.SIGKILL, stderr[-2000:]
    beside = siblings(out)
    assert len(beside) == (2 if left is None else 1) and all(name.startswith(".trec.") for name in beside)
    if left is None:
        [set_aside] = [name for name in beside if name.endswith(".old")]
        assert not out.exists() and files(out.parent / set_aside) == old
    else:
        assert files(out) == {"old": old, "new": new}[left]
    # the next export into the folder first puts right what the killed one left: the old folder back whole (and
    # then refused, since it has files), the killed export's folders removed
    with pytest.raises(FolderNotEmpty):
        export_trec(study, out, conditions=["G4"])
    assert files(out) == (old if left is None else {"old": old, "new": new}[left]) and siblings(out) == []
    export = export_trec(study, out, overwrite=True, scores=RETRIEVAL_SCORES)
    assert files(out) == new and siblings(out) == [] and export.recovered == []


def test_an_export_killed_from_outside_once_its_folder_appears_leaves_the_old_folder_or_the_new_one(
    tmp_path, finished, old_and_new
):
    """No step chosen: the kill lands wherever the export is when its temporary folder is first seen."""
    _, _, study = finished
    out, old, new = old_and_new
    process = killed_export(tmp_path, finished, out, "exchange", "none")
    deadline = time.monotonic() + 120
    while not siblings(out) and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.001)
    process.send_signal(signal.SIGKILL)
    process.communicate(timeout=60)
    assert process.returncode == -signal.SIGKILL
    assert files(out) in (old, new) and len(siblings(out)) <= 1
    export = export_trec(study, out, overwrite=True, scores=RETRIEVAL_SCORES)
    assert files(out) == new and siblings(out) == []
    assert [note.endswith("removed, left by a writer killed part-way") for note in export.recovered] in ([], [True])


@pytest.mark.workflow
def test_an_export_under_another_config_than_the_runs_is_refused_naming_what_differs(
    gold_run, tmp_path, monkeypatch, capsys
):
    """The command asks Snakemake (a dry run with the export's config, where the run ran) whether the files it reads
    are what that config makes: the run's own config exports; another top_k, a redefined condition, or a check
    away from the run's records is refused, naming each job Snakemake would run and why, and writes nothing."""
    monkeypatch.chdir(gold_run.workdir)
    monkeypatch.setenv("PATH", local_env()["PATH"])
    arguments = ["export", "--workflow", str(REPO), "--configfile", str(gold_run.config)]
    assert main([*arguments, "--out", str(tmp_path / "trec")]) == 0
    assert len(files(tmp_path / "trec")) == 4 + 4  # G2, G3, G4, F0: a run and a qrels file each
    top_k, redefined = tmp_path / "top_k.yaml", tmp_path / "g3.yaml"
    top_k.write_text("retrieval: {top_k: 50}\n")
    redefined.write_text(
        "conditions:\n  G3: {boundaries: structural, structure: gold, prefix: 'path:2', retrieval: flat}\n"
    )
    capsys.readouterr()
    assert main([*arguments, str(top_k), "--out", str(tmp_path / "top_k")]) == 2
    refused = capsys.readouterr().err
    said = "structbench export: error: the run's files are not what this config makes: Snakemake would run 4 job(s) "
    assert f"{said}of retrieve to make them" in refused
    for condition in ("G2", "G3", "G4", "F0"):
        assert (
            f"retrieve results/kb/runs/minilm/{condition}.parquet: Params have changed since last execution: "
            "before: 100 now: 50" in refused
        )
    assert main([*arguments, str(redefined), "--out", str(tmp_path / "g3")]) == 2
    refused = capsys.readouterr().err
    assert "texts results/kb/texts/structural/gold/path-2.parquet: Missing output files" in refused
    assert "retrieve results/kb/runs/minilm/G3.parquet: " in refused
    # the run's own config and files, checked where Snakemake keeps no record of them
    monkeypatch.chdir(tmp_path)
    elsewhere = ["--results", str(gold_run.workdir / "results"), "--out", str(tmp_path / "elsewhere")]
    assert main([*arguments, *elsewhere]) == 2
    refused = capsys.readouterr().err
    assert "cannot check the run: Snakemake's record of how its files were made is missing for " in refused
    assert not {"top_k", "g3", "elsewhere"} & {path.name for path in tmp_path.iterdir()}
