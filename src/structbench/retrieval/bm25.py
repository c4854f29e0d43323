"""BM25 over the same chunks (docs/method.md §8): the non-lexicality probe, and the lexical run of hybrid search.

"BM25 gold-top-1" is the share of queries for which BM25 puts a binary-relevant chunk at rank 1
(Kuehlkamp et al., appendix I): how far plain keyword overlap solves the benchmark. The probe's index is built on
each chunk's content alone (the texts of prefix ``none``). A ``retrieval: bm25`` condition with a prefix (B3,
``path:3``) ranks its own texts table instead: the prefix and content exactly as the embedder reads them, under the
same analyzer, parameters and tie rule (:func:`bm25_run`), so B3 − B2 is the heading path's effect on BM25.

**Scoring** is Okapi BM25 with k1 = 1.5, b = 0.75 (rank-bm25's defaults, the library docs/method.md §8
names), for a query q and a chunk d of length |d| (in analyzed tokens) in a set of N chunks::

    score(q, d) = sum over terms t of q:  idf(t) * tf(t, d) / (tf(t, d) + k1 * (1 - b + b * |d| / avgdl))
    idf(t) = ln((N - n(t) + 0.5) / (n(t) + 0.5)),  clamped at 0

(Robertson's idf, as bm25s's ``robertson`` method computes it; a query term counts once per
occurrence in the query.) rank-bm25's ``BM25Okapi`` multiplies every term by the constant (k1 + 1),
which changes no ranking, and floors a negative idf — a term in more than half the chunks — at
0.25 x the mean idf instead of 0: the two rank identically unless a query term occurs in over half
the chunks (``benchmarks/bench_bm25.py`` measures how often that changes a ranking at full QASPER
scale, and the speed: bm25s is the faster, so it computes the study's runs). Rankings break score
ties by ``chunk_id`` ascending, like every ranking of the study.

**Analyzers** (config ``retrieval.bm25_analyzer``) turn a text into index terms:

- ``words``: lower-cased ``\\w+`` word tokens, nothing removed.
- ``english``: what Lucene's ``EnglishAnalyzer`` does — word tokens that keep in-word apostrophes and
  periods and decimal numbers whole (``don't``, ``e.g``, ``3.5``; an approximation of Lucene's
  Unicode word-break ``StandardTokenizer``), lower-cased, a trailing possessive ``'s`` removed, Lucene's
  33 English stopwords dropped, then the Porter stemmer (PyStemmer's ``porter``, the original 1980
  algorithm Lucene's ``PorterStemFilter`` implements).

The default is ``english``, the analyzer a Lucene-based BM25 baseline would use; the analyzer is not what keeps the
probe below Kuehlkamp et al.'s on QASPER (measured: docs/benchmarks.md, "BM25 analyzers on QASPER").
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Callable, Sequence

import numpy as np
import polars as pl

from structbench.defaults import BM25_ANALYZER, TOP_K
from structbench.logs import Progress
from structbench.retrieval.search import runs_from_arrays, top_k_by_score

log = logging.getLogger(__name__)

K1, B = 1.5, 0.75  # rank-bm25's BM25Okapi defaults

WORD = re.compile(r"\w+", re.UNICODE)
# Lucene's StandardTokenizer keeps "don't", "e.g" and "3.5" whole (Unicode word-break rules MidLetter and
# MidNum); splitting them would index "t" and "5" as terms.
ENGLISH_WORD = re.compile(r"\d+(?:[.,]\d+)+|\w+(?:['’.]\w+)*", re.UNICODE)
POSSESSIVE = re.compile(r"['’]s$")
# Lucene's EnglishAnalyzer.ENGLISH_STOP_WORDS_SET, verbatim.
ENGLISH_STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "for",
        "if",
        "in",
        "into",
        "is",
        "it",
        "no",
        "not",
        "of",
        "on",
        "or",
        "such",
        "that",
        "the",
        "their",
        "then",
        "there",
        "these",
        "they",
        "this",
        "to",
        "was",
        "will",
        "with",
    ]
)


def word_tokens(text: str) -> list[str]:
    """The ``words`` analyzer: lower-cased word tokens, nothing removed."""
    return WORD.findall(text.lower())


@functools.cache
def _porter():
    import Stemmer

    return Stemmer.Stemmer("porter")


def english_tokens(text: str) -> list[str]:
    """The ``english`` analyzer (Lucene's EnglishAnalyzer): tokens, possessives off, stopwords out, Porter stems."""
    words = (POSSESSIVE.sub("", token) for token in ENGLISH_WORD.findall(text.lower()))
    return _porter().stemWords([word for word in words if word and word not in ENGLISH_STOPWORDS])


ANALYZERS: dict[str, Callable[[str], list[str]]] = {"words": word_tokens, "english": english_tokens}


def analyzer(name: str) -> Callable[[str], list[str]]:
    if name not in ANALYZERS:
        raise ValueError(f"unknown BM25 analyzer {name!r}; analyzers are {sorted(ANALYZERS)}")
    return ANALYZERS[name]


class BM25Index:
    """Okapi BM25 (module docstring) over a list of chunk texts; row i is ``chunk_id`` i."""

    def __init__(self, chunk_texts: Sequence[str], analyzer_name: str = BM25_ANALYZER):
        import bm25s

        self.analyze = analyzer(analyzer_name)
        self.n_chunks = len(chunk_texts)
        # float64 scores: float32 would merge near-equal scores into ties that rank-bm25 keeps apart.
        self.index = bm25s.BM25(k1=K1, b=B, method="robertson", dtype="float64")
        if self.n_chunks:
            self.index.index([self.analyze(text) for text in chunk_texts], show_progress=False)

    def scores(self, query_text: str) -> np.ndarray:
        """BM25 score of every chunk for one query (0 for a query without a known term)."""
        terms = self.index.get_tokens_ids(self.analyze(query_text)) if self.n_chunks else []
        if not terms:
            return np.zeros(self.n_chunks, dtype=np.float64)
        return np.asarray(self.index.get_scores_from_ids(terms), dtype=np.float64)


def bm25_search(
    chunk_texts: list[str],
    query_texts: list[str],
    qids: list[str],
    top_k: int = TOP_K,
    analyzer_name: str = BM25_ANALYZER,
) -> pl.DataFrame:
    """Top-k chunks per query by Okapi BM25 under the named analyzer; row i of ``chunk_texts`` is ``chunk_id`` i."""
    index = BM25Index(chunk_texts, analyzer_name)
    k = min(top_k, len(chunk_texts))
    scores = np.zeros((len(query_texts), k), dtype=np.float64)
    ids = np.full((len(query_texts), k), -1, dtype=np.int64)
    progress = Progress(log, "ranked", total=len(query_texts), unit="queries")
    for row, query in enumerate(query_texts):
        scores[row], ids[row] = top_k_by_score(index.scores(query), k)
        progress.update()
    progress.finish()
    return runs_from_arrays(qids, scores, ids, stage="bm25")


def bm25_run(
    texts: pl.DataFrame, queries: pl.DataFrame, top_k: int = TOP_K, analyzer_name: str = "english"
) -> pl.DataFrame:
    """The BM25 run of one texts table (a chunk set under one prefix; its ``text_for_embedding``, what the embedder
    reads) for a queries table (``qid``, ``text``): :func:`bm25_search` over the texts in ``chunk_id`` order.

    A chunk set's ids are its 0-based ordinals (:mod:`structbench.datamodel`) and the index's row i is ``chunk_id``
    i, so a table whose ids are not ``0..n-1`` is refused (a ``ValueError``) rather than ranked under wrong ids."""
    ordered = texts.sort("chunk_id")
    ids = ordered["chunk_id"].to_list()
    if ids != list(range(len(ids))):
        raise ValueError(
            f"texts table: chunk_id must take each of 0..{len(ids) - 1} once (a chunk set's ordinals), not "
            f"{len(set(ids))} distinct ids from {ids[0]} to {ids[-1]}"
        )
    return bm25_search(
        ordered["text_for_embedding"].to_list(),
        queries["text"].to_list(),
        queries["qid"].to_list(),
        top_k=top_k,
        analyzer_name=analyzer_name,
    )
