"""The report's Markdown (docs/method.md §15): the introduction, each table's section and its figures."""

from __future__ import annotations

from collections.abc import Sequence

from structbench.report.formatting import markdown_table, p_resolution
from structbench.report.table_registry import Details, Omitted, Table


def intro(primary_metric: str, bootstrap_iters: int | None) -> str:
    """The report's opening paragraph: what is tested and how."""
    return (
        f"Primary metric: `{primary_metric}`. Contrasts are paired per query (treatment − control), tested "
        "with a document-clustered bootstrap; p-values are Holm-adjusted within each cell's declared family. "
        "MixedLM p-values are secondary (pre-registered random intercept per document; 'nested' adds a "
        "per-query effect)." + _resolution_note(bootstrap_iters)
    )


def _resolution_note(bootstrap_iters: int | None) -> str:
    if bootstrap_iters is None:
        return ""
    return (
        f" The bootstrap uses B = {bootstrap_iters} replicates, so its p-values resolve to 1/B: "
        f"a p below that (no replicate crossed zero) is shown as < {p_resolution(bootstrap_iters)}."
    )


def table_markdown(item: Table | Omitted, files: Sequence[str] = ()) -> str:
    """One table's section: heading, caption, its blocks and notes (or the reason it is omitted), and
    links to its files."""
    spec = item.spec
    lines = [f"## {spec.title}", "", spec.caption, ""]
    if isinstance(item, Omitted):
        return "\n".join(lines + [f"*Omitted: {item.reason}.*", ""])
    content = item.content
    for block in content.shown():
        if block.heading:
            lines += [f"### {block.heading}", ""]
        lines += [markdown_table(block.frame, content.float_digits), ""]
    if not content.inline:
        lines += [f"{content.data.height} rows × {content.data.width} columns.", ""]
    lines += [f"- {note}" for note in content.notes]
    if content.notes:
        lines.append("")
    for item in content.details:
        lines += details_markdown(item)
    if files:
        lines += ["Data: " + " · ".join(f"[{name.rsplit('/', 1)[-1]}]({name})" for name in files), ""]
    return "\n".join(lines)


def details_markdown(item: Details, depth: int = 0) -> list[str]:
    """A collapsible section, shorter than in HTML: its brief (else its summary) as a bold line, its nested
    sections' as a list below it; never its lines or frame."""
    line = item.brief or item.summary
    lines = [f"**{line}**", ""] if depth == 0 else [f"{'  ' * (depth - 1)}- {line}"]
    for child in item.children:
        lines += details_markdown(child, depth + 1)
    if depth == 0 and item.children:
        lines.append("")
    return lines


def figure_markdown(item, path: str | None) -> str:
    """A figure's section: its title, the image (relative ``path``) and caption, or why it is omitted."""
    spec = item.spec
    lines = [f"### Figure: {spec.title}", ""]
    if isinstance(item, Omitted):
        return "\n".join(lines + [f"*Omitted: {item.reason}.*", ""])
    return "\n".join(lines + [f"![{spec.title}]({path})", "", spec.caption, ""])


def render_markdown(
    tables: Sequence[Table | Omitted],
    figures: Sequence = (),
    primary_metric: str = "",
    bootstrap_iters: int | None = None,
    files: dict[str, list[str]] | None = None,
    figure_paths: dict[str, str] | None = None,
) -> str:
    """The whole Markdown report: the introduction, then each table followed by the figures drawn from it.

    ``figures`` are built figures or :class:`Omitted` ones (their ``spec.table`` names the source table);
    ``files`` maps a table name to its data files and ``figure_paths`` a figure name to its image, both
    relative to the report."""
    files, figure_paths = files or {}, figure_paths or {}
    parts = ["# structbench report", "", intro(primary_metric, bootstrap_iters), ""]
    for table in tables:
        parts.append(table_markdown(table, files.get(table.spec.name, ())))
        for figure in figures:
            if figure.spec.table == table.spec.name:
                parts.append(figure_markdown(figure, figure_paths.get(figure.spec.name)))
    return "\n".join(parts).rstrip("\n") + "\n"
