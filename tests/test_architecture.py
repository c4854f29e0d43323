"""docs/architecture.md is complete: each module of the library is named in its package's section (a
package's ``__init__`` only when it holds more than its docstring), so a reader finds every file there."""

from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

from test_import_graph import PACKAGE, SRC, library_modules

ARCHITECTURE = Path(__file__).resolve().parents[1] / "docs" / "architecture.md"
TOP_LEVEL = "Top level"


def package_sections(text: str) -> dict[str, str]:
    """The text of each package's section (headed ``**`name/`**`` or ``**Top level**``), by package name
    (``""`` for the top level), up to the next section or heading."""
    parts = re.split(r"\n\*\*(`[^`*]+/`|Top level)\*\*[^\n]*\n", text)
    return {
        ("" if name == TOP_LEVEL else name.strip("`/")): body.split("\n## ")[0]
        for name, body in zip(parts[1::2], parts[2::2])
    }


def holds_code(path: Path) -> bool:
    """Whether a module has a statement beyond its docstring (an ``__init__`` that is only a docstring
    needs no line of its own)."""
    body = ast.parse(path.read_text()).body
    return any(not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)) for node in body)


def unnamed_modules(sections: dict[str, str]) -> list[str]:
    """Each module whose file name (relative to its package) is not in backticks in its package's section."""
    unnamed = []
    for path in library_modules().values():
        relative = path.relative_to(SRC / PACKAGE)
        package = relative.parts[0] if len(relative.parts) > 1 else ""
        local = "/".join(relative.parts[1:]) if package else relative.name
        if holds_code(path) and f"`{local}`" not in sections.get(package, ""):
            unnamed.append(f"{relative} (section {package or TOP_LEVEL!r})")
    return unnamed


def test_the_architecture_names_every_module_in_its_package_section():
    sections = package_sections(ARCHITECTURE.read_text())
    assert {"", "chunking", "endpoints", "embedding", "retrieval", "report"} <= set(sections)
    unnamed = unnamed_modules(sections)
    assert not unnamed, "docs/architecture.md does not name:\n" + "\n".join(unnamed)


def test_the_completeness_check_can_fail():
    sections = package_sections(ARCHITECTURE.read_text())
    sections["endpoints"] = sections["endpoints"].replace("`probe.py`", "the probe")
    assert unnamed_modules(sections) == ["endpoints/probe.py (section 'endpoints')"]


# ---- the rules, the data flow, the layout and the tests' layout

REPO = ARCHITECTURE.parents[1]
RULE = re.compile(r"^(?:rule|checkpoint) (\w+):", re.MULTILINE)


def workflow_rules() -> dict[str, str]:
    """Every rule of the workflow (``rule NAME:`` in the Snakefile and rules/*.smk), by the file it is in."""
    files = [REPO / "Snakefile", *sorted((REPO / "rules").glob("*.smk"))]
    return {name: path.name for path in files for name in RULE.findall(path.read_text())}


def page_section(text: str, heading: str) -> str:
    """The text under ``## heading`` up to the next ``## `` heading."""
    return text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]


def test_the_rules_section_names_every_rule_and_only_rules():
    rules = workflow_rules()
    assert {"all", "corpus", "train_inducer", "learned_structure", "report"} <= set(rules)  # the parse sees them
    section = page_section(ARCHITECTURE.read_text(), "Rules")
    missing = [f"{name} ({where})" for name, where in rules.items() if f"`{name}`" not in section]
    assert not missing, "docs/architecture.md's Rules section does not name: " + ", ".join(missing)
    listed = re.findall(r"^- `(\w+)`:", section, re.MULTILINE)
    assert sorted(set(listed) - set(rules)) == [], "the Rules section lists rules that do not exist"


def test_the_data_flow_shows_every_rule():
    text = ARCHITECTURE.read_text()
    flow = text.split("```mermaid\n", 1)[1].split("```", 1)[0]
    drawn = set(re.findall(r"\w+", flow))
    missing = sorted(set(workflow_rules()) - {"all"} - drawn)
    assert not missing, f"rules missing from docs/architecture.md's data flow: {missing}"
    assert "results/models/INDUCER" in flow  # the learned inducer's model between training and induction


def test_every_package_of_the_library_has_its_section():
    sections = package_sections(ARCHITECTURE.read_text())
    packages = {path.parent.name for path in (SRC / PACKAGE).glob("*/__init__.py")}
    assert packages and not sorted(packages - set(sections))


def tracked_files() -> list[str]:
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, text=True, check=True)
    return [name for name in listed.stdout.split("\0") if name]


def unlisted_in_layout(layout: str, files: list[str]) -> list[str]:
    """The repository's top-level entries, and workflow/'s, that no line of the layout block starts with (an
    entry may also follow ``, `` on a line: ``envs/, profiles/slurm/``)."""
    entries = set()
    for name in files:
        parts = name.split("/")
        depth = 2 if parts[0] == "workflow" else 1
        entries.add("/".join(parts[:depth]) + ("/" if len(parts) > depth else ""))
    starts = {start for line in layout.splitlines() for start in line.split("  ")[0].split(", ")}
    return sorted(entry for entry in entries - {".gitignore"} if not any(s.startswith(entry) for s in starts))


def test_the_layout_block_names_every_top_level_entry_of_the_repository():
    layout = ARCHITECTURE.read_text().split("```\n", 1)[1].split("```", 1)[0]
    files = tracked_files()
    assert "workflow/report/report.rst" in files and ".ci/run" in files  # the listing sees them
    assert unlisted_in_layout(layout, files) == []
    assert unlisted_in_layout(layout.replace(".ci/run", ".ci-run"), files) == [".ci/"]  # the check can fail


def imported_names(text: str) -> set[str]:
    """The modules a Python text imports anywhere (``import a.b``: ``a.b``; ``from a.b import c``: ``a.b``)."""
    names = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def module_kind(relative: Path, text: str) -> str | None:
    """Which kind of the tests-layout sentence a test module (its path under tests/, its text) is, or None where
    the sentence would be false of it."""
    if len(relative.parts) == 1:
        return "top level"
    folder = relative.parts[0]
    if len(relative.parts) != 2:
        return None
    if folder == "workflow":
        return "workflow"
    if not (SRC / PACKAGE / folder / "__init__.py").exists():
        return None
    if any(name == f"{PACKAGE}.{folder}" or name.startswith(f"{PACKAGE}.{folder}.") for name in imported_names(text)):
        return f"tests of {folder}"
    return f"a benchmark of {folder}" if "benchmarks/" in text else None


def test_the_tests_layout_sentence_holds_for_every_test_module():
    assert "every test module is one of three kinds" in ARCHITECTURE.read_text()
    tests = REPO / "tests"
    modules = sorted(tests.rglob("test_*.py"))
    assert len(modules) > 50
    astray = [
        str(path.relative_to(REPO))
        for path in modules
        if module_kind(path.relative_to(tests), path.read_text()) is None
    ]
    assert not astray, f"test modules the tests-layout sentence of docs/architecture.md does not describe: {astray}"


def test_the_tests_layout_check_can_fail():
    uses_bm25 = "from structbench.retrieval.bm25 import bm25_search\n"
    assert module_kind(Path("retrieval/test_bm25.py"), uses_bm25) == "tests of retrieval"
    assert module_kind(Path("chunking/test_bm25.py"), uses_bm25) is None  # not its package
    assert module_kind(Path("helpers/test_bm25.py"), uses_bm25) is None  # no such package
    assert module_kind(Path("retrieval/deep/test_bm25.py"), uses_bm25) is None
    assert module_kind(Path("stats/test_replication.py"), 'load("benchmarks/replication.py")') == "a benchmark of stats"


# ---- long modules say why they stay one

LONG_MODULE_LINES = 500
LONG_MODULE_REASON = re.compile(r"over 500 lines[^:\n]*:\s*\S+(?:\s+\S+){5,}", re.IGNORECASE)


def unexplained_long_modules(modules: dict[str, str]) -> list[str]:
    """Each module (name -> source) of more than :data:`LONG_MODULE_LINES` lines whose module docstring does not
    say why it stays one module: the words "over 500 lines", a colon and a reason of a few words."""
    unexplained = []
    for name, text in modules.items():
        if len(text.splitlines()) > LONG_MODULE_LINES:
            docstring = ast.get_docstring(ast.parse(text)) or ""
            if not LONG_MODULE_REASON.search(docstring):
                unexplained.append(f"{name} ({len(text.splitlines())} lines)")
    return unexplained


def test_every_module_over_500_lines_says_why_in_its_docstring():
    modules = {name: path.read_text() for name, path in library_modules().items()}
    assert any(len(text.splitlines()) > LONG_MODULE_LINES for text in modules.values())  # the check has work
    unexplained = unexplained_long_modules(modules)
    assert not unexplained, "over 500 lines without a docstring reason:\n" + "\n".join(unexplained)


def test_the_long_module_check_can_fail():
    body = "\n".join(f"VALUE_{index} = {index}" for index in range(LONG_MODULE_LINES))
    reason = "Over 500 lines as one concern: one table of values that reads as one list."
    modules = {
        "long.silent": f'"""A long module."""\n{body}\n',
        "long.no_reason": f'"""A long module.\n\nOver 500 lines.\n"""\n{body}\n',
        "long.explained": f'"""A long module.\n\n{reason}\n"""\n{body}\n',
        "long.reason_in_a_comment": f'"""A long module."""\n# {reason}\n{body}\n',
        "short.silent": f'"""A short module."""\n{body[:100]}\n',
    }
    assert unexplained_long_modules(modules) == [
        f"long.silent ({LONG_MODULE_LINES + 1} lines)",
        f"long.no_reason ({LONG_MODULE_LINES + 4} lines)",
        f"long.reason_in_a_comment ({LONG_MODULE_LINES + 2} lines)",
    ]
