"""The data model (docs/method.md §3): the column schemas of every table passed between rules.

Tables are polars DataFrames in memory and Parquet on disk. Every table carries enough ids to join
without positional assumptions. All offsets are half-open ``[start, end)`` character intervals into a
document's flat text ("content offsets"): its body paragraphs in reading order joined by
``PARAGRAPH_SEPARATOR``; headings are never part of the flat text.

Identifiers:
- ``doc_id`` is a string, unique within a corpus.
- ``section_id`` is the 0-based ordinal of a section within its document (reading order);
  ``top_section_id`` is the ``section_id`` of the top-level section that contains it.
- ``chunk_id`` is the 0-based ordinal of a chunk in its chunk set, which is sorted by
  ``(doc_id, start)``; rankings break score ties by ``chunk_id`` ascending (docs/method.md §17).
- ``qid`` is a string, unique within a corpus, non-empty and without whitespace (:func:`is_one_field`): it is
  one field of a TREC run or qrels line.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

from structbench.atomic import atomic_path

if TYPE_CHECKING:
    import numpy as np

PARAGRAPH_SEPARATOR = "\n\n"
MAX_LEVEL = 4  # stored levels are clamped to 1..MAX_LEVEL; paths keep the true depth
# A question's ``qtype`` in a questions file and in generated queries (querygen samples one target kind each).
QUERY_TYPES = ("factoid", "underspecified", "multihop", "structural")

DOCUMENTS = {
    "corpus": pl.String,
    "doc_id": pl.String,
    "title": pl.String,
    "text": pl.String,
    "n_chars": pl.Int64,
    "meta": pl.String,  # JSON object
}
PARAGRAPHS = {
    "doc_id": pl.String,
    "para_idx": pl.Int32,
    "start": pl.Int64,
    "end": pl.Int64,
}
SECTIONS = {
    "doc_id": pl.String,
    "section_id": pl.Int32,
    "title": pl.String,
    "level": pl.Int8,
    "path": pl.List(pl.String),  # [document title, top-level title, ..., own title]
    "para_start": pl.Int32,
    "para_end": pl.Int32,  # exclusive
    "start": pl.Int64,
    "end": pl.Int64,
    "top_section_id": pl.Int32,
}
QUERIES = {
    "qid": pl.String,
    "corpus": pl.String,
    "doc_id": pl.String,
    "text": pl.String,
    "qtype": pl.String,
    "spans": pl.List(pl.List(pl.Int64)),  # [[start, end), ...] gold evidence, content offsets
    "meta": pl.String,  # JSON object
}
CHUNKS = {
    "chunk_id": pl.Int64,
    "doc_id": pl.String,
    "start": pl.Int64,
    "end": pl.Int64,
    "n_tokens": pl.Int32,  # content tokens only
    "section_id": pl.Int32,  # the section the chunk starts in (structural: the one it lies in)
    "path": pl.List(pl.String),
    # How the chunk's end was cut, the strongest boundary there: "end" (document end), "section",
    # "paragraph", "sentence", or a fallback where no sentence boundary served: "line", "word",
    # "token" (structbench.chunking.tiling.CUT_KINDS; definitions in that module's docstring).
    "cut": pl.String,
}
TEXTS = {
    "chunk_id": pl.Int64,
    "prefix": pl.String,  # "" when the condition prepends nothing
    "text_for_embedding": pl.String,
    "prefix_tokens": pl.Int32,
}
RUNS = {
    "qid": pl.String,
    "rank": pl.Int32,  # 1-based
    "chunk_id": pl.Int64,
    "score": pl.Float32,
    "stage": pl.String,  # which retrieval stage placed it (e.g. "flat", "stage2", "backfill", "rerank")
}
# Routed retrieval (structbench.retrieval.routing): one row per (query, section the router kept). A "section" here
# is a routing unit, a document plus a top-level heading with its subsections.
ROUTING = {
    "qid": pl.String,
    "route_rank": pl.Int32,  # 1 = the router's first choice
    "doc_id": pl.String,
    "top_section_id": pl.Int32,
    "start": pl.Int64,  # the unit's whole content span, subsections included
    "end": pl.Int64,
    "score": pl.Float32,  # two-stage: cosine of query and centroid; TOC: cosine of query and unit title
    "source": pl.String,  # "centroid" (two-stage), "llm" (TOC reply in range), "fallback" (TOC: nearest title)
    "chunk_ids": pl.List(pl.Int64),  # the unit's chunks, ascending
    "toc_entries": pl.Int32,  # TOC: entries in the contents the LLM read; null for two-stage
    "reply": pl.String,  # TOC: the LLM's raw reply; null for two-stage
}


def is_one_field(value: str) -> bool:
    """Whether ``value`` can be one field of a whitespace-separated line (a TREC run or qrels line, as trec_eval
    and ranx split it): non-empty and without whitespace (``str.isspace``: a tab, a newline, U+2028, a
    no-break space). Every ``qid`` is one field: the corpus step refuses a questions file's qid that is not."""
    return bool(value) and not any(character.isspace() for character in value)


def as_one_field(text: str) -> str:
    """``text`` as one field (:func:`is_one_field`): each whitespace character and ``%`` percent-encoded (its
    UTF-8 bytes, ``%20`` for a space), the rest as is, so two texts stay two fields (``"A B"`` is ``"A%20B"``,
    ``"A%20B"`` is ``"A%2520B"``) and a text with neither reads the same. Generated qids hold their document's
    id, and a WikiText or Wikipedia title has spaces."""
    if not text:
        return "%"  # an empty id is one field too, and no encoded text is "%" alone
    return "".join(
        "".join(f"%{byte:02X}" for byte in character.encode("utf-8"))
        if character.isspace() or character == "%"
        else character
        for character in text
    )


SCHEMAS = {
    "documents": DOCUMENTS,
    "paragraphs": PARAGRAPHS,
    "sections": SECTIONS,
    "queries": QUERIES,
    "chunks": CHUNKS,
    "texts": TEXTS,
    "runs": RUNS,
    "routing": ROUTING,
}


@dataclass(frozen=True)
class SectionSpec:
    """One section of a parsed document, before offsets exist.

    ``level`` is the true heading depth below the document title (1 = top-level); the lead text
    before the first heading is a level-1 section whose ``title`` is "" and whose path is the
    document title alone (docs/method.md §17). ``para_start``/``para_end`` index the document's
    paragraph list (end exclusive); sections must tile the paragraphs.
    """

    title: str
    level: int
    para_start: int
    para_end: int


@dataclass
class ParsedDocument:
    """A document as a loader produces it: body paragraphs plus its gold section tree."""

    doc_id: str
    title: str
    paragraphs: list[str]
    sections: list[SectionSpec]
    meta: dict = field(default_factory=dict)


def empty(name: str) -> pl.DataFrame:
    return pl.DataFrame(schema=SCHEMAS[name])


def conform(frame: pl.DataFrame, name: str) -> pl.DataFrame:
    """Select and cast ``frame`` to the named schema, failing on a missing column."""
    schema = SCHEMAS[name]
    missing = [column for column in schema if column not in frame.columns]
    if missing:
        raise ValueError(f"{name} table is missing columns {missing}")
    return frame.select([pl.col(column).cast(dtype) for column, dtype in schema.items()])


def write_table(frame: pl.DataFrame, path: str | Path) -> None:
    """Write Parquet atomically (temp file + rename) with fixed settings, so equal frames give equal bytes."""
    with atomic_path(path) as tmp:
        frame.write_parquet(tmp, compression="zstd", statistics=False)


class DamagedInput(ValueError):
    """An input file that exists but cannot be read as what it should be; the message names the file."""


def read_table(path: str | Path, name: str | None = None) -> pl.DataFrame:
    """Read a Parquet table (conformed to the named schema if ``name`` is given).

    A missing file is a ``FileNotFoundError`` and a damaged one a :class:`DamagedInput`, each naming
    the path (and the table it should hold), so a job log says which input to rebuild."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{name or 'table'} input {path} does not exist")
    try:
        frame = pl.read_parquet(path)
    except (pl.exceptions.ComputeError, OSError) as error:
        raise DamagedInput(
            f"{path}: not a readable Parquet {name or 'table'} ({error}); delete it and rerun the rule that writes it"
        ) from error
    try:
        return conform(frame, name) if name else frame
    except ValueError as error:
        raise DamagedInput(f"{path}: {error}") from error


def read_vectors(path: str | Path) -> np.ndarray:
    """Read a ``.npy`` vector file written by the workflow (float32, 2-D); a damaged file names its path."""
    import numpy as np

    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"vector file {path} does not exist")
    try:
        vectors = np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError) as error:
        raise DamagedInput(f"{path}: not a readable .npy vector file ({error}); delete it and rerun") from error
    if vectors.ndim != 2 or vectors.dtype.kind != "f":
        raise DamagedInput(f"{path}: expected a 2-D float array, got shape {vectors.shape}, dtype {vectors.dtype}")
    return vectors


# ---- id -> text maps of the tables (built here once, so every step reads them the same way) ----------------


def column_map(frame: pl.DataFrame, key: str, value: str) -> dict:
    """``{row[key]: row[value]}`` over a table's rows (a later duplicate key wins, as in ``dict``)."""
    return dict(zip(frame[key].to_list(), frame[value].to_list()))


def document_texts(documents: pl.DataFrame) -> dict[str, str]:
    """doc_id -> the document's flat text (DOCUMENTS)."""
    return column_map(documents, "doc_id", "text")


def query_texts(queries: pl.DataFrame) -> dict[str, str]:
    """qid -> the query's text (QUERIES)."""
    return column_map(queries, "qid", "text")


def chunk_texts(texts: pl.DataFrame) -> dict[int, str]:
    """chunk_id -> the text its embedder reads, prefix included (TEXTS' ``text_for_embedding``)."""
    return column_map(texts, "chunk_id", "text_for_embedding")
