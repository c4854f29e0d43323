"""The prefix axis (docs/method.md §§7 and 17): what is prepended to a chunk's content before embedding.

Prefix kinds, as named in config:

* ``none`` — the content alone.
* ``path:d`` — the real heading path cut to depth ``d``: ``"[" + separator.join(path[:d]) + "]\\n\\n"``.
  ``path[0]`` is the document title, so ``path:1`` is ``[Title]`` and ``path:2`` is
  ``[Title > Section]``; a path shorter than ``d`` renders whole.
* ``placebo:d`` — the same format and depth, but the path comes from another document: the placebo
  (Kuehlkamp et al., appendix E.3), built in :mod:`structbench.prefixes.placebo`.
* ``late``, ``late_placebo`` — nothing prepended: the content alone, embedded by late chunking
  (:mod:`structbench.embedding.late`) in the chunk's own document or in another one.
* ``context`` — an LLM-written situating context per chunk (A1), given as ``contexts``, rendered in
  the same bracketed format as the paths. Keeping one format for every non-empty prefix means the
  arms differ in what the prefix says, not in its delimiters.

Content is the chunk's span of the flat text with its surrounding whitespace removed (a chunk carries
the paragraph separator that follows it only so that chunks tile the document). ``prefix_tokens``
counts the prefix alone, brackets and ``"\\n\\n"`` included, with the same tokenizer as content tokens.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import polars as pl

from structbench.conditions import NO_PREFIX, parse_value
from structbench.datamodel import TEXTS, document_texts
from structbench.defaults import SEED as DEFAULT_SEED
from structbench.defaults import SEPARATOR as DEFAULT_SEPARATOR
from structbench.prefixes.budget import shortened_prefix
from structbench.prefixes.placebo import placebo_paths
from structbench.tokens import TokenCounter, load_tokenizer

PREFIX_END = "\n\n"


def parse_prefix(prefix: str) -> tuple[str, int | None]:
    """Split a prefix name into its kind and depth: ``"path:2"`` -> ``("path", 2)``.

    The legal forms are declared once, in :data:`structbench.conditions.AXES`."""
    try:
        kind, parameter = parse_value("prefix", prefix)
    except ValueError as error:
        raise ValueError(f"unknown prefix {prefix!r}: {error}") from None
    return kind.name, int(parameter) if parameter is not None else None


def render_prefix(items, separator: str = DEFAULT_SEPARATOR) -> str:
    """The bracketed prefix for a path (already cut to depth) or a context string."""
    inner = items if isinstance(items, str) else separator.join(items)
    return "[" + inner + "]" + PREFIX_END


def render_texts(
    documents: pl.DataFrame,
    chunks: pl.DataFrame,
    prefix: str,
    tokenizer: TokenCounter | str,
    *,
    separator: str = DEFAULT_SEPARATOR,
    seed: int = DEFAULT_SEED,
    contexts: Mapping[int, str] | pl.DataFrame | None = None,
    max_prefix_tokens: int | None = None,
) -> tuple[pl.DataFrame, dict]:
    """Render the texts to embed for one (chunk set, prefix) pair: a TEXTS table and a small report.

    ``contexts`` (for ``prefix="context"``) maps ``chunk_id`` to its context string, as a mapping or
    a table with columns ``chunk_id, context``; every chunk needs one. The report holds the prefix,
    its kind and depth, the number of chunks, mean/max prefix tokens, mean content tokens and, for a
    placebo, the residual same-document pairs and the chunks carrying them.

    ``max_prefix_tokens`` bounds every prefix (the workflow passes half of the chunk set's ``t_max``): a
    longer one is shortened as :mod:`structbench.prefixes.budget` says, and the report counts those
    chunks (``shortened_prefixes``; of them, ``dropped_ancestors``: those that lost ancestors to keep the
    leaf) beside the largest prefix (``max_prefix_tokens``) and the allowed (``max_prefix_tokens_allowed``).
    """
    kind, depth = parse_prefix(prefix)
    tokenizer = load_tokenizer(tokenizer)
    ordered = chunks.sort("chunk_id")
    chunk_ids = ordered["chunk_id"].to_list()
    text_of = document_texts(documents)
    doc_ids = ordered["doc_id"].to_list()
    missing_docs = sorted(set(doc_ids) - set(text_of))
    if missing_docs:
        raise ValueError(f"chunks refer to documents missing from the documents table: {missing_docs[:5]}")
    spans = zip(doc_ids, ordered["start"].to_list(), ordered["end"].to_list())
    contents = [text_of[d][s:e].strip() for d, s, e in spans]

    report = {"prefix": prefix, "kind": kind, "depth": depth, "separator": separator, "chunks": len(chunk_ids)}
    paths = ordered["path"].to_list()
    if depth is not None:
        # A path shorter than the depth renders whole (docs/method.md §17): say how many were capped.
        report.update(
            capped_chunks=sum(len(path) < depth for path in paths),
            max_path_depth=max((len(path) for path in paths), default=0),
        )
    elements = RENDERERS[kind](
        ordered=ordered,
        doc_ids=doc_ids,
        paths=paths,
        chunk_ids=chunk_ids,
        depth=depth,
        seed=seed,
        contexts=contexts,
        report=report,
    )
    prefixes = _rendered(elements, separator, tokenizer, max_prefix_tokens, report)

    unique = sorted(set(prefixes))
    counted = dict(zip(unique, tokenizer.count_batch(unique)))
    counted[""] = 0
    prefix_tokens = [counted[p] for p in prefixes]
    texts = pl.DataFrame(
        {
            "chunk_id": chunk_ids,
            "prefix": prefixes,
            "text_for_embedding": [p + c for p, c in zip(prefixes, contents)],
            "prefix_tokens": prefix_tokens,
        },
        schema=TEXTS,
    )
    report.update(
        mean_prefix_tokens=float(np.mean(prefix_tokens)) if prefix_tokens else 0.0,
        max_prefix_tokens=int(max(prefix_tokens, default=0)),
        mean_content_tokens=float(ordered["n_tokens"].mean()) if ordered.height else 0.0,
    )
    return texts, report


def _rendered(
    elements: list[tuple[str, ...] | None],
    separator: str,
    tokenizer: TokenCounter,
    budget: int | None,
    report: dict,
) -> list[str]:
    """Each chunk's prefix from its elements (``None``: no prefix), within ``budget`` tokens if given."""
    render = lambda items: render_prefix(items, separator)  # noqa: E731
    fitted: dict[tuple[str, ...], tuple[str, int]] = {}
    for items in set(elements) - {None}:
        fitted[items] = shortened_prefix(items, render, budget, tokenizer) if budget is not None else (render(items), 0)
    if budget is not None:
        rules = [fitted[items][1] for items in elements if items is not None]
        report.update(
            max_prefix_tokens_allowed=budget,
            shortened_prefixes=sum(rule > 0 for rule in rules),
            dropped_ancestors=sum(rule > 1 for rule in rules),
        )
    return [fitted[items][0] if items is not None else "" for items in elements]


def _no_prefix(*, chunk_ids, **_) -> list[None]:
    return [None] * len(chunk_ids)


def _path_prefixes(*, paths, depth, **_) -> list[tuple[str, ...]]:
    return [tuple(path[:depth]) for path in paths]


def _placebo_prefixes(*, ordered, doc_ids, paths, depth, seed, report, **_) -> list[tuple[str, ...]]:
    mapping, residual = placebo_paths(ordered, depth, seed)
    lookup = {
        (d, tuple(real)): (tuple(fake), fake_doc)
        for d, real, fake, fake_doc in zip(
            *(mapping[c].to_list() for c in ("doc_id", "real_path", "placebo_path", "placebo_doc_id"))
        )
    }
    chosen = [lookup[(d, tuple(path[:depth]))] for d, path in zip(doc_ids, paths)]
    report.update(
        seed=seed,
        placebo_pairs=mapping.height,
        residual_same_doc=residual,
        residual_same_doc_chunks=sum(fake_doc == d for (_, fake_doc), d in zip(chosen, doc_ids)),
    )
    return [tuple(fake) for fake, _ in chosen]


def _context_prefixes(*, chunk_ids, contexts, **_) -> list[tuple[str, ...]]:
    by_chunk = _contexts(contexts)
    absent = [c for c in chunk_ids if c not in by_chunk]
    if absent:
        raise ValueError(
            f"prefix 'context' needs a context for every chunk; {len(absent)} of {len(chunk_ids)} "
            f"chunks have none (first chunk_ids: {absent[:5]}). "
            "Run the context-generation step first."
        )
    return [(str(by_chunk[c]).strip(),) for c in chunk_ids]


# One renderer per prefix kind of structbench.conditions.AXES["prefix"] (a test checks they agree).
RENDERERS = {
    NO_PREFIX: _no_prefix,
    "path": _path_prefixes,
    "placebo": _placebo_prefixes,
    "context": _context_prefixes,
    # late chunking prepends nothing: its texts are the content alone (embedding/late.py pools the vectors)
    "late": _no_prefix,
    "late_placebo": _no_prefix,
}


def _contexts(contexts) -> dict[int, str]:
    if contexts is None:
        raise ValueError("prefix 'context' needs contexts (chunk_id -> LLM-written context); none were given")
    if isinstance(contexts, pl.DataFrame):
        if not {"chunk_id", "context"} <= set(contexts.columns):
            raise ValueError(f"contexts table needs columns chunk_id, context; has {contexts.columns}")
        return dict(zip(contexts["chunk_id"].to_list(), contexts["context"].to_list()))
    return {int(k): v for k, v in contexts.items()}
