"""Reranking through a ``/rerank`` endpoint (issue 24), beside the local cross-encoder (``rerank.py``): the
shape of TEI, Infinity, Cohere and Jina.

A CPU-kind step: only the standard library speaks HTTP (``structbench.http``). Scores go through the
content-addressed cache (``cache.py``) keyed by (query, document) in a namespace named by the served
reranker's identity (api, model, ``revision``), never by the URL. Each query's documents go ``batch_size``
to a request, ``concurrency`` requests at a time, retried as ``structbench.http`` says. Every reply is
checked (:func:`parse_rerank`): the results a list (``results`` for the cohere shape, the reply itself for
tei), one item per document, each an object with an integer ``index`` (none missing, duplicated or out of
range) and a finite number as its score (``relevance_score``; tei: ``score``); anything else is a named
:class:`~structbench.http.EndpointReplyError` that says the endpoint (URL and model), the query and which
documents.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from structbench.cache import VectorCache
from structbench.embedding.kinds import ENDPOINT, complete_entry, reranker_kind
from structbench.http import (
    EndpointReplyError,
    EndpointVectorError,
    HTTPSettings,
    batches,
    bounded_map,
    check_indices,
    describe_value,
    is_number,
    request_json,
)


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
        if reranker_kind(entry) != ENDPOINT:
            raise ValueError(f"endpoint reranker {spec.model!r}: kind {spec.kind!r} is not {ENDPOINT!r}")
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
    """One score per document, in input order. Every shape a reply can take is checked (module docstring);
    a wrong one is an :class:`EndpointReplyError` (:class:`EndpointVectorError` for a score that is not a
    finite number) naming the endpoint, ``what`` (the query and documents) and what was wrong."""
    where = spec.url  # ``what`` names the model
    field = "score" if spec.api == "tei" else "relevance_score"
    if spec.api == "tei":
        items = reply
    elif not isinstance(reply, dict):
        raise EndpointReplyError(f"endpoint {where}, {what}: reply is {describe_value(reply)}, not an object")
    elif "results" not in reply:
        raise EndpointReplyError(f"endpoint {where}, {what}: reply has no 'results' (keys {sorted(reply)[:10]})")
    else:
        items = reply["results"]
    if not isinstance(items, list):
        name = "reply" if spec.api == "tei" else "'results'"
        raise EndpointReplyError(f"endpoint {where}, {what}: {name} is {describe_value(items)}, not a list")
    for position, item in enumerate(items):
        if not isinstance(item, dict):
            raise EndpointReplyError(
                f"endpoint {where}, {what}: result {position} is {describe_value(item)}, not an object"
            )
        for key in ("index", field):
            if key not in item:
                raise EndpointReplyError(
                    f"endpoint {where}, {what}: result {position} has no {key!r} (keys {sorted(item)[:10]})"
                )
    if len(items) != n_documents:
        raise EndpointReplyError(f"endpoint {where}, {what}: {len(items)} scores for {n_documents} documents")
    indices = check_indices([item["index"] for item in items], n_documents, where, what)
    scores = dict(zip(indices, (item[field] for item in items)))
    for index in range(n_documents):
        score = scores[index]
        if not is_number(score) or not math.isfinite(score):
            raise EndpointVectorError(
                f"endpoint {where}, {what}: document {index}'s {field} is {describe_value(score)}, not a finite number"
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
        jobs = []  # (query, its rows in this call, what): one request each
        for query, rows in by_query.items():
            for part in batches(len(rows), self.spec.batch_size):
                what = (
                    f"model {self.spec.model!r}, query {query[:60]!r}, documents {part.start}..{part.stop - 1}"
                    f" of its {len(rows)} in this call"
                )
                jobs.append((query, rows[part.start : part.stop], what))
        scores = np.zeros((len(keys), 1), dtype=np.float32)
        results = bounded_map(
            lambda job: self._post(job[0], [pairs[r][1] for r in job[1]], job[2]), jobs, self.spec.concurrency
        )
        for (_, rows, _), result in zip(jobs, results):
            scores[rows, 0] = result
        return scores

    def __call__(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        for query, document in pairs:
            if PAIR_SEPARATOR in query or PAIR_SEPARATOR in document:
                raise ValueError(f"a rerank text holds a NUL character: {query[:60]!r} / {document[:60]!r}")
        keys = [query + PAIR_SEPARATOR + document for query, document in pairs]
        lookup = self.cache.get_or_compute(keys, self._compute, verb="scored by the endpoint")
        return lookup.vectors.reshape(-1) if keys else np.zeros(0, dtype=np.float32)
