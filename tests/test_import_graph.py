"""The library's import graph (module-level and function-level imports, read from the source): no import
cycle runs through the chunking package, and the config check and the report reach no chunking code they
do not need."""

import ast
import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"


def modules() -> dict[str, Path]:
    found = {}
    for path in (SRC / "structbench").rglob("*.py"):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def import_graph() -> dict[str, set[str]]:
    """Module -> the structbench modules it imports anywhere in its source (``from pkg import sub`` counts as
    importing ``pkg.sub``; the chunking package's lazy exports count as imports of their modules)."""
    mods = modules()

    def resolve(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    graph = {}
    for module, path in mods.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(anchor + ([base] if base else []))
                subs = [f"{base}.{alias.name}" for alias in node.names]
                names = [s for s in subs if s in mods] + ([base] if any(s not in mods for s in subs) else [])
            else:
                continue
            targets |= {resolve(name) for name in names if name.startswith("structbench")} - {None, module}
        graph[module] = targets
    lazy = re.findall(r'": "([a-z_.]+)",', mods["structbench.chunking"].read_text())
    graph["structbench.chunking"] |= {f"structbench.chunking.{name}" for name in lazy}
    return graph


def reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for target in graph[todo.pop()] - seen:
            seen.add(target)
            todo.append(target)
    return seen


def test_no_import_cycle_runs_through_chunking():
    graph = import_graph()
    for module in (m for m in graph if m.startswith("structbench.chunking")):
        assert module not in reachable(graph, module), f"{module} imports itself through a cycle"


def test_the_config_check_and_the_report_stay_off_the_chunkers():
    graph = import_graph()
    config = reachable(graph, "structbench.config")
    assert "structbench.chunking.external.spec" in config
    assert not config & {"structbench.chunking.external.adapters", "structbench.chunking.external.locate"}
    for module in ("structbench.report.tables", "structbench.report.figures", "structbench.report.bundle"):
        assert not {m for m in reachable(graph, module) if m.startswith("structbench.chunking")}, module
