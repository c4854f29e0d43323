"""Sentence boundaries as character offsets (syntok, offline), the only places a long unit may be cut.

syntok is a rule-based segmenter that reports each token's offset in the input, so sentence starts
come straight from it with no re-searching; on QASPER prose it is faster than pysbd's fastest path and agrees
with it on nearly every sentence count (measured: docs/benchmarks.md, "Sentence segmentation: syntok against
pysbd").

Boundaries are computed per paragraph and cached per paragraph text, because a paragraph start is
always a boundary and the same paragraph is looked at by several chunkers (structural, fixed,
semantic) in one process. Callers ask lazily, only for the paragraphs where a cut can fall, since
rule-based segmentation is the slowest step of chunking; within a long paragraph,
:func:`sentence_starts_near` segments only a stretch around the cut, starting where syntok certainly
starts a sentence (:func:`resync_points`), with exactly the boundaries segmenting the whole would give.
Within a stretch most starts need no syntok at all: a start can only be one of the
:func:`candidate_starts` (after a sentence-ending character, or at an opening bracket), the resync
points among them are certain, and syntok runs only from the last start before each other candidate
to the first start at or after it, stopping as soon as its state machine knows that start
(:func:`_start_offsets`).

A boundary is the offset where a sentence's first non-space character sits, and it is kept only
when whitespace precedes it: a cut there never splits a word, so token counts of the two sides add
up to the count of the whole (see :class:`structbench.tokens.TokenSpans`).
"""

from __future__ import annotations

import bisect
import functools
import itertools
import logging
import re
from collections import OrderedDict
from collections.abc import Iterator

import regex

log = logging.getLogger(__name__)

_FALLBACK_SPLIT = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=\S)")


def _sentence_offsets(text: str) -> list[int]:
    """Offset of the first character of every sentence syntok finds in ``text``."""
    return [sentence[0].offset for paragraph in _analyze(text) for sentence in paragraph if sentence]


def _analyze(text: str):
    """``syntok.segmenter.analyze(text)``, with :func:`_tokens` in place of syntok's tokenizer (same tokens)."""
    from syntok.segmenter import analyze, preprocess_with_offsets, segment

    if _syntok_rules() is None:
        return analyze(text)
    return (segment(_tokens(paragraph, offset)) for offset, paragraph in preprocess_with_offsets(text))


_SIMPLE_RUN = re.compile(r"(?=[A-Za-z0-9])([A-Z0-9]*[a-z0-9]*)([.,;:!?]?)")  # one word token (+ one mark)


def _tokens(text: str, base_offset: int = 0):
    """The tokens of syntok 1.4's ``Tokenizer(replace_not_contraction=False).tokenize(text, base_offset)``.

    A run of ASCII letters and digits where no lowercase letter meets an uppercase one, with at most
    one punctuation mark after it, is one word token (and the mark one more); syntok's tokenizer
    makes exactly these of it, through several generator layers per token. Every other run goes
    through syntok's own per-run steps (the loop body below is syntok's, MIT licensed). A test
    compares the two token streams.
    """
    from syntok.tokenizer import Token, Tokenizer

    tokenizer = _syntok_tokenizer()
    if base_offset > 0:
        text = " " * base_offset + text
    offset = base_offset
    simple = _SIMPLE_RUN.fullmatch
    for mo in Tokenizer._spaces.finditer(text):
        begin, stop = mo.span()
        run = simple(text, begin, stop)
        if run is not None:
            yield Token(text[offset:begin], run.group(1), begin)
            if run.end(1) < stop:
                yield Token("", text[run.end(1)], run.end(1))
        else:
            start = Tokenizer._find_start(begin, stop, text)
            if start == stop:
                yield Token(text[offset:begin], mo.group(0), begin)
            else:
                end = Tokenizer._find_end(start, stop, text)
                if start > begin:
                    offset = yield from tokenizer._split_nonword_prefix(mo, offset, start, text)
                if start != end:
                    yield from tokenizer._split_word(text[offset:start], text[start:end], start)
                tail = text[end:stop]
                if tail.startswith("..."):
                    yield Token("", "...", end)
                    end += 3
                    tail = tail[3:]
                yield from [Token("", c, idx + end) for idx, c in enumerate(tail)]
        offset = stop
    if offset < len(text):
        yield Token(text[offset:], "", len(text))


@functools.cache
def _syntok_tokenizer():
    from syntok.tokenizer import Tokenizer

    return Tokenizer(replace_not_contraction=False)


@functools.lru_cache(maxsize=1 << 16)
def sentence_starts(text: str) -> tuple[int, ...]:
    """Offsets in ``text`` where its second, third, ... sentence begins (0 and len(text) excluded)."""
    if len(text) < 2:
        return ()
    try:
        candidates = _sentence_offsets(text)
    except Exception as error:  # a segmenter failure on a rare input: a plain punctuation rule beats no cut
        log.warning(
            "syntok failed on a paragraph of %d characters starting %r (%s: %s); using the punctuation rule instead",
            len(text),
            text[:60],
            type(error).__name__,
            error,
        )
        candidates = [match.end() for match in _FALLBACK_SPLIT.finditer(text)]
    n = len(text)
    return tuple(sorted({b for b in candidates if 0 < b < n and text[b - 1].isspace() and not text[b].isspace()}))


def paragraph_boundaries(text: str, start: int, end: int) -> list[int]:
    """Absolute sentence starts of the paragraph ``text[start:end]``, its own start first.

    The very starts of :func:`sentence_starts`, found by :func:`sentence_starts_near` over the whole
    paragraph: syntok runs only around the candidates it must settle.
    """
    paragraph = text[start:end]
    if len(paragraph) < 2:
        return [start]
    _, _, starts = sentence_starts_near(paragraph, 0, len(paragraph))
    return [start] + [start + b for b in starts]


def clear_cache() -> None:
    sentence_starts.cache_clear()
    _partials.clear()


# --------------------------------------------------------------------------------------------------
# Segmenting only where a cut can fall


_VERIFIED_SYNTOK = "1.4."  # the syntok whose state machine the resynchronization rule below was read from
_RUN = regex.compile(r"[^\s\u200b]+")  # syntok's whitespace-delimited runs (its tokenizer's ``_spaces``)
# A run of ASCII letters and digits, a period, spaces, then a run that starts with an ASCII capital.
_RESYNC = re.compile(r"(?:(?<=[ \n])|^)([A-Za-z0-9]+)\. +(?=[A-Z])")
_CASE_CHANGE = re.compile(r"[a-z](?=[A-Z])")  # where syntok's tokenizer splits a word (lower- to uppercase)
# The tokenizer makes each bracket of a run a token of its own when the run holds a letter or digit
# (else the whole run is one token, such as ")." or "))").
_ASCII_SPACE = " \t\n\r\x0b\x0c"
_CLOSING = re.compile(r"[)\]}]")
_ALNUM = re.compile(r"[A-Za-z0-9]")
_BRACKET_REACH = 50  # syntok skips bracketed text only up to 49 of its tokens past the opening bracket
_UNCOVERED = re.compile(r"\n\s*\n|[\x1c-\x1f\u200b]")


@functools.cache
def _syntok_rules():
    """What :func:`resync_points` needs of syntok's tables, or None when syntok is not the verified version."""
    from importlib.metadata import version

    if not version("syntok").startswith(_VERIFIED_SYNTOK):
        return None
    from syntok._segmentation_states import State

    opening = re.compile("[" + re.escape("".join(sorted(State.opening_brackets))) + "]")
    never = frozenset(State.abbreviations) | frozenset(State.roman_numerals) | {"no", "No", "NO"}
    months = tuple(sorted(m for m in State.months if m[:1].isupper()))
    # what a sentence can end with (a terminal's last character, a closing bracket or quote), then whitespace
    endings = {t[-1] for t in State.terminals} | set(State.closing_brackets) | set(State.closing_quotes)
    after_ending = re.compile("[" + re.escape("".join(sorted(endings))) + r"]\s+")
    return opening, never, months, after_ending


def resync_points(text: str) -> list[int]:
    """Offsets where syntok certainly starts a sentence, whatever precedes them in ``text``.

    syntok reads a paragraph with one left-to-right state machine whose state after it ends a
    sentence is only the tokens still ahead, so from any boundary it really finds, segmenting
    ``text[b:]`` gives the same later boundaries (checked on every QASPER dev paragraph). This finds
    such boundaries without segmenting what precedes them: ``word. Next``, where ``word`` is a run
    of ASCII letters and digits whose last token (syntok splits a word where a lowercase letter
    meets an uppercase one) has two or more characters and is none of syntok's abbreviations,
    Roman numerals and "no"; then spaces; then a run that starts with an ASCII capital (not a month
    abbreviation after a number). With the period reached as a terminal, syntok 1.4 splits there:
    the next token is not lowercase, numeric or unspaced, and no rule keeping the period inside a
    sentence applies to the token before. The period is reached unless a bracket skip swallows it
    (no terminal precedes it: the token before is a word), and a skip runs from an opening-bracket
    token to the token that closes it, at most 49 tokens on: so every opening bracket before the
    period must be closed before it (by brackets that are certainly tokens, :func:`_closing_tokens`)
    or lie more than 50 runs back (each run is one token or more). Returns an empty list for a
    syntok other than the verified version.
    """
    rules = _syntok_rules()
    if rules is None:
        return []
    opening, never, months, _ = rules
    found = []
    for m in _RESYNC.finditer(text):
        word = m.group(1)
        changes = [c.end() for c in _CASE_CHANGE.finditer(word)]
        last = word[changes[-1] :] if changes else word
        if len(last) < 2 or last in never:
            continue
        if last.isdigit() and text.startswith(months, m.end()):
            continue
        found.append(m)
    if not found:
        return []
    brackets = [(b.start(), True) for b in opening.finditer(text)]
    if brackets:
        brackets += [(q, False) for q in _closing_tokens(text)]
        brackets.sort()
    out, open_, next_bracket = [], [], 0
    for m in found:
        period = m.end(1)
        while next_bracket < len(brackets) and brackets[next_bracket][0] < period:
            position, is_opening = brackets[next_bracket]
            if is_opening:
                open_.append(position)
            elif open_:
                open_.pop()
            next_bracket += 1
        # the nearest opening bracket not closed before the period must be out of a skip's reach
        if not open_ or _runs_more_than(text, open_[-1], period, _BRACKET_REACH + 2):
            out.append(m.end())
    return out


def _runs_more_than(text: str, start: int, end: int, limit: int) -> bool:
    """Whether ``text[start:end]`` holds more than ``limit`` whitespace-delimited runs (reads limit + 1 at most)."""
    return sum(1 for _ in itertools.islice(_RUN.finditer(text, start, end), limit + 1)) > limit


def _closing_tokens(text: str) -> list[int]:
    """Offsets of ``)``, ``]`` and ``}`` that syntok's tokenizer certainly makes closing-bracket tokens.

    Fewer closing brackets (and more opening ones) than syntok sees only make :func:`resync_points`
    reject more: a bracket counts as closed no earlier than syntok closes it. Around each bracket
    only printable ASCII is read (a part of its run): a letter or digit there means the run holds one;
    a bracket between two ASCII whitespace characters (or the text's ends) is a run of its own.
    """
    n = len(text)
    out = []
    for m in _CLOSING.finditer(text):
        q = m.start()
        a = q
        while a > 0 and "!" <= text[a - 1] <= "~":
            a -= 1
        b = q + 1
        while b < n and "!" <= text[b] <= "~":
            b += 1
        alone = b - a == 1 and (a == 0 or text[a - 1] in _ASCII_SPACE) and (b == n or text[b] in _ASCII_SPACE)
        if alone or _ALNUM.search(text, a, b):
            out.append(q)
    return out


def candidate_starts(text: str) -> list[int] | None:
    """Offsets where syntok 1.4 can start a sentence of ``text`` (a superset of :func:`sentence_starts`).

    syntok ends a sentence only in its ``Terminal`` state, which it enters with the sentence's last
    token a terminal (``.``, ``!``, ``?``, ``;``, ...), a closing bracket or a closing quote, or with
    the next token an opening bracket; and never when the next token begins with a lowercase letter.
    A kept start follows whitespace, so it begins one of syntok's whitespace-delimited runs and the
    token before it ends the previous run (syntok's tokenizer ends a run's last token at the run's
    end). So a start is a non-space character after whitespace that is an opening bracket, or that
    follows (across the whitespace) one of those sentence-ending characters and is not lowercase.
    None when that reasoning does not cover ``text``: a blank line inside it (syntok starts a
    paragraph there, whatever the case), a zero-width space or a character that Python and syntok
    disagree is whitespace (``\\x1c``-``\\x1f``), or a syntok other than the verified version.
    Checked on every QASPER dev and train paragraph, and by a property test.
    """
    rules = _syntok_rules()
    if rules is None or _UNCOVERED.search(text) is not None:
        return None
    opening, _, _, after_ending = rules
    n = len(text)
    found = [m.end() for m in after_ending.finditer(text)]
    found = [b for b in found if b < n and not text[b].islower()]
    found.extend(m.start() for m in opening.finditer(text) if m.start() > 0 and text[m.start() - 1].isspace())
    if text[:1].isspace() and text.strip():  # the first sentence starts at the first token, after leading space
        found.append(len(text) - len(text.lstrip()))
    return sorted(set(found))


class _Partial:
    """What is known of one paragraph's sentence starts: exact stretches ``(a, b, starts in [a, b])``.

    ``resync`` are starts syntok certainly finds (:func:`resync_points`), ``candidates`` every offset
    where it can find one (:func:`candidate_starts`, or None), ``certain`` the resync points as a set.
    ``stretches`` are disjoint, not touching, and sorted by ``a`` (:func:`_add_stretch` keeps them so),
    so the one around an offset is found by bisection however many a long paragraph collects.
    """

    __slots__ = ("candidates", "certain", "resync", "stretches")

    def __init__(self, text: str):
        self.resync = resync_points(text)
        self.candidates = candidate_starts(text)
        self.certain = frozenset(self.resync)
        self.stretches: list[tuple[int, int, list[int]]] = []


_PARTIAL_CACHE_SIZE = 1 << 16
_partials: OrderedDict[str, _Partial] = OrderedDict()


def sentence_starts_near(text: str, lo: int, hi: int) -> tuple[int, int, list[int]]:
    """The sentence starts of ``text`` (as :func:`sentence_starts`) in a stretch ``[a, b]`` around ``[lo, hi]``.

    Returns ``(a, b, starts)``: ``a <= lo`` is 0 or itself a sentence start, ``b >= hi`` is a
    sentence start or ``len(text)``, and ``starts`` are exactly the entries of
    ``sentence_starts(text)`` in ``[a, b]``. syntok runs only from the last point before ``lo``
    where a sentence certainly starts (:func:`resync_points`, or a start already found) to the first
    sentence start at or after ``hi``, so a long paragraph is segmented only around the cuts asked for.
    The stretch returned is the narrowest one (:func:`_narrowest`), so its size does not grow with what
    earlier calls segmented: a chunker asking once per cut pays for the cut's surroundings, not the paragraph.
    """
    n = len(text)
    hi = max(hi, lo)
    partial = _partials.get(text)
    if partial is None:
        partial = _partials[text] = _Partial(text)
        if len(_partials) > _PARTIAL_CACHE_SIZE:
            _partials.popitem(last=False)
    else:
        _partials.move_to_end(text)
    known = _stretch_before(partial.stretches, lo)
    if known is not None and (known[1] >= hi or known[1] == n):
        return _narrowest(known, lo, hi)
    origin = 0
    index = bisect.bisect_right(partial.resync, lo) - 1
    if index >= 0:
        origin = partial.resync[index]
    if known is not None:
        index = bisect.bisect_right(known[2], lo) - 1
        if index >= 0:
            origin = max(origin, known[2][index])
    try:
        if partial.candidates is None:
            starts, end = _segment_from(text, origin, hi)
        else:
            starts, end = _walk_candidates(text, partial, origin, hi)
    except Exception:  # as sentence_starts does: the whole paragraph, with its logged fallback
        return 0, n, list(sentence_starts(text))
    return _narrowest(_add_stretch(partial.stretches, (origin, end, starts)), lo, hi)


def _stretch_before(stretches: list[tuple[int, int, list[int]]], offset: int) -> tuple[int, int, list[int]] | None:
    """The last of the sorted, disjoint ``stretches`` that begins at or before ``offset`` (None if none does).

    It is the only one that can hold ``offset``, and its starts at or before ``offset`` are the latest
    known ones: every earlier stretch ends before it begins."""
    index = bisect.bisect_right(stretches, offset, key=lambda stretch: stretch[0]) - 1
    return stretches[index] if index >= 0 else None


def _narrowest(stretch: tuple[int, int, list[int]], lo: int, hi: int) -> tuple[int, int, list[int]]:
    """The narrowest exact stretch around ``[lo, hi]`` inside ``stretch`` (which holds ``[lo, hi]``, or ends
    at the text's end): from its last start at or before ``lo`` (else its own beginning, then 0) to its first
    start at or after ``hi`` (else its own end, then the text's end); a copy, so callers may keep it."""
    a, b, starts = stretch
    first = bisect.bisect_right(starts, lo) - 1
    last = bisect.bisect_left(starts, hi)
    narrow_a = starts[first] if first >= 0 else a
    narrow_b = starts[last] if last < len(starts) else b
    return narrow_a, narrow_b, starts[max(first, 0) : last + 1]


def _add_stretch(
    stretches: list[tuple[int, int, list[int]]], new: tuple[int, int, list[int]]
) -> tuple[int, int, list[int]]:
    """Add one exact stretch to the sorted, disjoint ``stretches`` in place, joined with those it overlaps or
    touches (their union is exact too); returns the stretch that now holds it.

    Linear in the new stretch, not in what it joins: the starts of a stretch it extends are extended in
    place, and only the part of a later stretch past the new one's end is copied, so a paragraph segmented
    cut by cut, left to right (as the chunkers ask), costs its length once, however many cuts it has.
    """
    a, b, starts = new
    begin = bisect.bisect_left(stretches, a, key=lambda stretch: stretch[1])  # first ending at or after a
    stop = bisect.bisect_right(stretches, b, key=lambda stretch: stretch[0])  # past the last beginning at or before b
    if begin == stop:
        stretches.insert(begin, new)
        return new
    first, last = stretches[begin], stretches[stop - 1]
    tail = last[2][bisect.bisect_right(last[2], b) :] if last[1] > b else []
    if first[0] < a:  # keep the first stretch's starts before a, then the new ones (exact from a on)
        merged = first[2]
        del merged[bisect.bisect_left(merged, a) :]
        merged.extend(starts)
    else:
        merged = starts
    merged.extend(tail)
    joined = (min(a, first[0]), max(b, last[1]), merged)
    stretches[begin:stop] = [joined]
    return joined


def _walk_candidates(text: str, partial: _Partial, origin: int, hi: int) -> tuple[list[int], int]:
    """What :func:`_segment_from` returns, running syntok only where a candidate start is uncertain.

    From ``origin`` the candidates (:func:`candidate_starts`) are taken in order: a resync point is
    a start; any other is settled by syntok, run from the last start before it to the first start at
    or after it; after a start, syntok's later starts do not depend on what preceded it (see
    :func:`resync_points`). No candidate, no start: so the stretch is exact up to the first start
    at or after ``hi``.
    """
    n = len(text)
    candidates, certain = partial.candidates, partial.certain
    starts = [origin] if origin > 0 else []
    last = origin
    index = bisect.bisect_right(candidates, origin)
    while index < len(candidates):
        c = candidates[index]
        if c in certain:
            starts.append(c)
            last = c
            index += 1
        else:
            found, end = _segment_from(text, last, c)
            starts.extend(b for b in found if b > last)
            if end >= n:
                return starts, n
            last = end
            index = bisect.bisect_right(candidates, end)
        if last >= hi:
            return starts, last
    return starts, n


def _segment_from(text: str, origin: int, hi: int) -> tuple[list[int], int]:
    """Sentence starts of ``text`` from ``origin`` (0 or a sentence start) to the first at or after ``hi``."""
    n = len(text)
    out = []
    for offset in _start_offsets(text[origin:]):
        b = origin + offset
        if 0 < b < n and text[b - 1].isspace() and not text[b].isspace() and (not out or b > out[-1]):
            out.append(b)
            if b >= hi:
                return out, b
    return out, n


def _start_offsets(text: str) -> Iterator[int]:
    """The offsets of :func:`_sentence_offsets`, each as soon as syntok's state machine knows it.

    syntok yields a sentence only once it has read to its end, so waiting for the sentence that
    starts at or after a cut would segment one sentence too many. Its state machine knows a start
    earlier: when it enters ``Terminal`` (a sentence ends), the next sentence begins at the first
    token still ahead (``FirstToken`` moves exactly that token first), read here from its queue at
    ``Terminal`` or, when the queue was empty, at the ``FirstToken`` state that fetched it. A token
    with an empty value (trailing whitespace) starts no sentence: syntok drops such a sentence.
    Without the verified syntok, the offsets of whole sentences, as :func:`_sentence_offsets`.
    """
    if _syntok_rules() is None:
        yield from _sentence_offsets(text)
        return
    from syntok._segmentation_states import Begin, FirstToken, Terminal
    from syntok.segmenter import preprocess_with_offsets

    for offset, paragraph in preprocess_with_offsets(text):
        last = -1
        peek = False
        for state in Begin(_tokens(paragraph, offset)):
            if peek and isinstance(state, FirstToken) and state._queue:
                token = state._queue[0]
                if token.value and token.offset > last:
                    last = token.offset
                    yield last
            peek = False
            if state.at_sentence:
                history = state.collect_history()
                if history and (len(history) > 1 or history[0].value) and history[0].offset > last:
                    last = history[0].offset  # a paragraph's first sentence (later ones were peeked)
                    yield last
                if isinstance(state, Terminal):
                    if state._queue:
                        token = state._queue[0]
                        if token.value and token.offset > last:
                            last = token.offset
                            yield last
                    else:
                        peek = True
