"""Prefix reuse for the transformers backend: prefill a shared prompt prefix once, continue every request from it.

The situating-context requests of one document repeat the whole document (chat template, instructions,
document; only the chunk and what follows differ), and TOC-routing requests that share candidates repeat
the table of contents. :func:`group_by_prefix` finds such groups in token space: requests are sorted by
their rendered token ids, and the sorted run is split where splitting saves more prefill than it costs
(a group of ``n`` requests sharing ``p`` tokens saves ``(n - 1) * p`` prefill tokens; a group needs at
least ``min_tokens`` shared). The shared length is capped one token short of the shortest member: the
model needs at least one uncached input token to produce the next-token logits.

:func:`generate_group` prefills the group's prefix once into a ``DynamicCache`` and decodes each member
from it, greedily, one request at a time. Between members the cache is cropped back to the prefix
(``DynamicCache.crop`` takes a negative count of tokens to remove in transformers 5.x; ``update``
concatenates into new tensors, so the prefix tensors are never written in place); a cache with other
than plain ``DynamicLayer`` s (sliding windows) is deep-copied per member instead.

Why not ``model.generate(..., cache=prefilled)``: plain greedy ``generate`` does slice the input to the
uncached tokens, but assisted decoding (prompt lookup, the default) does not on its first iteration — it
feeds the whole prompt plus candidates on top of the cached prefix, so positions and keys are wrong and
the answers differ (the earlier attempt's deep-copied cache + prompt lookup). So decoding here is an
explicit loop that does what ``generate`` does for batch size 1, greedy, no logits processors: each
forward gets the new tokens, a 2-D all-ones attention mask over cache + new tokens and ``logits_to_keep``;
the next token is the argmax of the float32 logits. With ``lookup_tokens`` > 0 it is prompt-lookup
decoding, with transformers' own candidate rule (:func:`lookup_candidates`, the first earlier match of
the last 2-gram, else 1-gram, over prompt + generated, up to ``lookup_tokens`` tokens, cut before an end
token): the forward checks ``[new token] + candidates`` at once, accepts the candidates up to the first
one that differs from the argmax plus the argmax after them, and crops the rejected candidates from
the cache. A verified token is exactly the greedy token, so the answer is the plain greedy one.

Exactness: the arithmetic is the same as the no-reuse path's up to how the forward passes chunk the
sequence (one prefill of the whole prompt there, prefix then suffix here), which the float kernels may
round differently in the last bits; the tests check token-for-token equality on a tiny model and on
SmolLM2, and the benchmark counts identical answers on the real context load.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass

MIN_SHARED_TOKENS = 64  # below this a shared prefix (e.g. only the chat template) is not worth a group
MAX_MATCHING_NGRAM = 2  # transformers' default for prompt lookup (generation_config.max_matching_ngram_size)


@dataclass(frozen=True)
class PrefixGroup:
    """Requests (indices into the list given to :func:`group_by_prefix`) sharing their first ``shared`` tokens."""

    members: tuple[int, ...]
    shared: int

    @property
    def saved_tokens(self) -> int:
        return (len(self.members) - 1) * self.shared


def common_prefix_length(a: Sequence[int], b: Sequence[int]) -> int:
    n = min(len(a), len(b))
    for position in range(n):
        if a[position] != b[position]:
            return position
    return n


def group_by_prefix(
    token_ids: Sequence[Sequence[int]], min_tokens: int = MIN_SHARED_TOKENS
) -> tuple[list[PrefixGroup], list[int]]:
    """``(groups, alone)``: groups of >= 2 requests sharing >= ``min_tokens`` leading tokens, chosen to
    save the most prefill, and the indices of the requests in no group (ascending). See the module docstring."""
    order = sorted(range(len(token_ids)), key=lambda index: list(token_ids[index]))
    # Shared tokens of each adjacent pair in sorted order, one short of either prompt (a token must stay new).
    adjacent = [
        min(common_prefix_length(token_ids[a], token_ids[b]), len(token_ids[a]) - 1, len(token_ids[b]) - 1)
        for a, b in zip(order, order[1:])
    ]

    def best(lo: int, hi: int) -> tuple[int, list[PrefixGroup]]:
        """Most saved tokens over the sorted run ``order[lo..hi]`` (inclusive) and its groups."""
        if lo == hi:
            return 0, []
        split = min(range(lo, hi), key=lambda k: adjacent[k])  # the run's shared length is its weakest link
        shared = adjacent[split]
        left, right = best(lo, split), best(split + 1, hi)
        parts = (left[0] + right[0], left[1] + right[1])
        whole = (hi - lo) * shared
        if shared >= min_tokens and whole >= parts[0]:
            return whole, [PrefixGroup(tuple(order[lo : hi + 1]), shared)]
        return parts

    groups = best(0, len(order) - 1)[1] if order else []
    grouped = {index for group in groups for index in group.members}
    return groups, [index for index in range(len(token_ids)) if index not in grouped]


def prefix_order(keys: Sequence) -> list[int]:
    """Indices of ``keys`` (rendered prompts, or message tuples) in sorted order: requests sharing a prefix
    are adjacent, a document's requests together, so a server's prefix cache (vLLM's
    ``enable_prefix_caching``, any OpenAI-compatible server with one) finds the prefix it just computed."""
    return sorted(range(len(keys)), key=lambda index: keys[index])


def lookup_candidates(sequence: Sequence[int], num_tokens: int, eos_ids: set[int]) -> list[int]:
    """Prompt-lookup candidates for the continuation of ``sequence``, by transformers'
    ``PromptLookupCandidateGenerator`` rule (module docstring)."""
    length = len(sequence)
    for size in range(min(MAX_MATCHING_NGRAM, length - 1), 0, -1):
        tail = list(sequence[length - size :])
        for start in range(length - size + 1):
            if list(sequence[start : start + size]) != tail:
                continue
            begin, end = start + size, min(start + size + num_tokens, length)
            if begin < end:
                chosen = list(sequence[begin:end])
                cut = next((i for i, token in enumerate(chosen) if token in eos_ids), None)
                return chosen if cut is None else chosen[:cut]
    return []


def _plain_dynamic(cache) -> bool:
    from transformers.cache_utils import DynamicLayer

    return all(type(layer) is DynamicLayer for layer in cache.layers)


def generate_group(
    model,
    token_ids: Sequence[Sequence[int]],
    shared: int,
    max_new_tokens: Sequence[int],
    eos_ids: set[int],
    lookup_tokens: int = 0,
) -> list[list[int]]:
    """Greedy continuations (token ids, an end token included when one was generated) of prompts that
    share their first ``shared`` tokens, prefilled once. ``shared`` must leave each prompt a token."""
    import torch
    from transformers import DynamicCache

    if any(len(ids) <= shared for ids in token_ids):
        raise ValueError(f"every prompt needs a token after the {shared} shared ones")
    device = model.device
    prefix = torch.tensor([list(token_ids[0][:shared])], device=device)
    prefix_cache = DynamicCache(config=model.config)
    with torch.inference_mode():
        model(
            input_ids=prefix,
            attention_mask=torch.ones_like(prefix),
            cache=prefix_cache,
            use_cache=True,
            logits_to_keep=1,
        )
    croppable = _plain_dynamic(prefix_cache)
    answers = []
    for ids, cap in zip(token_ids, max_new_tokens):
        cache = prefix_cache if croppable else copy.deepcopy(prefix_cache)
        answers.append(_decode(model, cache, list(ids), shared, cap, eos_ids, lookup_tokens))
        if croppable:
            cache.crop(-(cache.get_seq_length() - shared))
    return answers


def _decode(model, cache, ids: list[int], cached: int, cap: int, eos_ids: set[int], lookup_tokens: int) -> list[int]:
    """Greedy decoding of ``ids`` whose first ``cached`` tokens are in ``cache`` (see the module docstring)."""
    import torch

    sequence = list(ids)
    fresh = ids[cached:]  # tokens not yet in the cache
    generated: list[int] = []
    while len(generated) < cap:
        # As transformers: no candidates when one token is left (the forward's own token fills it).
        last = cap - len(generated) == 1
        candidates = lookup_candidates(sequence, lookup_tokens, eos_ids) if lookup_tokens and not last else []
        step = fresh + candidates
        total = cached + len(step)
        with torch.inference_mode():
            output = model(
                input_ids=torch.tensor([step], device=model.device),
                attention_mask=torch.ones((1, total), dtype=torch.long, device=model.device),
                cache=cache,
                use_cache=True,
                logits_to_keep=len(candidates) + 1,
            )
        picks = output.logits[0, -(len(candidates) + 1) :].to(torch.float32).argmax(dim=-1).tolist()
        matched = 0
        while matched < len(candidates) and candidates[matched] == picks[matched]:
            matched += 1
        accepted = picks[: matched + 1][: cap - len(generated)]
        stop = next((i for i, token in enumerate(accepted) if token in eos_ids), None)
        if stop is not None:
            accepted = accepted[: stop + 1]
        # Keep the fresh tokens and the accepted tokens but the last in the cache; the last is the next input.
        cached += len(fresh) + len(accepted) - 1
        rejected = cache.get_seq_length() - cached
        if rejected:
            cache.crop(-rejected)
        generated += accepted
        sequence += accepted
        fresh = accepted[-1:]
        if stop is not None:
            break
    return generated
