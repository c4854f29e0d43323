"""The embedding entry points over both encoders: :func:`make_encoder` picks the local encoder
(``embedding/local.py``, sentence-transformers in the job) or the endpoint encoder (``embedding/endpoint.py``)
by the entry's kind (``endpoints/kinds.py``); :func:`embed_texts` runs one and logs its report;
:func:`embed_with_cache` is the workflow steps' entry, writing the vectors and the report atomically.

Importing this module imports no torch: the local encoder loads it inside the functions that load or run a
model, the endpoint encoder never.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path

from structbench.cache import atomic_write_bytes, atomic_write_text
from structbench.embedding.endpoint import EndpointEncoder
from structbench.embedding.local import CachedEncoder, EmbedderSpec
from structbench.embedding.report import Embedded, npy_bytes, vector_facts
from structbench.endpoints.endpoint_spec import EndpointEmbedderSpec
from structbench.endpoints.kinds import OPENAI, embedder_kind

log = logging.getLogger(__name__)


def prefixed_queries(texts: Sequence[str], entry: dict) -> list[str]:
    """Queries as the embedder reads them: its ``query_prefix`` (e.g. bge's retrieval instruction) first;
    chunk texts never carry it."""
    return [entry["query_prefix"] + text for text in texts]


def make_encoder(entry: dict | EmbedderSpec, cache_root: str | Path, threads: int | None = None):
    """The cached encoder of an ``embedders`` config entry: :class:`CachedEncoder` for a local model,
    :class:`structbench.embedding.endpoint.EndpointEncoder` for ``kind: openai`` (no torch imported for it)."""
    if isinstance(entry, EmbedderSpec):
        return CachedEncoder(entry, cache_root, threads)
    if embedder_kind(entry) == OPENAI:
        return EndpointEncoder(EndpointEmbedderSpec.from_config(entry), cache_root)
    return CachedEncoder(EmbedderSpec.from_config(entry), cache_root, threads)


def embed_texts(
    texts: Sequence[str], spec: EmbedderSpec | dict, cache_root: str | Path, threads: int | None = None
) -> Embedded:
    """Vectors for ``texts`` in order; only texts the cache has not seen under this model are encoded.

    ``spec`` is an :class:`EmbedderSpec` or an ``embedders`` config entry of any kind (:func:`make_encoder`).
    The report holds ``n_texts``, ``n_distinct``, ``n_encoded`` and ``n_from_cache`` (distinct texts),
    ``n_quarantined`` (damaged cache shards moved aside), ``max_seq_length``, ``n_truncated`` and
    ``max_tokens`` (:func:`count_truncated`) and the cache ``namespace`` folder name; an endpoint's report
    adds ``tokens_sent`` and ``tokens_billed``."""
    texts = list(texts)
    encoder = make_encoder(spec, cache_root, threads)
    vectors = encoder(texts)
    report = encoder.report()
    log.info(
        "%d texts (%d distinct): %d encoded, %d from cache, %d cache shards quarantined",
        report["n_texts"],
        report["n_distinct"],
        report["n_encoded"],
        report["n_from_cache"],
        report["n_quarantined"],
    )
    if "tokens_sent" in report:
        log.info(
            "%d tokens sent (local count), %s billed (server usage)", report["tokens_sent"], report["tokens_billed"]
        )
    if report["n_truncated"]:
        log.warning(
            "%d of %d texts exceed %s's max_seq_length of %d tokens (longest %d) and were truncated",
            report["n_truncated"],
            len(texts),
            encoder.spec.model,
            report["max_seq_length"],
            report["max_tokens"],
        )
    return Embedded(vectors, report)


def embed_with_cache(
    texts: Sequence[str],
    spec: dict,
    cache_root: str | Path,
    output_npy: str | Path,
    report_json: str | Path | None = None,
    threads: int | None = None,
) -> dict:
    """Workflow entry: embed ``texts`` under the config entry ``spec``, write the vectors to
    ``output_npy`` (and the report to ``report_json`` when given), both atomically; return the report."""
    embedded = embed_texts(texts, spec, cache_root, threads)
    atomic_write_bytes(output_npy, npy_bytes(embedded.vectors))
    report = {**embedded.report, **vector_facts(embedded.vectors)}
    if report_json is not None:
        atomic_write_text(report_json, json.dumps(report, sort_keys=True, indent=1) + "\n")
    return report
