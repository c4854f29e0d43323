"""The config entries of HTTP endpoints, as values: what every endpoint entry shares (:class:`EndpointSpec`:
where it is, the model it serves, how requests are sent) and what the embedder and the reranker add.

Defaults live in the workflow's config schema: ``from_config`` takes a complete entry, so a library caller
and the workflow build the same spec. The URL an entry is reached at is its ``base_url`` and the route of
its kind, never part of the served model's identity (the cache keys name the model, not the host).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import ClassVar

from structbench.endpoints.kinds import ENDPOINT, OPENAI, complete_entry, embedder_kind, reranker_kind
from structbench.http import HTTPSettings


@dataclass(frozen=True)
class EndpointSpec:
    """What every endpoint entry of config names: the endpoint, the model it serves and how requests go.

    A subclass names its :attr:`ROLE` (in messages), :attr:`KIND` (the entry's ``kind``), :attr:`ROUTE`
    (appended to ``base_url``) and the function that reads an entry's kind (:attr:`kind_of`, which names an
    unknown kind)."""

    ROLE: ClassVar[str]
    KIND: ClassVar[str]
    ROUTE: ClassVar[str]
    kind_of: ClassVar[Callable[[dict], str]]

    kind: str
    base_url: str  # the URL the route is appended to, e.g. https://api.openai.com/v1
    model: str  # the served model's name, sent in every request
    revision: str | None  # a label that changes when the served weights change (part of the cache key)
    api_key_env: str | None  # the environment variable holding the API key; never the key itself
    batch_size: int  # inputs per request
    concurrency: int  # requests in flight
    max_retries: int
    backoff_s: float
    timeout_s: float

    @classmethod
    def from_config(cls, entry: dict):
        """The spec of a complete config entry; a ValueError naming the keys or a kind of another class."""
        what = f"endpoint {cls.ROLE}"
        spec = cls(**complete_entry(cls, entry, what))
        if cls.kind_of(entry) != cls.KIND:
            raise ValueError(f"{what} {spec.model!r}: kind {spec.kind!r} is not {cls.KIND!r}")
        return spec

    @property
    def url(self) -> str:
        return self.base_url.rstrip("/") + "/" + self.ROUTE

    def http(self) -> HTTPSettings:
        return HTTPSettings(self.timeout_s, self.max_retries, self.backoff_s, self.api_key_env)

    def probe_http(self) -> HTTPSettings:
        """The settings of the start-up probe: the entry's own, with at most one retry (an endpoint that
        is down is named at once, not after a job's whole retry budget)."""
        return replace(self.http(), max_retries=min(self.max_retries, 1))


@dataclass(frozen=True)
class EndpointEmbedderSpec(EndpointSpec):
    """An ``embedders.<name>`` entry of ``kind: openai``: an OpenAI-compatible ``POST /embeddings``."""

    ROLE: ClassVar[str] = "embedder"
    KIND: ClassVar[str] = OPENAI
    ROUTE: ClassVar[str] = "embeddings"
    kind_of: ClassVar[Callable[[dict], str]] = staticmethod(embedder_kind)

    dimensions: int | None  # OpenAI's optional output width; part of the cache key, checked on every reply
    max_input_tokens: int  # the endpoint's input limit, special tokens included
    tokenizer: str  # a local tokenizer that counts like the served model's (structbench.tokens.load_tokenizer)
    query_prefix: str


RERANK_APIS = ("cohere", "tei")


@dataclass(frozen=True)
class EndpointRerankerSpec(EndpointSpec):
    """A ``rerankers.<name>`` entry of ``kind: endpoint``: a ``POST /rerank``.

    ``api`` picks the wire shape: ``cohere`` (Cohere, Jina, Infinity: ``{model, query, documents}`` ->
    ``{results: [{index, relevance_score}]}``) or ``tei`` (text-embeddings-inference: ``{query, texts}``
    -> ``[{index, score}]``). ``batch_size`` counts documents per request, one query each."""

    ROLE: ClassVar[str] = "reranker"
    KIND: ClassVar[str] = ENDPOINT
    ROUTE: ClassVar[str] = "rerank"
    kind_of: ClassVar[Callable[[dict], str]] = staticmethod(reranker_kind)

    api: str  # cohere | tei
    top_n: int

    @classmethod
    def from_config(cls, entry: dict) -> EndpointRerankerSpec:
        spec = super().from_config(entry)
        if spec.api not in RERANK_APIS:
            raise ValueError(f"endpoint reranker {spec.model!r}: api {spec.api!r} is neither 'cohere' nor 'tei'")
        return spec
