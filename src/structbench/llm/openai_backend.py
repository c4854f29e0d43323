"""Any OpenAI-compatible server over plain HTTP (vLLM serve, llama.cpp server, transformers serve).

Each request is one ``POST <base_url>/chat/completions`` with ``model``, ``messages``, ``max_tokens``,
``temperature`` and ``seed``, and, for JSON requests with ``response_format: json_schema``, the schema
as ``{"type": "json_schema", "json_schema": {"name": "answer", "schema": ...}}`` (constrained decoding on
servers that support it; ``response_format: none`` for servers that reject the field, where the prompt
and lenient parsing carry the schema). A batch is sent ``batch_size`` requests at a time in threads, so
a server that batches internally (vLLM) sees concurrent work. Only the standard library is used
(``structbench.http``, shared with the endpoint embedder and reranker).

Failures: a connection error, a timeout, HTTP 408, 429 or 5xx is retried up to ``max_retries`` times with
exponential backoff (``backoff_s``, doubling; ``structbench.http.request_json``). A server that stays
unreachable raises
:class:`ServerUnavailable` naming the URL (the run cannot proceed without it); an HTTP error that
persists, or any other HTTP error, becomes a failure record for that request only.

Cache identity: a server's weights cannot be hashed from here, so the key uses the served model name and
``revision`` (set it to a label that changes when the served weights change). The URL is not part of
the key: the same model served elsewhere answers the same.

Prompt tokens are counted with ``tokenizer`` when given (the sum of the messages' tokens plus 4 per
message for the chat template), else estimated at one token per 3 characters; the context window is
``context_tokens``, else the ``max_model_len`` vLLM reports under ``GET /models``.

Prefix caching: with ``prefix_reuse`` (the default) a batch is sent in prefix order (sorted by its
messages, so a document's requests go together), for a server with a prefix cache to hit it; the
server's ``usage.prompt_tokens_details.cached_tokens`` is recorded as the reused prompt tokens.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Sequence

from structbench.http import (
    EndpointHTTPError,
    EndpointUnreachable,
    HTTPSettings,
    bounded_map,
    request_json,
)
from structbench.llm.prefix_reuse import prefix_order
from structbench.llm.requests import ChatRequest, Completion
from structbench.llm.spec import LLMSpec

CHARS_PER_TOKEN = 3  # a conservative estimate when no tokenizer is configured
TEMPLATE_TOKENS_PER_MESSAGE = 4
ERROR_BODY_CHARS = 300  # of a server's error body, quoted in a failure record


class ServerUnavailable(EndpointUnreachable):
    """The server could not be reached within the retry budget; the message names the URL."""


class OpenAIBackend:
    """Chat completions from an OpenAI-compatible server; see the module docstring."""

    kind = "openai"

    def __init__(self, spec: LLMSpec, sleep=time.sleep):
        self.spec = spec
        self.base_url = spec.base_url.rstrip("/")
        self._sleep = sleep
        self._context_tokens = spec.context_tokens
        self._counter = None
        if spec.tokenizer:
            from structbench.tokens import load_tokenizer

            self._counter = load_tokenizer(spec.tokenizer)
        if spec.api_key_env and not os.environ.get(spec.api_key_env):
            raise ValueError(f"environment variable {spec.api_key_env!r} (llms api_key_env) is not set")
        self._http = HTTPSettings(spec.timeout_s, spec.max_retries, spec.backoff_s, spec.api_key_env)

    def identity(self) -> dict:
        return {"model": self.spec.model, "weights": f"served@{self.spec.revision or 'unversioned'}"}

    @property
    def context_tokens(self) -> int:
        if self._context_tokens is None:
            listing = self._call("GET", "/models", None)
            lengths = [
                entry.get("max_model_len") for entry in listing.get("data", []) if entry.get("id") == self.spec.model
            ]
            if not lengths or not lengths[0]:
                raise ValueError(
                    f"{self.base_url}/models reports no max_model_len for {self.spec.model!r}; "
                    "set context_tokens in the llms entry"
                )
            self._context_tokens = int(lengths[0])
        return self._context_tokens

    def count_tokens(self, messages: list[dict]) -> int:
        if self._counter is not None:
            counts = self._counter.count_batch([message["content"] for message in messages])
        else:
            counts = [math.ceil(len(message["content"]) / CHARS_PER_TOKEN) for message in messages]
        return sum(counts) + TEMPLATE_TOKENS_PER_MESSAGE * len(messages)

    def request_body(self, request: ChatRequest, max_new_tokens: int) -> dict:
        body = {
            "model": self.spec.model,
            "messages": request.as_dicts(),
            "max_tokens": max_new_tokens,
            "temperature": self.spec.temperature,
            "seed": self.spec.seed,
        }
        if request.schema is not None and self.spec.response_format == "json_schema":
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "answer", "schema": request.schema},
            }
        return body

    def generate(self, requests: Sequence[ChatRequest], max_new_tokens: Sequence[int]) -> list[Completion]:
        bodies = [self.request_body(request, cap) for request, cap in zip(requests, max_new_tokens)]
        order = prefix_order([r.messages for r in requests]) if self.spec.prefix_reuse else range(len(bodies))
        results: list[Completion | None] = [None] * len(bodies)
        for index, completion in zip(
            order, bounded_map(self._complete, [bodies[i] for i in order], self.spec.batch_size)
        ):
            results[index] = completion
        return results

    def _complete(self, body: dict) -> Completion:
        try:
            reply = self._call("POST", "/chat/completions", body)
        except _HTTPFailure as failure:
            return Completion("", 0, 0, "error", error=str(failure))
        try:
            choice = reply["choices"][0]
            usage = reply.get("usage") or {}
            return Completion(
                text=choice["message"]["content"] or "",
                prompt_tokens=int(usage.get("prompt_tokens", 0)),
                completion_tokens=int(usage.get("completion_tokens", 0)),
                finish_reason=choice.get("finish_reason") or "stop",
                reused_prompt_tokens=int((usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0),
            )
        except (KeyError, IndexError, TypeError) as error:
            return Completion(
                "", 0, 0, "error", error=f"malformed reply from {self.base_url}/chat/completions: {error!r}"
            )

    def _call(self, method: str, path: str, body: dict | None) -> dict:
        """One HTTP exchange with retries; raises ServerUnavailable or _HTTPFailure (see module docstring)."""
        url = self.base_url + path
        try:
            return request_json(url, body if method == "POST" else None, self._http, f"{method} {path}", self._sleep)
        except EndpointUnreachable as error:
            raise ServerUnavailable(
                f"OpenAI-compatible server at {url} is unreachable after {error.attempts} attempts "
                f"({error.problem}); is it running?",
                url,
                error.attempts,
                error.problem,
            ) from None
        except EndpointHTTPError as error:
            if error.status == 200:  # a body that is not JSON
                raise _HTTPFailure(f"{method} {url} answered with invalid JSON: {error}") from None
            problem = f"HTTP {error.status}: {error.body[:ERROR_BODY_CHARS]}"
            if error.retried:
                raise _HTTPFailure(f"{method} {url} still failing after {error.attempts} attempts: {problem}") from None
            raise _HTTPFailure(f"{method} {url} answered {problem}") from None


class _HTTPFailure(Exception):
    """An HTTP error for one request: it becomes that request's failure record."""
