"""A flat run turned into a read-time run of units (docs/method.md §18): the tables around
:mod:`structbench.retrieval.readtime`'s pure expansions.

:func:`readtime_run` takes the condition's flat run, chunk set, sections and documents and returns
the runs table (ranking unit ids) and the units table :func:`structbench.metrics.units.score_units`
scores; :func:`document_trees` builds each document's level partition, real or placebo.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import polars as pl

from structbench.conditions import parse_value
from structbench.datamodel import conform, document_texts
from structbench.retrieval import readtime as rt
from structbench.tokens import TokenCounter

# read-time retrieval kind (the kinds structbench.conditions flags ``readtime``) -> (expansion, over the placebo tree?)
MODES = {
    "parent": ("parent", False),
    "automerge": ("automerge", False),
    "window": ("window", False),
    "matched_window": ("matched_window", False),
    "placebo_parent": ("parent", True),
    "placebo_automerge": ("automerge", True),
}
LEVEL_KINDS = ("parent", "placebo_parent", "matched_window")  # the kinds whose parameter is a section level
UNITS = {"chunk_id": pl.Int64, "doc_id": pl.String, "start": pl.Int64, "end": pl.Int64, "n_tokens": pl.Int32}


def shallower_documents(value: str, sections: pl.DataFrame, documents: pl.DataFrame) -> tuple[int, int]:
    """``(shallower, documents)``: how many documents have no section as deep as the level a retrieval
    ``value`` names (``parent:4`` on a document whose deepest section is level 2), of how many; ``(0, n)``
    for a kind without a level. Their level-L blocks are their deepest level's (the level partition repeats
    its last cuts), so the read-time step reports the count rather than run ``parent:4`` as ``parent:2``
    unnoticed; where config bounds the depth, ``structbench.retrieval.checks.check_readtime_config`` refuses it."""
    kind, parameter = parse_value("retrieval", value)
    n_documents = documents.height
    if kind.name not in LEVEL_KINDS:
        return 0, n_documents
    deep = sections.filter(pl.col("level") >= int(parameter))["doc_id"].unique()
    return n_documents - documents.filter(pl.col("doc_id").is_in(deep.implode()))["doc_id"].n_unique(), n_documents


def document_trees(
    sections: pl.DataFrame, documents: pl.DataFrame, placebo: bool = False, seed: int = 0
) -> tuple[dict[str, tuple[rt.Cuts, int]], pl.DataFrame]:
    """Each document's level partition (``placebo``: its placebo tree, :func:`readtime.placebo_cuts`),
    and per document how many placebo blocks still equal a real one (0 rows for the real tree)."""
    n_chars = dict(zip(documents["doc_id"].to_list(), documents["n_chars"].to_list()))
    trees, equal = {}, []
    grouped = sections.sort("doc_id", "section_id").group_by("doc_id", maintain_order=True)
    for (doc_id,), frame in grouped:
        if doc_id not in n_chars:
            continue
        cuts = rt.section_cuts(frame["start"].to_list(), frame["level"].to_list(), n_chars[doc_id])
        if placebo:
            cuts, same = rt.placebo_cuts(cuts, n_chars[doc_id], doc_id, seed)
            equal.append((doc_id, same))
        trees[doc_id] = (cuts, n_chars[doc_id])
    for doc_id, n in n_chars.items():  # a document without sections is one block
        trees.setdefault(doc_id, (rt.section_cuts([], [], n), n))
    return trees, pl.DataFrame(equal, schema={"doc_id": pl.String, "equal_blocks": pl.Int64}, orient="row")


def readtime_run(
    value: str,
    runs: pl.DataFrame,
    chunks: pl.DataFrame,
    sections: pl.DataFrame,
    documents: pl.DataFrame,
    counter: TokenCounter,
    *,
    hits: int,
    seed: int,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The read-time run of retrieval ``value`` over the flat ``runs``' top ``hits`` per query:
    ``(runs, units)``. Units equal to a chunk keep its id and token count; any other span gets an id
    above the chunk set's (in (doc_id, start, end) order) and its content tokens counted by
    ``counter``. A unit's score is the best flat score of the hits it holds."""
    kind, parameter = parse_value("retrieval", value)
    mode, placebo = MODES[kind.name]
    top = runs.filter(pl.col("rank") <= hits).sort("qid", "rank")
    chunk_table = chunks.select("chunk_id", "doc_id", "start", "end", "n_tokens").sort("chunk_id")
    located = top.join(chunk_table, on="chunk_id", how="left").sort("qid", "rank")  # a join keeps no order
    texts = document_texts(documents)
    n_chars = dict(zip(documents["doc_id"].to_list(), documents["n_chars"].to_list()))
    trees = (
        document_trees(sections, documents, placebo, seed)[0]
        if mode in ("parent", "automerge", "matched_window")
        else {}
    )
    matched = mode == "matched_window" or mode == "parent" and placebo
    real_trees = document_trees(sections, documents)[0] if placebo and mode == "parent" else trees
    needs_tokens = mode == "window" or matched
    used_docs = sorted(set(located["doc_id"].to_list()))
    token_starts = dict(zip(used_docs, counter.starts_batch([texts[d] for d in used_docs]))) if needs_tokens else {}
    count = unit_token_counter(chunk_table, texts, counter)
    doc_chunks, chunk_index = {}, {}
    if mode == "automerge":
        for (doc_id,), frame in chunk_table.sort("doc_id", "start", "chunk_id").group_by("doc_id", maintain_order=True):
            doc_chunks[doc_id] = list(zip(frame["start"].to_list(), frame["end"].to_list()))
            chunk_index.update({cid: i for i, cid in enumerate(frame["chunk_id"].to_list())})
    rows = []
    for (qid,), frame in located.group_by("qid", maintain_order=True):
        hit_spans = list(zip(frame["doc_id"].to_list(), frame["start"].to_list(), frame["end"].to_list()))
        if matched:  # the parent list's tokens, as the units table counts them, bound the control's
            target = count(rt.expand_parent(hit_spans, real_trees, int(parameter)))
        if mode == "parent" and placebo:
            spans = rt.expand_matched_placebo(hit_spans, trees, int(parameter), token_starts, target, count)
        elif mode == "parent":
            spans = rt.expand_parent(hit_spans, trees, int(parameter))
        elif mode == "automerge":
            ids = frame["chunk_id"].to_list()
            spans = rt.expand_automerge(
                [(d, chunk_index[c]) for (d, _, _), c in zip(hit_spans, ids)], doc_chunks, trees, float(parameter)
            )
        elif mode == "window":
            spans = rt.expand_window(hit_spans, token_starts, n_chars, int(parameter))
        else:
            spans = rt.expand_matched_window(hit_spans, token_starts, n_chars, target, count)
        scores = frame["score"].to_list()
        for rank, (doc, start, end) in enumerate(spans, start=1):
            best = max(s for (d, hs, he), s in zip(hit_spans, scores) if d == doc and hs < end and start < he)
            rows.append((qid, rank, doc, start, end, best))
    ranked = pl.DataFrame(
        rows,
        schema={
            "qid": pl.String,
            "rank": pl.Int32,
            "doc_id": pl.String,
            "start": pl.Int64,
            "end": pl.Int64,
            "score": pl.Float32,
        },
        orient="row",
    )
    units = _units(ranked, chunk_table, texts, counter)
    ranked = ranked.join(units.select("chunk_id", "doc_id", "start", "end"), on=["doc_id", "start", "end"], how="left")
    ranked = ranked.sort("qid", "rank").with_columns(pl.lit(kind.name).alias("stage"))
    return conform(ranked, "runs"), units


def unit_token_counter(
    chunk_table: pl.DataFrame, texts: dict[str, str], counter: TokenCounter
) -> Callable[[Sequence[rt.Span]], int]:
    """The tokens of a ranked list of spans exactly as the units table records them: a span equal to a
    chunk costs the chunk's ``n_tokens``, any other span ``counter.count`` of its text (cached per span).
    The length-matched controls are sized with it, so their units never hold more tokens than the
    parent's (counting token starts inside a span undercounts a span cut inside a word)."""
    known = {
        (doc, start, end): int(n)
        for doc, start, end, n in chunk_table.select("doc_id", "start", "end", "n_tokens").iter_rows()
    }

    def tokens(spans: Sequence[rt.Span]) -> int:
        for span in spans:
            if span not in known:
                doc, start, end = span
                known[span] = counter.count(texts[doc][start:end])
        return sum(known[span] for span in spans)

    return tokens


def _units(
    ranked: pl.DataFrame, chunk_table: pl.DataFrame, texts: dict[str, str], counter: TokenCounter
) -> pl.DataFrame:
    """The chunk set plus every returned span that is no chunk, with new ids and counted tokens."""
    spans = (
        ranked.select("doc_id", "start", "end")
        .unique()
        .join(chunk_table, on=["doc_id", "start", "end"], how="anti")
        .sort("doc_id", "start", "end")
    )
    first = int(chunk_table["chunk_id"].max()) + 1 if chunk_table.height else 0
    counts = counter.count_batch([texts[d][s:e] for d, s, e in spans.iter_rows()])
    new = spans.with_columns(
        pl.int_range(first, first + spans.height, dtype=pl.Int64).alias("chunk_id"),
        pl.Series("n_tokens", counts, dtype=pl.Int32),
    )
    cast = [pl.col(c).cast(t) for c, t in UNITS.items()]
    return pl.concat([chunk_table.select(cast), new.select(cast)])
