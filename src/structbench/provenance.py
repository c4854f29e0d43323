"""What a rule's output depends on besides its inputs and params: the library code it runs.

Snakemake reruns a rule when its params change, but not when a module its script imports changes.
Each rule therefore carries ``code_version(<modules>)`` in its params: the package version plus a hash
of the named modules' source, so editing ``metrics.py`` reruns scoring and nothing upstream of it.
"""

from __future__ import annotations

import hashlib
import importlib.util
from pathlib import Path

import structbench


def module_files(module: str) -> list[Path]:
    spec = importlib.util.find_spec(f"structbench.{module}")
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError(f"structbench.{module}")
    origin = Path(spec.origin)
    return sorted(origin.parent.rglob("*.py")) if origin.name == "__init__.py" else [origin]


def code_version(*modules: str) -> str:
    digest = hashlib.sha256()
    for module in ("tables",) + modules:
        for path in module_files(module):
            digest.update(path.name.encode())
            digest.update(path.read_bytes())
    return f"{structbench.__version__}+{digest.hexdigest()[:12]}"
