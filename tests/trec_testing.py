"""The TREC tools reading an export: ir_measures (pytrec_eval, trec_eval's own code) and ranx compute nDCG@10, RR
and recall@k from the exported files alone, and each must equal what the study computed from its own ranking,
query by query: binary nDCG@10 and MRR as the scores step wrote them (a run's per-query score table), and recall
over the chunk-level judgments (relevant chunks in the top k over relevant chunks), counted here from the
study's own alignment of the run, since the study's recall@k counts gold spans instead (docs/method.md §15)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from structbench.datamodel import read_table
from structbench.export import Export
from structbench.metrics import align_run
from structbench.plan.study import Study

NDCG_K, RECALL_K = 10, 50
# the study's per-query column: ir_measures' measure, ranx's metric
MEASURES = {
    f"nDCG@{NDCG_K}": (f"nDCG@{NDCG_K}", f"ndcg@{NDCG_K}"),
    "MRR": ("RR", "mrr"),
    f"chunk_R@{RECALL_K}": (f"R@{RECALL_K}", f"recall@{RECALL_K}"),
}


def ir_measures_values(qrels: Path, run: Path) -> dict[str, dict[str, float]]:
    """``{study column: {qid: value}}`` as ir_measures computes them from the files."""
    import ir_measures

    by_name = {tools[0]: column for column, tools in MEASURES.items()}
    parsed = [ir_measures.parse_measure(name) for name in by_name]
    values: dict[str, dict[str, float]] = {column: {} for column in MEASURES}
    for found in ir_measures.iter_calc(
        parsed, ir_measures.read_trec_qrels(str(qrels)), ir_measures.read_trec_run(str(run))
    ):
        values[by_name[str(found.measure)]][found.query_id] = found.value
    return values


def ranx_values(qrels: Path, run: Path) -> dict[str, dict[str, float]]:
    """``{study column: {qid: value}}`` as ranx computes them from the files (the queries its qrels judge)."""
    from ranx import Qrels, Run, evaluate

    judged, ranked = Qrels.from_file(str(qrels), kind="trec"), Run.from_file(str(run), kind="trec")
    ranked = Run({qid: ranked.run[qid] for qid in ranked.run if qid in judged.qrels}, name=ranked.name)
    metrics = {tools[1]: column for column, tools in MEASURES.items()}
    evaluate(judged, ranked, list(metrics), return_mean=False, make_comparable=True)
    return {column: dict(ranked.scores[metric]) for metric, column in metrics.items()}


def study_values(study: Study, corpus: str, embedder: str, reranker: str, condition: str) -> pl.DataFrame:
    """Per query: the scores step's binary nDCG@10 and MRR, and chunk-level recall@k counted from the study's
    alignment of the run with its chunk set."""
    scores = read_table(study.paths.scores(corpus, embedder, reranker, condition))
    inputs = study.score_inputs(corpus, embedder, reranker, condition)
    evidence = align_run(*(read_table(inputs[name], name) for name in ("runs", "queries", "chunks")))
    retrieved = np.bincount(evidence.relevant_query[evidence.relevant_rank <= RECALL_K], minlength=evidence.n_queries)
    recall = np.divide(
        retrieved, evidence.query_n_relevant, out=np.zeros(evidence.n_queries), where=evidence.query_n_relevant > 0
    )
    chunk_recall = pl.DataFrame({"qid": evidence.qid.astype(str), f"chunk_R@{RECALL_K}": recall})
    return scores.select("qid", f"nDCG@{NDCG_K}", "MRR").join(chunk_recall, on="qid", how="left")


def assert_well_formed(qrels: Path, run: Path) -> None:
    """The files as the tools' readers expect them: qrels lines ``qid 0 docno rel`` with rel 0 or 1, run lines
    ``qid Q0 docno rank score tag`` with ranks 1, 2, ... and finite scores strictly descending, a docno at most
    once per query in each."""
    judged = [line.split(" ") for line in qrels.read_text(encoding="utf-8").splitlines()]
    assert judged and {len(fields) for fields in judged} == {4}, qrels
    assert {fields[1] for fields in judged} == {"0"} and {fields[3] for fields in judged} <= {"0", "1"}, qrels
    assert len({(fields[0], fields[2]) for fields in judged}) == len(judged), qrels
    ranked = [line.split(" ") for line in run.read_text(encoding="utf-8").splitlines()]
    assert ranked and {len(fields) for fields in ranked} == {6} and {fields[1] for fields in ranked} == {"Q0"}, run
    assert len({(fields[0], fields[2]) for fields in ranked}) == len(ranked), run
    by_query: dict[str, list[tuple[int, float]]] = {}
    for qid, _, _, rank, score, _ in ranked:
        by_query.setdefault(qid, []).append((int(rank), float(score)))
    for qid, lines in by_query.items():
        ranks, scores = zip(*lines)
        assert list(ranks) == list(range(1, len(ranks) + 1)), (run, qid)
        assert np.isfinite(scores).all() and (np.diff(np.float32(scores)) < 0).all(), (run, qid)


def assert_tools_read_the_study(study: Study, export: Export, tools=(ir_measures_values, ranx_values)) -> int:
    """Every exported run, read by each tool with its qrels, gives the study's per-query values (a query the
    qrels do not judge, which the tools leave out, scores 0 in the study). Returns the values compared."""
    compared = 0
    for exported in export.runs:
        assert_well_formed(exported.qrels, exported.run)
        ours = study_values(study, exported.corpus, exported.embedder, exported.reranker, exported.condition)
        for tool in tools:
            theirs = tool(exported.qrels, exported.run)
            for column in MEASURES:
                for qid, value in zip(ours["qid"], ours[column]):
                    read = theirs[column].get(qid, 0.0)
                    assert read == pytest.approx(value, abs=1e-9), (exported.run, tool.__name__, column, qid)
                    compared += 1
    return compared
