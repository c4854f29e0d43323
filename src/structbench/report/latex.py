"""The decision, Table 1 and Table 2 as LaTeX (booktabs), for pasting into a paper (docs/method.md §15).

A table's LaTeX is drawn from the same formatted blocks the Markdown and HTML reports show
(:class:`structbench.report.table_registry.TableContent`), so its rounding, its signs and its significance marks
(``(n.s.)`` after a Holm p that is not below 0.05, ``– (exploratory)`` for a row outside any Holm family)
are the Markdown's by construction. Each table file is one ``tabular`` (``\\toprule``, ``\\midrule``,
``\\bottomrule``; a block's heading as a spanning row) to ``\\input`` into a table float of one's own;
:func:`latex_document` is a small standalone document that inputs them, which ``pdflatex`` compiles with
Debian's ``texlive-latex-base`` and ``texlive-latex-recommended`` (booktabs). Pure functions: text in,
text out. The output is ASCII: every character TeX treats specially is escaped and the few non-ASCII
characters the report's cells use (a true minus, Δ, →, ·) become their LaTeX forms, so it compiles
without any input-encoding package.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import polars as pl

from structbench.report.formatting import format_cell
from structbench.report.table_registry import Block, Omitted, Table

# The registered tables written as LaTeX, and their file names in the report's latex/ folder.
LATEX_TABLES = {"decision": "decision.tex", "table1_contrasts": "table1.tex", "table2_condition_means": "table2.tex"}
LATEX_DOCUMENT = "tables.tex"

# TeX's special characters, and the non-ASCII ones the report writes, as text pdflatex sets with its
# default (OT1) fonts: math mode for <, > and |, which OT1 text fonts lack.
_REPLACEMENTS = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\~{}",
    "^": r"\^{}",
    "<": "$<$",
    ">": "$>$",
    "|": "$|$",
    "−": "$-$",
    "–": "--",
    "Δ": r"$\Delta$",
    "→": r"$\rightarrow$",
    "·": r"$\cdot$",
    "×": r"$\times$",
}
# TeX's ligatures of ASCII: "--" and "---" set dashes, "``" and "''" curly quotes, "!`" and "?`" inverted
# marks. A hyphen before a hyphen gets an empty group, and a quote mark braces, so each sets as typed
# (condition ``A--B`` stays two hyphens).
_REPLACEMENTS |= {"-": "-{}", "`": "{`}", "'": "{'}"}
_SPECIAL = re.compile("|".join("-(?=-)" if c == "-" else re.escape(c) for c in _REPLACEMENTS))
# A cell that reads as a number (signed, bracketed, bounded by <) or as a missing value: right-aligned.
_NUMERIC = re.compile(r"^(n/a|–|[<\[]?\s*[+−-]?[0-9.])")


def escape_latex(text: str) -> str:
    """``text`` as LaTeX that sets it literally: ``G3_d1`` -> ``G3\\_d1``, ``95% CI`` -> ``95\\% CI``,
    ``−0.0147`` -> ``$-$0.0147``."""
    return _SPECIAL.sub(lambda match: _REPLACEMENTS[match.group(0)], text)


def _alignment(frames: Sequence[pl.DataFrame], column: str) -> str:
    """``r`` for a numeric column or one whose every shown cell reads as a number, else ``l``."""
    if all(frame.schema[column].is_numeric() for frame in frames):
        return "r"
    cells = [format_cell(v) for frame in frames for v in frame[column].to_list()]
    return "r" if cells and all(_NUMERIC.match(cell) for cell in cells) else "l"


def booktabs_tabular(blocks: Sequence[tuple[str, pl.DataFrame]], float_digits: int = 3) -> str:
    """One booktabs ``tabular`` of ``blocks`` (heading, frame): the frames' shared header once, then each
    block's rows under its heading (an italic row spanning the table; none for an empty heading), blocks
    separated by ``\\midrule``. Cells are formatted as the Markdown tables format them
    (:func:`structbench.report.formatting.format_cell` at ``float_digits``) and escaped."""
    if not blocks:
        raise ValueError("booktabs_tabular: no block to typeset")
    columns = blocks[0][1].columns
    for heading, frame in blocks:
        if frame.columns != columns:
            raise ValueError(f"booktabs_tabular: block {heading!r} has columns {frame.columns}, expected {columns}")
    frames = [frame for _, frame in blocks]
    spec = "".join(_alignment(frames, column) for column in columns)
    lines = [f"\\begin{{tabular}}{{{spec}}}", r"\toprule", " & ".join(escape_latex(c) for c in columns) + r" \\"]
    for heading, frame in blocks:
        lines.append(r"\midrule")
        if heading:
            lines.append(f"\\multicolumn{{{len(columns)}}}{{l}}{{\\emph{{{escape_latex(heading)}}}}} \\\\")
        lines += [
            " & ".join(escape_latex(format_cell(value, float_digits)) for value in row) + r" \\"
            for row in frame.iter_rows()
        ]
    lines += [r"\bottomrule", r"\end{tabular}"]
    return "\n".join(lines) + "\n"


def table_latex(item: Table | Omitted) -> str:
    """A report table as a booktabs tabular of the blocks the Markdown report shows; an omitted table
    as a line saying why (so a document that inputs it still compiles)."""
    if isinstance(item, Omitted):
        return f"\\emph{{Omitted: {escape_latex(item.reason)}.}}\n"
    content = item.content
    blocks = content.blocks or (Block("", content.data),)
    return booktabs_tabular([(block.heading, block.frame) for block in blocks], content.float_digits)


def latex_document(tables: Sequence[Table | Omitted], files: Mapping[str, str]) -> str:
    """A standalone document (landscape A4, booktabs) that inputs each table's file (``files``: table name
    -> path relative to where pdflatex runs) in a table float captioned with its title and caption."""
    parts = [
        r"\documentclass{article}",
        r"\usepackage[a4paper,landscape,margin=1.2cm]{geometry}",
        r"\usepackage{booktabs}",
        r"\setlength{\tabcolsep}{3pt}",  # Table 1's thirteen columns (with the MC s.e.) fit the landscape page
        r"\begin{document}",
    ]
    for item in tables:
        spec = item.spec
        parts += [
            r"\begin{table}[htbp]",
            r"\centering",
            r"\footnotesize",
            f"\\input{{{files[spec.name]}}}",
            f"\\caption{{{escape_latex(spec.title)}. {escape_latex(spec.caption)}}}",
            f"\\label{{tab:{spec.name}}}",
            r"\end{table}",
        ]
    parts.append(r"\end{document}")
    return "\n".join(parts) + "\n"
