"""A hand-made cell for the decisive questions and ``structbench show``: two documents of twelve 10-character chunks,
eight questions whose evidence chunk each ranking places at a chosen rank, and per-query scores with tied deltas.

The ranks are chosen so the flips over the seven paired questions are known by hand (the first evidence chunk's
rank under the treatment, then the control; cut-off 10):

    q1  1, 12    enters        q5  10, 11   enters
    q2  11, 3    leaves        q6  none, 10 leaves (its evidence chunk is not in the treatment's 20 rows)
    q3  2, 5     stays in      q7  3, 3     stays in
    q4  15, 20   stays out     q8  scored NaN under the treatment: not paired, not counted

Deltas on cov_nDCG@10 (treatment − control): q1 +0.5 and q3 +0.5 tie, q5 +0.25; q2 −0.25 and q6 −0.25 tie; q4 and
q7 are 0. q7's evidence spans the last 4 characters of chunk 5 and all of chunk 6: chunk 5 is partial evidence (4 of
its 10 characters; 4 of the 14 evidence characters, below both thresholds of the binary rule), chunk 6 is relevant.
"""

from __future__ import annotations

import polars as pl

from structbench.report.decisive import ConditionRun, decisive_questions

CHUNK_CHARS = 10
PER_DOC = 12
DOCS = ("d1", "d2")
DEPTH = 20  # rows of every ranking
TREATMENT, CONTROL = "G3", "G2"  # a heading path against none, on one chunk set (as the default config names them)
PATHS = {
    i: ["Doc " + doc, f"Section {i % PER_DOC // 4}"] for i, doc in enumerate(d for d in DOCS for _ in range(PER_DOC))
}


def chunk_text(chunk_id: int) -> str:
    """Chunk ``chunk_id``'s 10 characters, e.g. ``d1c03 abc.``: its document and ordinal, readable on a page."""
    return f"{DOCS[chunk_id // PER_DOC]}c{chunk_id % PER_DOC:02d} abc."


def documents() -> pl.DataFrame:
    texts = ["".join(chunk_text(d * PER_DOC + i) for i in range(PER_DOC)) for d in range(len(DOCS))]
    return pl.DataFrame(
        {
            "corpus": "kb",
            "doc_id": list(DOCS),
            "title": [f"Doc {doc}" for doc in DOCS],
            "text": texts,
            "n_chars": [len(text) for text in texts],
            "meta": "{}",
        }
    )


def chunks() -> pl.DataFrame:
    ids = list(range(len(DOCS) * PER_DOC))
    return pl.DataFrame(
        {
            "chunk_id": ids,
            "doc_id": [DOCS[c // PER_DOC] for c in ids],
            "start": [c % PER_DOC * CHUNK_CHARS for c in ids],
            "end": [(c % PER_DOC + 1) * CHUNK_CHARS for c in ids],
            "n_tokens": [3] * len(ids),
            "section_id": [c % PER_DOC // 4 for c in ids],
            "path": [PATHS[c] for c in ids],
            "cut": ["paragraph"] * len(ids),
        },
        schema_overrides={"chunk_id": pl.Int64, "n_tokens": pl.Int32, "section_id": pl.Int32},
    )


def texts(prefixed: bool) -> pl.DataFrame:
    """The chunk set's texts: with the heading path prefixed (the treatment) or none (the control)."""
    ids = list(range(len(DOCS) * PER_DOC))
    prefixes = ["[" + " > ".join(PATHS[c]) + "]\n\n" if prefixed else "" for c in ids]
    return pl.DataFrame(
        {
            "chunk_id": ids,
            "prefix": prefixes,
            "text_for_embedding": [p + chunk_text(c) for p, c in zip(prefixes, ids)],
            "prefix_tokens": [6 if prefixed else 0] * len(ids),
        },
        schema_overrides={"chunk_id": pl.Int64, "prefix_tokens": pl.Int32},
    )


# qid -> (document, evidence chunk, its rank under the treatment, under the control; None: not in the ranking)
EVIDENCE = {
    "q1": ("d1", 2, 1, 12),
    "q2": ("d1", 4, 11, 3),
    "q3": ("d1", 7, 2, 5),
    "q4": ("d2", 13, 15, 20),
    "q5": ("d2", 16, 10, 11),
    "q6": ("d2", 20, None, 10),
    "q7": ("d1", 6, 3, 3),
    "q8": ("d1", 0, 1, 1),
}
QTYPES = {"q1": "factoid", "q2": "structural", "q3": "factoid", "q4": "multihop"}
FLIPS = {"enters": 2, "leaves": 2, "stays_in": 2, "stays_out": 1}
SCORES = {  # qid -> (treatment, control), binary fractions: the tied deltas are equal floats
    "q1": (0.75, 0.25),
    "q2": (0.25, 0.5),
    "q3": (0.875, 0.375),
    "q4": (0.5, 0.5),
    "q5": (0.625, 0.375),
    "q6": (0.125, 0.375),
    "q7": (0.5, 0.5),
    "q8": (float("nan"), 0.75),
}


def spans(qid: str) -> list[list[int]]:
    doc, chunk, _, _ = EVIDENCE[qid]
    start = chunk % PER_DOC * CHUNK_CHARS
    if qid == "q7":  # the last 4 characters of chunk 5 and all of chunk 6
        return [[start - 4, start + CHUNK_CHARS]]
    return [[start + 1, start + CHUNK_CHARS - 1]]


def queries() -> pl.DataFrame:
    qids = list(EVIDENCE)
    return pl.DataFrame(
        {
            "qid": qids,
            "corpus": "kb",
            "doc_id": [EVIDENCE[q][0] for q in qids],
            "text": [f"Where is <b>{q}</b>'s evidence?" for q in qids],  # markup: shown escaped
            "qtype": [QTYPES.get(q, "factoid") for q in qids],
            "spans": [spans(q) for q in qids],
            "meta": "{}",
        }
    )


def ranking(qid: str, arm: int) -> list[int]:
    """One question's ranking under one arm (0: treatment, 1: control): its evidence chunk at the chosen rank, the
    other chunks in chunk_id order around it, DEPTH rows (q7: its partial chunk 5 at rank 1 under both)."""
    doc, evidence, *ranks = EVIDENCE[qid]
    placed = {} if ranks[arm] is None else {ranks[arm]: evidence}
    if qid == "q7":
        placed[1] = 5
    rest = iter(c for c in range(len(DOCS) * PER_DOC) if c != evidence and c not in placed.values())
    return [placed[rank] if rank in placed else next(rest) for rank in range(1, DEPTH + 1)]


def runs(arm: int) -> pl.DataFrame:
    rows = [
        {"qid": qid, "rank": rank, "chunk_id": chunk, "score": 1.0 - rank / 100, "stage": "flat"}
        for qid in EVIDENCE
        for rank, chunk in enumerate(ranking(qid, arm), start=1)
    ]
    schema = {"qid": pl.String, "rank": pl.Int32, "chunk_id": pl.Int64, "score": pl.Float32, "stage": pl.String}
    return pl.DataFrame(rows, schema=schema)


def condition_runs() -> dict[str, ConditionRun]:
    return {
        TREATMENT: ConditionRun(runs(0), chunks(), texts(prefixed=True)),
        CONTROL: ConditionRun(runs(1), chunks(), texts(prefixed=False)),
    }


def scores() -> pl.DataFrame:
    rows = [
        {
            "corpus": "kb",
            "condition": condition,
            "embedder": "minilm",
            "reranker": "none",
            "qid": qid,
            "doc_id": EVIDENCE[qid][0],
            "qtype": QTYPES.get(qid, "factoid"),
            "cov_nDCG@10": values[arm],
        }
        for arm, condition in enumerate((TREATMENT, CONTROL))
        for qid, values in SCORES.items()
    ]
    return pl.DataFrame(rows)


CONTRAST = {"name": "G3-G2", "treatment": TREATMENT, "control": CONTROL, "family": "secondary"}


def decisive_tables(per_side: int = 2, top_k: int = 3) -> dict[str, pl.DataFrame]:
    """The report inputs ``decisive`` and ``decisive_flips`` of this cell (kb · minilm · none), as the per-cell step
    writes them."""
    runs = condition_runs()
    result = decisive_questions(
        scores(), [CONTRAST], runs.__getitem__, queries(), documents(), "cov_nDCG@10", per_side=per_side, top_k=top_k
    )
    cell = [pl.lit(value).alias(key) for key, value in (("corpus", "kb"), ("embedder", "minilm"), ("reranker", "none"))]
    return {"decisive": result.questions.with_columns(cell), "decisive_flips": result.flips.with_columns(cell)}
