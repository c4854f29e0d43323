"""Cross-encoder reranking (docs/method.md §8): rescore the top ``top_n`` of a run; ranks below follow unchanged.

A GPU-kind step (imports torch through sentence-transformers) for a local model; a ``kind: endpoint``
entry scores through a ``/rerank`` endpoint instead (the rerank client, :mod:`structbench.endpoints.rerank`,
behind the cache: :class:`EndpointPairScorer`; a CPU-kind job): :func:`rerank_with_entry` picks by the
entry's kind (``structbench.endpoints.kinds``). The paper's reranker is ``BAAI/bge-reranker-v2-m3``; no
cross-encoder ships in a PyPI package, so on machines without a hub the code path is exercised with a head
built on local weights whose scores carry no meaning.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from structbench.cache import VectorCache
from structbench.datamodel import chunk_texts, conform, query_texts
from structbench.devices import pick_device
from structbench.embedding.local import resolve_model_path
from structbench.endpoints.endpoint_spec import EndpointRerankerSpec
from structbench.endpoints.kinds import ENDPOINT, complete_entry, local_entry, reranker_kind
from structbench.endpoints.rerank import RerankClient


@dataclass(frozen=True)
class RerankerSpec:
    """One reranker as declared in config (``rerankers.<name>``), every field given.

    Defaults live in the workflow's config schema, not here: ``from_config`` takes a complete entry."""

    model: str
    top_n: int  # ranks rescored per query; ranks below follow unchanged
    batch_size: int
    device: str  # auto | cpu | cuda

    @classmethod
    def from_config(cls, entry: dict) -> RerankerSpec:
        return cls(**complete_entry(cls, local_entry(entry, "reranker"), "reranker"))


HEAD_SEED = 0  # torch's generator while a cross-encoder loads: a head the checkpoint lacks starts from it


def load_cross_encoder(spec: RerankerSpec):
    """The cross-encoder of ``spec``, loaded with torch's generator seeded (and restored after): a checkpoint
    without a classification head (a bi-encoder such as the packaged MiniLM) gets a newly initialised head, which
    must be the same head in every job, or reranked runs would differ between any two runs of one config. Such
    a head's scores carry no meaning; it exercises the code path."""
    import torch
    from sentence_transformers import CrossEncoder

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(HEAD_SEED)
        return CrossEncoder(resolve_model_path(spec.model), num_labels=1, device=pick_device(spec.device))


def rerank_run(
    runs: pl.DataFrame, query_texts: dict[str, str], chunk_texts: dict[int, str], score_pairs, top_n: int
) -> pl.DataFrame:
    """Reorder each query's top ``top_n`` by ``score_pairs(list[(query, chunk_text)]) -> scores``.

    Reranked rows are sorted by cross-encoder score descending, then chunk_id ascending, and keep
    stage "rerank"; rows past ``top_n`` keep their rank, score and stage."""
    runs = runs.sort(["qid", "rank"])
    head = runs.filter(pl.col("rank") <= top_n)
    tail = runs.filter(pl.col("rank") > top_n)
    pairs = [(query_texts[q], chunk_texts[c]) for q, c in zip(head["qid"].to_list(), head["chunk_id"].to_list())]
    scores = np.asarray(score_pairs(pairs), dtype=np.float32).reshape(-1) if pairs else np.zeros(0, np.float32)
    reranked = (
        head.with_columns(pl.Series("score", scores, dtype=pl.Float32), pl.lit("rerank").alias("stage"))
        .sort(["qid", "score", "chunk_id"], descending=[False, True, False])
        .with_columns((pl.int_range(pl.len()).over("qid") + 1).cast(pl.Int32).alias("rank"))
    )
    return conform(pl.concat([reranked, tail]).sort(["qid", "rank"]), "runs")


PAIR_SEPARATOR = "\x00"  # joins query and document into one cache key; never inside either text


class EndpointPairScorer:
    """``scorer(list[(query, document)]) -> float32 scores`` from a ``/rerank`` endpoint through the cache
    (namespace: the served reranker's identity, never its URL), for :func:`rerank_run`."""

    def __init__(self, spec: EndpointRerankerSpec, cache_root, sleep: Callable[[float], None] = time.sleep):
        self.spec = spec
        namespace = {"kind": "rerank-endpoint", "api": spec.api, "model": spec.model, "revision": spec.revision}
        self.cache = VectorCache(cache_root, namespace)
        self.client = RerankClient(spec, sleep)

    @property
    def requests_sent(self) -> int:
        return self.client.requests_sent

    def _compute(self, keys: list[str]) -> np.ndarray:
        return self.client.score([key.split(PAIR_SEPARATOR, 1) for key in keys]).reshape(-1, 1)

    def __call__(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        for query, document in pairs:
            if PAIR_SEPARATOR in query or PAIR_SEPARATOR in document:
                raise ValueError(f"a rerank text holds a NUL character: {query[:60]!r} / {document[:60]!r}")
        keys = [query + PAIR_SEPARATOR + document for query, document in pairs]
        lookup = self.cache.get_or_compute(keys, self._compute, verb="scored by the endpoint")
        return lookup.vectors.reshape(-1) if keys else np.zeros(0, dtype=np.float32)


def rerank_with_endpoint(
    runs: pl.DataFrame, queries: pl.DataFrame, texts: pl.DataFrame, entry: dict, cache_root
) -> pl.DataFrame:
    """:func:`rerank_run` with scores from a ``/rerank`` endpoint (``kind: endpoint``), through the cache."""
    spec = EndpointRerankerSpec.from_config(entry)
    return rerank_run(
        runs,
        query_texts(queries),
        chunk_texts(texts),
        EndpointPairScorer(spec, cache_root),
        spec.top_n,
    )


def _activated_scores(activation, features: dict):
    return activation(features["scores"].float()).reshape(-1)


def cross_encoder_scores(model, pairs: list[tuple[str, str]], threads: int | None = None) -> np.ndarray:
    """The cross-encoder's scores of ``(query, passage)`` pairs (logits through the model's activation, as
    ``CrossEncoder.predict`` gives them), each a function of its pair alone: the fixed-shape passes of
    ``structbench.embedding.passes``, so a pair scores the same among any other pairs, at any thread count."""
    from structbench.embedding.passes import in_input_order, plan_passes, run_passes, tokenize

    if not pairs:
        return np.zeros(0, dtype=np.float32)
    tokenized = tokenize(model, pairs)
    passes = plan_passes(tokenized.lengths, model.max_seq_length, on_gpu=model.device.type == "cuda")
    head = functools.partial(_activated_scores, model.activation_fn)
    return in_input_order(passes, run_passes(model, tokenized, passes, head, threads))


def rerank_with_model(
    runs: pl.DataFrame, queries: pl.DataFrame, texts: pl.DataFrame, spec: RerankerSpec, threads: int | None = None
) -> pl.DataFrame:
    model = load_cross_encoder(spec)
    return rerank_run(
        runs,
        query_texts(queries),
        chunk_texts(texts),
        functools.partial(cross_encoder_scores, model, threads=threads),
        spec.top_n,
    )


def rerank_with_entry(
    runs: pl.DataFrame,
    queries: pl.DataFrame,
    texts: pl.DataFrame,
    entry: dict,
    cache_root,
    threads: int | None = None,
) -> pl.DataFrame:
    """Rerank with a ``rerankers`` config entry of either kind: a ``/rerank`` endpoint through the cache
    under ``cache_root`` (``kind: endpoint``), else the cross-encoder loaded here."""
    if reranker_kind(entry) == ENDPOINT:
        return rerank_with_endpoint(runs, queries, texts, entry, cache_root)
    return rerank_with_model(runs, queries, texts, RerankerSpec.from_config(entry), threads)
