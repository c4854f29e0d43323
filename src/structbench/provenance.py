"""What a rule's output depends on besides its inputs and params: the library code its script runs.

Snakemake reruns a rule when its params change, but not when a module its script imports changes. Each
rule therefore carries ``code=code_version(<its script>)`` in its params: the package version plus a hash
of every structbench module the script reaches (:func:`reached_modules`: its imports, their imports, and
so on, function-level imports included). Nothing is listed by hand, so nothing can drift: an edit to
``conditions.py`` reruns exactly the rules whose scripts reach it, and nothing else.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import sys
from pathlib import Path

import structbench

PACKAGE = "structbench"


PACKAGE_DIR = Path(structbench.__file__).resolve().parent


@functools.cache
def module_file(module: str) -> Path | None:
    """The source file of a structbench module, or None for a name that is a function or class.

    Found by path, not ``importlib.util.find_spec``, which imports every parent package: each job-side
    Snakemake computes the code version of every rule, so that cost is paid once per job."""
    parts = module.split(".")
    if parts[0] != PACKAGE:
        return None
    base = PACKAGE_DIR.joinpath(*parts[1:])
    for file in (base / "__init__.py", base.with_name(base.name + ".py")):
        if file.is_file():
            return file
    return None


def _catches_import_error(node: ast.Try) -> bool:
    for handler in node.handlers:
        caught = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
        if any(isinstance(expr, ast.Name) and expr.id in {"ImportError", "ModuleNotFoundError"} for expr in caught):
            return True
    return False


# The fields of a statement that hold statements: an import is a statement, so the walk visits these only
# (a tenth of a module's nodes; ast.walk over every expression node was most of a job's start-up).
BLOCKS = ("body", "orelse", "finalbody", "handlers", "cases")


def _imports(body: list, optional: bool):
    """``(import node, optional)`` for every import statement in ``body`` and the blocks nested in it."""
    for node in body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node, optional
            continue
        guarded = isinstance(node, ast.Try) and _catches_import_error(node)
        for field in BLOCKS:
            block = getattr(node, field, None)
            if isinstance(block, list):
                yield from _imports(block, optional or (guarded and field == "body"))


@functools.cache
def imports_of(path: Path, package: str | None) -> tuple[frozenset[str], frozenset[str]]:
    """(required, optional) absolute module names imported anywhere in ``path``.

    Relative imports resolve against ``package``. An import inside ``try: ... except ImportError`` is
    optional (a dependency the code does without); ``from structbench import defaults`` names the
    submodule ``structbench.defaults`` too."""
    tree = ast.parse(path.read_text(), filename=str(path))
    # A module-level ``__getattr__`` (PEP 562) imports on attribute access only: ``structbench.chunk_markdown``
    # loads the API, ``import structbench.metrics`` does not. A script that uses such a name imports it
    # by name itself, which this walk sees; following every package's lazy exports would make every
    # script depend on everything.
    body = [node for node in tree.body if not (isinstance(node, ast.FunctionDef) and node.name == "__getattr__")]
    required, optional = set(), set()
    for node, guarded in _imports(body, optional=False):
        names: set[str] = set()
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        else:
            base = node.module or ""
            if node.level:
                parts = (package or "").split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            names.add(base)
            if base.split(".")[0] == PACKAGE:
                names.update(f"{base}.{alias.name}" for alias in node.names)
        (optional if guarded else required).update(names)
    return frozenset(required), frozenset(optional - required)


def reached_modules(script: str | Path, *, include_optional: bool = True) -> tuple[dict[str, Path], set[str]]:
    """(structbench modules with their files, third-party top-level modules) reached from ``script``.

    Every structbench module a reached file imports is followed, with each package's ``__init__`` on
    the way. Optional imports are followed for the code hash (an optional module still shapes the output
    when present) and left out of the third-party set with ``include_optional=False``."""
    own: dict[str, Path] = {}
    third_party: set[str] = set()
    todo: list[tuple[Path, str | None]] = [(Path(script).resolve(), None)]
    while todo:
        path, package = todo.pop()
        required, optional = imports_of(path, package)
        for name in sorted(required | optional):
            top = name.split(".")[0]
            if top == PACKAGE:
                parts = name.split(".")
                for depth in range(1, len(parts) + 1):
                    prefix = ".".join(parts[:depth])
                    file = module_file(prefix)
                    if file is not None and prefix not in own:
                        own[prefix] = file
                        todo.append((file, prefix if file.name == "__init__.py" else prefix.rpartition(".")[0]))
            elif (
                top
                and top not in sys.stdlib_module_names
                and top != "snakemake"
                and (include_optional or name in required)
            ):
                third_party.add(top)
    return own, third_party


def code_version(script: str | Path) -> str:
    """The package version plus a hash of the source of every structbench module ``script`` reaches.

    Files are hashed in module-name order with their names, so a moved or renamed module changes the
    version too (its rules rerun once)."""
    own, _ = reached_modules(script)
    digest = hashlib.sha256()
    for name in sorted(own):
        digest.update(name.encode())
        digest.update(own[name].read_bytes())
    return f"{structbench.__version__}+{digest.hexdigest()[:12]}"
