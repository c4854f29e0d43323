"""Atomic file writes: a reader (or a resumed run) sees the old file or the whole new one, never a part.

Each write goes to a temporary file with a unique name in the target's own folder (so the rename stays
on one file system and two writers never share a temp file), is flushed to disk, and is renamed over
the target with ``os.replace``. A crash leaves at most a stray ``.<name>.*.tmp`` file, never a torn
target.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from pathlib import Path


@contextlib.contextmanager
def atomic_path(path: str | Path, suffix: str = ""):
    """Yield a unique temporary path next to ``path``; on success it replaces ``path``, on error it is removed.

    ``suffix`` keeps a writer that insists on an extension happy (``np.save`` appends ``.npy``)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=f".tmp{suffix}", dir=path.parent)
    os.close(handle)
    try:
        yield Path(tmp)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_bytes(path: str | Path, data: bytes) -> None:
    with atomic_path(path) as tmp, open(tmp, "wb") as out:
        out.write(data)
        out.flush()
        os.fsync(out.fileno())


def write_text(path: str | Path, text: str) -> None:
    write_bytes(path, text.encode("utf-8"))


def write_json(path: str | Path, value) -> None:
    """JSON with sorted keys and a fixed indent, so equal values give equal bytes."""
    write_text(path, json.dumps(value, indent=1, sort_keys=True))


@contextlib.contextmanager
def atomic_folder(path: str | Path):
    """Yield a unique temporary folder beside ``path``; on success its files are moved into ``path``, on error it
    is removed, so a writer that fails part-way leaves nothing behind and ``path``'s existing files untouched.

    A new ``path`` is the renamed folder (one rename); an existing one keeps its other files and has each written
    file replaced whole (``os.replace``), after every file was written."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
    try:
        yield tmp
        if not path.exists():
            os.replace(tmp, path)
            return
        for written in sorted(tmp.rglob("*")):
            if written.is_file():
                target = path / written.relative_to(tmp)
                target.parent.mkdir(parents=True, exist_ok=True)
                os.replace(written, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
