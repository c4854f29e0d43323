"""Content-addressed cache for expensive results (SPEC section 13).

A result is stored under the hash of everything that determines it: the model fingerprint (id,
revision, parameters) names a namespace, and the exact input text keys the entry. Entries are written
as immutable shard files through a temporary name and an atomic rename, so a crash mid-write leaves
either a whole shard or none; a re-run recomputes only what no shard holds.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np


def stable_hash(value) -> str:
    """SHA-256 of a JSON-serializable value with sorted keys: the same value always hashes the same."""
    payload = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def text_keys(texts: list[str]) -> list[str]:
    return [hashlib.sha256(text.encode("utf-8")).hexdigest() for text in texts]


class VectorCache:
    """Vectors keyed by text hash, in ``root/<namespace hash>/shard-*.npz``."""

    def __init__(self, root: str | Path, namespace: dict):
        self.directory = Path(root) / stable_hash(namespace)[:24]
        self.directory.mkdir(parents=True, exist_ok=True)
        (self.directory / "namespace.json").write_text(json.dumps(namespace, sort_keys=True, indent=1))

    def _load(self, wanted: set[str]) -> dict[str, np.ndarray]:
        """The cached vectors of ``wanted`` keys; a shard's vectors are read only if it holds one of them."""
        known: dict[str, np.ndarray] = {}
        for shard in sorted(self.directory.glob("shard-*.npz")):
            with np.load(shard) as stored:
                keys = stored["keys"].tolist()
                rows = [row for row, key in enumerate(keys) if key in wanted and key not in known]
                if rows:
                    vectors = stored["vectors"]
                    known.update((keys[row], vectors[row]) for row in rows)
        return known

    def get_or_compute(self, texts: list[str], compute) -> tuple[np.ndarray, int]:
        """Vectors for ``texts`` in order; ``compute(missing_texts) -> array`` runs on the unseen ones.

        Returns the vectors and how many texts were computed (the rest came from the cache)."""
        keys = text_keys(texts)
        known = self._load(set(keys))
        missing_keys = list(dict.fromkeys(key for key in keys if key not in known))
        if missing_keys:
            first_text = dict(zip(keys, texts))
            fresh = np.asarray(compute([first_text[key] for key in missing_keys]), dtype=np.float32)
            self._write_shard(missing_keys, fresh)
            known.update(zip(missing_keys, fresh))
        if not texts:
            return np.zeros((0, 0), dtype=np.float32), 0
        return np.stack([known[key] for key in keys]).astype(np.float32, copy=False), len(missing_keys)

    def _write_shard(self, keys: list[str], vectors: np.ndarray) -> None:
        name = f"shard-{stable_hash(keys)[:24]}.npz"
        tmp = self.directory / f".{name}.{os.getpid()}.tmp.npz"
        np.savez(tmp, keys=np.asarray(keys), vectors=vectors)
        tmp.replace(self.directory / name)
