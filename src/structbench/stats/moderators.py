"""The moderators of the subgroup analysis (docs/method.md §11, "Subgroups (moderators)"): each question's level,
computed from the corpus step's tables, never from hand labels.

A moderator splits a contrast's questions into two tested sides, A and B (the interaction is Δ_A − Δ_B), and a
finer ``level`` each question is reported under (only the question type has more levels than sides). A labelling is
a table ``qid, level, group`` (:data:`LABELS`; ``group`` is ``"A"`` or ``"B"``); a question the moderator cannot
label has no row and is left out of that moderator alone:

- ``tree_depth``: the document's gold heading tree, its deepest heading ``level`` among the sections opened by a
  heading (the untitled lead section is none: :func:`structbench.corpus.build.document_depth` counts the same
  sections). A = depth ≥ 2, B = depth 1; a document without a heading is left out.
- ``anchoring``: the question shares at least one analyzer token with the heading path (``path[:3]``, the
  document title and the first two headings, as the ``path:3`` prefix renders it) of a gold section holding a
  character of its evidence. The analyzer is injected (the workflow passes the BM25 analyzer,
  :func:`structbench.retrieval.bm25.analyzer`), so this layer imports no retrieval code. A = anchored, B = not;
  a question whose evidence no section holds is left out.
- ``qtype``: A = the corpus kind's reference type (:data:`QTYPE_REFERENCE`: QASPER's ``extractive``, every
  other kind's ``factoid``), B = every other type; each type is a level.
- ``evidence_spans``: the spans of the question's relevance judgement after the corpus step's mapping. A = one
  span, B = two or more; a question without a span is left out.

The interaction of ``tree_depth`` is written depth ≥ 2 − depth 1, the sign the pre-registered reading of depth
takes (docs/results.md: "the interaction (depth ≥ 2 minus depth 1)"); the others are written as their table
lists them, A first.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import polars as pl

MODERATORS = ("tree_depth", "anchoring", "qtype", "evidence_spans")
LABELS = {"qid": pl.String, "level": pl.String, "group": pl.String}
ANCHOR_DEPTH = 3  # the heading path of the pre-registered G3: path:3, the document title included
# The question type a corpus kind's qtype moderator tests against the rest: QASPER's answer types are extractive,
# abstractive and yes/no (the pre-registered split); the Markdown, Chroma and generated questions are factoid,
# underspecified, multihop or structural (structbench.datamodel.QUERY_TYPES).
QTYPE_REFERENCE = {"qasper": "extractive"}
DEFAULT_QTYPE_REFERENCE = "factoid"


@dataclass(frozen=True)
class Moderator:
    """A moderator's name and its two tested sides' labels (``a`` minus ``b`` is its interaction)."""

    name: str
    a: str
    b: str

    @property
    def interaction(self) -> str:
        return f"{self.a} − {self.b}"


@dataclass(frozen=True)
class Labelling:
    """A moderator and its questions' labels (:data:`LABELS`)."""

    moderator: Moderator
    labels: pl.DataFrame


def qtype_reference(corpus_kind: str) -> str:
    """The question type a corpus kind's ``qtype`` moderator tests against every other (:data:`QTYPE_REFERENCE`)."""
    return QTYPE_REFERENCE.get(corpus_kind, DEFAULT_QTYPE_REFERENCE)


def moderator(name: str, reference: str = DEFAULT_QTYPE_REFERENCE) -> Moderator:
    """The named moderator's sides (``reference``: the qtype moderator's A side)."""
    sides = {
        "tree_depth": ("depth ≥ 2", "depth 1"),
        "anchoring": ("anchored", "not anchored"),
        "qtype": (reference, "other types"),
        "evidence_spans": ("1 span", "≥ 2 spans"),
    }
    if name not in sides:
        raise ValueError(f"unknown moderator {name!r}; moderators are {list(MODERATORS)}")
    return Moderator(name, *sides[name])


def _labels(qids: Iterable[str], levels: Iterable[str], in_a: Iterable[bool]) -> pl.DataFrame:
    rows = {"qid": list(qids), "level": list(levels), "group": ["A" if a else "B" for a in in_a]}
    return pl.DataFrame(rows, schema=LABELS)


def headed_sections(sections: pl.DataFrame) -> pl.DataFrame:
    """The sections opened by a heading: all but a document's lead section (its first, level 1, untitled)."""
    lead = (pl.col("section_id") == 0) & (pl.col("level") == 1) & (pl.col("title") == "")
    return sections.filter(~lead)


def document_depths(sections: pl.DataFrame) -> pl.DataFrame:
    """``doc_id, depth``: the deepest heading level among each document's headed sections (a document without
    one has no row). Levels are stored clamped to 1..4, which no binary split at 2 notices."""
    return headed_sections(sections).group_by("doc_id").agg(pl.col("level").max().cast(pl.Int64).alias("depth"))


def tree_depth_labels(queries: pl.DataFrame, sections: pl.DataFrame) -> pl.DataFrame:
    """Each question under its document's heading-tree depth: A = depth ≥ 2, B = depth 1."""
    depth = moderator("tree_depth")
    joined = queries.select("qid", "doc_id").join(document_depths(sections), on="doc_id", how="inner").sort("qid")
    deep = [value >= 2 for value in joined["depth"].to_list()]
    return _labels(joined["qid"], [depth.a if d else depth.b for d in deep], deep)


def evidence_sections(queries: pl.DataFrame, sections: pl.DataFrame) -> pl.DataFrame:
    """``qid, path``: each gold section holding a character of a question's evidence (``[start, end)`` spans
    and sections overlap in at least one character; an empty section holds none), once per (question,
    section)."""
    spans = (
        queries.select("qid", "doc_id", "spans")
        .explode("spans")
        .filter(pl.col("spans").is_not_null())
        .select("qid", "doc_id", pl.col("spans").list.get(0).alias("s"), pl.col("spans").list.get(1).alias("e"))
    )
    nonempty = sections.filter(pl.col("start") < pl.col("end")).select("doc_id", "section_id", "start", "end", "path")
    return (
        spans.join(nonempty, on="doc_id", how="inner")
        .filter((pl.col("start") < pl.col("e")) & (pl.col("s") < pl.col("end")))
        .unique(["qid", "section_id"])
        .sort("qid", "section_id")
        .select("qid", "path")
    )


def anchoring_labels(
    queries: pl.DataFrame,
    sections: pl.DataFrame,
    tokenize: Callable[[str], Sequence[str]],
    depth: int = ANCHOR_DEPTH,
) -> pl.DataFrame:
    """Each question anchored (A) when it shares at least one ``tokenize`` token with the titles of ``path[:depth]``
    of any gold section holding its evidence (:func:`evidence_sections`), else not (B).

    Each title is analyzed on its own: the rendered prefix ``[Title > Section > Sub]`` has the same tokens under
    any separator without word characters, and no token runs across two titles."""
    anchor = moderator("anchoring")
    held = evidence_sections(queries, sections)
    path_tokens: dict[str, set[str]] = {}
    for qid, path in zip(held["qid"].to_list(), held["path"].to_list()):
        tokens = path_tokens.setdefault(qid, set())
        for title in path[:depth]:
            tokens.update(tokenize(title))
    text = dict(zip(queries["qid"].to_list(), queries["text"].to_list()))
    qids = sorted(path_tokens)
    anchored = [not path_tokens[qid].isdisjoint(tokenize(text[qid])) for qid in qids]
    return _labels(qids, [anchor.a if a else anchor.b for a in anchored], anchored)


def qtype_labels(queries: pl.DataFrame, reference: str) -> pl.DataFrame:
    """Each question under its type: A = ``reference``, B = every other type (a question without a type is left
    out)."""
    typed = queries.filter(pl.col("qtype").is_not_null() & (pl.col("qtype") != "")).sort("qid")
    types = typed["qtype"].to_list()
    return _labels(typed["qid"], types, [t == reference for t in types])


def evidence_span_labels(queries: pl.DataFrame) -> pl.DataFrame:
    """Each question under its number of evidence spans: A = one, B = two or more (none: left out)."""
    spans = moderator("evidence_spans")
    counted = (
        queries.select("qid", pl.col("spans").list.len().fill_null(0).alias("n")).filter(pl.col("n") > 0).sort("qid")
    )
    single = [n == 1 for n in counted["n"].to_list()]
    return _labels(counted["qid"], [spans.a if s else spans.b for s in single], single)


def moderator_labels(
    names: Sequence[str],
    queries: pl.DataFrame,
    sections: pl.DataFrame,
    *,
    tokenize: Callable[[str], Sequence[str]],
    reference: str = DEFAULT_QTYPE_REFERENCE,
) -> list[Labelling]:
    """Each named moderator (in order) with its labels over a corpus's ``queries`` (QUERIES) and its gold
    ``sections`` (SECTIONS); ``tokenize`` is the anchoring analyzer, ``reference`` the qtype moderator's side A
    (:func:`qtype_reference`)."""
    build: Mapping[str, Callable[[], pl.DataFrame]] = {
        "tree_depth": lambda: tree_depth_labels(queries, sections),
        "anchoring": lambda: anchoring_labels(queries, sections, tokenize),
        "qtype": lambda: qtype_labels(queries, reference),
        "evidence_spans": lambda: evidence_span_labels(queries),
    }
    unknown = [name for name in names if name not in build]
    if unknown:
        raise ValueError(f"unknown moderators {unknown}; moderators are {list(MODERATORS)}")
    return [Labelling(moderator(name, reference), build[name]()) for name in names]
