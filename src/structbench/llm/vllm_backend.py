"""In-process vLLM: offline batch generation on a GPU node with JSON-schema structured output.

Written against vLLM 0.33.0 (``vllm.LLM``, ``vllm.SamplingParams``,
``vllm.sampling_params.StructuredOutputsParams``; the structured-output API was renamed across versions,
from ``guided_decoding=GuidedDecodingParams(json=...)`` to ``structured_outputs=
StructuredOutputsParams(json=...)``). One ``LLM.chat`` call takes a whole batch of conversations with one
``SamplingParams`` each; vLLM schedules them itself (continuous batching), so ``batch_size`` is unused.
A JSON request decodes under its schema's grammar, so its answer is valid JSON by construction (the
client still validates it: a generation cut by ``max_tokens`` can end mid-object).

vLLM rejects a whole batch when one prompt exceeds ``max_model_len``; such requests are answered
here with a failure record instead, counted with the model's own tokenizer and chat template.

Prefix caching: with ``prefix_reuse`` (the default) the engine is built with ``enable_prefix_caching=True``
(an ``EngineArgs`` field) and a batch is submitted in prefix order (sorted by rendered prompt, a
document's requests together); each output's ``num_cached_tokens`` is recorded as reused prompt tokens.

Weights identity: a local model directory is content-hashed; a Hub id needs ``revision`` or a snapshot
in the local Hugging Face cache (whose commit hash is used).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

from structbench.llm.cache import weights_fingerprint
from structbench.llm.prefix_reuse import prefix_order
from structbench.llm.requests import ChatRequest, Completion
from structbench.llm.spec import LLMSpec

log = logging.getLogger(__name__)


def model_identity(spec: LLMSpec, memo_root: str | Path | None = None) -> dict:
    """``{"model", "weights"}`` for the cache key (module docstring)."""
    path = Path(spec.model).expanduser()
    if path.exists():
        return {"model": spec.model, "weights": weights_fingerprint(path, memo_root)}
    if spec.revision:
        return {"model": spec.model, "weights": f"hub@{spec.revision}"}
    try:
        from huggingface_hub import snapshot_download

        snapshot = snapshot_download(spec.model, local_files_only=True)
    except Exception as error:
        raise ValueError(
            f"LLM model {spec.model!r} is neither a local directory nor in the Hugging Face cache "
            f"({error}); set `revision` in its llms entry so responses can be cached"
        ) from error
    return {"model": spec.model, "weights": f"hub@{Path(snapshot).name}"}


def engine_kwargs(spec: LLMSpec) -> dict:
    """Keyword arguments of ``vllm.LLM(...)`` for ``spec``."""
    kwargs = {
        "model": spec.model,
        "seed": spec.seed,
        "dtype": spec.dtype,
        "gpu_memory_utilization": spec.gpu_memory_utilization,
        "tensor_parallel_size": spec.tensor_parallel_size,
        "enable_prefix_caching": spec.prefix_reuse,  # an EngineArgs field, passed through **kwargs
    }
    if spec.revision:
        kwargs["revision"] = spec.revision
    if spec.context_tokens:
        kwargs["max_model_len"] = spec.context_tokens  # an EngineArgs field, passed through **kwargs
    return kwargs


def sampling_kwargs(spec: LLMSpec, request: ChatRequest, max_new_tokens: int) -> dict:
    """Keyword arguments of ``vllm.SamplingParams(...)`` for one request, with the JSON schema (if any)
    under ``structured_outputs`` as the keyword arguments of ``StructuredOutputsParams``."""
    kwargs = {"temperature": spec.temperature, "seed": spec.seed, "max_tokens": max_new_tokens}
    if request.schema is not None:
        kwargs["structured_outputs"] = {"json": request.schema}
    return kwargs


class VLLMBackend:
    """``vllm.LLM`` in this process; see the module docstring."""

    kind = "vllm"

    def __init__(self, spec: LLMSpec, memo_root: str | Path | None = None):
        try:
            import vllm
        except ImportError as error:
            raise ImportError(
                f"the vllm backend needs the vllm package on a GPU node ({error}); on CPU use backend: transformers"
            ) from error
        self.spec = spec
        self._identity = model_identity(spec, memo_root)
        self.engine = vllm.LLM(**engine_kwargs(spec))
        self.tokenizer = self.engine.get_tokenizer()
        self.context_tokens = int(self.engine.model_config.max_model_len)
        log.info("vLLM loaded %s (max_model_len %d)", spec.model, self.context_tokens)

    def identity(self) -> dict:
        return self._identity

    def render(self, messages: list[dict]) -> str:
        return self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)

    def count_tokens(self, messages: list[dict]) -> int:
        return len(self.tokenizer.encode(self.render(messages), add_special_tokens=False))

    def generate(self, requests: Sequence[ChatRequest], max_new_tokens: Sequence[int]) -> list[Completion]:
        from vllm import SamplingParams
        from vllm.sampling_params import StructuredOutputsParams

        results: list[Completion | None] = [None] * len(requests)
        runnable = []
        for index, (request, cap) in enumerate(zip(requests, max_new_tokens)):
            length = self.count_tokens(request.as_dicts())
            if length + cap > self.context_tokens:
                results[index] = Completion(
                    "",
                    length,
                    0,
                    "error",
                    error=(
                        f"prompt of {length} tokens + max_new_tokens {cap} exceeds max_model_len "
                        f"{self.context_tokens} of {self.spec.model}"
                    ),
                )
            else:
                runnable.append(index)
        if self.spec.prefix_reuse:  # a document's requests together, in prefix order
            runnable = [runnable[k] for k in prefix_order([self.render(requests[i].as_dicts()) for i in runnable])]
        params = []
        for index in runnable:
            kwargs = sampling_kwargs(self.spec, requests[index], max_new_tokens[index])
            if "structured_outputs" in kwargs:
                kwargs["structured_outputs"] = StructuredOutputsParams(**kwargs["structured_outputs"])
            params.append(SamplingParams(**kwargs))
        if runnable:
            outputs = self.engine.chat(
                [requests[index].as_dicts() for index in runnable], sampling_params=params, use_tqdm=False
            )
            for index, output in zip(runnable, outputs):
                best = output.outputs[0]
                results[index] = Completion(
                    text=best.text,
                    prompt_tokens=len(output.prompt_token_ids or []),
                    completion_tokens=len(best.token_ids),
                    finish_reason=best.finish_reason or "stop",
                    reused_prompt_tokens=int(getattr(output, "num_cached_tokens", None) or 0),
                )
        return results
