"""The embeddings client: texts to vectors through an OpenAI-compatible ``POST /embeddings`` endpoint.

Standard library HTTP only (``structbench.http``), no torch. Texts go ``batch_size`` to a request,
``concurrency`` requests at a time (:meth:`EmbeddingsClient.embed`: one round); a connection error, a
timeout, HTTP 408/429/5xx is retried ``max_retries`` times with exponential backoff (``backoff_s``,
doubling). The cache and the embedding report sit above, in :mod:`structbench.embedding.endpoint`.

Every reply is checked before a vector is kept (:func:`parse_embeddings`): ``data`` present and a list, one
item per input, each with an integer ``index`` (none missing, duplicated or out of range) and an
``embedding`` that is a flat, non-empty list of numbers, all of one width, finite and nonzero. The width is
checked on every reply too, probe or not: against the entry's ``dimensions`` when it sets them (the cache
namespace says that width, so no other may be stored under it), and against the width of earlier batches
and of the vectors already cached. A failure is a named :class:`~structbench.http.EndpointError` that says
the endpoint (URL and model), the batch (its number and which inputs: ``batch 3, inputs 96..127``) and the
reason.

Vectors are L2-normalized float32, as :func:`structbench.embedding.local.encode` returns them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import numpy as np

from structbench.cache import VectorCache, read_shard
from structbench.endpoints.endpoint_spec import EndpointEmbedderSpec
from structbench.http import (
    EndpointDimensionError,
    EndpointReplyError,
    EndpointVectorError,
    HTTPSettings,
    batches,
    bounded_map,
    check_indices,
    check_items,
    describe_inputs,
    describe_value,
    is_number,
    request_json,
)
from structbench.vectors import unit_length


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


def cached_width(cache: VectorCache) -> int | None:
    """The width of the vectors already in a namespace (from its first readable shard), if any."""
    for shard in cache.shards():
        try:
            return int(read_shard(shard)[1].shape[1])
        except Exception:  # a damaged shard is the cache's business (quarantined on use); try the next
            continue
    return None


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
    return unit_length(array).astype(np.float32)


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
    check_items(data, ("index", "embedding"), "data item", url, what)
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


def check_declared_width(rows: np.ndarray, dimensions: int | None, url: str, what: str) -> None:
    """Rows as wide as the entry's ``dimensions`` (when it sets them); else an :class:`EndpointDimensionError`
    saying both widths. A server that ignores ``dimensions`` (or serves another model) is caught here,
    before its vectors reach a cache namespace that names the declared width."""
    if dimensions is not None and rows.shape[1] != dimensions:
        raise EndpointDimensionError(
            f"endpoint {url}, {what}: vectors of width {rows.shape[1]}, but the entry asks for dimensions = "
            f"{dimensions}; nothing of this batch is kept"
        )


def batch_what(model: str, number: int, first_input: int, batch: Sequence[str]) -> str:
    """How an error names a request: the model, the batch's number, its inputs among the texts sent this
    run, and the start of its first text (``model 'm', batch 3, inputs 96..127 of the texts ...``)."""
    inputs = describe_inputs(number, range(first_input, first_input + len(batch)))
    return f"model {model!r}, {inputs} of the texts sent this run (the first {batch[0][:40]!r})"


class EmbeddingsClient:
    """Texts to checked, L2-normalized float32 rows from one endpoint (module docstring).

    Batches are numbered and inputs counted over the client's life, so an error says where in the run it
    happened. ``width`` is the width every vector must have once known: the cached vectors' (given, with
    ``width_seen_in`` saying where it was seen) or the first reply's."""

    def __init__(
        self,
        spec: EndpointEmbedderSpec,
        width: int | None = None,
        width_seen_in: str = "earlier batches",
        sleep: Callable[[float], None] = time.sleep,
    ):
        self.spec = spec
        self.width = width
        self.width_seen_in = width_seen_in
        self._sleep = sleep
        self.requests_sent = 0
        self.tokens_billed: int | None = None  # the sum of the server's usage tokens; None if it reports none
        self._batches_done = 0
        self._inputs_sent = 0  # texts sent before the current round: where its batches' inputs start

    def post(self, batch: list[str], what: str, settings: HTTPSettings | None = None) -> tuple[np.ndarray, int | None]:
        """One request: the batch's rows (checked, the declared width included) and its billed tokens."""
        body = {"model": self.spec.model, "input": batch, "encoding_format": "float"}
        if self.spec.dimensions is not None:
            body["dimensions"] = self.spec.dimensions
        reply = request_json(self.spec.url, body, settings or self.spec.http(), what, self._sleep)
        self.requests_sent += 1
        rows, billed = parse_embeddings(reply, len(batch), self.spec.url, what)
        check_declared_width(rows, self.spec.dimensions, self.spec.url, what)
        return rows, billed

    def served_width(self, text: str, what: str, settings: HTTPSettings | None = None) -> int:
        """The width of one text's vector (the probe's, or an empty text set's ``(0, d)``); it becomes
        :attr:`width` when none is known yet."""
        width = int(self.post([text], what, settings)[0].shape[1])
        self.width = width if self.width is None else self.width
        return width

    def _check_width(self, rows: np.ndarray) -> None:
        width = rows.shape[1]
        if self.width is None:
            self.width = width
        elif width != self.width:
            raise EndpointDimensionError(
                f"endpoint {self.spec.url}, model {self.spec.model!r}, batch {self._batches_done}: vectors of "
                f"width {width}, but {self.width} before ({self.width_seen_in}); the served model changed: give "
                "it a new revision label in config"
            )

    def embed(self, texts: list[str]) -> np.ndarray:
        """One round: the rows of ``texts`` in order, ``batch_size`` to a request and ``concurrency``
        requests at a time. Nothing is returned unless every batch came back checked."""
        first_number, offset = self._batches_done + 1, self._inputs_sent
        jobs = []  # (batch, what): one request each
        for number, part in enumerate(batches(len(texts), self.spec.batch_size), start=first_number):
            batch = texts[part.start : part.stop]
            jobs.append((batch, batch_what(self.spec.model, number, offset + part.start, batch)))
        replies = bounded_map(lambda job: self.post(*job), jobs, self.spec.concurrency)
        self._inputs_sent += len(texts)
        for rows, billed in replies:
            self._batches_done += 1
            self._check_width(rows)
            if billed is not None:
                self.tokens_billed = (self.tokens_billed or 0) + billed
        return np.concatenate([rows for rows, _ in replies])
