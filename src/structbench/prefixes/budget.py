"""A prefix never takes more than its token budget (half of the chunk set's ``t_max`` in the workflow).

Titles come from headings, an inducer or an LLM; on text without spaces (CJK, Thai), a long heading or a
deep path at a small ``t_max``, a path can outgrow the chunk it labels, and then the embedder's window
holds the prefix and little of the content. So a rendered prefix over ``budget`` tokens is shortened,
deterministically, by the first of these that fits; every one keeps the leaf title (the last element):

1. **Keep the depth.** Each element (a title of the path, or the context string) is cut to its first
   ``cap`` tokens, the largest ``cap`` such that the elements' token counts, each capped at ``cap``, sum
   within what the budget leaves after the brackets, separators and ellipsis marks (water-filling: short
   titles stay whole, the longest ones are cut to the same length); while the rendered prefix is still
   over (token counts of a cut string and of the whole differ at the joins), the longest element loses
   one more token. A cut element ends in ``ELLIPSIS``. This fails when an element would keep fewer than
   ``MIN_ELEMENT_TOKENS`` tokens of its own (all of them, when it has fewer): three titles of one token
   each, ``[… > … > …]``, say nothing.
2. **Drop ancestors, root first**, marking them by one ``ELLIPSIS`` element (``[… > Section > Leaf]``,
   then ``[… > Leaf]``), and water-fill the elements left as in 1, with the same floor.
3. **The leaf alone**, cut to its longest opening run of whole grapheme clusters that fits
   (``[Lea…]``); none at all gives ``[…]``.

Cuts fall between grapheme clusters (:mod:`structbench.graphemes`): a cut at a tokenizer's offset is
moved back to the cluster boundary before it, so a Thai or Devanagari mark never loses its letter. A
budget that cannot hold ``[…]`` itself is a :class:`PrefixBudgetError`; the config check
(``structbench.crosskeys.check_prefix_budget_config``) names it before any job runs. Shortened prefixes are
counted per text set (``shortened_prefixes``, and ``dropped_ancestors`` for rules 2 and 3), and the
report shows the largest prefix against the allowed.

Titles read elsewhere follow the same rule with the same budget (half of the condition's ``t_max``,
:func:`bounded_titles`): the "Document > Section" entries of TOC routing's contents and the title
vectors its fallback compares (:func:`structbench.retrieval.routing.section_units`), and the title chain
``query_titles:<d>`` puts before a query (:func:`structbench.retrieval.rescoring.title_blocks`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import regex

from structbench.graphemes import ELLIPSIS, grapheme_boundary_before
from structbench.tokens import TokenCounter

Render = Callable[[Sequence[str]], str]
MIN_ELEMENT_TOKENS = 3  # the fewest tokens a cut element keeps under rules 1 and 2


class PrefixBudgetError(ValueError):
    """A budget too small for the shortest prefix, ``[…]``; the message names both sizes."""


def cut_to_tokens(text: str, n_tokens: int, tokenizer: TokenCounter) -> str:
    """``text`` cut to its first ``n_tokens`` tokens, moved back to a grapheme cluster boundary, plus
    ``ELLIPSIS``; whole if it has no more tokens."""
    offsets = tokenizer.offsets(text)
    if len(offsets) <= n_tokens:
        return text
    end = grapheme_boundary_before(text, offsets[n_tokens - 1][1]) if n_tokens > 0 else 0
    return text[:end].rstrip() + ELLIPSIS


def water_level(lengths: Sequence[int], total: int) -> int:
    """The largest cap with ``sum(min(length, cap)) <= total`` (at least 1, so no element vanishes)."""
    cap = max(lengths, default=0)
    while cap > 1 and sum(min(length, cap) for length in lengths) > total:
        cap -= 1
    return max(cap, 1)


def bounded_titles(paths: Sequence[Sequence[str]], render: Render, budget: int, tokenizer: TokenCounter) -> list[str]:
    """Each title path rendered within ``budget`` tokens by :func:`shortened_prefix` (the module docstring's
    rule, leaf kept), once per distinct path: the TOC contents and the query-side titles take it as the
    chunk prefixes do."""
    fitted: dict[tuple[str, ...], str] = {}
    for path in map(tuple, paths):
        if path not in fitted:
            fitted[path] = shortened_prefix(path, render, budget, tokenizer)[0]
    return [fitted[tuple(path)] for path in paths]


def shortened_prefix(items: Sequence[str], render: Render, budget: int, tokenizer: TokenCounter) -> tuple[str, int]:
    """``render(items)`` within ``budget`` tokens and the rule of the module docstring that made it fit
    (0: whole, 1: depth kept, 2: ancestors dropped, 3: the leaf alone)."""
    whole = render(items)
    if not items or tokenizer.count(whole) <= budget:
        return whole, 0
    shortest = render((ELLIPSIS,))
    if tokenizer.count(shortest) > budget:
        raise PrefixBudgetError(
            f"a prefix budget of {budget} tokens cannot hold even {shortest!r} "
            f"({tokenizer.count(shortest)} tokens); raise t_max or use prefix: none"
        )
    depth_kept = water_filled(items, render, budget, tokenizer)
    if depth_kept is not None:
        return depth_kept, 1
    for dropped in range(1, len(items)):
        kept = water_filled(items[dropped:], render, budget, tokenizer, marked=True)
        if kept is not None:
            return kept, 2
    return leaf_alone(items[-1], render, budget, tokenizer), 3


def water_filled(
    items: Sequence[str], render: Render, budget: int, tokenizer: TokenCounter, marked: bool = False
) -> str | None:
    """Rule 1 of the module docstring over ``items`` (after an ``ELLIPSIS`` element when ``marked``: the
    dropped ancestors, never cut): the prefix, or None when an element would keep fewer than
    ``MIN_ELEMENT_TOKENS`` tokens (all of them, when it has fewer) or no whole grapheme cluster."""
    marker = (ELLIPSIS,) if marked else ()
    whole = render(marker + tuple(items))
    if tokenizer.count(whole) <= budget:  # after dropped ancestors, the rest may fit uncut
        return whole
    lengths = [tokenizer.count(item) for item in items]
    overhead = tokenizer.count(render(marker + ("",) * len(items))) + len(items) * tokenizer.count(ELLIPSIS)
    caps = [min(length, water_level(lengths, budget - overhead)) for length in lengths]
    floors = [min(length, MIN_ELEMENT_TOKENS) for length in lengths]
    while all(cap >= floor for cap, floor in zip(caps, floors)):
        cut = [cut_to_tokens(item, cap, tokenizer) for item, cap in zip(items, caps)]
        if any(element == ELLIPSIS for element in cut):
            return None
        prefix = render(marker + tuple(cut))
        if tokenizer.count(prefix) <= budget:
            return prefix
        longest = max(range(len(caps)), key=lambda i: (caps[i], -i))
        caps[longest] -= 1
    return None


def leaf_alone(leaf: str, render: Render, budget: int, tokenizer: TokenCounter) -> str:
    """Rule 3 of the module docstring: ``[leaf]``, or its longest opening run of whole grapheme clusters
    that fits with ``ELLIPSIS`` (binary search, then a step back where token counts are not monotone)."""
    if tokenizer.count(render((leaf,))) <= budget:
        return render((leaf,))
    clusters = regex.findall(r"\X", leaf)

    def rendered(n: int) -> str:
        return render(("".join(clusters[:n]).rstrip() + ELLIPSIS,))

    low, high = 0, len(clusters)
    while low < high:
        middle = (low + high + 1) // 2
        if tokenizer.count(rendered(middle)) <= budget:
            low = middle
        else:
            high = middle - 1
    while low > 0 and tokenizer.count(rendered(low)) > budget:
        low -= 1
    return rendered(low)
