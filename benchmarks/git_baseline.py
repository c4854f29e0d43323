"""A library module as it was at an earlier commit, loaded beside today's: the named baseline a benchmark times
against in the same run."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def module_at(commit: str, path: str, name: str, renames: dict[str, str] | None = None):
    """``path`` (relative to the repository) at ``commit`` as a module called ``name``, with each import renamed
    since (``renames``: old text -> new) rewritten; None, with the reason on stderr, without git or the commit."""
    try:
        source = subprocess.run(
            ["git", "show", f"{commit}:{path}"], cwd=REPO, capture_output=True, text=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError) as error:
        print(f"baseline {commit}:{path} unavailable ({error})", file=sys.stderr)
        return None
    for old, new in (renames or {}).items():
        source = source.replace(old, new)
    file = Path(tempfile.mkdtemp(prefix=f"{name}_")) / f"{name}.py"
    file.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, file)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module
