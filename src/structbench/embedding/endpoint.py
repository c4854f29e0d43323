"""The endpoint encoder: an OpenAI-compatible embeddings endpoint behind the vector cache, with the report.

A CPU-kind step: the requests and their checks are the embeddings client's
(:class:`~structbench.endpoints.embeddings.EmbeddingsClient`), nothing here imports torch. Vectors go through
the same content-addressed cache as local models (``cache.py``), in a namespace named by the endpoint's
model identity (:func:`~structbench.endpoints.embeddings.endpoint_namespace`: the served model name, the
``revision`` label the config gives it, the requested ``dimensions``), never by the URL: the same model
served elsewhere answers the same. A rerun, or a second study sharing texts, sends nothing.

Each round of ``concurrency`` requests is stored as one cache shard as soon as it is back and checked, so a
failure loses at most the round in flight, a resumed run sends only the texts no shard holds, and a reply
that fails a check (its width included) is never cached.

Truncation is counted as for local models: the config names the endpoint's input limit
(``max_input_tokens``) and a local tokenizer that counts like the served model's (special tokens included).
Cost: the report adds ``tokens_distinct`` (the local tokenizer's count of the distinct texts asked for:
what a cold run sends), ``tokens_sent`` (of those actually sent) and ``tokens_billed`` (the sum of the
server's ``usage`` tokens; null when it reports none).

An API key is read from the environment variable the config names (``api_key_env``), never from config.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import numpy as np

from structbench.cache import VectorCache
from structbench.embedding.report import TruncationCount, add_lookup_totals, encoder_report, new_totals
from structbench.endpoints.embeddings import EmbeddingsClient, batch_what, cached_width, endpoint_namespace
from structbench.endpoints.endpoint_spec import EndpointEmbedderSpec
from structbench.http import EndpointDimensionError


def input_token_lengths(texts: Sequence[str], tokenizer: str) -> list[int]:
    """Tokens of each text in the local tokenizer, special tokens included (as the local path counts)."""
    from structbench.tokens import load_tokenizer

    if not texts:
        return []
    encodings = load_tokenizer(tokenizer).tokenizer.encode_batch(list(texts), add_special_tokens=True)
    return [len(encoding.ids) for encoding in encodings]


class EndpointEncoder:
    """``encoder(texts) -> float32 rows`` through the cache, from an OpenAI-compatible endpoint.

    The same interface and report keys as :class:`structbench.embedding.local.CachedEncoder`, plus
    ``tokens_sent`` and ``tokens_billed``; see the module docstring."""

    def __init__(self, spec: EndpointEmbedderSpec, cache_root, sleep: Callable[[float], None] = time.sleep):
        self.spec = spec
        self.cache = VectorCache(cache_root, endpoint_namespace(spec))
        seen_in = f"earlier batches or the cache {self.cache.directory}"
        self.client = EmbeddingsClient(spec, cached_width(self.cache), seen_in, sleep)
        self.totals = new_totals()
        self.tokens_sent = 0
        self.tokens_distinct = 0
        self.truncation = TruncationCount(spec.max_input_tokens, 0, 0)
        self._lengths: dict[str, int] = {}

    @property
    def dimension(self) -> int | None:
        """The width of this model's vectors, once known (from the cache or a reply)."""
        return self.client.width

    @property
    def requests_sent(self) -> int:
        return self.client.requests_sent

    def _compute(self, texts: list[str]) -> np.ndarray:
        rows = self.client.embed(texts)
        self.tokens_sent += sum(self._lengths[text] for text in texts)
        return rows

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
                self.client.served_width(".", batch_what(self.spec.model, 0, 0, ["."]))
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
            "tokens_billed": self.client.tokens_billed,
        }
