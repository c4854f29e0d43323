"""What a model entry of config is: the one place an ``embedders`` or ``rerankers`` entry's kind is decided.

An entry without ``kind`` is a local model (loaded in the job, so a GPU-kind job); ``openai`` is an
embedder behind an OpenAI-compatible ``POST /embeddings`` endpoint (``endpoints/embeddings.py``),
``endpoint`` a reranker behind a ``/rerank`` endpoint (``endpoints/rerank.py``). Both of those only send
HTTP requests: their jobs need no GPU. Imported by the config checks, the rules (``rules/common.smk``), the
encoders and the rerank step, so it imports nothing heavier than the standard library.
"""

from __future__ import annotations

from dataclasses import MISSING, fields

LOCAL = "local"
OPENAI = "openai"  # embedders: an OpenAI-compatible embeddings endpoint
ENDPOINT = "endpoint"  # rerankers: a /rerank endpoint (cohere or tei shape)
EMBEDDER_KINDS = (LOCAL, OPENAI)
RERANKER_KINDS = (LOCAL, ENDPOINT)


def _kind(entry: dict, kinds: tuple[str, ...], what: str) -> str:
    kind = entry.get("kind", LOCAL)
    if kind not in kinds:
        raise ValueError(f"{what} {entry.get('model')!r}: kind {kind!r} is not one of {list(kinds)}")
    return kind


def embedder_kind(entry: dict) -> str:
    """``local`` or ``openai``; a ValueError naming the entry for any other."""
    return _kind(entry, EMBEDDER_KINDS, "embedder")


def reranker_kind(entry: dict) -> str:
    """``local`` or ``endpoint``; a ValueError naming the entry for any other."""
    return _kind(entry, RERANKER_KINDS, "reranker")


def is_local(entry: dict) -> bool:
    """Whether an embedders or rerankers entry is a model loaded in the job."""
    return _kind(entry, tuple({*EMBEDDER_KINDS, *RERANKER_KINDS}), "model") == LOCAL


def gpus_of(entry: dict) -> int:
    """``resources: gpu`` of a job running the model of an embedders or rerankers entry: 1 for a model
    loaded in the job, 0 for an endpoint, whose job only sends HTTP requests (Slurm puts it on a CPU node)."""
    return int(is_local(entry))


def complete_entry(spec_class, entry: dict, what: str) -> dict:
    """``entry`` if it names every field of ``spec_class`` without a default and no other key; else a
    ValueError naming the keys."""
    expected = [field.name for field in fields(spec_class)]
    required = [field.name for field in fields(spec_class) if field.default is MISSING]
    missing = [name for name in required if name not in entry]
    unknown = sorted(set(entry) - set(expected))
    if missing or unknown:
        raise ValueError(
            f"{what} config entry {entry!r}: missing keys {missing}, unknown keys {unknown} "
            "(the workflow's config schema fills defaults; a library caller passes every key)"
        )
    return dict(entry)


def local_entry(entry: dict, what: str) -> dict:
    """A local model's entry without its (optional) ``kind``; a ValueError if it is of another kind."""
    if not is_local(entry):
        raise ValueError(f"{what} {entry.get('model')!r} is of kind {entry['kind']!r}, not a local model")
    return {key: value for key, value in entry.items() if key != "kind"}
