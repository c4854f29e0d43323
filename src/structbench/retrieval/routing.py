"""Routed retrieval (docs/method.md §8): the routers that choose sections before chunks are ranked.

Two routers share one routing unit and one output table, so they compare side by side:

- **Two-stage** (Kuehlkamp et al., section 3.2, 6.4 and appendix J; conditions A4 and G4):
  :func:`route_two_stage` ranks section centroids and keeps the top ``top_sections`` (the study's 5);
  :func:`structbench.retrieval.search.two_stage_search` then ranks the chunks inside them and backfills from
  the flat ranking. A centroid is the renormalized mean of the *same* chunk vectors flat search uses
  (representation constancy), so A4 − A3 compares retrieval algorithms, never representations.
- **TOC routing** (Li (The Chunk Was Never in the Document), after STAIR): an LLM reads a numbered table of contents of
the candidate
  documents' sections plus the question and answers ``{"section": n}`` (:func:`structbench.retrieval.toc.route_toc`);
  the pure parts — the contents, the reply parser and the embedding fallback — live here.

**The routing unit** is a document plus a top-level heading, subsections included (Kuehlkamp et al.: "a section
= document + top-level heading"); the lead text before the first heading is a top-level section of its
own (docs/method.md §17). A chunk belongs to the unit of the section it starts in (its ``section_id``), so
the units partition the chunk set. TOC routes among the same units: both routers choose from one
inventory, and differ only in how they choose and how many they keep (5 against 1).

**The routing table** (:data:`structbench.datamodel.ROUTING`) has one row per (query, kept unit): the unit,
its whole content span ``[start, end)``, the router's score, where the choice came from (``source``)
and the unit's chunk_ids. It is the ``kept_sections`` input of the registered metric
``section_recall`` (:mod:`structbench.metrics.diagnostics`), so both routers are scored by one
definition: 1 when a kept unit overlaps a gold span of the query. For TOC, which keeps one unit, that
is the routed-section hit rate.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import polars as pl

from structbench.datamodel import ROUTING
from structbench.defaults import HIER_TOP_SECTIONS, SEPARATOR
from structbench.prefixes.budget import bounded_titles
from structbench.tokens import DEFAULT_TOKENIZER, TokenCounter, load_tokenizer
from structbench.vectors import unit_length

# Which kinds are routed, and the registered metrics their scores carry beyond the configured set (each
# reading the routing table as its input ``kept_sections``), are facts of the kind:
# ``Kind.routed`` and ``Kind.metrics`` in structbench.conditions.AXES.


def section_units(
    sections: pl.DataFrame,
    separator: str = SEPARATOR,
    max_title_tokens: int | None = None,
    tokenizer: TokenCounter | str = DEFAULT_TOKENIZER,
) -> pl.DataFrame:
    """The routing units of one structure (a SECTIONS table), one row per (doc_id, top_section_id), in that order.

    Columns: ``unit`` (0-based ordinal in that order: row i of a title-vector file is unit i), ``doc_id``,
    ``top_section_id``, ``title`` (the top-level section's path joined by ``separator``,
    "Document > Section"; the document title alone for lead text), ``start``/``end`` (the unit's content
    span: from its first section's start to its last section's end, subsections included).

    With ``max_title_tokens`` (the workflow passes half of the condition's ``t_max``) a title over that many
    ``tokenizer`` tokens is shortened by the chunk prefixes' rule (:mod:`structbench.prefixes.budget`:
    ancestors cut or dropped first, the section's own title kept)."""
    if sections.is_empty():
        raise ValueError("sections table is empty: no section to route to")
    spans = sections.group_by("doc_id", "top_section_id").agg(pl.col("start").min(), pl.col("end").max())
    tops = sections.filter(pl.col("section_id") == pl.col("top_section_id")).select("doc_id", "top_section_id", "path")
    units = spans.join(tops, on=["doc_id", "top_section_id"], how="left").sort("doc_id", "top_section_id")
    orphans = units.filter(pl.col("path").is_null())
    if orphans.height:
        first = orphans.row(0, named=True)
        raise ValueError(
            f"sections of document {first['doc_id']!r} name top_section_id {first['top_section_id']}, "
            "which is no section of that document"
        )
    paths = units["path"].to_list()
    titles = (
        [separator.join(path) for path in paths]
        if max_title_tokens is None
        else bounded_titles(paths, separator.join, max_title_tokens, load_tokenizer(tokenizer))
    )
    units = units.with_columns(pl.Series("title", titles, dtype=pl.String))
    return units.with_row_index("unit").select(
        pl.col("unit").cast(pl.Int64), "doc_id", pl.col("top_section_id").cast(pl.Int32), "title", "start", "end"
    )


def chunk_units(chunks: pl.DataFrame, sections: pl.DataFrame, units: pl.DataFrame) -> np.ndarray:
    """The unit of every chunk, indexed by ``chunk_id`` (which must be 0..n-1, the rows of the vector file).

    A chunk's unit is the top-level section of its ``section_id`` (the section it starts in)."""
    ordered = chunks.select("chunk_id", "doc_id", "section_id").sort("chunk_id")
    if not ordered["chunk_id"].equals(pl.Series("chunk_id", np.arange(ordered.height), dtype=pl.Int64)):
        raise ValueError("chunk_ids must be 0..n-1 (row i of the chunk vectors is chunk i)")
    mapped = (
        ordered.join(sections.select("doc_id", "section_id", "top_section_id"), on=["doc_id", "section_id"], how="left")
        .join(units.select("doc_id", "top_section_id", "unit"), on=["doc_id", "top_section_id"], how="left")
        .sort("chunk_id")
    )
    missing = mapped.filter(pl.col("unit").is_null())
    if missing.height:
        first = missing.row(0, named=True)
        raise ValueError(
            f"{missing.height} chunks name a section the sections table lacks (first: chunk "
            f"{first['chunk_id']} of {first['doc_id']!r}, section_id {first['section_id']}): "
            "chunks and sections must come from the same structure"
        )
    return mapped["unit"].to_numpy().astype(np.int64)


def unit_chunk_ids(chunk_unit: np.ndarray, n_units: int) -> list[list[int]]:
    """The chunk_ids of each unit, ascending (chunk_unit is indexed by chunk_id)."""
    order = np.argsort(chunk_unit, kind="stable")
    bounds = np.searchsorted(chunk_unit[order], np.arange(n_units + 1))
    return [order[bounds[u] : bounds[u + 1]].tolist() for u in range(n_units)]


def section_centroids(chunk_vectors: np.ndarray, chunk_unit: np.ndarray, n_units: int) -> tuple[np.ndarray, np.ndarray]:
    """Each unit's centroid, the renormalized mean of its chunks' vectors, and which units have chunks.

        centroid(u) = m / ||m||  with  m = (1/|u|) * sum_{c in u} v_c

    Returns ``(centroids, has_chunks)``: float32 ``n_units x d`` and a boolean mask. A unit without
    chunks (possible only for chunks not cut at sections, e.g. fixed windows) gets a zero row and
    ``has_chunks`` False: it cannot be routed to. Sums run in float64 in chunk order (deterministic)."""
    vectors = np.asarray(chunk_vectors, dtype=np.float64)
    sums = np.zeros((n_units, vectors.shape[1]), dtype=np.float64)
    np.add.at(sums, chunk_unit, vectors)
    counts = np.bincount(chunk_unit, minlength=n_units)
    has_chunks = counts > 0
    means = np.divide(sums, counts[:, None], out=np.zeros_like(sums), where=has_chunks[:, None])
    return unit_length(means).astype(np.float32), has_chunks


def top_rows(
    query_vectors: np.ndarray, row_vectors: np.ndarray, k: int, block: int = 256
) -> tuple[np.ndarray, np.ndarray]:
    """Exact top-k rows of ``row_vectors`` per query by inner product: ``(scores, rows)``, each
    ``n_queries x min(k, n_rows)``, sorted by score descending, then row ascending (docs/method.md §17's
    tie rule). Brute force in query blocks: routing units are few (tens of thousands at most), so no
    index is needed."""
    rows = np.asarray(row_vectors, dtype=np.float32)
    k = min(k, rows.shape[0])
    queries = np.asarray(query_vectors, dtype=np.float32)
    scores_out = np.empty((queries.shape[0], k), dtype=np.float32)
    rows_out = np.empty((queries.shape[0], k), dtype=np.int64)
    ordinal = np.arange(rows.shape[0])
    for first in range(0, queries.shape[0], block):
        scores = queries[first : first + block] @ rows.T
        order = np.lexsort((np.broadcast_to(ordinal, scores.shape), -scores), axis=1)[:, :k]
        scores_out[first : first + block] = np.take_along_axis(scores, order, axis=1)
        rows_out[first : first + block] = order
    return scores_out, rows_out


def route_two_stage(
    chunk_vectors: np.ndarray,
    query_vectors: np.ndarray,
    qids: Sequence[str],
    *,
    chunks: pl.DataFrame,
    sections: pl.DataFrame,
    top_sections: int = HIER_TOP_SECTIONS,
) -> pl.DataFrame:
    """Stage 1 of two-stage retrieval: per query, the ``top_sections`` units whose centroid is nearest.

    Units are ranked by inner product of the query with the centroid (:func:`section_centroids`; cosine,
    as both are normalized), then by unit ordinal ascending, so ties cannot make two runs differ.
    Returns the routing table: ``top_sections`` rows per query (fewer if the corpus has fewer units),
    ``source = "centroid"``, ``score`` the cosine."""
    if top_sections < 1:
        raise ValueError(f"top_sections must be >= 1, got {top_sections}")
    units = section_units(sections)
    chunk_unit = chunk_units(chunks, sections, units)
    if chunk_vectors.shape[0] != chunk_unit.size:
        raise ValueError(f"{chunk_vectors.shape[0]} chunk vectors for {chunk_unit.size} chunks")
    if query_vectors.shape[0] != len(qids):
        raise ValueError(f"{query_vectors.shape[0]} query vectors for {len(qids)} queries")
    centroids, has_chunks = section_centroids(chunk_vectors, chunk_unit, units.height)
    routable = np.flatnonzero(has_chunks)
    # positions index ``routable``, which is ascending, so breaking ties by position is by unit ordinal
    scores, positions = top_rows(query_vectors, centroids[routable], top_sections)
    k = positions.shape[1]
    n_queries = len(qids)
    kept = pl.DataFrame(
        {
            "qid": np.repeat(np.asarray(qids, dtype=object), k),
            "route_rank": np.tile(np.arange(1, k + 1, dtype=np.int32), n_queries),
            "unit": routable[positions.reshape(-1)],
            "score": scores.reshape(-1).astype(np.float32),
        },
        schema_overrides={"qid": pl.String, "unit": pl.Int64},
    )
    return routing_table(kept.with_columns(pl.lit("centroid").alias("source")), units, chunk_unit)


def routing_table(kept: pl.DataFrame, units: pl.DataFrame, chunk_unit: np.ndarray) -> pl.DataFrame:
    """The ROUTING table of kept units: ``kept`` holds ``qid, route_rank, unit, score, source`` (and for
    TOC ``toc_entries, reply``); each row gains the unit's doc_id, top_section_id, span and chunk_ids."""
    members = pl.DataFrame(
        {"unit": np.arange(units.height, dtype=np.int64), "chunk_ids": unit_chunk_ids(chunk_unit, units.height)},
        schema={"unit": pl.Int64, "chunk_ids": pl.List(pl.Int64)},
    )
    for column in ("toc_entries", "reply"):
        if column not in kept.columns:
            kept = kept.with_columns(pl.lit(None, dtype=ROUTING[column]).alias(column))
    table = kept.join(units, on="unit", how="left").join(members, on="unit", how="left")
    return table.select([pl.col(c).cast(t) for c, t in ROUTING.items()]).sort("qid", "route_rank")


# ---- TOC routing: the pure parts (the LLM call is structbench.retrieval.toc.route_toc) ----------------------

FIRST_INTEGER = re.compile(r"-?\d+")


def toc_contents(titles: Sequence[str]) -> str:
    """The numbered table of contents the LLM reads: one line ``"<n>. <title>"`` per entry, from 1
    (Li), each title a unit's "Document > Section" path."""
    return "\n".join(f"{number}. {title}" for number, title in enumerate(titles, start=1))


def toc_schema(n_entries: int) -> dict:
    """The JSON schema of a TOC reply, ``{"section": <entry number>}`` with the number in ``1..n_entries``.
    A backend that decodes under it always names an entry; every reply, JSON or not, is read by
    :func:`parse_section_number` (its first integer), so a server that ignores the schema is routed or
    falls back exactly as a bare-number reply would."""
    return {
        "type": "object",
        "properties": {"section": {"type": "integer", "minimum": 1, "maximum": max(1, n_entries)}},
        "required": ["section"],
        "additionalProperties": False,
    }


def parse_section_number(reply: str | None, n_entries: int) -> int | None:
    """The entry number (1-based) a reply names, or None when it names none in range.

    The first integer in the reply counts (Li's parser): ``{"section": 3}`` (the JSON of
    :func:`toc_schema`), "3", "Section 3" and "3. Methods" all name 3. A reply without an integer (or
    None: the request failed), or whose first integer lies outside ``1..n_entries`` ("0", "-2", "12" of
    10), names none."""
    found = FIRST_INTEGER.search(reply or "")
    if found is None:
        return None
    number = int(found.group())
    return number if 1 <= number <= n_entries else None


def nearest_title(query_vector: np.ndarray, title_vectors: np.ndarray) -> int:
    """The index of the title vector with the highest cosine to ``query_vector``; ties go to the lowest
    index. A zero vector has cosine 0."""
    query = np.asarray(query_vector, dtype=np.float64)
    titles = np.asarray(title_vectors, dtype=np.float64)
    norms = np.linalg.norm(titles, axis=1) * max(np.linalg.norm(query), 1e-300)
    cosines = np.divide(titles @ query, norms, out=np.zeros(len(titles)), where=norms > 0)
    return int(np.argmax(cosines))  # argmax returns the first maximum


def choose_entry(reply: str | None, query_vector: np.ndarray, entry_title_vectors: np.ndarray) -> tuple[int, str]:
    """The routed entry (0-based, into the contents) and where the choice came from.

    ``"llm"``: the reply names an entry in range (:func:`parse_section_number`). ``"fallback"``: it does
    not, and the entry whose title embedding is nearest the query is routed instead (Li: "fall
    back to embedding the section titles"). The fallback keeps one entry, as an answered reply does, so
    the hit rate of both kinds of query measures the same thing."""
    if len(entry_title_vectors) == 0:
        raise ValueError("no contents entry to route to")
    number = parse_section_number(reply, len(entry_title_vectors))
    if number is not None:
        return number - 1, "llm"
    return nearest_title(query_vector, entry_title_vectors), "fallback"


def candidate_documents(flat_runs: pl.DataFrame, chunks: pl.DataFrame) -> dict[str, list[str]]:
    """Per query, the documents of its flat hits in the order of their first (best) hit."""
    hits = flat_runs.select("qid", "rank", "chunk_id").join(
        chunks.select("chunk_id", "doc_id"), on="chunk_id", how="left"
    )
    if hits["doc_id"].null_count():
        raise ValueError("a run names a chunk_id the chunks table lacks")
    grouped = (
        hits.sort("qid", "rank").group_by("qid", maintain_order=True).agg(pl.col("doc_id").unique(maintain_order=True))
    )
    return dict(zip(grouped["qid"].to_list(), grouped["doc_id"].to_list()))


def contents_units(doc_ids: Sequence[str], units: pl.DataFrame) -> list[int]:
    """The units listed in the contents of ``doc_ids``: documents in the given order, each document's
    units in reading order."""
    by_doc: dict[str, list[int]] = {}
    for unit, doc_id in zip(units["unit"].to_list(), units["doc_id"].to_list()):
        by_doc.setdefault(doc_id, []).append(unit)
    return [unit for doc_id in doc_ids for unit in by_doc.get(doc_id, [])]
