"""Read a run's outputs into :class:`structbench.report.table_registry.ReportInputs`, and write the report folder:

    report.md             the Markdown report (tables, figure links, omissions with their reasons)
    index.html            the same as one standalone page (opens from disk, no server)
    tables/<name>.parquet every built table's data, and tables/<name>.csv for readers without Arrow
    figures/<name>.png    every drawn figure
    latex/                the decision, Table 1 and Table 2 as booktabs tabulars (decision.tex, table1.tex,
                          table2.tex) and a
                          standalone tables.tex that inputs them (:mod:`structbench.report.latex`)
    manifest.json         each table and figure: written (with its files) or omitted (with the reason)
    summary.txt           the one-line end-of-run summary (:func:`run_summary`)

Every file is written atomically, and the same inputs give the same bytes.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from structbench.atomic import write_bytes, write_json, write_text
from structbench.datamodel import read_table, write_table
from structbench.report.catalog import build_tables
from structbench.report.figures import RenderedFigure, render_figures
from structbench.report.html import render_html
from structbench.report.latex import LATEX_DOCUMENT, LATEX_TABLES, latex_document, table_latex
from structbench.report.markdown import render_markdown
from structbench.report.table_registry import Omitted, ReportInputs, Table, report_inputs

log = logging.getLogger(__name__)


def _concat(paths: Sequence[str]) -> pl.DataFrame:
    return pl.concat([read_table(p) for p in paths], how="diagonal_relaxed") if paths else pl.DataFrame()


def _json(path: str) -> dict:
    try:
        return json.loads(Path(path).read_text())
    except json.JSONDecodeError as error:
        raise ValueError(
            f"{path}: not a readable JSON report ({error}); delete it and rerun the rule that writes it"
        ) from error


# How a report input's files become its ReportInputs value (``report_input(read=...)``): a list of paths,
# or for the keyed readers a dict key -> path.
READERS: dict[str, Callable] = {
    "tables": _concat,  # tables concatenated (columns by name)
    "json": lambda paths: [_json(p) for p in paths],  # one dict per JSON report
    "json_by_key": lambda paths: {key: _json(p) for key, p in paths.items()},
    "chunks_by_key": lambda paths: {key: read_table(p, "chunks") for key, p in paths.items()},
    # (corpus, embedder, text set) -> an embedding step's JSON report: one dict each, with its key
    "embed_reports": lambda paths: [
        {"corpus": corpus, "embedder": embedder, "text set": textset, **_json(p)}
        for (corpus, embedder, textset), p in paths.items()
    ],
}


def rule_input_paths(rule_input, input_keys: Mapping[str, Sequence]) -> dict[str, list[str] | dict]:
    """Each report input's files from the report rule's ``input`` (a Snakemake Namedlist, one named entry
    per :func:`~structbench.report.table_registry.report_inputs` name) and ``input_keys`` (a keyed input's keys,
    in file order; a list key is a tuple)."""
    paths: dict[str, list[str] | dict] = {}
    for name in report_inputs():
        files = getattr(rule_input, name)
        files = [files] if isinstance(files, str) else list(files)
        if name in input_keys:
            keys = [tuple(key) if isinstance(key, (list, tuple)) else key for key in input_keys[name]]
            if len(keys) != len(files):
                raise ValueError(f"report input {name}: {len(files)} files for {len(keys)} keys")
            paths[name] = dict(zip(keys, files))
        else:
            paths[name] = files
    return paths


def load_inputs(paths: Mapping[str, Sequence[str] | Mapping], **settings) -> ReportInputs:
    """The report's inputs from the run's files: ``paths`` maps a report input
    (:func:`~structbench.report.table_registry.report_inputs`) to its files, a list, or for a keyed reader a dict
    key -> path (``chunk_sets``: (corpus, chunk set) -> chunks table; ``chunk_bounds``: (corpus, chunk set) -> its
    chunk rule's bounds report; ``embed_reports``: (corpus,
    embedder, text set) -> an embedding step's JSON report; ``corpus_stats``: corpus -> its statistics).
    An input left out takes its field's default (empty). ``settings`` are the other
    :class:`ReportInputs` fields (conditions, primary metric, contrast specs, bootstrap_iters)."""
    declared = report_inputs()
    unknown = sorted(set(paths) - set(declared))
    if unknown:
        raise ValueError(f"unknown report inputs {unknown}; declared: {sorted(declared)}")
    values = {name: READERS[declared[name].read](files) for name, files in paths.items()}
    settings = dict(settings)
    if "conditions" in settings:
        settings["conditions"] = {name: dict(axes) for name, axes in settings["conditions"].items()}
    if "contrast_specs" in settings:
        settings["contrast_specs"] = [dict(spec) for spec in settings["contrast_specs"]]
    if "dropped_contrasts" in settings:
        settings["dropped_contrasts"] = [dict(spec) for spec in settings["dropped_contrasts"]]
    return ReportInputs(**values, **settings)


@dataclass(frozen=True)
class ReportPaths:
    """Where the report's files go (the workflow's rule outputs). ``tables``, ``figures`` and ``latex`` are
    folders."""

    markdown: str
    html: str
    tables: str
    figures: str
    manifest: str
    summary: str
    latex: str

    @classmethod
    def under(cls, folder: str | os.PathLike) -> ReportPaths:
        folder = Path(folder)
        return cls(
            str(folder / "report.md"),
            str(folder / "index.html"),
            str(folder / "tables"),
            str(folder / "figures"),
            str(folder / "manifest.json"),
            str(folder / "summary.txt"),
            str(folder / "latex"),
        )


def _relative(path: str, start: str) -> str:
    return Path(os.path.relpath(path, Path(start).parent)).as_posix()


def csv_bytes(frame: pl.DataFrame) -> bytes:
    """A table as CSV (UTF-8, header row, full float precision); list or struct columns as JSON text."""
    nested = [c for c, dtype in frame.schema.items() if dtype.is_nested()]
    if nested:
        frame = frame.with_columns(
            pl.col(c).map_elements(
                lambda v: json.dumps(v.to_list() if hasattr(v, "to_list") else v), return_dtype=pl.String
            )
            for c in nested
        )
    return frame.write_csv().encode("utf-8")


def cache_counts(inputs: ReportInputs) -> dict[str, int]:
    """What the run took from the content-addressed caches: texts whose vector came from the embedding
    cache (of all texts embedded) and LLM requests answered from the response cache (of all requests)."""
    return {
        "embedded_texts": sum(int(r.get("n_texts", 0)) for r in inputs.embed_reports),
        "embeddings_from_cache": sum(int(r.get("n_from_cache", 0)) for r in inputs.embed_reports),
        "llm_requests": sum(
            int((s.get("llm") or {}).get("requests", 0))
            for s in inputs.induction_stats + inputs.context_stats + inputs.querygen_stats
        ),
        "llm_from_cache": sum(
            int((s.get("llm") or {}).get("served_from_cache", 0))
            for s in inputs.induction_stats + inputs.context_stats + inputs.querygen_stats
        ),
    }


def _count(n: int, noun: str, plural: str | None = None) -> str:
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


def run_summary(inputs: ReportInputs, paths: ReportPaths, tables: Sequence, figures: Sequence) -> str:
    """One line: where the report is, how many cells were scored (corpus × condition × embedder ×
    reranker), how many tables and figures were written or omitted, and what came from the caches
    (:func:`cache_counts`; the embedding steps' own counts, from the run that computed the vectors)."""
    scores = inputs.scores
    if scores.is_empty():
        cells = "no scored cell (no corpus with queries)"
    else:
        dims = [scores[c].n_unique() for c in ("corpus", "condition", "embedder", "reranker")]
        n_cells = scores.select("corpus", "condition", "embedder", "reranker").unique().height
        cells = (
            f"{_count(n_cells, 'cell')} ({_count(dims[0], 'corpus', 'corpora')} × "
            f"{_count(dims[1], 'condition')} × {_count(dims[2], 'embedder')} × {_count(dims[3], 'reranker')})"
        )
    built = [sum(not isinstance(t, Omitted) for t in items) for items in (tables, figures)]
    omitted = [len(items) - n for items, n in zip((tables, figures), built)]
    cache = cache_counts(inputs)
    llm = (
        f"{cache['llm_from_cache']} of {cache['llm_requests']} LLM requests"
        if cache["llm_requests"]
        else "no LLM requests"
    )
    return (
        f"structbench report: {paths.html} (Markdown: {paths.markdown}); {cells}; "
        f"{_count(built[0], 'table')} and {_count(built[1], 'figure')} written, {_count(omitted[0], 'table')} and "
        f"{_count(omitted[1], 'figure')} omitted (reasons in the report); served from cache: "
        f"{cache['embeddings_from_cache']} of {cache['embedded_texts']} embedded texts, {llm}"
    ) + _not_run(inputs.dropped_contrasts)


def _not_run(dropped: Sequence[dict]) -> str:
    """The summary's clause for the declared contrasts the selection left out (none: nothing)."""
    if not dropped:
        return ""
    named = ", ".join(f"{spec['name']} (missing {', '.join(spec['missing'])})" for spec in dropped)
    return f"; not run: {_count(len(dropped), 'declared contrast')} ({named})"


def write_report_bundle(inputs: ReportInputs, paths: ReportPaths) -> str:
    """Build every table and figure and write the report folder (module docstring); returns the summary line."""
    tables = build_tables(inputs)
    figures = render_figures(tables, inputs)
    files: dict[str, list[str]] = {}
    Path(paths.tables).mkdir(parents=True, exist_ok=True)
    Path(paths.figures).mkdir(parents=True, exist_ok=True)
    for table in tables:
        if isinstance(table, Table):
            parquet = Path(paths.tables) / f"{table.spec.name}.parquet"
            csv = Path(paths.tables) / f"{table.spec.name}.csv"
            write_table(table.content.data, parquet)
            write_bytes(csv, csv_bytes(table.content.data))
            files[table.spec.name] = [str(csv), str(parquet)]
    for name, tex in write_latex(tables, paths.latex).items():
        files.setdefault(name, []).append(tex)
    figure_files: dict[str, str] = {}
    for figure in figures:
        if isinstance(figure, RenderedFigure):
            path = Path(paths.figures) / f"{figure.spec.name}.png"
            write_bytes(path, figure.png)
            figure_files[figure.spec.name] = str(path)
    summary = run_summary(inputs, paths, tables, figures)

    def relative_to(document: str):
        return (
            {name: [_relative(f, document) for f in names] for name, names in files.items()},
            {name: _relative(path, document) for name, path in figure_files.items()},
        )

    common = {"primary_metric": inputs.primary_metric, "bootstrap_iters": inputs.bootstrap_iters}
    md_files, md_figures = relative_to(paths.markdown)
    write_text(paths.markdown, render_markdown(tables, figures, files=md_files, figure_paths=md_figures, **common))
    html_files, html_figures = relative_to(paths.html)
    write_text(
        paths.html, render_html(tables, figures, files=html_files, figure_paths=html_figures, summary=summary, **common)
    )
    write_json(paths.manifest, manifest(tables, figures, files, figure_files))
    write_text(paths.summary, summary + "\n")
    for item in [*tables, *figures]:
        if isinstance(item, Omitted):
            log.info("omitted %s: %s", item.spec.name, item.reason)
    return summary


def write_latex(tables: Sequence[Table | Omitted], folder: str) -> dict[str, str]:
    """Write the decision, Table 1 and Table 2 as LaTeX into ``folder`` (an omitted one as the reason), and the
    standalone document that inputs them; returns each written (not omitted) table's name -> its .tex path."""
    Path(folder).mkdir(parents=True, exist_ok=True)
    chosen = [table for table in tables if table.spec.name in LATEX_TABLES]
    missing = sorted(set(LATEX_TABLES) - {table.spec.name for table in chosen})
    if missing:
        raise ValueError(f"LaTeX tables {missing} are not among the report's tables")
    written = {}
    for table in chosen:
        path = Path(folder) / LATEX_TABLES[table.spec.name]
        write_text(path, table_latex(table))
        if isinstance(table, Table):
            written[table.spec.name] = str(path)
    write_text(Path(folder) / LATEX_DOCUMENT, latex_document(chosen, LATEX_TABLES))
    return written


def manifest(tables: Sequence, figures: Sequence, files: dict[str, list[str]], figure_files: dict[str, str]) -> dict:
    """Each table and figure by name: title, whether it was written (its files) or omitted (the reason)."""

    def entry(item, paths):
        written = not isinstance(item, Omitted)
        return {
            "name": item.spec.name,
            "title": item.spec.title,
            "written": written,
            **({"files": paths} if written else {"reason": item.reason}),
        }

    return {
        "tables": [entry(t, files.get(t.spec.name, [])) for t in tables],
        "figures": [entry(f, [figure_files[f.spec.name]] if f.spec.name in figure_files else []) for f in figures],
    }
