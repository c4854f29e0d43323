"""The identity of a scored cell: which corpus, condition, embedder and reranker a score row belongs to.

Every score table carries the four identifying columns :data:`COLUMNS`. A dense cell is a declared
condition under an embedder and a reranker. The BM25 non-lexicality probe is scored on a *chunk set*
(boundaries/structure) rather than on a condition; its cells are written with the embedder column
``bm25`` and a condition value ``bm25:<chunkset>``, which :func:`lexical_cell` builds and
:func:`lexical_chunkset` reads back, so no other code spells that encoding.
"""

from __future__ import annotations

COLUMNS = ("corpus", "condition", "embedder", "reranker")
# A cell less its condition: what every per-cell table groups by (the statistics step, the report).
CELL = ["corpus", "embedder", "reranker"]
LEXICAL = "bm25"  # the embedder name of the lexical probe's cells (the config schema reserves it)
NO_RERANKER = "none"


def dense_cell(corpus: str, condition: str, embedder: str, reranker: str) -> dict[str, str]:
    return {"corpus": corpus, "condition": condition, "embedder": embedder, "reranker": reranker}


def lexical_cell(corpus: str, chunkset: str) -> dict[str, str]:
    """The BM25 probe's cell on one chunk set (``"structural/gold"``)."""
    return dense_cell(corpus, f"{LEXICAL}:{chunkset}", LEXICAL, NO_RERANKER)


def is_lexical(cell: dict) -> bool:
    return cell["embedder"] == LEXICAL


def lexical_chunkset(condition: str) -> str:
    """The chunk set of a lexical cell's condition value (the inverse of :func:`lexical_cell`)."""
    prefix = f"{LEXICAL}:"
    if not condition.startswith(prefix):
        raise ValueError(f"{condition!r} is not a lexical cell's condition (expected {prefix}<chunkset>)")
    return condition[len(prefix) :]
