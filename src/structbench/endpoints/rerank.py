"""The rerank client: a query and its documents to scores through a ``/rerank`` endpoint, in the shape of
TEI, Infinity, Cohere and Jina (``api``: :class:`~structbench.endpoints.endpoint_spec.EndpointRerankerSpec`).

Standard library HTTP only (``structbench.http``), no torch. Each query's documents go ``batch_size`` to a
request, ``concurrency`` requests at a time, retried as ``structbench.http`` says; the cache sits above,
in :mod:`structbench.retrieval.rerank`. Every reply is checked (:func:`parse_rerank`): the results a list
(``results`` for the cohere shape, the reply itself for tei), one item per document, each an object with an
integer ``index`` (none missing, duplicated or out of range) and a finite number as its score
(``relevance_score``; tei: ``score``); anything else is a named :class:`~structbench.http.EndpointReplyError`
that says the endpoint (URL and model), the query and which documents.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence

import numpy as np

from structbench.endpoints.endpoint_spec import EndpointRerankerSpec
from structbench.http import (
    EndpointReplyError,
    EndpointVectorError,
    HTTPSettings,
    batches,
    bounded_map,
    check_indices,
    check_items,
    describe_value,
    is_number,
    request_json,
)


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
    check_items(items, ("index", field), "result", where, what)
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


class RerankClient:
    """Scores of (query, document) pairs from one ``/rerank`` endpoint (module docstring)."""

    def __init__(self, spec: EndpointRerankerSpec, sleep: Callable[[float], None] = time.sleep):
        self.spec = spec
        self._sleep = sleep
        self.requests_sent = 0

    def post(self, query: str, documents: list[str], what: str, settings: HTTPSettings | None = None) -> np.ndarray:
        """One request: a score per document, in order, checked."""
        body = rerank_body(self.spec, query, documents)
        reply = request_json(self.spec.url, body, settings or self.spec.http(), what, self._sleep)
        self.requests_sent += 1
        return parse_rerank(reply, len(documents), self.spec, what)

    def score(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        """A float32 score per pair, in order: each query's documents ``batch_size`` to a request,
        ``concurrency`` requests at a time."""
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
        results = bounded_map(
            lambda job: self.post(job[0], [pairs[row][1] for row in job[1]], job[2]), jobs, self.spec.concurrency
        )
        scores = np.zeros(len(pairs), dtype=np.float32)
        for (_, rows, _), result in zip(jobs, results):
            scores[rows] = result
        return scores
