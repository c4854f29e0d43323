"""A content-addressed cache of LLM completions, shared by every run that points at one folder.

The key of a completion is the SHA-256 of everything that determines it (:func:`request_key`): the
backend kind, the model id and a fingerprint of its weights, the prompt version, the rendered messages,
the sampling parameters and the JSON schema. The backend kind is part of the key because it changes the
answer for the same weights (vLLM and the OpenAI-compatible servers have their own structured-output
engines), and a JSON request that the transformers backend decodes under a grammar also carries the
engine and its version (``"grammar": "llguidance==1.9.1"``; absent with ``constrained: false``), so a
constrained answer is never served for an unconstrained request or across engine versions.

Layout: ``<root>/<key[:2]>/<key>.json``, one immutable file per entry holding the key, the material it
was hashed from (so an entry can be audited), the completion and a checksum of the three. Writes go to a
unique temporary name in the same folder, are fsynced and then renamed over the final name with
``os.replace``, so a writer killed at any instant leaves either no entry or a whole one; readers only
open ``*.json`` names, never temporaries. A read that fails to parse or whose checksum disagrees (a
corrupt disk, a foreign writer) is moved to ``<root>/quarantine/`` and counted as a miss, so the
completion is recomputed rather than trusted.

Weights fingerprints (:func:`weights_fingerprint`) hash the model files' contents; the hash of each
file is memoized in ``<root>/file-hashes.json`` by (path, size, mtime, ctime), so a 500 MB model is read once
per cache, not once per job.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import uuid
from pathlib import Path

from structbench import fingerprint
from structbench.atomic import atomic_path
from structbench.cache import stable_hash

log = logging.getLogger(__name__)


def request_key(material: dict) -> str:
    """The cache key of a completion: SHA-256 of the canonical JSON of its determining material."""
    return stable_hash(material)


class ResponseCache:
    """Completions stored by :func:`request_key` under ``root`` (see the module docstring)."""

    def __init__(self, root: str | Path):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.hits = 0
        self.misses = 0
        self.quarantined = 0

    def path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict | None:
        """The stored completion of ``key``, or None (absent, or corrupt and now quarantined)."""
        path = self.path(key)
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            self.misses += 1
            return None
        try:
            entry = json.loads(raw)
            problem = _entry_problem(entry, key)
        except (json.JSONDecodeError, UnicodeDecodeError) as error:
            problem = f"not JSON ({error})"
        if problem:
            self._quarantine(path, problem)
            self.misses += 1
            return None
        self.hits += 1
        return entry["completion"]

    def put(self, key: str, material: dict, completion: dict) -> None:
        """Store ``completion`` under ``key`` atomically (an existing entry is replaced by an equal one)."""
        entry = {"key": key, "material": material, "completion": completion}
        entry["checksum"] = _checksum(entry)
        payload = json.dumps(entry, sort_keys=True, ensure_ascii=False, indent=1).encode("utf-8")
        path = self.path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, payload)

    def _quarantine(self, path: Path, problem: str) -> None:
        target = self.root / "quarantine" / f"{path.name}.{uuid.uuid4().hex[:8]}"
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.replace(path, target)
        except FileNotFoundError:  # another reader moved it first
            return
        self.quarantined += 1
        log.warning("LLM cache entry %s is corrupt (%s); moved to %s and recomputing", path, problem, target)


def write_atomic(path: Path, payload: bytes) -> None:
    """Write ``payload`` to ``path`` through a unique temporary name in the same folder + ``os.replace``."""
    with atomic_path(path) as tmp, open(tmp, "wb") as handle:
        _write_chunks(handle, payload)
        handle.flush()
        os.fsync(handle.fileno())


def _write_chunks(handle, payload: bytes, size: int = 1 << 16) -> None:
    # Chunked so that a test can stop a writer between chunks, as a SIGKILL mid-write would.
    for offset in range(0, len(payload), size):
        handle.write(payload[offset : offset + size])


def _checksum(entry: dict) -> str:
    return stable_hash({name: entry[name] for name in ("key", "material", "completion")})


def _entry_problem(entry, key: str) -> str:
    if not isinstance(entry, dict) or not {"key", "material", "completion", "checksum"} <= set(entry):
        return "missing fields"
    if entry["key"] != key:
        return f"holds key {entry['key']!r}"
    if entry["checksum"] != _checksum(entry):
        return "checksum mismatch"
    if request_key(entry["material"]) != key:
        return "material does not hash to its key"
    return ""


def weights_fingerprint(path: str | Path, memo_root: str | Path | None = None) -> str:
    """SHA-256 over the contents of a model file, or of every file under a model directory.

    A directory's hash covers each file's relative path and content hash, in sorted order, skipping
    hidden files and ``__pycache__``. Each file's hash is memoized (:func:`structbench.fingerprint.hashed_files`)
    in ``<memo_root>/file-hashes.json`` when ``memo_root`` is given."""
    path = Path(path).resolve()
    if not path.exists():
        raise FileNotFoundError(f"model path {path} does not exist")
    files = (
        [path]
        if path.is_file()
        else sorted(
            file
            for file in path.rglob("*")
            if file.is_file()
            and not any(part.startswith(".") or part == "__pycache__" for part in file.relative_to(path).parts)
        )
    )
    hashes = fingerprint.hashed_files(files, Path(memo_root) / "file-hashes.json" if memo_root else None)
    digest = hashlib.sha256()
    for file in files:
        name = file.name if file == path else file.relative_to(path).as_posix()
        digest.update(f"{name}\0{hashes[file]}\n".encode())
    return digest.hexdigest()
