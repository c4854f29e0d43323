"""Structure at read time (docs/method.md §18): a flat run's hits expanded into the text a reader gets.

Pure functions over (ranked hits as character spans, a document's section tree) -> ranked spans. A hit
is ``(doc_id, start, end)``; a ranked list is hits in rank order. Modes (the ``retrieval`` axis,
:data:`structbench.conditions.AXES`):

- ``parent:<L>`` (LangChain's ``ParentDocumentRetriever``): each hit is replaced by the level-L block
  holding it (:func:`section_cuts`); a hit spanning two blocks by the blocks it touches, as one span.
- ``automerge:<r>`` (LlamaIndex's ``AutoMergingRetriever``): bottom-up from the deepest level, a block
  replaces its retrieved chunks once at least a share ``r`` of its chunks are retrieved (a merged child
  counts all its chunks as retrieved); the merged span takes the rank of its best member.
- ``window:<t>`` (LlamaIndex's sentence window): each hit grown to ``t`` tokens with the neighbouring
  text, half on each side, clipped at the document's edges.
- ``matched_window:<L>``: windows sized per query so the list returns as many tokens as ``parent:<L>``
  does (the "more text" control of the parent mode).
- ``placebo_parent:<L>`` matched: the placebo tree's level-L blocks, each cut down to a window around its
  hit sized per query so the list returns no more tokens than ``parent:<L>`` does
  (:func:`expand_matched_placebo`; the "other boundaries, same amount of text" control).

After every mode, :func:`merge_ranked` makes each list disjoint: a span overlapping text already
returned joins the earlier span (which keeps its rank); windows also join where they only touch.

The section tree as a **level partition**: level L cuts the document at the start of every section of
level <= L (and at 0), so a level-L block is a level-L section with its subsections, or the intro
text of a shallower section before its first level-L child, or the preamble. Level L+1 refines level
L, so the blocks nest. :func:`placebo_cuts` lays the same blocks over the document in a seeded random
order at every node of that tree (it tiles the document: same lengths, same nesting, other places).
"""

from __future__ import annotations

import bisect
import functools
import zlib
from collections.abc import Callable, Sequence
from fractions import Fraction

import numpy as np

from structbench.datamodel import MAX_LEVEL

Span = tuple[str, int, int]  # (doc_id, start, end), end exclusive
Cuts = tuple[tuple[int, ...], ...]  # cuts[L - 1]: sorted block starts of level L, 0 included


def section_cuts(starts: Sequence[int], levels: Sequence[int], n_chars: int, max_level: int = MAX_LEVEL) -> Cuts:
    """The level partition of one document (module docstring) from its sections' starts and levels."""
    pairs = [(int(s), int(lv)) for s, lv in zip(starts, levels) if 0 < int(s) < n_chars]
    return tuple(tuple(sorted({0} | {s for s, lv in pairs if lv <= level})) for level in range(1, max_level + 1))


def blocks(cuts: Sequence[int], n_chars: int) -> list[tuple[int, int]]:
    """The ``[start, end)`` blocks of one level's cuts."""
    ends = [*cuts[1:], n_chars]
    return [(s, e) for s, e in zip(cuts, ends) if e > s]


def block_at(cuts: Sequence[int], n_chars: int, position: int) -> tuple[int, int]:
    """The block of one level holding character ``position``."""
    i = bisect.bisect_right(cuts, position) - 1
    return cuts[i], (cuts[i + 1] if i + 1 < len(cuts) else n_chars)


def parent_span(cuts: Sequence[int], n_chars: int, start: int, end: int) -> tuple[int, int]:
    """The level's blocks a hit ``[start, end)`` touches, as one span (a hit inside one block: that block)."""
    return block_at(cuts, n_chars, start)[0], block_at(cuts, n_chars, end - 1)[1]


def merge_ranked(spans: Sequence[Span], touching: bool = False) -> list[Span]:
    """A ranked list made disjoint: a span overlapping (``touching``: or adjacent to) an earlier one of
    its document joins it; the union keeps the earlier rank and may absorb later ones in turn."""
    out: list[list] = []
    for doc, start, end in spans:
        joined = None
        for unit in out:
            if unit[0] == doc and _meet(unit[1], unit[2], start, end, touching):
                unit[1], unit[2] = min(unit[1], start), max(unit[2], end)
                joined = unit
                break
        if joined is None:
            out.append([doc, start, end])
            continue
        merged = True  # the grown span may now reach units below it: fold them in until none does
        while merged:
            merged = False
            for unit in out:
                if unit is joined or unit[0] != doc:
                    continue
                if _meet(unit[1], unit[2], joined[1], joined[2], touching):
                    joined[1], joined[2] = min(unit[1], joined[1]), max(unit[2], joined[2])
                    out.remove(unit)
                    merged = True
                    break
    return [(doc, start, end) for doc, start, end in out]


def _meet(a_start: int, a_end: int, b_start: int, b_end: int, touching: bool) -> bool:
    return a_start < b_end and b_start < a_end or touching and (a_start == b_end or a_end == b_start)


def expand_parent(hits: Sequence[Span], trees: dict[str, tuple[Cuts, int]], level: int) -> list[Span]:
    """``parent:<level>``: each hit replaced by its level's block(s), duplicates dropped (module docstring).
    ``trees`` maps doc_id to (cuts, n_chars)."""
    out = []
    for doc, start, end in hits:
        cuts, n_chars = trees[doc]
        out.append((doc, *parent_span(cuts[level - 1], n_chars, start, end)))
    return merge_ranked(out)


def automerge_document(
    chunks: Sequence[tuple[int, int]], hit_ranks: dict[int, int], cuts: Cuts, n_chars: int, ratio: float
) -> list[tuple[int, int, int]]:
    """``automerge:<ratio>`` within one document: ``chunks`` are the chunk set's ``(start, end)`` in the
    document, ``hit_ranks`` maps a retrieved chunk's index to its rank. Returns ``(start, end, rank)``.

    A chunk belongs to the block holding its start. From the deepest level up, a block whose retrieved
    chunks (hits, or chunks inside an already merged block) are at least ``ratio`` of its chunks
    replaces them; its span covers the block and those chunks; its rank is its members' best."""
    share = Fraction(str(ratio))  # exact: 3 of 5 chunks is a share of 0.6
    owner = {index: index for index in hit_ranks}  # retrieved chunk -> key of the unit holding it
    units = {index: (*chunks[index], rank) for index, rank in hit_ranks.items()}
    for level in range(len(cuts), 0, -1):
        members: dict[int, list[int]] = {}
        for index, (start, _) in enumerate(chunks):
            members.setdefault(block_at(cuts[level - 1], n_chars, start)[0], []).append(index)
        for block_start, indices in sorted(members.items()):
            retrieved = [i for i in indices if i in owner]
            if not retrieved or len(retrieved) < share * len(indices):
                continue
            held = {owner[i] for i in retrieved}
            start, end = _block_span(cuts[level - 1], n_chars, block_start, chunks, indices)
            if len(held) == 1 and units[next(iter(held))][:2] == (start, end):
                continue  # already this very block (a block whose one child was merged)
            key = ("block", level, block_start)
            rank = min(units[k][2] for k in held)
            for k in held:
                start, end = min(start, units[k][0]), max(end, units[k][1])
                del units[k]
            units[key] = (start, end, rank)
            for i in indices:
                owner[i] = key
    return sorted(units.values(), key=lambda unit: (unit[2], unit[0]))


def _block_span(cuts, n_chars, block_start, chunks, indices) -> tuple[int, int]:
    start, end = block_at(cuts, n_chars, block_start)
    return min(start, *(chunks[i][0] for i in indices)), max(end, *(chunks[i][1] for i in indices))


def expand_automerge(
    hits: Sequence[tuple[str, int]],
    doc_chunks: dict[str, list[tuple[int, int]]],
    trees: dict[str, tuple[Cuts, int]],
    ratio: float,
) -> list[Span]:
    """``automerge:<ratio>`` of one ranked list: ``hits`` are ``(doc_id, chunk index in doc_chunks[doc])``."""
    by_doc: dict[str, dict[int, int]] = {}
    for rank, (doc, index) in enumerate(hits, start=1):
        by_doc.setdefault(doc, {})[index] = rank
    ranked = [
        (rank, doc, start, end)
        for doc, ranks in by_doc.items()
        for start, end, rank in automerge_document(doc_chunks[doc], ranks, *trees[doc], ratio)
    ]
    return merge_ranked([(doc, start, end) for _, doc, start, end in sorted(ranked)])


def window_span(token_starts: Sequence[int], n_chars: int, start: int, end: int, tokens: int) -> tuple[int, int]:
    """A hit grown to ``tokens`` tokens: the missing tokens split between the sides (the odd one to the
    right), a side stopped by the document's edge giving its share to the other. ``token_starts`` are the
    document's token start offsets (:class:`structbench.tokens.TokenSpans`). A hit already that long
    is kept."""
    first, last = bisect.bisect_left(token_starts, start), bisect.bisect_left(token_starts, end)
    need = tokens - (last - first)
    if need <= 0:
        return start, end
    lo, hi = first - need // 2, last + need - need // 2
    if lo < 0:
        hi, lo = hi - lo, 0
    if hi > len(token_starts):
        lo, hi = max(0, lo - (hi - len(token_starts))), len(token_starts)
    new_start = min(start, token_starts[lo]) if lo < first else start
    new_end = max(end, token_starts[hi] if hi < len(token_starts) else n_chars)
    return new_start, new_end


def expand_window(
    hits: Sequence[Span], token_starts: dict[str, Sequence[int]], n_chars: dict[str, int], tokens: int
) -> list[Span]:
    """``window:<tokens>``: every hit grown (:func:`window_span`), merged where they overlap or touch."""
    grown = [(doc, *window_span(token_starts[doc], n_chars[doc], s, e, tokens)) for doc, s, e in hits]
    return merge_ranked(grown, touching=True)


def span_tokens(spans: Sequence[Span], token_starts: dict[str, Sequence[int]]) -> int:
    """Tokens of a ranked list: the tokens starting inside each span (:meth:`TokenSpans.count`)."""
    return sum(bisect.bisect_left(token_starts[d], e) - bisect.bisect_left(token_starts[d], s) for d, s, e in spans)


def largest_fitting(
    build: Callable[[int], list[Span]],
    target: int,
    upper: int,
    count: Callable[[Sequence[Span]], int],
    estimate: Callable[[Sequence[Span]], int] | None = None,
) -> list[Span]:
    """``build(size)`` for the largest ``size`` in ``[0, upper]`` whose ``count`` is at most ``target``.

    ``count`` is the list's tokens as the units table records them and must not decrease as ``size``
    grows; a binary search runs on ``estimate`` (default ``count``: a cheaper count, e.g.
    :func:`span_tokens` over the document's token starts), then the size steps down until ``count``
    fits, so an estimate that undercounts (a window cut inside a word, whose pieces re-tokenize to
    one token more) cannot leave the list above the target. ``build(0)`` when nothing fits.
    """
    estimate = estimate or count
    lo, hi = 0, upper
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if estimate(build(mid)) <= target:
            lo = mid
        else:
            hi = mid - 1
    while lo > 0 and count(build(lo)) > target:
        lo -= 1
    return build(lo)


def expand_matched_window(
    hits: Sequence[Span],
    token_starts: dict[str, Sequence[int]],
    n_chars: dict[str, int],
    target: int,
    count: Callable[[Sequence[Span]], int] | None = None,
) -> list[Span]:
    """``matched_window``: the window list with the largest window whose tokens (``count``, default
    :func:`span_tokens`) do not exceed ``target`` (the parent list's tokens for the same query, counted
    alike); the list's tokens grow with the window (:func:`largest_fitting`). A target below the hits'
    own tokens returns the hits merged."""
    estimate = functools.partial(span_tokens, token_starts=token_starts)
    upper = max(1, sum(len(t) for t in token_starts.values()))
    return largest_fitting(
        lambda size: expand_window(hits, token_starts, n_chars, size), target, upper, count or estimate, estimate
    )


def window_in_block(
    token_starts: Sequence[int], block: tuple[int, int], start: int, end: int, tokens: int
) -> tuple[int, int]:
    """:func:`window_span` with the block ``[block_start, block_end)`` (which holds the hit) standing
    for the document: the hit grown to ``tokens`` tokens of its block, never past the block's edges.
    A window at least the block's tokens is the block from its first token to its end."""
    block_start, block_end = block
    first, last = bisect.bisect_left(token_starts, block_start), bisect.bisect_left(token_starts, block_end)
    return window_span(token_starts[first:last], block_end, start, end, tokens)


def expand_matched_placebo(
    hits: Sequence[Span],
    trees: dict[str, tuple[Cuts, int]],
    level: int,
    token_starts: dict[str, Sequence[int]],
    target: int,
    count: Callable[[Sequence[Span]], int] | None = None,
) -> list[Span]:
    """``placebo_parent`` matched in length: ``trees`` are the placebo trees. The placebo parent list
    (:func:`expand_parent`) when its tokens (``count``, default :func:`span_tokens`) are at most
    ``target`` (the real parent list's, counted alike); else each hit's placebo block cut down to a
    window of ``size`` tokens around the hit inside that block (:func:`window_in_block`), merged where
    they overlap, with the largest ``size`` that fits (:func:`largest_fitting`). The placebo keeps
    its boundaries where it is cut (a window never crosses a placebo edge) and never returns more
    text than the real parent; where its blocks hold less text, it returns less."""
    estimate = functools.partial(span_tokens, token_starts=token_starts)
    count = count or estimate
    whole = expand_parent(hits, trees, level)
    if count(whole) <= target:
        return whole
    blocks_of_hits = [parent_span(trees[doc][0][level - 1], trees[doc][1], s, e) for doc, s, e in hits]

    def build(size: int) -> list[Span]:
        return merge_ranked(
            [
                (doc, *window_in_block(token_starts[doc], block, s, e, size))
                for (doc, s, e), block in zip(hits, blocks_of_hits)
            ]
        )

    upper = max(1, span_tokens(whole, token_starts))
    return largest_fitting(build, target, upper, count, estimate)


# ---- the placebo tree --------------------------------------------------------------------------


def _tree(cuts: Cuts, n_chars: int, level: int, start: int, end: int) -> list:
    """The nested blocks of ``[start, end)`` below ``level`` as ``[length, children]`` lists."""
    if level > len(cuts):
        return []
    inner = [c for c in cuts[level - 1] if start <= c < end]
    edges = [*inner, end] if inner and inner[0] == start else [start, *inner, end]
    return [[e - s, _tree(cuts, n_chars, level + 1, s, e)] for s, e in zip(edges, edges[1:]) if e > s]


def _lay(nodes: list, start: int, level: int, out: list[set[int]], rng: np.random.Generator) -> None:
    order = rng.permutation(len(nodes)) if len(nodes) > 1 else range(len(nodes))
    for i in order:
        length, children = nodes[i]
        out[level - 1].add(start)
        _lay(children, start, level + 1, out, rng)
        start += length


def placebo_cuts(cuts: Cuts, n_chars: int, doc_id: str, seed: int, attempts: int = 64) -> tuple[Cuts, int]:
    """A placebo tree of one document and how many of its blocks still equal a real block.

    At every node of the real tree (root included) the children are laid in a random order, so every
    block keeps its length and its nesting but moves (the placebo tiles the document, as the real tree
    does). Seeded by ``(seed, crc32(doc_id))``; of ``attempts`` draws the first with no block equal to
    a real one (same start and end at any level) is kept, else the one with fewest (a document of one
    block, or of equal-length siblings only, cannot avoid them; the count says so)."""
    rng = np.random.default_rng([seed, zlib.crc32(doc_id.encode())])
    real = {span for level in cuts for span in blocks(level, n_chars)}
    tree = _tree(cuts, n_chars, 1, 0, n_chars)
    best: tuple[Cuts, int] | None = None
    for _ in range(attempts):
        out: list[set[int]] = [set() for _ in cuts]
        _lay(tree, 0, 1, out, rng)
        for deeper in range(1, len(out)):  # a level-L cut is a cut of every deeper level too
            out[deeper] |= out[deeper - 1]
        placebo = tuple(tuple(sorted(level)) for level in out)
        equal = len({span for level in placebo for span in blocks(level, n_chars)} & real)
        if best is None or equal < best[1]:
            best = (placebo, equal)
        if equal == 0:
            break
    return best
