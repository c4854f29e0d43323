"""docs/architecture.md is complete: each module of the library is named in its package's section (a
package's ``__init__`` only when it holds more than its docstring), so a reader finds every file there."""

from __future__ import annotations

import ast
import re
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
