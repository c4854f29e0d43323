"""``structbench show`` and :func:`structbench.show_question`: one question of a finished run, ranked under one
condition or two side by side (docs/usage.md, "One question, two rankings").

What a contrast's mean hides, one question at a time: the top chunks a condition ranked for it, each chunk's prefix
(heading path, placebo path or context) apart from its content, whether and how much of it is evidence, and the rank
of the first evidence chunk; with ``against``, a second condition's ranking beside it. The numbers are the report's
decisive questions' (:mod:`structbench.report.decisive`: the same relevance rule, excerpts and first-evidence rank),
read from the files the scoring step read (:meth:`structbench.plan.study.Study.score_inputs`), found through the run's
config as ``structbench export`` finds them (:func:`structbench.export.run_study`).

A name the run does not hold (a question, a condition, a corpus, an embedder or a reranker) is a :class:`NotInRun`
naming it and listing a few of those it holds, with their count.
"""

from __future__ import annotations

import difflib
import shutil
import textwrap
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import polars as pl

from structbench.conditions import is_readtime
from structbench.datamodel import read_table
from structbench.export import run_study
from structbench.plan.study import Study
from structbench.report.decisive import (
    CONTENT_CHARS,
    EVIDENCE_CHARS,
    FLIP_CUTOFF,
    PREFIX_CHARS,
    ConditionRun,
    evidence_excerpt,
    evidence_mark,
    first_evidence_ranks,
    ranked_chunks,
)
from structbench.report.formatting import cell_heading

SHOWN_NAMES = 5  # names an error lists before "(N in all)"


class NotInRun(ValueError):
    """A question, condition, corpus, embedder or reranker the finished run does not hold (or a choice among several
    left open); the message names it and lists what the run holds."""


@dataclass(frozen=True)
class RankedChunk:
    """One chunk of a ranking: its rank, chunk set ordinal and document, its prefix and content (excerpts), and its
    evidence (:func:`structbench.report.decisive.ranked_chunks`); ``mark`` says it in words."""

    rank: int
    chunk_id: int
    doc_id: str
    prefix: str
    content: str
    chunk_chars: int
    evidence_chars: int
    chunk_share: float
    evidence_share: float
    relevant: bool
    mark: str


@dataclass(frozen=True)
class Ranking:
    """One condition's ranking of the question: its top chunks, the rank of its first evidence chunk (None: no
    relevant chunk in the run) and its score on the primary ``metric`` (None where the run has no scores table)."""

    condition: str
    first_evidence: int | None
    metric: str
    score: float | None
    chunks: tuple[RankedChunk, ...]


@dataclass(frozen=True)
class QuestionView:
    """One question of one cell (corpus, embedder, reranker) and its rankings, the first condition's first."""

    corpus: str
    embedder: str
    reranker: str
    qid: str
    doc_id: str
    qtype: str
    question: str
    evidence: str
    rankings: tuple[Ranking, ...]

    def as_dict(self) -> dict:
        """Plain values (for JSON)."""
        return asdict(self)


def show_question(
    qid: str,
    condition: str,
    *,
    against: str | None = None,
    corpus: str | None = None,
    embedder: str | None = None,
    reranker: str | None = None,
    configfiles: Sequence[str | Path] = (),
    workflow: str | Path = ".",
    results: str | None = None,
    top_k: int = FLIP_CUTOFF,
    content_chars: int = CONTENT_CHARS,
    study: Study | None = None,
) -> QuestionView:
    """Question ``qid`` of a finished run ranked under ``condition`` (and ``against``, a second condition, beside
    it): a :class:`QuestionView`.

    The run is the one ``snakemake --configfile <configfiles>`` made in the checkout ``workflow`` (``results``: its
    results folder, when not the config's), or ``study``. ``corpus``, ``embedder`` and ``reranker`` choose the cell;
    each may be left out where the run has only one. Every name is checked before a table is read: one the run does
    not hold is a :class:`NotInRun` listing those it holds."""
    if top_k < 1 or content_chars < 1:
        raise ValueError(f"top_k and content_chars must be at least 1, got {top_k} and {content_chars}")
    study = study or run_study(configfiles, workflow, results)
    cell = (
        _chosen("corpus", corpus, study.scored_corpora, "corpora"),
        _chosen("embedder", embedder, study.embedders, "embedders"),
        _chosen("reranker", reranker, study.rerankers, "rerankers"),
    )
    conditions = [_condition(study, condition)]
    if against is not None:
        if against == condition:
            raise ValueError(f"against names the condition itself ({condition!r}): name another condition")
        conditions.append(_condition(study, against))
    queries = read_table(study.scored_queries(cell[0]), "queries")
    query = _question(queries, qid, cell[0])
    document = read_table(study.paths.documents(cell[0]), "documents").filter(pl.col("doc_id") == query["doc_id"][0])
    rankings = tuple(_ranking(study, cell, name, query, top_k, content_chars) for name in conditions)
    return QuestionView(
        *cell,
        qid=qid,
        doc_id=query["doc_id"][0],
        qtype=query["qtype"][0],
        question=query["text"][0],
        evidence=evidence_excerpt(document["text"][0], query["spans"][0], max(EVIDENCE_CHARS, content_chars))
        if document.height
        else "",
        rankings=rankings,
    )


def _listing(names: Sequence[str]) -> str:
    shown = ", ".join(repr(name) for name in names[:SHOWN_NAMES])
    return shown + (f", ... ({len(names)} in all)" if len(names) > SHOWN_NAMES else "")


def _hint(name: str, names: Sequence[str]) -> str:
    """`` (did you mean 'X'?)`` for the closest of ``names`` (case aside), or nothing."""
    lowered = {candidate.lower(): candidate for candidate in names}
    close = difflib.get_close_matches(name.lower(), list(lowered), n=1)
    return f" (did you mean {lowered[close[0]]!r}?)" if close else ""


def _chosen(kind: str, name: str | None, available: list[str], plural: str) -> str:
    """``name``, or the run's only one of its kind; a name the run does not hold, or none among several, is a
    :class:`NotInRun` listing them."""
    if name is None:
        if len(available) == 1:
            return available[0]
        if not available:
            raise NotInRun(f"this run has no {kind} with scored questions")
        raise NotInRun(f"this run has {len(available)} {plural} ({_listing(available)}): name one with --{kind}")
    if name not in available:
        raise NotInRun(f"{kind} {name!r} is not in this run; it has {_listing(available)}")
    return name


def _condition(study: Study, name: str) -> str:
    if name not in study.conditions:
        names = list(study.conditions)
        raise NotInRun(f"condition {name!r} is not in this run{_hint(name, names)}; it has {_listing(names)}")
    if is_readtime(study.conditions[name].retrieval):
        raise ValueError(f"condition {name!r} ranks read-time spans, not chunks (docs/method.md §18): nothing to show")
    return name


def _question(queries: pl.DataFrame, qid: str, corpus: str) -> pl.DataFrame:
    query = queries.filter(pl.col("qid") == qid)
    if query.is_empty():
        qids = sorted(queries["qid"].to_list())
        hint = _hint(qid, qids)
        raise NotInRun(f"question {qid!r} is not a scored question of corpus {corpus}{hint}; it has {_listing(qids)}")
    return query


def _ranking(
    study: Study, cell: tuple[str, str, str], condition: str, query: pl.DataFrame, top_k: int, content_chars: int
) -> Ranking:
    """One condition's ranking of the question, read from the files its scores were computed from."""
    inputs = study.score_inputs(*cell, condition)
    qid = query["qid"][0]
    run = ConditionRun(
        read_table(inputs["runs"], "runs").filter(pl.col("qid") == qid),
        read_table(inputs["chunks"], "chunks"),
        read_table(inputs["texts"], "texts"),
    )
    first = first_evidence_ranks(run, query)["first_evidence"][0]
    chunks = ranked_chunks(run, query, [qid], top_k, content_chars=content_chars, prefix_chars=PREFIX_CHARS)
    doc_id = query["doc_id"][0]
    metric = study.config["stats"]["primary_metric"]
    return Ranking(
        condition,
        first,
        metric,
        _score(study.paths.scores(*cell, condition), qid, metric),
        tuple(
            RankedChunk(
                **{key: row[key] for key in RankedChunk.__dataclass_fields__ if key not in ("doc_id", "mark")},
                doc_id=row["chunk_doc_id"],
                mark=evidence_mark({**row, "doc_id": doc_id}, first),
            )
            for row in chunks.iter_rows(named=True)
        ),
    )


def _score(path: str, qid: str, metric: str) -> float | None:
    """The question's score on ``metric`` from a scores table, None where the table or the value is missing."""
    if not Path(path).exists():
        return None
    scores = read_table(path).filter(pl.col("qid") == qid)
    return None if scores.is_empty() or metric not in scores.columns else scores[metric][0]


def render_view(view: QuestionView, width: int | None = None) -> str:
    """The view as text: the cell, the question and its evidence, then each ranking's chunks by rank (two rankings
    in two columns), each chunk's mark, prefix and content wrapped to ``width`` (the terminal's by default)."""
    width = max(width or shutil.get_terminal_size((100, 24)).columns, 60)
    lines = [
        cell_heading(view.corpus, view.embedder, view.reranker),
        f"{view.qid} ({view.qtype}), document {view.doc_id}",
        *textwrap.wrap(f"Question: {view.question}", width),
        *textwrap.wrap(f"Evidence: {view.evidence}", width),
        "",
    ]
    columns = len(view.rankings)
    column = (width - 3 * (columns - 1)) // columns
    heads = [_ranking_head(ranking, column) for ranking in view.rankings]
    lines += _side_by_side(heads, column)
    depth = max(len(ranking.chunks) for ranking in view.rankings)
    for index in range(depth):
        cells = [
            _chunk_lines(ranking.chunks[index], column) if index < len(ranking.chunks) else []
            for ranking in view.rankings
        ]
        lines += ["", *_side_by_side(cells, column)]
    return "\n".join(lines) + "\n"


def _ranking_head(ranking: Ranking, width: int) -> list[str]:
    score = "no score" if ranking.score is None else f"{ranking.metric} {ranking.score:.3f}"
    first = "none in the run" if ranking.first_evidence is None else f"rank {ranking.first_evidence}"
    head = [f"{ranking.condition}: {score}", f"first evidence chunk: {first}"]
    return [*(line for part in head for line in textwrap.wrap(part, width)), "-" * width]


def _chunk_lines(chunk: RankedChunk, width: int) -> list[str]:
    head = f"#{chunk.rank} chunk {chunk.chunk_id} [{chunk.mark}]"
    prefix = f"prefix: {chunk.prefix or '–'}"
    return [*textwrap.wrap(head, width), *textwrap.wrap(prefix, width), *textwrap.wrap(chunk.content, width)]


def _side_by_side(cells: list[list[str]], width: int) -> list[str]:
    """Columns of lines joined row by row with `` | `` (one column: its lines)."""
    if len(cells) == 1:
        return cells[0]
    depth = max(len(cell) for cell in cells)
    padded = [cell + [""] * (depth - len(cell)) for cell in cells]
    return [" | ".join(line.ljust(width) for line in row).rstrip() for row in zip(*padded)]
