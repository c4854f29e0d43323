"""Tables 1 and 2 as LaTeX (structbench.report.latex): escaping and the booktabs layout on hand-made frames,
then the report's own .tex files compiled with pdflatex, row for row and number for number against the CSVs
the report writes beside them (a synthetic report with ``_`` in a condition and a contrast name, and the
session's gold-arm run).

Without pdflatex (or booktabs) the compiling tests skip, saying so; under ``.ci/run`` (which installs Debian's
``texlive-latex-base`` and ``texlive-latex-recommended`` and sets ``STRUCTBENCH_REQUIRE_LATEX=1``) that is a
failure.
"""

import os
import shutil
import subprocess
from pathlib import Path

import polars as pl
import pytest
from report_testing import CONDITIONS, CONTRAST_SPECS, synthetic_inputs

from structbench.defaults import BOOTSTRAP_ITERS
from structbench.report.bundle import ReportPaths, write_report_bundle
from structbench.report.formatting import format_p
from structbench.report.latex import LATEX_DOCUMENT, booktabs_tabular, escape_latex, table_latex
from structbench.report.table_registry import Omitted, TableSpec


def test_escape_latex_sets_specials_literally_and_writes_ascii():
    assert escape_latex("G3_d1") == r"G3\_d1"
    # No ligatures: a condition named A--B stays two hyphens, quotes stay straight.
    assert escape_latex("A--B") == "A-{}-B" and escape_latex("x---y-z") == "x-{}-{}-y-z"
    assert escape_latex("``q''") == "{`}{`}q{'}{'}"
    assert escape_latex("95% CI & #1 $x") == r"95\% CI \& \#1 \$x"
    assert escape_latex(r"{a}\b~^") == r"\{a\}\textbackslash{}b\~{}\^{}"
    assert escape_latex("−0.0147 < 0.0001") == "$-$0.0147 $<$ 0.0001"
    assert escape_latex("Δ: G2 → G3 · a|b – c") == r"$\Delta$: G2 $\rightarrow$ G3 $\cdot$ a$|$b -- c"
    assert escape_latex("G3-d1: G3 − G2 (n.s.)") == "G3-d1: G3 $-$ G2 (n.s.)"  # a hyphen stays a hyphen


def test_booktabs_tabular_of_hand_made_blocks():
    first = pl.DataFrame({"corpus": ["kb_x"], "Δ": ["−0.0100"], "p": ["0.300 (n.s.)"], "mean": [0.12345]})
    second = pl.DataFrame({"corpus": ["qasper"], "Δ": ["+0.0200"], "p": ["< 0.0001"], "mean": [None]})
    tex = booktabs_tabular([("e5 · reranker: none", first), ("", second)], float_digits=2)
    assert tex == (
        "\\begin{tabular}{lrrr}\n"
        "\\toprule\n"
        "corpus & $\\Delta$ & p & mean \\\\\n"
        "\\midrule\n"
        "\\multicolumn{4}{l}{\\emph{e5 $\\cdot$ reranker: none}} \\\\\n"
        "kb\\_x & $-$0.0100 & 0.300 (n.s.) & 0.12 \\\\\n"
        "\\midrule\n"
        "qasper & +0.0200 & $<$ 0.0001 & -- \\\\\n"
        "\\bottomrule\n"
        "\\end{tabular}\n"
    )
    with pytest.raises(ValueError, match="block 'b' has columns"):
        booktabs_tabular([("a", first), ("b", second.drop("p"))])
    with pytest.raises(ValueError, match="no block"):
        booktabs_tabular([])
    omitted = Omitted(TableSpec("t", "T", "", lambda inputs: None), "no contrast is declared")
    assert table_latex(omitted) == "\\emph{Omitted: no contrast is declared.}\n"


# ---- compiled -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pdflatex() -> str:
    binary, kpsewhich = shutil.which("pdflatex"), shutil.which("kpsewhich")
    found = kpsewhich and subprocess.run([kpsewhich, "booktabs.sty"], capture_output=True, text=True).stdout.strip()
    if binary is None or not found:
        if os.environ.get("STRUCTBENCH_REQUIRE_LATEX"):
            pytest.fail(
                "STRUCTBENCH_REQUIRE_LATEX is set but pdflatex with booktabs is not installed "
                "(.ci/run installs Debian's texlive-latex-base and texlive-latex-recommended)"
            )
        pytest.skip("no pdflatex with booktabs: apt-get install texlive-latex-base texlive-latex-recommended")
    return binary


def compile_latex(pdflatex: str, folder: Path) -> None:
    """pdflatex on the folder's standalone document, in the folder; fails with the log's tail on an error."""
    result = subprocess.run(
        [pdflatex, "-interaction=nonstopmode", "-halt-on-error", LATEX_DOCUMENT],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout[-3000:]
    assert (folder / LATEX_DOCUMENT).with_suffix(".pdf").stat().st_size > 0
    assert "Overfull \\hbox" not in (folder / LATEX_DOCUMENT).with_suffix(".log").read_text()  # fits the page


def tabular_rows(tex: str) -> tuple[list[str], list[list[str]]]:
    """A booktabs tabular's header and body rows (block headings left out), each as its cells."""
    lines = tex.splitlines()
    body = lines[lines.index("\\toprule") + 1 : lines.index("\\bottomrule")]
    cells = [line.removesuffix(" \\\\").split(" & ") for line in body if line.endswith(" \\\\")]
    rows = [row for row in cells[1:] if not row[0].startswith("\\multicolumn")]
    return cells[0], rows


def number(cell: str) -> float:
    return float(cell.replace("$-$", "-"))


def check_table1(tex: str, csv: pl.DataFrame, bootstrap_iters: int | None) -> None:
    """One row per (contrast, corpus) row of the CSV, in its order, with its numbers as the Markdown rounds them."""
    header, rows = tabular_rows(tex)
    assert header[:4] == ["contrast", "corpus", "family", "$\\Delta$"] and "W/T/L" in header
    assert len(rows) == csv.height
    for cells, row in zip(rows, csv.iter_rows(named=True)):
        shown = dict(zip(header, cells))
        assert shown["contrast"].startswith(escape_latex(row["contrast"]) + ": ")
        assert shown["corpus"] == escape_latex(row["corpus"]) and shown["family"] == row["family"]
        assert number(shown["$\\Delta$"]) == round(row["delta"], 4)
        low, high = shown["95\\% CI"].removeprefix("[").removesuffix("]").split(", ")
        assert (number(low), number(high)) == (round(row["ci_low"], 4), round(row["ci_high"], 4))
        assert number(shown["dz"]) == round(row["dz"], 2)
        assert shown["p"] == escape_latex(format_p(row["p"], bootstrap_iters))
        if row["family"] == "exploratory":
            assert shown["p (Holm)"] == "-- (exploratory)"
        else:
            holm = escape_latex(format_p(row["p_holm"], bootstrap_iters))
            marks = ["n.s."] * (not row["holm_significant"]) + ["fragile"] * bool(row.get("holm_fragile"))
            assert shown["p (Holm)"] == (f"{holm} ({', '.join(marks)})" if marks else holm)
        if row["comparison"].startswith("slope over"):  # a dose-response has no pair to count
            assert row["wins"] is None and shown["W/T/L"] == "n/a"
        else:
            assert row["wins"] + row["ties"] + row["losses"] == row["n_queries"]
            assert shown["W/T/L"] == f"{row['wins']}/{row['ties']}/{row['losses']}"
        few = " (few)" if row.get("few_clusters") else ""
        assert shown["queries / docs"] == f"{row['n_queries']} / {row['n_docs']}{few}"


def check_table2(tex: str, csv: pl.DataFrame) -> None:
    """One row per corpus (and embedder, reranker) of the CSV, one column per condition, three decimals."""
    header, rows = tabular_rows(tex)
    conditions = csv.columns[3:]
    assert header == ["corpus", *(escape_latex(c) for c in conditions)]
    assert len(rows) == csv.height
    for cells, row in zip(rows, csv.iter_rows(named=True)):
        assert cells[0] == escape_latex(row["corpus"])
        assert [number(cell) for cell in cells[1:]] == [round(row[c], 3) for c in conditions]


def test_synthetic_report_latex_compiles_with_the_csv_numbers_and_escaped_names(pdflatex, tmp_path):
    # "_" in a condition (Table 2's header) and in a contrast name (Table 1's first column)
    base = synthetic_inputs()
    renamed = {"G3-d1": "G3_d1", "G3-G2": "G3_G2"}
    inputs = synthetic_inputs(
        scores=base.scores.with_columns(pl.col("condition").replace(renamed)),
        conditions={renamed.get(name, name): axes for name, axes in CONDITIONS.items()},
        contrasts=base.contrasts.with_columns(pl.col("contrast").replace(renamed)),
        contrast_specs=[{**spec, "name": renamed.get(spec["name"], spec["name"])} for spec in CONTRAST_SPECS],
    )
    paths = ReportPaths.under(tmp_path / "report")
    write_report_bundle(inputs, paths)
    latex, tables = Path(paths.latex), Path(paths.tables)
    compile_latex(pdflatex, latex)
    table1, table2 = (latex / "table1.tex").read_text(), (latex / "table2.tex").read_text()
    assert "G3\\_d1" in table2 and "G3\\_G2: G3 $-$ G2" in table1 and table1.isascii() and table2.isascii()
    check_table1(table1, pl.read_csv(tables / "table1_contrasts.csv"), inputs.bootstrap_iters)
    check_table2(table2, pl.read_csv(tables / "table2_condition_means.csv"))
    document = (latex / LATEX_DOCUMENT).read_text()
    assert "\\input{table1.tex}" in document and "\\input{table2.tex}" in document
    # the decision, the report's first table, is the document's first input
    assert document.index("\\input{decision.tex}") < document.index("\\input{table1.tex}")
    decision = (latex / "decision.tex").read_text()
    assert decision.isascii() and "tied with the leader" in decision and "below the leader (p $<$ 0.0025)" in decision


def test_latex_of_a_report_without_scores_still_compiles(pdflatex, tmp_path):
    inputs = synthetic_inputs(scores=pl.DataFrame(), contrasts=pl.DataFrame(), bm25_scores=pl.DataFrame())
    paths = ReportPaths.under(tmp_path / "report")
    write_report_bundle(inputs, paths)
    latex = Path(paths.latex)
    assert (latex / "table1.tex").read_text().startswith("\\emph{Omitted: no corpus with queries is selected")
    compile_latex(pdflatex, latex)


@pytest.mark.workflow
def test_the_runs_latex_tables_compile_with_the_csv_numbers(pdflatex, request, tmp_path):
    # conftest's session run of the gold arm with F0 (shared: compiled in a copy, so the run stays as it was)
    gold_run = request.getfixturevalue("gold_run")
    report = gold_run.workdir / "results/report"
    latex = Path(shutil.copytree(report / "latex", tmp_path / "latex"))
    compile_latex(pdflatex, latex)
    contrasts = pl.read_csv(report / "tables/table1_contrasts.csv")
    assert sorted(contrasts["contrast"].to_list()) == ["G3-F0", "G3-G2", "G4-G3"]
    check_table1((latex / "table1.tex").read_text(), contrasts, BOOTSTRAP_ITERS)  # the run's default B
    means = pl.read_csv(report / "tables/table2_condition_means.csv")
    assert sorted(means.columns[3:]) == ["F0", "G2", "G3", "G4"] and means.height == 1
    check_table2((latex / "table2.tex").read_text(), means)
