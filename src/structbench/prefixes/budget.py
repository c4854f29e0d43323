"""A prefix never takes more than its token budget (half of ``chunking.t_max`` in the workflow).

Titles come from headings, an inducer or an LLM; on text without spaces (CJK, Thai) or a long heading a
path can outgrow the chunk it labels, and then the embedder's window holds the prefix and little of the
content. So a rendered prefix over ``budget`` tokens is shortened, deterministically, keeping its depth:

1. Each element (a title of the path, or the context string) is cut to its first ``cap`` tokens, the
   largest ``cap`` such that the elements' token counts, each capped at ``cap``, sum within what the
   budget leaves after the brackets, separators and the ellipsis marks (water-filling: short titles stay
   whole, the longest ones are cut to the same length). A cut element ends in ``ELLIPSIS``.
2. Token counts of a cut string and of the rendered whole can differ by a token at the joins, so while
   the rendered prefix is still over the budget, the longest element loses one more token.

Cuts fall on token boundaries of the chunk tokenizer (``TokenCounter.offsets``), so a cut never splits a
character. Counted per chunk set as ``shortened_prefixes`` in the prefix report.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from structbench.tokens import TokenCounter

ELLIPSIS = "…"


def cut_to_tokens(text: str, n_tokens: int, tokenizer: TokenCounter) -> str:
    """``text`` cut to its first ``n_tokens`` tokens plus ``ELLIPSIS``; whole if it has no more."""
    offsets = tokenizer.offsets(text)
    if len(offsets) <= n_tokens:
        return text
    kept = text[: offsets[n_tokens - 1][1]].rstrip() if n_tokens > 0 else ""
    return kept + ELLIPSIS


def water_level(lengths: Sequence[int], total: int) -> int:
    """The largest cap with ``sum(min(length, cap)) <= total`` (at least 1, so no element vanishes)."""
    cap = max(lengths, default=0)
    while cap > 1 and sum(min(length, cap) for length in lengths) > total:
        cap -= 1
    return max(cap, 1)


def fit_prefix(
    items: Sequence[str], render: Callable[[Sequence[str]], str], budget: int, tokenizer: TokenCounter
) -> tuple[str, bool]:
    """``render(items)`` within ``budget`` tokens (module docstring): the prefix and whether it was cut."""
    whole = render(items)
    if tokenizer.count(whole) <= budget or not items:
        return whole, False
    lengths = [tokenizer.count(item) for item in items]
    overhead = tokenizer.count(render([""] * len(items))) + len(items) * tokenizer.count(ELLIPSIS)
    caps = [min(length, water_level(lengths, budget - overhead)) for length in lengths]
    while True:
        cut = [cut_to_tokens(item, cap, tokenizer) for item, cap in zip(items, caps)]
        prefix = render(cut)
        if tokenizer.count(prefix) <= budget or max(caps) == 0:
            return prefix, True
        longest = max(range(len(caps)), key=lambda i: (caps[i], -i))
        caps[longest] -= 1
