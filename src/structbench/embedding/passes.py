"""Fixed-shape forward passes: what makes a text's vector a function of the text alone, on any device.

Three things can move a vector's last bits besides its text, and each is fixed here for every local model call
(the bi-encoder's vectors, late chunking's token outputs, the cross-encoder's scores):

1. **The pass's shape.** Math libraries pick kernels by shape, so a text's output can depend on how many rows and
   positions the pass it ran in had. Every text runs padded to :func:`bucket_length` of its own token count, in a
   pass of exactly :func:`rows_per_pass` rows of that width; a pass with fewer texts is filled with copies of its
   last text, whose outputs are discarded (:func:`plan_passes`). On a CPU the row count is ``CPU_ROWS`` whatever
   the settings; on a GPU it is a token budget divided by the width (``GPU_PASS_TOKENS``), so a pass of short texts
   has many rows and one of long texts few, and every pass carries about the same work.
2. **The attention kernel.** transformers drops an all-ones padding mask, and scaled-dot-product attention then
   picks another kernel (on an H200, cuDNN's instead of the memory-efficient one) than it picks for a pass with
   padding: a text that exactly fills its width came out differently alone and among shorter companions. Every
   pass here gets its mask as a prepared 4-D additive mask, which transformers passes through untouched, and on a
   GPU one attention backend is forced for every pass (:func:`exact_kernels`).
3. **The CPU's thread count.** A matrix product split over threads can sum in another order, and which split a
   library takes for a small shape depends on the thread count (and on the CPU vendor). Every CPU pass runs on one
   intra-op thread; the requested threads run whole passes side by side (:func:`run_passes`). So the bits are those
   of a one-thread run at any thread count, and small passes do not pay a thread synchronisation per operation.

Inputs are tokenized once per call (the model's own ``preprocess``, so tokenization is exactly
sentence-transformers'), outputs stay on the GPU until the call ends (one copy back), and host arrays are pinned
and copied without blocking. Measurements: ``docs/benchmarks.md``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

BUCKET_WIDTH = 32  # tokens; CPU widths are multiples of this (capped at max_seq_length)
CPU_ROWS = 4  # rows in every CPU pass (chosen by measurement: docs/benchmarks.md)
GPU_BUCKET_WIDTH = 32  # tokens; GPU widths are multiples of this (chosen by measurement: docs/benchmarks.md)
GPU_PASS_TOKENS = 32768  # rows x width of every GPU pass (chosen by measurement: docs/benchmarks.md)
GPU_ROW_MULTIPLE = 8  # GPU row counts are multiples of this (tensor-core tiles)
GPU_CALL_TEXTS = 32768  # texts per cache shard on a GPU: enough texts per call that filler rows stay few


@dataclass(frozen=True)
class Pass:
    """One forward pass: ``rows`` rows of ``width`` positions; ``members`` are the input rows it computes, the
    remaining ``rows - len(members)`` rows repeat the last member (filler whose outputs are discarded)."""

    width: int
    rows: int
    members: tuple[int, ...]

    def row_sources(self) -> list[int]:
        """The input row each of the pass's rows is copied from."""
        return list(self.members) + [self.members[-1]] * (self.rows - len(self.members))


def bucket_length(n_tokens: int, max_seq_length: int, width: int = BUCKET_WIDTH) -> int:
    """The padded length a text of ``n_tokens`` always runs at: the next multiple of ``width``, capped
    at ``max_seq_length``. A function of the text alone, so its companions never change its shape."""
    return min(-(-n_tokens // width) * width, max_seq_length)


def rows_per_pass(width: int, on_gpu: bool) -> int:
    """Rows in every pass of ``width`` positions: ``CPU_ROWS`` on a CPU; on a GPU the token budget
    ``GPU_PASS_TOKENS`` over the width, rounded down to a multiple of ``GPU_ROW_MULTIPLE`` (at least that)."""
    if not on_gpu:
        return CPU_ROWS
    return max(GPU_ROW_MULTIPLE, GPU_PASS_TOKENS // width // GPU_ROW_MULTIPLE * GPU_ROW_MULTIPLE)


def bucket_width_of(on_gpu: bool) -> int:
    return GPU_BUCKET_WIDTH if on_gpu else BUCKET_WIDTH


def plan_passes(lengths: Sequence[int], max_seq_length: int, on_gpu: bool) -> list[Pass]:
    """The passes that compute texts of token counts ``lengths``: grouped by :func:`bucket_length` (in multiples of
    :func:`bucket_width_of` the device), narrowest first, each group cut into passes of :func:`rows_per_pass` rows
    in input order. Every pass a text takes part in has a shape fixed by the text alone."""
    bucket_width = bucket_width_of(on_gpu)
    by_width: dict[int, list[int]] = {}
    for index, n_tokens in enumerate(lengths):
        by_width.setdefault(bucket_length(int(n_tokens), max_seq_length, bucket_width), []).append(index)
    passes = []
    for width, members in sorted(by_width.items()):
        rows = rows_per_pass(width, on_gpu)
        passes += [Pass(width, rows, tuple(members[start : start + rows])) for start in range(0, len(members), rows)]
    return passes


def encoding_scheme(on_gpu: bool) -> dict:
    """What of the pass rule can change a vector's bits: part of every cache namespace."""
    rows = {"pass_tokens": GPU_PASS_TOKENS, "row_multiple": GPU_ROW_MULTIPLE} if on_gpu else {"rows": CPU_ROWS}
    return {"name": "fixed-shapes-v3", "bucket_width": bucket_width_of(on_gpu), "mask": "4d-additive", **rows}


# ---- tokens as arrays --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Tokenized:
    """A call's inputs as the model prepares them: right-padded arrays (n, longest) and each row's length."""

    arrays: dict[str, np.ndarray]  # input_ids, attention_mask, token_type_ids when the model uses them
    lengths: np.ndarray
    pad_id: int = 0  # the tokenizer's padding id, for input_ids widened past the call's longest row

    def __len__(self) -> int:
        return len(self.lengths)


def tokenize(model, inputs: Sequence) -> Tokenized:
    """``inputs`` (texts, or (query, passage) pairs for a cross-encoder) tokenized as the model's own ``preprocess``
    tokenizes them (special tokens, ``longest_first`` truncation at its ``max_seq_length``), as numpy arrays.

    A fast tokenizer's Rust backend encodes the whole call in one parallel batch call without padding: the
    Python tokenizer's padded lists cost more than the GPU's forward passes. Another tokenizer goes through
    ``preprocess``. ``tests/embedding/test_passes.py`` checks both give the same arrays."""
    tokenizer = model.tokenizer
    if tokenizer.padding_side != "right":
        raise ValueError(f"exact passes expect right padding; the tokenizer pads {tokenizer.padding_side}")
    if not getattr(tokenizer, "is_fast", False) or getattr(model[0], "do_lower_case", False):
        features = model.preprocess(list(inputs))
        arrays = {name: value.numpy() for name, value in features.items() if hasattr(value, "dim") and value.dim() == 2}
        return Tokenized(arrays, arrays["attention_mask"].sum(axis=1), tokenizer.pad_token_id or 0)
    encodings = truncating_backend(tokenizer, model.max_seq_length).encode_batch(list(inputs), add_special_tokens=True)
    lengths = np.fromiter((len(encoding.ids) for encoding in encodings), dtype=np.int64, count=len(encodings))
    longest = int(lengths.max(initial=0))
    ids = np.full((len(encodings), longest), tokenizer.pad_token_id or 0, dtype=np.int64)
    types = np.zeros((len(encodings), longest), dtype=np.int64)
    for row, encoding in enumerate(encodings):
        ids[row, : lengths[row]] = encoding.ids
        types[row, : lengths[row]] = encoding.type_ids
    arrays = {"input_ids": ids, "attention_mask": (np.arange(longest) < lengths[:, None]).astype(np.int64)}
    if "token_type_ids" in tokenizer.model_input_names:
        arrays["token_type_ids"] = types
    return Tokenized(arrays, lengths, tokenizer.pad_token_id or 0)


def truncating_backend(tokenizer, max_length: int):
    """A copy of a fast tokenizer's Rust backend that truncates at ``max_length`` (longest first) and never pads:
    a copy, so the model's own tokenizer keeps its settings."""
    from tokenizers import Tokenizer

    backend = Tokenizer.from_str(tokenizer.backend_tokenizer.to_str())
    backend.no_padding()
    backend.enable_truncation(max_length, strategy="longest_first")
    return backend


def tokenized_windows(tokenizer, windows: Sequence[Sequence[int]]) -> Tokenized:
    """Token-id windows as ``[CLS] ids [SEP]`` rows (late chunking: the text was tokenized once, whole)."""
    lengths = np.array([len(ids) + 2 for ids in windows], dtype=np.int64)
    longest = int(lengths.max(initial=0))
    ids = np.full((len(windows), longest), tokenizer.pad_token_id or 0, dtype=np.int64)
    for row, window in enumerate(windows):
        ids[row, : lengths[row]] = [tokenizer.cls_token_id, *window, tokenizer.sep_token_id]
    arrays = {"input_ids": ids, "attention_mask": (np.arange(longest) < lengths[:, None]).astype(np.int64)}
    if "token_type_ids" in tokenizer.model_input_names:
        arrays["token_type_ids"] = np.zeros_like(ids)
    return Tokenized(arrays, lengths, tokenizer.pad_token_id or 0)


def pass_arrays(tokenized: Tokenized, one_pass: Pass) -> dict[str, np.ndarray]:
    """The pass's input arrays, (rows, width): its members' rows then the filler copies, cut or padded to width."""
    sources = np.asarray(one_pass.row_sources())
    arrays = {}
    for name, values in tokenized.arrays.items():
        block = values[sources, : one_pass.width]
        if block.shape[1] < one_pass.width:  # the call's longest text is shorter than the bucket width
            pad_value = tokenized.pad_id if name == "input_ids" else 0
            block = np.pad(block, ((0, 0), (0, one_pass.width - block.shape[1])), constant_values=pad_value)
        arrays[name] = np.ascontiguousarray(block)
    return arrays


# ---- the forward pass --------------------------------------------------------------------------------------


def first_module_backbone(model):
    """The transformers model inside the sentence-transformers pipeline's first module."""
    first = model[0]
    backbone = getattr(first, "auto_model", None) or getattr(first, "model", None)
    if backbone is None:
        raise TypeError(f"{type(first).__name__} holds no transformers model: exact passes need a Transformer module")
    return backbone


def check_attention(model) -> None:
    """Exact passes hand attention a prepared 4-D additive mask, which the ``sdpa`` and ``eager`` implementations
    read; any other (flash attention's unpadded kernels) is refused by name."""
    implementation = getattr(first_module_backbone(model).config, "_attn_implementation", "eager")
    if implementation not in ("sdpa", "eager"):
        raise ValueError(
            f"attention implementation {implementation!r} cannot take the 4-D mask exact passes need; "
            "load the model with attn_implementation='sdpa' or 'eager'"
        )


def forward(model, features: dict):
    """The sentence-transformers pipeline on one pass, the first (Transformer) module given the padding mask as a
    4-D additive mask in the model's dtype (transformers passes a 4-D mask through as is: no mask is ever dropped),
    the later modules (pooling, normalization, a head) the ordinary 2-D mask."""
    import torch

    mask = features["attention_mask"]
    dtype = next(first_module_backbone(model).parameters()).dtype
    additive = (1.0 - mask[:, None, None, :].to(dtype)) * torch.finfo(dtype).min
    features = model[0]({**features, "attention_mask": additive})
    features["attention_mask"] = mask
    for module in list(model)[1:]:
        features = module(features)
    return features


@contextlib.contextmanager
def exact_kernels(device_type: str) -> Iterator[None]:
    """Inference mode, and on a GPU one attention backend (memory-efficient, which takes an additive mask in
    every precision) and no TF32 for every pass; the process's settings are restored on exit."""
    import torch

    with contextlib.ExitStack() as stack:
        stack.enter_context(torch.inference_mode())
        if device_type == "cuda":
            from torch.nn.attention import SDPBackend, sdpa_kernel

            stack.enter_context(sdpa_kernel([SDPBackend.EFFICIENT_ATTENTION]))
            saved = torch.backends.cuda.matmul.allow_tf32
            torch.backends.cuda.matmul.allow_tf32 = False
            stack.callback(setattr, torch.backends.cuda.matmul, "allow_tf32", saved)
        yield


@contextlib.contextmanager
def one_intraop_thread() -> Iterator[None]:
    """Torch's intra-op thread count set to 1 for the block, restored on exit. Threads started inside the block
    take the count of 1 at their first operation."""
    import torch

    saved = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(saved)


def run_passes(
    model,
    tokenized: Tokenized,
    passes: Sequence[Pass],
    head: Callable[[dict], object],
    threads: int | None = None,
) -> list:
    """``head(features)`` of every pass, in pass order: on a GPU one pass after another on the model's stream
    (pinned host arrays, copies that do not block, outputs left on the device); on a CPU whole passes on
    ``threads`` workers (default: torch's thread count at the call) of one intra-op thread each."""
    import torch

    device = model.device

    def run(one_pass: Pass):
        tensors = {name: torch.from_numpy(values) for name, values in pass_arrays(tokenized, one_pass).items()}
        if device.type == "cuda":
            tensors = {name: value.pin_memory().to(device, non_blocking=True) for name, value in tensors.items()}
        return head(forward(model, tensors))

    check_attention(model)
    with exact_kernels(device.type):
        if device.type == "cuda":
            return [run(one_pass) for one_pass in passes]
        workers = max(1, threads or torch.get_num_threads())
        with one_intraop_thread(), ThreadPoolExecutor(workers) as pool:
            return list(pool.map(_in_inference_mode(run), passes))


def in_input_order(passes: Sequence[Pass], outputs: Sequence) -> np.ndarray:
    """The members' rows of every pass's output (filler dropped), back in input order, as one host array: the
    call's only copy from the device."""
    import torch

    order = np.fromiter((index for one_pass in passes for index in one_pass.members), dtype=np.int64)
    computed = torch.cat([output[: len(one_pass.members)] for one_pass, output in zip(passes, outputs)])
    rows = computed.cpu().numpy()
    result = np.empty_like(rows)
    result[order] = rows
    return result


def _in_inference_mode(function: Callable) -> Callable:
    """``function`` under inference mode in the worker thread that runs it (the mode is thread-local)."""

    def wrapped(*args):
        import torch

        with torch.inference_mode():
            return function(*args)

    return wrapped
