"""JSON over HTTP for every endpoint client: the embeddings and rerank clients (``endpoints/embeddings.py``,
``endpoints/rerank.py``) and the OpenAI-compatible LLM backend (``llm/openai_backend.py``).

Standard library only. One exchange (:func:`request_json`) is a POST of a JSON body, or a GET without one,
retried on a connection error, a timeout or an HTTP status in :data:`RETRIABLE_STATUS` up to ``max_retries``
times with exponential backoff (``backoff_s``, doubling). Work is cut into :func:`batches` and sent
``concurrency`` requests at a time (:func:`bounded_map`).

Failures are named :class:`EndpointError` subclasses whose message says the endpoint, the batch and the
reason: :class:`EndpointUnreachable` (no answer within the retry budget), :class:`EndpointModelError` (the
server does not serve the model named), :class:`EndpointHTTPError` (any other 4xx, a 5xx or 429 that
persists, or a body that is not JSON), :class:`EndpointReplyError` (a reply of the wrong shape: a field
missing or of the wrong type, indices missing, duplicated or out of range, wrong counts),
:class:`EndpointVectorError` (a vector or score that is empty, nested, not a number, non-finite or zero)
and :class:`EndpointDimensionError` (a vector width that differs within a reply, between batches, from
the cache or from the entry's declared ``dimensions``). The reply checks themselves live with each client,
beside the shape they parse.
"""

from __future__ import annotations

import http.client
import json
import logging
import os
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TypeVar

log = logging.getLogger(__name__)

RETRIABLE_STATUS = frozenset({408, 429, 500, 502, 503, 504})
BODY_CHARS = 500  # of a server's error body, kept on the error
# A 400/404/422 whose body says the model is unknown (OpenAI: model_not_found, "does not exist"; Infinity:
# "Engine for model name ... not found"; vLLM and TEI: "model ... does not exist / not found").
MODEL_ERROR_WORDS = ("not found", "not exist", "unknown", "does not", "not_found")

T = TypeVar("T")
R = TypeVar("R")


class EndpointError(RuntimeError):
    """An endpoint failed in a way that stops the job; the message names the endpoint, batch and reason."""


class EndpointUnreachable(EndpointError):
    """No answer (connection refused, reset, timeout) within the retry budget."""

    def __init__(self, message: str, url: str = "", attempts: int = 0, problem: str = ""):
        super().__init__(message)
        self.url = url
        self.attempts = attempts
        self.problem = problem


class EndpointHTTPError(EndpointError):
    """A 4xx, a 5xx/429 that persisted through every retry, or a reply that is not JSON (status 200);
    carries the status and the body (``retried``: the status persisted through ``attempts`` attempts)."""

    def __init__(self, message: str, status: int, body: str, retried: bool = False, attempts: int = 1):
        super().__init__(message)
        self.status = status
        self.body = body
        self.retried = retried
        self.attempts = attempts


class EndpointModelError(EndpointHTTPError):
    """The server answered that it does not serve the model named in config."""


class EndpointReplyError(EndpointError):
    """A JSON reply of the wrong shape: a field missing or of the wrong type, indices or counts wrong."""


class EndpointVectorError(EndpointReplyError):
    """A reply whose vectors (or scores) are missing, empty, nested, not numbers, non-finite or zero."""


class EndpointDimensionError(EndpointError):
    """A vector width that differs within a reply, from the declared ``dimensions``, or changed mid-run
    (between batches, or against the cache)."""


# ---- one exchange --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HTTPSettings:
    timeout_s: float
    max_retries: int
    backoff_s: float
    api_key_env: str | None  # the environment variable holding a bearer token; never the token itself

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


def backoff_delay(settings: HTTPSettings, attempt: int) -> float:
    """Seconds to wait before retry ``attempt`` (1-based): ``backoff_s``, doubling."""
    return settings.backoff_s * 2 ** (attempt - 1)


def mentions_model(body: str) -> bool:
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
    attempts = settings.max_retries + 1
    problem, status, detail = "", 0, ""
    for attempt in range(attempts):
        if attempt:
            delay = backoff_delay(settings, attempt)
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
                kind = EndpointModelError if status in (400, 404, 422) and mentions_model(detail) else EndpointHTTPError
                raise kind(f"endpoint {url}, {what}: HTTP {status}: {detail}", status, detail) from None
        except (urllib.error.URLError, http.client.HTTPException, TimeoutError, ConnectionError) as error:
            reason = getattr(error, "reason", error)
            problem, status = f"{type(reason).__name__}: {reason}", 0
        except (json.JSONDecodeError, UnicodeDecodeError) as error:
            raise EndpointHTTPError(f"endpoint {url}, {what}: reply is not JSON ({error})", 200, "") from None
    if status == 0:
        raise EndpointUnreachable(
            f"endpoint {url} is unreachable, {what}: {problem} after {attempts} attempts; "
            "what was embedded before is cached and a rerun sends only the rest",
            url,
            attempts,
            problem,
        )
    raise EndpointHTTPError(
        f"endpoint {url}, {what}: still {problem} after {attempts} attempts", status, detail, True, attempts
    )


# ---- batching and concurrency --------------------------------------------------------------------------


def batches(n_items: int, size: int) -> list[range]:
    """The index ranges of ``n_items`` items cut ``size`` to a batch, in order (the last may be shorter)."""
    if size < 1:
        raise ValueError(f"batch size {size} < 1")
    return [range(start, min(start + size, n_items)) for start in range(0, n_items, size)]


def bounded_map(function: Callable[[T], R], items: Iterable[T], concurrency: int) -> list[R]:
    """``[function(item) for item in items]`` with at most ``concurrency`` calls in flight; results in
    input order. The first exception raised (in input order) propagates once every call is done."""
    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
        return list(pool.map(function, items))


def describe_inputs(number: int, indices: Sequence[int] | range) -> str:
    """``batch 3, inputs 96..127``: a batch and the positions of its inputs, for error messages."""
    if not indices:
        return f"batch {number}, no inputs"
    first, last = indices[0], indices[-1]
    return f"batch {number}, input {first}" if first == last else f"batch {number}, inputs {first}..{last}"


# ---- reply checks shared by the clients ----------------------------------------------------------------


def is_number(value) -> bool:
    """A JSON number (int or float, not a bool)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def describe_value(value) -> str:
    """A short, safe description of a JSON value for an error message: its type and a clipped repr."""
    if value is None:
        return "null"
    text = repr(value)
    return f"{type(value).__name__} {text[:60]}{'...' if len(text) > 60 else ''}"


def check_items(items: list, keys: tuple[str, ...], noun: str, where: str, what: str) -> None:
    """Each reply item an object holding ``keys``, else an :class:`EndpointReplyError` naming the first that
    is not (``noun``: what the reply calls an item, e.g. ``data item``, ``result``) and what came instead."""
    for position, item in enumerate(items):
        if not isinstance(item, dict):
            raise EndpointReplyError(
                f"endpoint {where}, {what}: {noun} {position} is {describe_value(item)}, not an object"
            )
        for key in keys:
            if key not in item:
                raise EndpointReplyError(
                    f"endpoint {where}, {what}: {noun} {position} has no {key!r} (keys {sorted(item)[:10]})"
                )


def check_indices(indices: Sequence, n_expected: int, where: str, what: str) -> list[int]:
    """``indices`` (one per reply item) as a permutation of ``range(n_expected)``, else an
    :class:`EndpointReplyError` naming the first missing, duplicated, out-of-range or non-integer one."""
    for position, index in enumerate(indices):
        if not isinstance(index, int) or isinstance(index, bool):
            raise EndpointReplyError(
                f"endpoint {where}, {what}: item {position} has index {describe_value(index)}, not an integer"
            )
    out_of_range = sorted({i for i in indices if not 0 <= i < n_expected})
    if out_of_range:
        raise EndpointReplyError(
            f"endpoint {where}, {what}: index {out_of_range[0]} is out of range for {n_expected} inputs"
            f" ({len(out_of_range)} such indices)"
        )
    seen: set[int] = set()
    duplicated = sorted({i for i in indices if i in seen or seen.add(i)})
    if duplicated:
        raise EndpointReplyError(
            f"endpoint {where}, {what}: index {duplicated[0]} appears more than once"
            f" ({len(duplicated)} duplicated indices in {len(indices)} items for {n_expected} inputs)"
        )
    missing = [i for i in range(n_expected) if i not in seen]
    if missing:
        raise EndpointReplyError(
            f"endpoint {where}, {what}: {len(indices)} items for {n_expected} inputs; no item for index"
            f" {missing[0]} ({len(missing)} missing)"
        )
    return list(indices)
