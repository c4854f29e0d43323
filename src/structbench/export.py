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

The output folder holds one export, whole, and nothing else. It must not exist or be an empty folder; a folder
with files in it is refused, naming a few, unless ``overwrite``, which replaces it as a whole. The files are
written to a fresh folder beside it, which then becomes the output folder in one step
(:func:`structbench.atomic.atomic_folder`, whose docstring argues what a SIGKILL at each step leaves): an export
that fails or is killed part-way leaves the earlier folder as it was, and never a mix of two exports.

The study trusts the config it is given: :func:`export_finished_run`, what the command runs, first asks Snakemake
whether the files it would read are what that config makes now (:func:`structbench.staleness.check_current`), and
refuses, naming each job Snakemake would rerun and why, when they are not: another ``top_k``, a condition
redefined, a step that never finished.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from structbench.arguments import path_like
from structbench.atomic import FolderNotEmpty, atomic_folder, check_replaceable
from structbench.config import validate_config
from structbench.configfiles import DEFAULT_CONFIG, SCHEMA, layer_configs
from structbench.datamodel import read_table
from structbench.metrics import align_run, chunk_judgments
from structbench.plan.study import Study
from structbench.report.trec import RANK_SCORES, trec_qrels, trec_run, write_trec, written_scores
from structbench.staleness import check_current

Cell = tuple[str, str, str, str]  # corpus, embedder, reranker, condition


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
    """What :func:`export_trec` wrote (``runs``), the conditions it left out, with why (``skipped``), and what it
    found and put right of an earlier export killed part-way into the same folder (``recovered``)."""

    runs: list[ExportedRun]
    skipped: dict[str, str]
    recovered: list[str] = field(default_factory=list)


def run_study(configfiles: Sequence[str | Path] = (), workflow: str | Path = ".", results: str | None = None) -> Study:
    """The study of a run made with ``snakemake --configfile <configfiles>`` in the checkout ``workflow``: its
    embedded config with the files laid over it, validated as the workflow does; ``results`` replaces the
    config's results folder (a run made with ``--config results=...``)."""
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
    overwrite: bool = False,
    corpora: Sequence[str] | None = None,
    embedders: Sequence[str] | None = None,
    rerankers: Sequence[str] | None = None,
    conditions: Sequence[str] | None = None,
    scores: str = RANK_SCORES,
) -> Export:
    """Write every scored cell's run (narrowed to the named corpora, embedders, rerankers and conditions) and each
    exported condition's qrels as the folder ``out`` (module docstring), which must be new or empty unless
    ``overwrite``; ``scores`` as :func:`structbench.report.trec.trec_run`.

    Each run is aligned with its queries and chunk set as the scoring step aligns it
    (:func:`structbench.metrics.align_run`), so a run that does not fit its chunk set is an error, never a file;
    a name the study does not run is an error naming the ones it does. The files are read as they are, whatever
    config made them: :func:`export_finished_run` checks that first."""
    cells = export_cells(study, corpora, embedders, rerankers, conditions)
    out = output_folder(study, out)
    exported, skipped = [], {}
    with _named_not_empty(), atomic_folder(out, replace=overwrite) as staged:
        for cell in cells:
            inputs = study.score_inputs(*cell)
            if "units" in inputs:
                skipped[cell[3]] = "a read-time run ranks spans, not the chunks of a chunk set (docs/method.md §18)"
                continue
            exported.append(_export_cell(inputs, staged.path, out, cell, scores))
    return Export(exported, skipped, staged.recovered)


def export_finished_run(
    out: str | Path,
    configfiles: Sequence[str | Path] = (),
    workflow: str | Path = ".",
    results: str | None = None,
    *,
    check: bool = True,
    overwrite: bool = False,
    corpora: Sequence[str] | None = None,
    embedders: Sequence[str] | None = None,
    rerankers: Sequence[str] | None = None,
    conditions: Sequence[str] | None = None,
    scores: str = RANK_SCORES,
) -> Export:
    """``structbench export``: the run made in the current folder with ``configfiles`` (and ``results``, as
    :func:`run_study`) exported to ``out`` by :func:`export_trec`. First every refusal that costs nothing (the
    config, the folder, the names), then, with ``check``, Snakemake's judgment that the files to be read are what
    this config makes now (:func:`structbench.staleness.check_current`, a dry run of the workflow in ``workflow``
    with the same ``--configfile`` files and ``--config results=...``), then the files."""
    study = run_study(configfiles, workflow, results)
    cells = export_cells(study, corpora, embedders, rerankers, conditions)
    out = output_folder(study, out)
    with _named_not_empty():
        check_replaceable(out, overwrite)
    if check:
        config = [f"results={results}"] if results is not None else []
        check_current(
            Path(workflow) / "Snakefile", ".", read_files(study, cells), configfiles=configfiles, config=config
        )
    return export_trec(
        study,
        out,
        overwrite=overwrite,
        corpora=corpora,
        embedders=embedders,
        rerankers=rerankers,
        conditions=conditions,
        scores=scores,
    )


def output_folder(study: Study, out: str | Path) -> Path:
    """``out`` as the export's folder: an error for a name that is empty or blank (``Path("")`` is the current
    folder) and for a folder that holds the run's results, which replacing it would delete."""
    path_like("out", out)
    if not str(out).strip():
        raise ValueError(f"out {str(out)!r} names no folder (it would mean the current one): name the export's folder")
    results = Path(study.paths.results).resolve()
    if Path(out).resolve() in (results, *results.parents):
        raise ValueError(f"out {out} holds the run's results folder, {results}: name a folder of the export's own")
    return Path(out)


def export_cells(
    study: Study,
    corpora: Sequence[str] | None = None,
    embedders: Sequence[str] | None = None,
    rerankers: Sequence[str] | None = None,
    conditions: Sequence[str] | None = None,
) -> list[Cell]:
    """The scored cells an export writes: the study's, narrowed to the named corpora, embedders, rerankers and
    conditions (all where none are named); an error naming a name the study does not run."""
    chosen = {
        "corpora": _chosen("corpus", corpora, study.scored_corpora),
        "embedders": _chosen("embedder", embedders, study.embedders),
        "rerankers": _chosen("reranker", rerankers, study.rerankers),
        "conditions": _chosen("condition", conditions, list(study.conditions)),
    }
    return [
        (corpus, embedder, reranker, condition)
        for corpus, embedder, reranker in study.cells()
        if corpus in chosen["corpora"] and embedder in chosen["embedders"] and reranker in chosen["rerankers"]
        for condition in chosen["conditions"]
    ]


def read_files(study: Study, cells: Sequence[Cell]) -> list[str]:
    """The files an export of ``cells`` reads (each exported run, its queries and its chunk set), sorted."""
    inputs = [study.score_inputs(*cell) for cell in cells]
    return sorted({found[name] for found in inputs if "units" not in found for name in ("runs", "queries", "chunks")})


@contextlib.contextmanager
def _named_not_empty():
    """A :class:`~structbench.atomic.FolderNotEmpty` raised inside, saying what to do instead."""
    try:
        yield
    except FolderNotEmpty as error:
        raise FolderNotEmpty(
            f"{error}: name a new or empty folder, or replace this one as a whole with overwrite (--overwrite)"
        ) from None


def _chosen(kind: str, names: Sequence[str] | None, available: list[str]) -> list[str]:
    """``names`` (all of ``available`` when none are given); error on one the study does not run."""
    if not names:
        return available
    unknown = [name for name in names if name not in available]
    if unknown:
        raise ValueError(f"{kind} {', '.join(map(repr, unknown))} not in this run; it has {', '.join(available)}")
    return list(names)


def _export_cell(inputs: dict[str, str], staged: Path, out: Path, cell: Cell, scores: str) -> ExportedRun:
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
