"""Embedding and reranking through an HTTP endpoint (issue 24): OpenAI-compatible ``POST /v1/embeddings``
and the ``/rerank`` shape of TEI, Infinity, Cohere and Jina.

A CPU-kind step: only the standard library speaks HTTP, nothing here imports torch. Vectors go through
the same content-addressed cache as local models (``cache.py``), in a namespace named by the endpoint's
model identity (:func:`endpoint_namespace`: the served model name, the ``revision`` label the config
gives it, the requested ``dimensions``), never by the URL: the same model served elsewhere answers the
same. A rerun, or a second study sharing texts, sends nothing.

Sending: texts go ``batch_size`` to a request, ``concurrency`` requests at a time; each round of
concurrent requests is stored as one cache shard as soon as it is back, so a failure loses at most the
round in flight and a resumed run sends only the texts no shard holds. A connection error, a timeout,
HTTP 408/429/5xx is retried ``max_retries`` times with exponential backoff (``backoff_s``, doubling).

Failures stop the job with a named :class:`EndpointError` that says the endpoint, the batch and the
server's message: :class:`EndpointUnreachable` (no answer within the retry budget),
:class:`EndpointModelError` (the server does not serve the model named), :class:`EndpointHTTPError`
(any other 4xx, or a 5xx that persists, with its body), :class:`EndpointVectorError` (a vector missing,
empty, non-finite or zero) and :class:`EndpointDimensionError` (a width that differs from the batch
before or from the vectors already cached).

Vectors are L2-normalized float32, as :func:`structbench.embed.encode` returns them. Truncation is counted
as for local models: the config names the endpoint's input limit (``max_input_tokens``) and a local
tokenizer that counts like the served model's (special tokens included). Cost: the report adds
``tokens_distinct`` (the local tokenizer's count of the distinct texts asked for: what a cold run sends),
``tokens_sent`` (of those actually sent) and ``tokens_billed`` (the sum of the server's ``usage`` tokens;
null when it reports none).

An API key is read from the environment variable the config names (``api_key_env``), never from config.
"""

from __future__ import annotations

import http.client
import json
import logging
import math
import os
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from structbench.cache import VectorCache, read_shard
from structbench.embed import TruncationCount, add_lookup_totals, complete_entry, encoder_report

log = logging.getLogger(__name__)

RETRIABLE_STATUS = {408, 429, 500, 502, 503, 504}
BODY_CHARS = 500  # of a server's error body, quoted in the error
# A 400/404/422 whose body says the model is unknown (OpenAI: model_not_found, "does not exist"; Infinity:
# "Engine for model name ... not found"; vLLM and TEI: "model ... does not exist / not found").
MODEL_ERROR_WORDS = ("not found", "not exist", "unknown", "does not", "not_found")


class EndpointError(RuntimeError):
    """An endpoint failed in a way that stops the job; the message names the endpoint, batch and reason."""


class EndpointUnreachable(EndpointError):
    """No answer (connection refused, reset, timeout) within the retry budget."""


class EndpointHTTPError(EndpointError):
    """A 4xx, or a 5xx/429 that persisted through every retry; carries the status and the body."""

    def __init__(self, message: str, status: int, body: str):
        super().__init__(message)
        self.status = status
        self.body = body


class EndpointModelError(EndpointHTTPError):
    """The server answered that it does not serve the model named in config."""


class EndpointVectorError(EndpointError):
    """A reply whose vectors are missing, empty, non-finite or zero."""


class EndpointDimensionError(EndpointError):
    """A vector width that changed mid-run (between batches, or against the cached vectors)."""


# ---- HTTP ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HTTPSettings:
    timeout_s: float
    max_retries: int
    backoff_s: float
    api_key_env: str | None

    def headers(self) -> dict:
        headers = {"Content-Type": "application/json"}
        if self.api_key_env:
            key = os.environ.get(self.api_key_env)
            if not key:
                raise EndpointError(
                    f"environment variable {self.api_key_env!r} (the endpoint's api_key_env) is not set"
                )
            headers["Authorization"] = f"Bearer {key}"
        return headers


def _mentions_model(body: str) -> bool:
    lowered = body.lower()
    return "model" in lowered and any(word in lowered for word in MODEL_ERROR_WORDS)


def request_json(
    url: str,
    body: dict | None,
    settings: HTTPSettings,
    what: str,
    sleep: Callable[[float], None] = time.sleep,
) -> dict | list:
    """One JSON exchange (POST with ``body``, GET without) with retries; ``what`` names the batch in errors.

    Raises :class:`EndpointUnreachable`, :class:`EndpointModelError` or :class:`EndpointHTTPError`."""
    data = json.dumps(body).encode("utf-8") if body is not None else None
    headers = settings.headers()
    problem, status, detail = "", 0, ""
    for attempt in range(settings.max_retries + 1):
        if attempt:
            delay = settings.backoff_s * 2 ** (attempt - 1)
            log.warning(
                "%s %s failed (%s); retry %d/%d in %.2f s", url, what, problem, attempt, settings.max_retries, delay
            )
            sleep(delay)
        try:
            request = urllib.request.Request(url, data=data, headers=headers, method="POST" if data else "GET")
            with urllib.request.urlopen(request, timeout=settings.timeout_s) as response:
                return json.loads(response.read().decode("utf-8"))
        except urllib.error.HTTPError as error:
            status, detail = error.code, error.read().decode("utf-8", "replace")[:BODY_CHARS]
            problem = f"HTTP {status}: {detail}"
            if status not in RETRIABLE_STATUS:
                kind = (
                    EndpointModelError if status in (400, 404, 422) and _mentions_model(detail) else EndpointHTTPError
                )
                raise kind(f"endpoint {url}, {what}: HTTP {status}: {detail}", status, detail) from None
        except (urllib.error.URLError, http.client.HTTPException, TimeoutError, ConnectionError) as error:
            reason = getattr(error, "reason", error)
            problem, status = f"{type(reason).__name__}: {reason}", 0
        except json.JSONDecodeError as error:
            raise EndpointHTTPError(f"endpoint {url}, {what}: reply is not JSON ({error})", 200, "") from None
    if status == 0:
        raise EndpointUnreachable(
            f"endpoint {url} is unreachable, {what}: {problem} after {settings.max_retries + 1} attempts; "
            "what was embedded before is cached and a rerun sends only the rest"
        )
    raise EndpointHTTPError(
        f"endpoint {url}, {what}: still {problem} after {settings.max_retries + 1} attempts", status, detail
    )


# ---- embeddings ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class EndpointEmbedderSpec:
    """An ``embedders.<name>`` entry of ``kind: openai``, every field given (defaults: the config schema)."""

    kind: str  # openai
    base_url: str  # up to and including the version, e.g. https://api.openai.com/v1
    model: str  # the served model's name, sent in every request
    revision: str | None  # a label that changes when the served weights change (part of the cache key)
    dimensions: int | None  # OpenAI's optional output width; part of the cache key
    api_key_env: str | None
    batch_size: int  # texts per request
    concurrency: int  # requests in flight
    max_retries: int
    backoff_s: float
    timeout_s: float
    max_input_tokens: int  # the endpoint's input limit, special tokens included
    tokenizer: str  # a local tokenizer that counts like the served model's (structbench.tokens.load_tokenizer)
    query_prefix: str

    @classmethod
    def from_config(cls, entry: dict) -> EndpointEmbedderSpec:
        spec = cls(**complete_entry(cls, entry, "endpoint embedder"))
        if spec.kind != "openai":
            raise ValueError(f"endpoint embedder {spec.model!r}: kind {spec.kind!r} is not 'openai'")
        return spec

    @property
    def url(self) -> str:
        return self.base_url.rstrip("/") + "/embeddings"

    def http(self) -> HTTPSettings:
        return HTTPSettings(self.timeout_s, self.max_retries, self.backoff_s, self.api_key_env)


def endpoint_namespace(spec: EndpointEmbedderSpec) -> dict:
    """The cache namespace of an endpoint's vectors: what the served model is, not where."""
    return {
        "kind": "embedding-endpoint",
        "api": spec.kind,
        "model": spec.model,
        "revision": spec.revision,
        "dimensions": spec.dimensions,
        "normalization": "l2-float32",
    }


def normalized_rows(vectors: list, url: str, what: str) -> np.ndarray:
    """The reply's vectors as L2-normalized float32 rows; :class:`EndpointVectorError` names a bad row."""
    widths = {len(v) if isinstance(v, list) else -1 for v in vectors}
    if not vectors or -1 in widths or 0 in widths:
        raise EndpointVectorError(f"endpoint {url}, {what}: a vector is missing or empty (widths {sorted(widths)})")
    if len(widths) != 1:
        raise EndpointDimensionError(
            f"endpoint {url}, {what}: vectors of different widths {sorted(widths)} in one reply"
        )
    array = np.asarray(vectors, dtype=np.float64)
    norms = np.linalg.norm(array, axis=1)
    bad = np.flatnonzero(~np.isfinite(array).all(axis=1) | ~(norms > 0))
    if bad.size:
        raise EndpointVectorError(
            f"endpoint {url}, {what}: input {int(bad[0])} came back non-finite or zero ({bad.size} such vectors)"
        )
    return (array / norms[:, None]).astype(np.float32)


def parse_embeddings(reply, n_texts: int, url: str, what: str) -> tuple[np.ndarray, int | None]:
    """Rows in input order (by each item's ``index``) and the billed tokens from ``usage`` (None if absent)."""
    try:
        items = sorted(reply["data"], key=lambda item: item["index"])
        vectors = [item["embedding"] for item in items]
        indices = [item["index"] for item in items]
    except (KeyError, TypeError) as error:
        raise EndpointVectorError(f"endpoint {url}, {what}: malformed reply ({error!r})") from None
    if indices != list(range(n_texts)):
        raise EndpointVectorError(f"endpoint {url}, {what}: {len(indices)} vectors for {n_texts} inputs")
    usage = reply.get("usage") or {}
    billed = usage.get("total_tokens", usage.get("prompt_tokens"))
    return normalized_rows(vectors, url, what), (int(billed) if billed is not None else None)


def input_token_lengths(texts: Sequence[str], tokenizer: str) -> list[int]:
    """Tokens of each text in the local tokenizer, special tokens included (as the local path counts)."""
    from structbench.tokens import load_tokenizer

    if not texts:
        return []
    encodings = load_tokenizer(tokenizer).tokenizer.encode_batch(list(texts), add_special_tokens=True)
    return [len(encoding.ids) for encoding in encodings]


def _cached_width(cache: VectorCache) -> int | None:
    """The width of the vectors already in a namespace (from its first readable shard), if any."""
    for shard in cache.shards():
        try:
            return int(read_shard(shard)[1].shape[1])
        except Exception:  # a damaged shard is the cache's business (quarantined on use); try the next
            continue
    return None


class EndpointEncoder:
    """``encoder(texts) -> float32 rows`` through the cache, from an OpenAI-compatible endpoint.

    The same interface and report keys as :class:`structbench.embed.CachedEncoder`, plus
    ``tokens_sent`` and ``tokens_billed``; see the module docstring."""

    def __init__(self, spec: EndpointEmbedderSpec, cache_root, sleep: Callable[[float], None] = time.sleep):
        self.spec = spec
        self.cache = VectorCache(cache_root, endpoint_namespace(spec))
        self._sleep = sleep
        self.dimension = _cached_width(self.cache)
        self.requests_sent = 0
        self.totals = {"n_texts": 0, "n_distinct": 0, "n_encoded": 0, "n_from_cache": 0, "n_quarantined": 0}
        self.tokens_sent = 0
        self.tokens_distinct = 0
        self.tokens_billed: int | None = None
        self.truncation = TruncationCount(spec.max_input_tokens, 0, 0)
        self._batches_done = 0
        self._lengths: dict[str, int] = {}

    def _post(self, batch: list[str], number: int) -> tuple[np.ndarray, int | None]:
        what = f"batch {number} of this run ({len(batch)} texts, the first {batch[0][:40]!r})"
        body = {"model": self.spec.model, "input": batch, "encoding_format": "float"}
        if self.spec.dimensions is not None:
            body["dimensions"] = self.spec.dimensions
        reply = request_json(self.spec.url, body, self.spec.http(), what, self._sleep)
        self.requests_sent += 1
        return parse_embeddings(reply, len(batch), self.spec.url, what)

    def _compute(self, texts: list[str]) -> np.ndarray:
        size = self.spec.batch_size
        starts = list(range(0, len(texts), size))
        with ThreadPoolExecutor(max_workers=self.spec.concurrency) as pool:
            numbers = range(self._batches_done + 1, self._batches_done + 1 + len(starts))
            replies = list(
                pool.map(lambda start, number: self._post(texts[start : start + size], number), starts, numbers)
            )
        for rows, billed in replies:
            self._batches_done += 1
            width = rows.shape[1]
            if self.dimension is None:
                self.dimension = width
            elif width != self.dimension:
                raise EndpointDimensionError(
                    f"endpoint {self.spec.url}, batch {self._batches_done}: vectors of width {width}, but "
                    f"{self.dimension} before (earlier batches or the cache {self.cache.directory}); the served "
                    "model changed: give it a new revision label in config"
                )
            if billed is not None:
                self.tokens_billed = (self.tokens_billed or 0) + billed
        self.tokens_sent += sum(self._lengths[text] for text in texts)
        return np.concatenate([rows for rows, _ in replies])

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        lengths = input_token_lengths(texts, self.spec.tokenizer)
        self.tokens_distinct += sum(dict(zip(texts, lengths)).values())
        self._lengths.update(zip(texts, lengths))
        self.truncation = TruncationCount(
            self.spec.max_input_tokens,
            self.truncation.n_truncated + sum(n > self.spec.max_input_tokens for n in lengths),
            max([self.truncation.max_tokens, *lengths]),
        )
        round_size = self.spec.batch_size * self.spec.concurrency
        lookup = self.cache.get_or_compute(texts, self._compute, chunk_size=round_size, verb="embedded by the endpoint")
        add_lookup_totals(self.totals, len(texts), lookup)
        if not texts:
            # (0, d) for an empty text set; d from the cache, else one probe request.
            if self.dimension is None:
                self.dimension = self._post(["."], 0)[0].shape[1]
            return np.zeros((0, self.dimension), dtype=np.float32)
        if self.dimension is not None and lookup.vectors.shape[1] != self.dimension:
            raise EndpointDimensionError(
                f"endpoint {self.spec.url}: cached vectors of width {lookup.vectors.shape[1]} beside "
                f"{self.dimension}-wide ones in {self.cache.directory}"
            )
        return lookup.vectors

    def report(self) -> dict:
        return {
            **encoder_report(self.totals, self.truncation, self.cache.directory.name),
            "tokens_distinct": self.tokens_distinct,
            "tokens_sent": self.tokens_sent,
            "tokens_billed": self.tokens_billed,
        }


# ---- reranking -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class EndpointRerankerSpec:
    """A ``rerankers.<name>`` entry of ``kind: endpoint``, every field given (defaults: the config schema).

    ``api`` picks the wire shape: ``cohere`` (Cohere, Jina, Infinity: ``{model, query, documents}`` ->
    ``{results: [{index, relevance_score}]}``) or ``tei`` (text-embeddings-inference: ``{query, texts}``
    -> ``[{index, score}]``)."""

    kind: str  # endpoint
    api: str  # cohere | tei
    base_url: str  # the URL /rerank is appended to
    model: str
    revision: str | None
    api_key_env: str | None
    top_n: int
    batch_size: int  # documents per request (one query each)
    concurrency: int
    max_retries: int
    backoff_s: float
    timeout_s: float

    @classmethod
    def from_config(cls, entry: dict) -> EndpointRerankerSpec:
        spec = cls(**complete_entry(cls, entry, "endpoint reranker"))
        if spec.api not in ("cohere", "tei"):
            raise ValueError(f"endpoint reranker {spec.model!r}: api {spec.api!r} is neither 'cohere' nor 'tei'")
        return spec

    @property
    def url(self) -> str:
        return self.base_url.rstrip("/") + "/rerank"

    def http(self) -> HTTPSettings:
        return HTTPSettings(self.timeout_s, self.max_retries, self.backoff_s, self.api_key_env)


def rerank_body(spec: EndpointRerankerSpec, query: str, documents: list[str]) -> dict:
    if spec.api == "tei":
        return {"query": query, "texts": documents, "raw_scores": False}
    return {"model": spec.model, "query": query, "documents": documents, "return_documents": False}


def parse_rerank(reply, n_documents: int, spec: EndpointRerankerSpec, what: str) -> np.ndarray:
    """One score per document, in input order; a reply missing one or holding a non-finite one is an error."""
    try:
        items = reply if spec.api == "tei" else reply["results"]
        field = "score" if spec.api == "tei" else "relevance_score"
        scores = {int(item["index"]): float(item[field]) for item in items}
    except (KeyError, TypeError, ValueError) as error:
        raise EndpointVectorError(f"endpoint {spec.url}, {what}: malformed rerank reply ({error!r})") from None
    if sorted(scores) != list(range(n_documents)) or not all(math.isfinite(s) for s in scores.values()):
        raise EndpointVectorError(
            f"endpoint {spec.url}, {what}: scores for indices {sorted(scores)[:10]}... of {n_documents} documents"
            " (missing or non-finite)"
        )
    return np.asarray([scores[i] for i in range(n_documents)], dtype=np.float32)


PAIR_SEPARATOR = "\x00"  # joins query and document into one cache key; never inside either text


class EndpointPairScorer:
    """``scorer(list[(query, document)]) -> float32 scores`` through the cache (namespace: the served
    reranker's identity), for :func:`structbench.retrieval.rerank.rerank_run`."""

    def __init__(self, spec: EndpointRerankerSpec, cache_root, sleep: Callable[[float], None] = time.sleep):
        self.spec = spec
        namespace = {"kind": "rerank-endpoint", "api": spec.api, "model": spec.model, "revision": spec.revision}
        self.cache = VectorCache(cache_root, namespace)
        self._sleep = sleep
        self.requests_sent = 0

    def _post(self, query: str, documents: list[str], what: str) -> np.ndarray:
        reply = request_json(
            self.spec.url, rerank_body(self.spec, query, documents), self.spec.http(), what, self._sleep
        )
        self.requests_sent += 1
        return parse_rerank(reply, len(documents), self.spec, what)

    def _compute(self, keys: list[str]) -> np.ndarray:
        pairs = [key.split(PAIR_SEPARATOR, 1) for key in keys]
        by_query: dict[str, list[int]] = {}
        for row, (query, _) in enumerate(pairs):
            by_query.setdefault(query, []).append(row)
        jobs = []
        for query, rows in by_query.items():
            for start in range(0, len(rows), self.spec.batch_size):
                jobs.append((query, rows[start : start + self.spec.batch_size]))
        scores = np.zeros((len(keys), 1), dtype=np.float32)
        with ThreadPoolExecutor(max_workers=self.spec.concurrency) as pool:
            results = pool.map(
                lambda job: self._post(job[0], [pairs[r][1] for r in job[1]], f"query {job[0][:60]!r}"),
                jobs,
            )
            for (_, rows), result in zip(jobs, results):
                scores[rows, 0] = result
        return scores

    def __call__(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        for query, document in pairs:
            if PAIR_SEPARATOR in query or PAIR_SEPARATOR in document:
                raise ValueError(f"a rerank text holds a NUL character: {query[:60]!r} / {document[:60]!r}")
        keys = [query + PAIR_SEPARATOR + document for query, document in pairs]
        lookup = self.cache.get_or_compute(keys, self._compute, verb="scored by the endpoint")
        return lookup.vectors.reshape(-1) if keys else np.zeros(0, dtype=np.float32)
