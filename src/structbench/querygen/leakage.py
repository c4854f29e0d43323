"""The leakage filter of generated queries (Kuehlkamp et al., appendix F; docs/method.md §9).

A query is screened against the texts of its gold spans (:func:`screen_question`); the first check that
fails names the rejection, in this order:

1. ``too_short`` / ``too_long``: fewer than ``min_query_words`` or more than ``max_query_words`` words
   (whitespace separated; an empty answer is ``too_short``). A model that answers with a fragment or
   with the passage itself is caught here.
2. ``not_a_question`` (when ``require_question``): no question mark. Every prompt asks for a question; a
   small model often answers the question it was asked to paraphrase, or states a fact, instead.
3. ``names_referent`` (``underspecified`` only): the query contains the document's title as a run of
   normalized tokens. The prompt forbids the proper name; this catches the plainest disobedience.
4. ``rouge``: ROUGE-L F1 of the query against a span exceeds ``rouge_max`` (0.35). Computed with
   ``rouge-score`` (Google's reimplementation of ROUGE-1.5.5: lower-cased ``[a-z0-9]+`` tokens, no
   stemming), the span as the reference and the query as the prediction. For ``multihop`` the largest
   F1 over the two spans counts: a query copying one span is leaky whatever it takes from the other.
5. ``ngram``: the query shares a verbatim ``ngram_block``-gram (4) with a span after normalization
   (:func:`normalized_tokens`: Unicode NFKC, case-folded, runs of word characters), any n-gram at all,
   function words included.

ROUGE-L F1 (Lin 2004): with LCS the longest common subsequence of the token lists, P = LCS/|query|,
R = LCS/|span|, F1 = 2PR/(P+R). Against a whole paragraph R is small, so F1 bites mainly on short
spans and on queries that copy a long run; the n-gram block is the sharper test of copying.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

WORD = re.compile(r"\w+")
REASONS = ("too_short", "too_long", "not_a_question", "names_referent", "rouge", "ngram")


def normalized_tokens(text: str) -> list[str]:
    """NFKC-normalized, case-folded runs of word characters: the tokens of the n-gram test."""
    return WORD.findall(unicodedata.normalize("NFKC", text).casefold())


def ngrams(tokens: Sequence[str], n: int) -> set[tuple[str, ...]]:
    return {tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)}


def shared_ngrams(query: str, span_texts: Sequence[str], n: int) -> list[tuple[str, ...]]:
    """The normalized ``n``-grams of ``query`` that occur in any of ``span_texts``, sorted."""
    query_grams = ngrams(normalized_tokens(query), n)
    found: set[tuple[str, ...]] = set()
    for text in span_texts:
        found |= query_grams & ngrams(normalized_tokens(text), n)
    return sorted(found)


@functools.lru_cache(maxsize=1)
def _rouge_l_scorer():
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False)


def rouge_l(query: str, span_text: str) -> float:
    """ROUGE-L F1 of ``query`` (prediction) against ``span_text`` (reference), by ``rouge-score``."""
    return float(_rouge_l_scorer().score(span_text, query)["rougeL"].fmeasure)


def names_referent(query: str, name: str) -> bool:
    """Whether ``query`` contains ``name`` as a contiguous run of normalized tokens (False for an empty name)."""
    wanted = normalized_tokens(name)
    if not wanted:
        return False
    tokens = normalized_tokens(query)
    return any(tokens[i : i + len(wanted)] == wanted for i in range(len(tokens) - len(wanted) + 1))


@dataclass(frozen=True)
class FilterRules:
    """The filter's thresholds (config ``querygen``: ``rouge_max``, ``ngram_block``, ``min_query_words``,
    ``max_query_words``, ``require_question``)."""

    rouge_max: float
    ngram_block: int
    min_query_words: int
    max_query_words: int
    require_question: bool = True


@dataclass(frozen=True)
class Verdict:
    """The outcome of screening one query: ``reason`` is ``""`` when it passes, else the first failed
    check (module docstring). ``rouge_l`` (largest F1 over the spans) and ``shared_ngrams`` (how many
    distinct n-grams are shared) are measured whenever the query has words, whatever the reason."""

    reason: str
    rouge_l: float | None
    shared_ngrams: int | None

    @property
    def passed(self) -> bool:
        return not self.reason


def screen_question(query: str, span_texts: Sequence[str], rules: FilterRules, referent: str | None = None) -> Verdict:
    """Screen ``query`` against its gold spans' texts; ``referent`` (a name the query must not contain)
    is given for ``underspecified`` queries."""
    words = len(query.split())
    if not words:
        return Verdict("too_short", None, None)
    score = max(rouge_l(query, text) for text in span_texts)
    shared = len(shared_ngrams(query, span_texts, rules.ngram_block))
    if words < rules.min_query_words:
        reason = "too_short"
    elif words > rules.max_query_words:
        reason = "too_long"
    elif rules.require_question and "?" not in query:
        reason = "not_a_question"
    elif referent is not None and names_referent(query, referent):
        reason = "names_referent"
    elif score > rules.rouge_max:
        reason = "rouge"
    elif shared:
        reason = "ngram"
    else:
        reason = ""
    return Verdict(reason, score, shared)
