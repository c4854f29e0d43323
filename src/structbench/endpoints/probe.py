"""One small request to every endpoint a run uses, before any job: reachable, the model served, the width.

Without it an unreachable ``base_url`` or a wrong model name surfaces in the first embedding job, after
the corpus and chunking jobs have run. The workflow calls :func:`probe_endpoints` when it starts a real
run (not a dry run, and not inside a job); ``probe_endpoints: false`` in config skips it (planning
offline, or an endpoint that comes up after the run starts).

The probe sends one text (the embedder) or one query with one document (the reranker) with the entry's
own timeout and at most one retry, bypassing the cache, and checks the reply as a job would
(:class:`~structbench.endpoints.embeddings.EmbeddingsClient`, :class:`~structbench.endpoints.rerank.RerankClient`),
the width against ``dimensions`` included; for an embedder it also checks the width against the vectors
already cached for this model (a different width means the served model changed under the same name and
revision). Errors are the named endpoint errors of :mod:`structbench.http`.
"""

from __future__ import annotations

from structbench.artifacts.selection import selected
from structbench.cache import VectorCache
from structbench.endpoints.embeddings import EmbeddingsClient, cached_width, endpoint_namespace
from structbench.endpoints.endpoint_spec import EndpointEmbedderSpec, EndpointRerankerSpec
from structbench.endpoints.kinds import ENDPOINT, LOCAL, embedder_kind, is_local, reranker_kind
from structbench.endpoints.rerank import RerankClient
from structbench.http import EndpointDimensionError

PROBE_TEXT = "structbench endpoint probe"


def probe_embedder(spec: EndpointEmbedderSpec, cache_root) -> int:
    """The width one probe text comes back with (module docstring); a named error when anything is off."""
    what = f"model {spec.model!r}, the start-up probe (one text)"
    width = EmbeddingsClient(spec).served_width(PROBE_TEXT, what, spec.probe_http())
    cached = cached_width(VectorCache(cache_root, endpoint_namespace(spec)))
    if cached is not None and width != cached:
        raise EndpointDimensionError(
            f"endpoint {spec.url}, model {spec.model!r}: the probe's vector has width {width}, the cached "
            f"vectors of this model and revision {cached}; the served model changed: give it a new revision label"
        )
    return width


def probe_reranker(spec: EndpointRerankerSpec) -> None:
    """One query and one document through the reranker; a named error when anything is off."""
    what = f"model {spec.model!r}, the start-up probe (one query, one document)"
    RerankClient(spec).post(PROBE_TEXT, [PROBE_TEXT], what, spec.probe_http())


def endpoints_in_use(config: dict) -> tuple[dict[str, dict], dict[str, dict]]:
    """``(embedders, rerankers)``: the endpoint entries the run uses (``select`` honoured), by name."""
    embedders = {
        name: entry
        for name, entry in config["embedders"].items()
        if name in selected(config, "embedders") and embedder_kind(entry) != LOCAL
    }
    rerankers = {
        name: entry
        for name, entry in config["rerankers"].items()
        if entry is not None
        and name in selected(config, "rerankers")
        and not is_local(entry)
        and reranker_kind(entry) == ENDPOINT
    }
    return embedders, rerankers


def probe_endpoints(config: dict, cache_root) -> list[str]:
    """Probe every endpoint the run uses (``cache_root``: the embedding cache, for the cached width); one
    line per endpoint probed, for the log."""
    embedders, rerankers = endpoints_in_use(config)
    lines = []
    for name, entry in embedders.items():
        spec = EndpointEmbedderSpec.from_config(entry)
        lines.append(f"embedders.{name}: {spec.url} serves {spec.model!r}, width {probe_embedder(spec, cache_root)}")
    for name, entry in rerankers.items():
        spec = EndpointRerankerSpec.from_config(entry)
        probe_reranker(spec)
        lines.append(f"rerankers.{name}: {spec.url} serves {spec.model!r}")
    return lines
