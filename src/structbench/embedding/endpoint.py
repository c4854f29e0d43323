"""Embedding through an HTTP endpoint (issue 24): OpenAI-compatible ``POST /v1/embeddings``.

A CPU-kind step: only the standard library speaks HTTP (``structbench.http``), nothing here imports torch.
Vectors go through the same content-addressed cache as local models (``cache.py``), in a namespace named by
the endpoint's model identity (:func:`endpoint_namespace`: the served model name, the ``revision`` label the
config gives it, the requested ``dimensions``), never by the URL: the same model served elsewhere answers the
same. A rerun, or a second study sharing texts, sends nothing.

Sending: texts go ``batch_size`` to a request, ``concurrency`` requests at a time; each round of
concurrent requests is stored as one cache shard as soon as it is back, so a failure loses at most the
round in flight and a resumed run sends only the texts no shard holds. A connection error, a timeout,
HTTP 408/429/5xx is retried ``max_retries`` times with exponential backoff (``backoff_s``, doubling).

Failures stop the job with a named :class:`~structbench.http.EndpointError` that says the endpoint (URL and
model), the batch (its number and which inputs: ``batch 3, inputs 96..127``) and the reason (the classes:
``structbench.http``). Every reply is checked before a vector is kept (:func:`parse_embeddings`): ``data``
present and a list, one item per input, each with an integer ``index`` (none missing, duplicated or out of
range) and an ``embedding`` that is a flat, non-empty list of numbers, all of one width, finite and nonzero.

Vectors are L2-normalized float32, as :func:`structbench.embedding.local.encode` returns them. Truncation is
counted as for local models: the config names the endpoint's input limit (``max_input_tokens``) and a local
tokenizer that counts like the served model's (special tokens included). Cost: the report adds
``tokens_distinct`` (the local tokenizer's count of the distinct texts asked for: what a cold run sends),
``tokens_sent`` (of those actually sent) and ``tokens_billed`` (the sum of the server's ``usage`` tokens;
null when it reports none).

An API key is read from the environment variable the config names (``api_key_env``), never from config.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from structbench.cache import VectorCache, read_shard
from structbench.embedding.kinds import OPENAI, complete_entry, embedder_kind
from structbench.embedding.report import TruncationCount, add_lookup_totals, encoder_report, new_totals
from structbench.http import (
    EndpointDimensionError,
    EndpointReplyError,
    EndpointVectorError,
    HTTPSettings,
    batches,
    bounded_map,
    check_indices,
    describe_inputs,
    describe_value,
    is_number,
    request_json,
)


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
        if embedder_kind(entry) != OPENAI:
            raise ValueError(f"endpoint embedder {spec.model!r}: kind {spec.kind!r} is not {OPENAI!r}")
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


def check_vector_shapes(vectors: list, url: str, what: str) -> None:
    """Each ``embedding`` a flat list of numbers; else :class:`EndpointVectorError` naming the input
    (its position in the batch) and what came instead (a nested list, a string, null, ...)."""
    for index, vector in enumerate(vectors):
        if not isinstance(vector, list):
            raise EndpointVectorError(
                f"endpoint {url}, {what}: input {index}'s embedding is {describe_value(vector)},"
                " not a flat list of numbers"
            )
        odd = next((value for value in vector if not is_number(value)), _NUMBERS_ONLY)
        if odd is not _NUMBERS_ONLY:
            raise EndpointVectorError(
                f"endpoint {url}, {what}: input {index}'s embedding holds {describe_value(odd)},"
                " not a flat list of numbers"
            )


_NUMBERS_ONLY = object()  # next()'s default in check_vector_shapes: no value that is not a number


def parse_embeddings(reply, n_texts: int, url: str, what: str) -> tuple[np.ndarray, int | None]:
    """Rows in input order (by each item's ``index``) and the billed tokens from ``usage`` (None if absent).

    Every shape a reply can take is checked (module docstring); a wrong one is an
    :class:`EndpointReplyError` (:class:`EndpointVectorError` for the vectors themselves) naming the
    endpoint, the batch and what was wrong."""
    if not isinstance(reply, dict):
        raise EndpointReplyError(f"endpoint {url}, {what}: reply is {describe_value(reply)}, not an object")
    if "data" not in reply:
        raise EndpointReplyError(f"endpoint {url}, {what}: reply has no 'data' (keys {sorted(reply)[:10]})")
    data = reply["data"]
    if not isinstance(data, list):
        raise EndpointReplyError(f"endpoint {url}, {what}: 'data' is {describe_value(data)}, not a list")
    for position, item in enumerate(data):
        if not isinstance(item, dict):
            raise EndpointReplyError(
                f"endpoint {url}, {what}: data item {position} is {describe_value(item)}, not an object"
            )
        for key in ("index", "embedding"):
            if key not in item:
                raise EndpointReplyError(
                    f"endpoint {url}, {what}: data item {position} has no {key!r} (keys {sorted(item)[:10]})"
                )
    if len(data) != n_texts:
        raise EndpointReplyError(f"endpoint {url}, {what}: {len(data)} vectors for {n_texts} inputs")
    indices = check_indices([item["index"] for item in data], n_texts, url, what)
    by_index = dict(zip(indices, data))
    vectors = [by_index[i]["embedding"] for i in range(n_texts)]
    check_vector_shapes(vectors, url, what)
    usage = reply.get("usage") or {}
    if not isinstance(usage, dict):
        raise EndpointReplyError(f"endpoint {url}, {what}: 'usage' is {describe_value(usage)}, not an object")
    billed = usage.get("total_tokens", usage.get("prompt_tokens"))
    if billed is not None and not is_number(billed):
        raise EndpointReplyError(f"endpoint {url}, {what}: usage tokens are {describe_value(billed)}, not a number")
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

    The same interface and report keys as :class:`structbench.embedding.local.CachedEncoder`, plus
    ``tokens_sent`` and ``tokens_billed``; see the module docstring."""

    def __init__(self, spec: EndpointEmbedderSpec, cache_root, sleep: Callable[[float], None] = time.sleep):
        self.spec = spec
        self.cache = VectorCache(cache_root, endpoint_namespace(spec))
        self._sleep = sleep
        self.dimension = _cached_width(self.cache)
        self.requests_sent = 0
        self.totals = new_totals()
        self.tokens_sent = 0
        self.tokens_distinct = 0
        self.tokens_billed: int | None = None
        self.truncation = TruncationCount(spec.max_input_tokens, 0, 0)
        self._batches_done = 0
        self._inputs_sent = 0  # texts sent before the current round: where its batches' inputs start
        self._lengths: dict[str, int] = {}

    def _post(self, batch: list[str], number: int, first_input: int) -> tuple[np.ndarray, int | None]:
        inputs = describe_inputs(number, range(first_input, first_input + len(batch)))
        what = f"model {self.spec.model!r}, {inputs} of the texts sent this run (the first {batch[0][:40]!r})"
        body = {"model": self.spec.model, "input": batch, "encoding_format": "float"}
        if self.spec.dimensions is not None:
            body["dimensions"] = self.spec.dimensions
        reply = request_json(self.spec.url, body, self.spec.http(), what, self._sleep)
        self.requests_sent += 1
        return parse_embeddings(reply, len(batch), self.spec.url, what)

    def _compute(self, texts: list[str]) -> np.ndarray:
        ranges = batches(len(texts), self.spec.batch_size)
        first_number, offset = self._batches_done + 1, self._inputs_sent
        replies = bounded_map(
            lambda job: self._post(texts[job[1].start : job[1].stop], first_number + job[0], offset + job[1].start),
            list(enumerate(ranges)),
            self.spec.concurrency,
        )
        self._inputs_sent += len(texts)
        for rows, billed in replies:
            self._batches_done += 1
            width = rows.shape[1]
            if self.dimension is None:
                self.dimension = width
            elif width != self.dimension:
                raise EndpointDimensionError(
                    f"endpoint {self.spec.url}, model {self.spec.model!r}, batch {self._batches_done}: vectors of "
                    f"width {width}, but {self.dimension} before (earlier batches or the cache "
                    f"{self.cache.directory}); the served model changed: give it a new revision label in config"
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
                self.dimension = self._post(["."], 0, 0)[0].shape[1]
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
