"""The library's import graph has no cycle: every import in src/structbench (function-level, optional and
relative imports included) points from a module to one that never leads back to it. Generic over whatever
modules exist, so it holds through moves between packages."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = "structbench"


def library_modules() -> dict[str, Path]:
    """Every module of the package, by dotted name (a package by its ``__init__``)."""
    modules = {}
    for path in sorted((SRC / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def imported_modules(path: Path, package: str, modules: dict[str, Path]) -> set[str]:
    """The library modules that the imports anywhere in ``path`` name: ``import a.b`` and ``from a import
    x`` name ``a.b`` and ``a``; ``from a import b`` names ``a.b`` only when that is a module (the package
    ``a`` is then only passed through). Relative imports resolve against ``package``."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            for alias in node.names:
                found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base)
    return {name for name in found if name in modules}


def import_graph() -> dict[str, set[str]]:
    """Module -> the library modules it imports.

    The parent packages Python runs on the way to a submodule are not edges: a package's ``__init__``
    re-exporting its submodules is no cycle, since the package is already being imported."""
    modules = library_modules()
    graph = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        graph[name] = imported_modules(path, package, modules) - {name}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle as a list of modules (first == last), or None; depth-first, iterative."""
    state = dict.fromkeys(graph, 0)  # 0 unvisited, 1 on the current path, 2 done
    for root in sorted(graph):
        if state[root]:
            continue
        path, stack = [root], [iter(sorted(graph[root]))]
        state[root] = 1
        while stack:
            target = next(stack[-1], None)
            if target is None:
                state[path.pop()] = 2
                stack.pop()
            elif state[target] == 1:
                return path[path.index(target) :] + [target]
            elif state[target] == 0:
                state[target] = 1
                path.append(target)
                stack.append(iter(sorted(graph[target])))
    return None


def test_the_library_import_graph_has_no_cycle():
    graph = import_graph()
    assert len(graph) > 50 and "structbench.config" in graph  # the walk sees the library
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_cycle_finder_finds_cycles_and_only_cycles():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set(), "d": {"d2"}, "d2": {"d"}}) == ["d", "d2", "d"]


def reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    """Every library module ``start`` imports, directly or through others."""
    seen, todo = set(), [start]
    while todo:
        for target in graph[todo.pop()] - seen:
            seen.add(target)
            todo.append(target)
    return seen


def test_the_config_check_and_the_report_stay_off_the_chunkers():
    """The config check reads a chunker spec (chunking.external.chunker_spec), never the adapters; the report
    presents chunk bounds the chunk rules wrote, importing no chunking code."""
    graph = import_graph()
    config = reachable(graph, "structbench.crosskeys")
    assert "structbench.chunking.external.chunker_spec" in config
    assert not config & {"structbench.chunking.external.adapters", "structbench.chunking.external.locate"}
    for module in ("structbench.report.catalog", "structbench.report.figures", "structbench.report.bundle"):
        assert not {m for m in reachable(graph, module) if m.startswith("structbench.chunking")}, module


# The library's layers, lowest first. A unit is a subpackage or a top-level module (the second part of a
# module's dotted name), or a module of a subpackage layered on its own (``plan.report_files``: the report's file
# lists sit below the config check, the study that runs it above); a module may import its own unit and the
# units of lower layers, never one of its own layer or above. The package root (its version and the API's
# re-exports) stands outside the layers.
LAYERS = (
    (
        "arguments",
        "artifacts",
        "atomic",
        "cache",
        "conditions",
        "configerror",
        "configfiles",
        "data",
        "datamodel",
        "defaults",
        "devices",
        "fingerprint",
        "graphemes",
        "http",
        "logs",
        "overlap",
        "provenance",
        "sentences",
        "sizes",
        "staleness",
        "tokens",
        "vectors",
        "yamlsafe",
    ),
    ("corpus", "chunking", "llm", "metrics", "endpoints"),
    ("shards", "structure", "querygen", "prefixes", "stats"),
    ("embedding", "report"),
    ("retrieval",),
    ("config", "api", "plan.report_files"),
    ("crosskeys",),
    ("plan",),
    ("checkconfig", "export"),
    ("show",),
    ("cli",),
    ("__main__",),
)


def unit_of(module: str, layers: tuple[tuple[str, ...], ...] = LAYERS) -> str:
    """The layered unit a module belongs to: ``structbench.embedding.local`` -> ``embedding``, or the module
    itself where ``layers`` names it on its own (``structbench.plan.report_files`` -> ``plan.report_files``)."""
    parts = module.split(".")
    own = ".".join(parts[1:3])
    return own if any(own in units for units in layers) else parts[1]


def upward_imports(graph: dict[str, set[str]], layers: tuple[tuple[str, ...], ...]) -> list[str]:
    """Each import of a unit in the importer's own layer or above (its own unit aside), as
    ``importer -> imported``. Base units import each other freely (the first layer is one unit)."""
    level = {unit: number for number, units in enumerate(layers) for unit in units}
    found = []
    for importer, imported in sorted(graph.items()):
        if importer == PACKAGE:
            continue
        for target in sorted(imported - {PACKAGE}):
            source_unit, target_unit = unit_of(importer, layers), unit_of(target, layers)
            same_base = level[source_unit] == level[target_unit] == 0
            if source_unit != target_unit and not same_base and level[target_unit] >= level[source_unit]:
                found.append(f"{importer} -> {target}")
    return found


def test_every_unit_of_the_library_has_a_layer():
    units = {unit_of(module) for module in import_graph() if module != PACKAGE}
    layered = [unit for units_of_layer in LAYERS for unit in units_of_layer]
    assert len(layered) == len(set(layered)), "a unit in two layers"
    assert units == set(layered), (
        f"units without a layer: {sorted(units - set(layered))}; layers naming no unit: {sorted(set(layered) - units)}"
    )


def test_no_module_imports_a_layer_above_its_own():
    """Endpoints below embedding, embedding below retrieval, and so on (:data:`LAYERS`)."""
    upward = upward_imports(import_graph(), LAYERS)
    assert not upward, "imports of the importer's own layer or above:\n" + "\n".join(upward)


def test_the_layer_check_finds_upward_and_sideways_imports():
    layers = (("base", "util"), ("low", "side"), ("high",))
    graph = {
        "structbench.base": {"structbench.util"},
        "structbench.low.a": {"structbench.low.b", "structbench.base", "structbench.high.x"},
        "structbench.side": {"structbench.low.a"},
        "structbench.high.x": {"structbench.low.a", "structbench"},
    }
    assert upward_imports(graph, layers) == [
        "structbench.low.a -> structbench.high.x",
        "structbench.side -> structbench.low.a",
    ]


def test_a_module_layered_on_its_own_sits_apart_from_its_package():
    layers = (("base", "pkg"), ("low",), ("pkg.top",))
    graph = {
        "structbench.pkg.keys": {"structbench.base", "structbench.pkg.top"},
        "structbench.pkg.top": {"structbench.pkg.keys", "structbench.low.a"},
        "structbench.low.a": {"structbench.pkg.keys", "structbench.pkg.top"},
    }
    assert unit_of("structbench.pkg.top.inner", layers) == "pkg.top"
    assert unit_of("structbench.pkg.keys", layers) == "pkg"
    assert upward_imports(graph, layers) == [
        "structbench.low.a -> structbench.pkg.top",
        "structbench.pkg.keys -> structbench.pkg.top",
    ]


def package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The module graph collapsed onto packages: a node per direct subpackage of the library and per top-level
    module (``structbench.plan.study`` -> ``plan``, ``structbench.config`` -> ``config``); an edge where any module
    of one imports any module of another. The package root (the API's re-exports) is left out, as in the layers."""

    def node(module: str) -> str:
        return module.split(".")[1]

    packages: dict[str, set[str]] = {}
    for importer, imported in graph.items():
        if importer == PACKAGE:
            continue
        targets = {node(target) for target in imported if target != PACKAGE}
        packages.setdefault(node(importer), set()).update(targets - {node(importer)})
    return packages


def format_graph(graph: dict[str, set[str]]) -> str:
    """One line per node, ``node -> imported, ...``, sorted: what a failing check prints."""
    return "\n".join(
        f"{name} -> {', '.join(sorted(targets)) or '(nothing)'}" for name, targets in sorted(graph.items())
    )


def test_no_two_packages_import_each_other_even_through_others():
    """The package-level graph has no cycle: a package that holds both the bottom and the top of the module graph
    (a vocabulary every layer reads beside a study that reads every layer) shows up here even when no module
    cycle does. ``pytest -s`` prints the graph."""
    packages = package_graph(import_graph())
    print("\npackage import graph:\n" + format_graph(packages))
    assert {"artifacts", "plan", "report", "stats", "config"} <= set(packages)  # the collapse sees the packages
    assert "plan" not in reachable(packages, "artifacts")
    cycle = find_cycle(packages)
    assert cycle is None, "package cycle: " + " -> ".join(cycle) + "\n" + format_graph(packages)


def test_the_package_graph_collapses_modules_and_finds_a_two_way_pair():
    graph = {
        PACKAGE: {"structbench.low.keys"},
        "structbench.low.keys": {"structbench.base"},
        "structbench.low.study": {"structbench.high.x", "structbench.low.keys"},
        "structbench.high.x": {"structbench.low.keys", PACKAGE},
        "structbench.base": set(),
    }
    packages = package_graph(graph)
    assert packages == {"low": {"base", "high"}, "high": {"low"}, "base": set()}
    assert find_cycle(packages) == ["high", "low", "high"]  # no module cycle, yet a package one
    assert find_cycle(graph) is None
    assert format_graph(packages).splitlines() == ["base -> (nothing)", "high -> low", "low -> base, high"]
