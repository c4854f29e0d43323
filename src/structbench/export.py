"""``structbench export``: a finished run's rankings and chunk-level relevance as TREC files, for trec_eval, ranx,
ir_measures and PyTerrier (docs/method.md §15, "Export to TREC tools"; the formats in
:mod:`structbench.report.trec`).

The run's config says which file holds each condition's run and chunk set (:class:`structbench.plan.study.Study`), so
the export reads exactly what the scoring step read. Under the output folder it writes, per corpus:

- ``<corpus>/<condition>.qrels``: the judgments of the condition's chunk set (the same file for every embedder
  and reranker, since relevance is a property of the chunks, not of the ranking);
- ``<corpus>/<embedder>/<reranker>/<condition>.run``: the condition's run in that cell, tagged
  ``<condition>/<embedder>/<reranker>``.

Read each run with its own condition's qrels: ``docno`` is a ``chunk_id``, an ordinal of one chunk set. A
read-time condition ranks spans that are not chunks (docs/method.md §18) and is left out, with the reason.

The files are written to a temporary folder beside the output folder and moved into it only once every one is
written (:func:`structbench.atomic.atomic_folder`): an export that fails part-way leaves nothing, and a
previous export in that folder keeps its files whole.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from structbench.atomic import atomic_folder
from structbench.config import validate_config
from structbench.configfiles import DEFAULT_CONFIG, SCHEMA, layer_configs
from structbench.datamodel import read_table
from structbench.metrics import align_run, chunk_judgments
from structbench.plan.study import Study
from structbench.report.trec import RANK_SCORES, trec_qrels, trec_run, write_trec, written_scores


@dataclass(frozen=True)
class ExportedRun:
    """One cell's run file, the qrels file to read it with and what its score column holds (``scores``:
    :data:`~structbench.report.trec.RANK_SCORES` or :data:`~structbench.report.trec.RETRIEVAL_SCORES`)."""

    corpus: str
    embedder: str
    reranker: str
    condition: str
    run: Path
    qrels: Path
    scores: str


@dataclass(frozen=True)
class Export:
    """What :func:`export_trec` wrote (``runs``) and the conditions it left out, with why (``skipped``)."""

    runs: list[ExportedRun]
    skipped: dict[str, str]


def run_study(configfiles: Sequence[str | Path] = (), workflow: str | Path = ".", results: str | None = None) -> Study:
    """The study of a run made with ``snakemake --configfile <configfiles>`` in the checkout ``workflow``: its
    embedded config with the files laid over it, validated as the workflow does; ``results`` replaces the
    config's results folder (a run made with ``-d`` or ``--config results=...``)."""
    workflow = Path(workflow)
    config = layer_configs([workflow / DEFAULT_CONFIG, *configfiles]).config
    if results is not None:
        config["results"] = str(results)
    return Study.from_config(validate_config(config, workflow / SCHEMA))


def qrels_file(out: Path, corpus: str, condition: str) -> Path:
    return out / corpus / f"{condition}.qrels"


def run_file(out: Path, corpus: str, embedder: str, reranker: str, condition: str) -> Path:
    return out / corpus / embedder / reranker / f"{condition}.run"


def run_tag(condition: str, embedder: str, reranker: str) -> str:
    """The TREC run tag of a cell: what a tool's report names the run by."""
    return f"{condition}/{embedder}/{reranker}"


def export_trec(
    study: Study,
    out: str | Path,
    *,
    corpora: Sequence[str] | None = None,
    embedders: Sequence[str] | None = None,
    rerankers: Sequence[str] | None = None,
    conditions: Sequence[str] | None = None,
    scores: str = RANK_SCORES,
) -> Export:
    """Write every scored cell's run (narrowed to the named corpora, embedders, rerankers and conditions) and each
    exported condition's qrels under ``out`` (module docstring); ``scores`` as :func:`structbench.report.trec.trec_run`.

    Each run is aligned with its queries and chunk set as the scoring step aligns it
    (:func:`structbench.metrics.align_run`), so a run that does not fit its chunk set is an error, never a file;
    a name the study does not run is an error naming the ones it does."""
    out = Path(out)
    chosen = {
        "corpora": _chosen("corpus", corpora, study.scored_corpora),
        "embedders": _chosen("embedder", embedders, study.embedders),
        "rerankers": _chosen("reranker", rerankers, study.rerankers),
        "conditions": _chosen("condition", conditions, list(study.conditions)),
    }
    cells = [
        (corpus, embedder, reranker, condition)
        for corpus, embedder, reranker in study.cells()
        if corpus in chosen["corpora"] and embedder in chosen["embedders"] and reranker in chosen["rerankers"]
        for condition in chosen["conditions"]
    ]
    exported, skipped = [], {}
    with atomic_folder(out) as staged:
        for cell in cells:
            inputs = study.score_inputs(*cell)
            if "units" in inputs:
                skipped[cell[3]] = "a read-time run ranks spans, not the chunks of a chunk set (docs/method.md §18)"
                continue
            exported.append(_export_cell(inputs, staged, out, cell, scores))
    return Export(exported, skipped)


def _chosen(kind: str, names: Sequence[str] | None, available: list[str]) -> list[str]:
    """``names`` (all of ``available`` when none are given); error on one the study does not run."""
    if not names:
        return available
    unknown = [name for name in names if name not in available]
    if unknown:
        raise ValueError(f"{kind} {', '.join(map(repr, unknown))} not in this run; it has {', '.join(available)}")
    return list(names)


def _export_cell(
    inputs: dict[str, str], staged: Path, out: Path, cell: tuple[str, str, str, str], scores: str
) -> ExportedRun:
    """Write one cell's run (and its condition's qrels, once per corpus) under ``staged``; the
    :class:`ExportedRun` names the paths they will have under ``out``."""
    corpus, embedder, reranker, condition = cell
    runs = read_table(inputs["runs"], "runs")
    evidence = align_run(runs, read_table(inputs["queries"], "queries"), read_table(inputs["chunks"], "chunks"))
    if not qrels_file(staged, corpus, condition).exists():
        write_trec(trec_qrels(chunk_judgments(evidence)), qrels_file(staged, corpus, condition))
    written = written_scores(runs, scores)
    write_trec(trec_run(runs, run_tag(condition, embedder, reranker), written), run_file(staged, *cell))
    return ExportedRun(*cell, run_file(out, *cell), qrels_file(out, corpus, condition), written)
