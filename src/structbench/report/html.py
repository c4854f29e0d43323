"""The standalone HTML report (``results/report/index.html``): every table and figure of the Markdown
report in one page that a browser opens from disk, without a server and without scripts.

Figures are linked by relative path (``figures/<name>.png``) and data files likewise, so the report
folder is the unit to copy or publish. The page is deterministic: the same tables give the same bytes.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence

import polars as pl

from structbench.report.formatting import format_cell
from structbench.report.markdown import intro
from structbench.report.table_registry import Details, Omitted, Table

CSS = """
body { font-family: system-ui, sans-serif; max-width: 75rem; margin: 2rem auto; padding: 0 1rem; color: #222; }
h1 { font-size: 1.6rem; } h2 { margin-top: 2.5rem; border-bottom: 1px solid #ccc; } h3 { font-size: 1rem; }
table { border-collapse: collapse; margin: 0.5rem 0 1rem; font-size: 0.85rem; }
th, td { border: 1px solid #ccc; padding: 0.2rem 0.5rem; text-align: right; }
th { background: #f3f3f3; } td:first-child, th:first-child { text-align: left; }
figure { margin: 1rem 0 2rem; } figure img { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption, .caption { color: #444; font-size: 0.9rem; max-width: 60rem; }
.omitted { color: #8a4b00; font-style: italic; } .files { font-size: 0.85rem; }
nav ol { columns: 2; font-size: 0.9rem; } .scroll { overflow-x: auto; }
.summary { background: #f6f8fa; padding: 0.6rem; font-family: monospace; overflow-wrap: anywhere; }
details { margin: 0.3rem 0; } details details { margin-left: 1.2rem; } summary { cursor: pointer; }
details td, details th { text-align: left; vertical-align: top; max-width: 30rem; overflow-wrap: anywhere; }
""".strip()


def _text(value: str) -> str:
    """Escaped text with the Markdown the report's texts use: `code` spans and **bold**."""
    escaped = re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(value))
    return re.sub(r"\*\*([^*]+)\*\*", r"<b>\1</b>", escaped)


def html_table(frame: pl.DataFrame, float_digits: int = 3) -> str:
    header = "".join(f"<th>{html.escape(str(c))}</th>" for c in frame.columns)
    rows = "".join(
        "<tr>" + "".join(f"<td>{html.escape(format_cell(v, float_digits))}</td>" for v in row) + "</tr>"
        for row in frame.iter_rows()
    )
    return f'<div class="scroll"><table><thead><tr>{header}</tr></thead><tbody>{rows}</tbody></table></div>'


def details_html(item: Details, float_digits: int = 3) -> str:
    """A collapsible section (``<details>``, opened by a click, no script): its summary, its lines, its frame and
    its nested sections, every text escaped."""
    body = [f"<summary>{html.escape(item.summary)}</summary>"]
    body += [f"<p>{html.escape(line)}</p>" for line in item.lines]
    if item.frame is not None:
        body.append(html_table(item.frame, float_digits))
    body += [details_html(child, float_digits) for child in item.children]
    return "<details>" + "".join(body) + "</details>"


def _anchor(kind: str, name: str) -> str:
    return f"{kind}-{name}"


def table_html(item: Table | Omitted, files: Sequence[str]) -> str:
    spec = item.spec
    parts = [
        f'<section id="{_anchor("table", spec.name)}"><h2>{html.escape(spec.title)}</h2>',
        f'<p class="caption">{_text(spec.caption)}</p>',
    ]
    if isinstance(item, Omitted):
        parts.append(f'<p class="omitted">Omitted: {_text(item.reason)}.</p>')
    else:
        content = item.content
        for block in content.shown():
            if block.heading:
                parts.append(f"<h3>{html.escape(block.heading)}</h3>")
            parts.append(html_table(block.frame, content.float_digits))
        if not content.inline:
            parts.append(f"<p>{content.data.height} rows × {content.data.width} columns.</p>")
        if content.notes:
            parts.append("<ul>" + "".join(f"<li>{_text(note)}</li>" for note in content.notes) + "</ul>")
        parts.extend(details_html(item, content.float_digits) for item in content.details)
        if files:
            links = " · ".join(f'<a href="{html.escape(f)}">{html.escape(f.rsplit("/", 1)[-1])}</a>' for f in files)
            parts.append(f'<p class="files">Data: {links}</p>')
    return "\n".join(parts) + "</section>"


def figure_html(item, path: str | None) -> str:
    spec = item.spec
    if isinstance(item, Omitted):
        return (
            f'<section id="{_anchor("figure", spec.name)}"><h3>Figure: {html.escape(spec.title)}</h3>'
            f'<p class="omitted">Omitted: {_text(item.reason)}.</p></section>'
        )
    return (
        f'<figure id="{_anchor("figure", spec.name)}"><img src="{html.escape(path)}" alt="{html.escape(spec.title)}">'
        f"<figcaption><b>{html.escape(spec.title)}.</b> {_text(spec.caption)}</figcaption></figure>"
    )


def render_html(
    tables: Sequence[Table | Omitted],
    figures: Sequence = (),
    primary_metric: str = "",
    bootstrap_iters: int | None = None,
    files: dict[str, list[str]] | None = None,
    figure_paths: dict[str, str] | None = None,
    summary: str = "",
) -> str:
    """The whole page: summary line, contents, introduction, then each table followed by its figures
    (the same order as the Markdown report)."""
    files, figure_paths = files or {}, figure_paths or {}
    contents = []
    for table in tables:
        mark = " (omitted)" if isinstance(table, Omitted) else ""
        contents.append(
            f'<li><a href="#{_anchor("table", table.spec.name)}">{html.escape(table.spec.title)}</a>{mark}</li>'
        )
        for figure in figures:
            if figure.spec.table == table.spec.name:
                mark = " (omitted)" if isinstance(figure, Omitted) else ""
                contents.append(
                    f'<li><a href="#{_anchor("figure", figure.spec.name)}">Figure: '
                    f"{html.escape(figure.spec.title)}</a>{mark}</li>"
                )
    body = [
        "<h1>structbench report</h1>",
        f'<p class="summary">{html.escape(summary)}</p>' if summary else "",
        f"<p>{_text(intro(primary_metric, bootstrap_iters))}</p>",
        "<nav><ol>" + "".join(contents) + "</ol></nav>",
    ]
    for table in tables:
        body.append(table_html(table, files.get(table.spec.name, ())))
        for figure in figures:
            if figure.spec.table == table.spec.name:
                body.append(figure_html(figure, figure_paths.get(figure.spec.name)))
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>structbench report</title><style>{CSS}</style></head><body>\n"
        + "\n".join(part for part in body if part)
        + "\n</body></html>\n"
    )
