"""Content fingerprints of model files, memoized on disk (docs/method.md §13: cache keys name the model's
content, not its name).

A model of hundreds of megabytes must not be re-read by every job, so each file's SHA-256 is kept in a
small JSON index keyed by the file's resolved path and its (size, mtime_ns, ctime_ns). ctime as well as
mtime: a tool that restores mtime after rewriting a file (``cp -p``, ``rsync -t``) cannot restore
ctime, so a rewritten file is always re-hashed. The embedding cache and the LLM response cache both
fingerprint their models through :func:`hashed_files`.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Sequence
from pathlib import Path

from structbench.atomic import write_text

log = logging.getLogger(__name__)


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def stat_key(path: Path) -> list[int]:
    stat = path.stat()
    return [stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns]


def read_hash_index(index_path: Path) -> dict:
    try:
        index = json.loads(index_path.read_text(encoding="utf-8"))
        return index if isinstance(index, dict) else {}
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as error:
        log.warning("file hash index %s is unreadable (%s); re-hashing", index_path, error)
        return {}


def hashed_files(paths: Sequence[Path], index_path: Path | None) -> dict[Path, str]:
    """SHA-256 of each file, reusing the index entry when the file's (path, size, mtime_ns, ctime_ns)
    is unchanged; new hashes are merged into the index with an atomic write. ``index_path=None``
    hashes every file and remembers nothing."""
    index = read_hash_index(index_path) if index_path else {}
    hashes, fresh = {}, {}
    for path in paths:
        resolved = str(path.resolve())
        before = stat_key(path)
        entry = index.get(resolved)
        if isinstance(entry, dict) and entry.get("stat") == before and isinstance(entry.get("sha256"), str):
            hashes[path] = entry["sha256"]
            continue
        hashes[path] = file_sha256(path)
        if stat_key(path) == before:  # unchanged while hashing: safe to memoize
            fresh[resolved] = {"stat": before, "sha256": hashes[path]}
    if fresh and index_path:
        merged = {**read_hash_index(index_path), **fresh}  # re-read: another job may have added entries
        write_text(index_path, json.dumps(merged, sort_keys=True, indent=1) + "\n")
    return hashes
