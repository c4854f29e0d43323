"""Content-addressed cache for expensive results (docs/method.md §13).

A result is stored under the hash of everything that determines it: the model fingerprint (content
hash of the weights, parameters, library versions, device) names a namespace, and the exact input
text keys the entry. Entries live in immutable shard files ``shard-<hash>.npz`` that hold the text
keys, the float32 vectors and a checksum of both (:func:`shard_checksum`).

Neither the key nor the bytes are trusted blindly:

* a shard is written under a unique temporary name in the same folder and renamed into place, so a
  writer killed at any point leaves either a whole shard or a temporary file no reader ever opens
  (readers list ``shard-*.npz`` only);
* every shard a lookup uses is verified against its checksum; a shard that cannot be read, lacks a
  checksum or fails it is named in a WARNING, moved to ``quarantine/`` beside the shards, and its texts
  are recomputed. A damaged cache therefore costs time, never a silently wrong vector.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import secrets
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from structbench import atomic
from structbench.logs import Progress

log = logging.getLogger(__name__)

SHARD_FORMAT = 2  # version of the shard layout; part of every namespace, so old layouts are never read
SHARD_GLOB = "shard-*.npz"
QUARANTINE = "quarantine"
DEFAULT_CHUNK = 256  # texts computed (and stored as one shard) at a time: the resume and progress unit


def stable_hash(value) -> str:
    """SHA-256 of a JSON-serializable value with sorted keys: the same value always hashes the same."""
    payload = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def text_keys(texts: Sequence[str]) -> list[str]:
    """The cache key of each text: SHA-256 of its UTF-8 bytes, as 64 hex digits."""
    return [hashlib.sha256(text.encode("utf-8")).hexdigest() for text in texts]


# ---- atomic files ------------------------------------------------------------------------------
# One implementation for the whole package (structbench.atomic): unique temp name beside the target,
# fsync, atomic rename.
atomic_write_bytes = atomic.write_bytes
atomic_write_text = atomic.write_text


# ---- shards ------------------------------------------------------------------------------------


class DamagedShardError(Exception):
    """A shard file that cannot be trusted; the message names the file and says why."""


def shard_checksum(keys: np.ndarray, vectors: np.ndarray) -> str:
    """SHA-256 over a shard's content: the keys (one per line), the vectors' dtype and shape, and the
    vectors' C-order bytes. Any change to a key, a vector element, the dtype or the shape changes it."""
    digest = hashlib.sha256()
    digest.update("\n".join(keys.tolist()).encode("utf-8"))
    digest.update(f"\0{vectors.dtype.str}\0{vectors.shape}\0".encode("ascii"))
    digest.update(np.ascontiguousarray(vectors).tobytes())
    return digest.hexdigest()


def shard_bytes(keys: Sequence[str], vectors: np.ndarray) -> bytes:
    """The ``.npz`` bytes of a shard holding ``keys``, their float32 ``vectors`` and the checksum."""
    import io

    key_array = np.asarray(list(keys), dtype="<U64")
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    if vectors.ndim != 2 or vectors.shape[0] != len(key_array):
        raise ValueError(f"a shard needs one vector per key: {len(key_array)} keys, vectors of shape {vectors.shape}")
    buffer = io.BytesIO()
    np.savez(buffer, keys=key_array, vectors=vectors, checksum=np.asarray(shard_checksum(key_array, vectors)))
    return buffer.getvalue()


def read_shard_keys(path: Path) -> list[str]:
    """The keys a shard holds (not yet verified: the checksum covers them and is checked on use)."""
    try:
        with np.load(path, allow_pickle=False) as stored:
            return stored["keys"].tolist()
    except FileNotFoundError:
        raise
    except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile) as error:
        raise DamagedShardError(f"vector cache shard {path} is unreadable: {type(error).__name__}: {error}") from error


def read_shard(path: Path) -> tuple[list[str], np.ndarray]:
    """A shard's keys and vectors, verified against its stored checksum.

    Raises :class:`DamagedShardError` naming the file when it cannot be read, lacks a member, has
    vectors that do not match its keys, or fails its checksum."""
    try:
        with np.load(path, allow_pickle=False) as stored:
            keys, vectors = stored["keys"], stored["vectors"]
            stored_checksum = str(stored["checksum"]) if "checksum" in stored.files else None
    except FileNotFoundError:
        raise
    except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile) as error:
        raise DamagedShardError(f"vector cache shard {path} is unreadable: {type(error).__name__}: {error}") from error
    if stored_checksum is None:
        raise DamagedShardError(f"vector cache shard {path} has no checksum")
    if vectors.ndim != 2 or vectors.shape[0] != keys.shape[0]:
        raise DamagedShardError(
            f"vector cache shard {path} holds {keys.shape[0]} keys but vectors of shape {vectors.shape}"
        )
    actual = shard_checksum(keys, vectors)
    if actual != stored_checksum:
        raise DamagedShardError(
            f"vector cache shard {path} fails its checksum (stored {stored_checksum[:12]}, content {actual[:12]})"
        )
    return keys.tolist(), vectors


# ---- the cache ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class CacheLookup:
    """What :meth:`VectorCache.get_or_compute` did.

    ``vectors`` has one row per requested text, in order. Counts are over distinct texts:
    ``n_computed + n_from_cache`` is the number of distinct texts requested. ``n_quarantined`` counts
    shard files found damaged and moved aside during this lookup."""

    vectors: np.ndarray
    n_computed: int
    n_from_cache: int
    n_quarantined: int


class VectorCache:
    """Vectors keyed by text hash, in ``root/<namespace hash>/shard-*.npz``.

    ``namespace`` is the JSON-serializable description of everything besides the text that determines
    a vector; it is written, for people, to ``namespace.json`` in the namespace folder."""

    def __init__(self, root: str | Path, namespace: dict):
        self.namespace = {"shard_format": SHARD_FORMAT, **namespace}
        self.directory = Path(root) / stable_hash(self.namespace)[:24]
        self.directory.mkdir(parents=True, exist_ok=True)
        description = json.dumps(self.namespace, sort_keys=True, indent=1) + "\n"
        marker = self.directory / "namespace.json"
        if not marker.exists() or marker.read_text(encoding="utf-8", errors="replace") != description:
            atomic_write_text(marker, description)

    @property
    def quarantine(self) -> Path:
        return self.directory / QUARANTINE

    def shards(self) -> list[Path]:
        return sorted(self.directory.glob(SHARD_GLOB))

    def load(self, wanted: set[str]) -> tuple[dict[str, np.ndarray], int]:
        """The verified cached vectors of the ``wanted`` keys, and how many shards were quarantined.

        A shard's vectors are read (and its checksum verified) only if it holds a wanted key."""
        known: dict[str, np.ndarray] = {}
        n_quarantined = 0
        for shard in self.shards():
            try:
                keys = read_shard_keys(shard)
                if not any(key in wanted and key not in known for key in keys):
                    continue
                keys, vectors = read_shard(shard)
            except FileNotFoundError:
                continue  # another job quarantined or replaced it since the listing; nothing to use
            except DamagedShardError as error:
                n_quarantined += self._quarantine(shard, str(error))
                continue
            known.update((key, vectors[row]) for row, key in enumerate(keys) if key in wanted and key not in known)
        return known, n_quarantined

    def store(self, keys: Sequence[str], vectors: np.ndarray) -> Path:
        """Write one shard holding ``keys`` and their ``vectors``; its name is the hash of its keys."""
        path = self.directory / f"shard-{stable_hash(list(keys))[:24]}.npz"
        atomic_write_bytes(path, shard_bytes(keys, vectors))
        return path

    def get_or_compute(
        self,
        texts: Sequence[str],
        compute: Callable[[list[str]], np.ndarray],
        chunk_size: int = DEFAULT_CHUNK,
        verb: str = "computed",
    ) -> CacheLookup:
        """Vectors for ``texts`` in order; ``compute(texts) -> array`` runs on the distinct unseen ones.

        Unseen texts are computed ``chunk_size`` at a time, each chunk stored as its own shard as soon
        as it is done, so a killed job keeps what it finished; progress is logged per chunk."""
        keys = text_keys(texts)
        distinct = list(dict.fromkeys(keys))
        known, n_quarantined = self.load(set(distinct))
        n_from_cache = len(known)
        missing = [key for key in distinct if key not in known]
        if missing:
            text_of = dict(zip(keys, texts))
            progress = Progress(log, verb, total=len(missing), unit="texts")
            for start in range(0, len(missing), chunk_size):
                chunk = missing[start : start + chunk_size]
                fresh = np.asarray(compute([text_of[key] for key in chunk]), dtype=np.float32)
                if fresh.ndim != 2 or fresh.shape[0] != len(chunk):
                    raise ValueError(f"compute returned shape {fresh.shape} for {len(chunk)} texts")
                self.store(chunk, fresh)
                known.update(zip(chunk, fresh))
                progress.update(len(chunk))
            progress.finish()
        if not keys:
            vectors = np.zeros((0, 0), dtype=np.float32)
        else:
            vectors = np.stack([known[key] for key in keys]).astype(np.float32, copy=False)
        return CacheLookup(vectors, n_computed=len(missing), n_from_cache=n_from_cache, n_quarantined=n_quarantined)

    def _quarantine(self, shard: Path, reason: str) -> int:
        """Move a damaged shard into ``quarantine/`` (never deleted: it is evidence); 1 if moved."""
        self.quarantine.mkdir(exist_ok=True)
        target = self.quarantine / shard.name
        if target.exists():
            target = self.quarantine / f"{shard.name}.{os.getpid()}.{secrets.token_hex(6)}"
        try:
            os.replace(shard, target)
        except FileNotFoundError:
            return 0  # another job moved it first
        log.warning("%s; moved to %s, its texts will be recomputed", reason, target)
        return 1
