"""Declared overlap of a chunk set (docs/method.md §6, "Overlap"): tokens, or a share of the window.

Light on purpose (no tokenizer, no polars): the config check imports it. One declaration serves fixed
windows (``boundaries: fixed_overlap:<o>``) and peer chunkers (``chunkers.<name>.options.chunk_overlap``
or ``.overlap``):

* an integer ``o >= 1`` is ``o`` tokens shared by consecutive chunks (0 is no overlap: a tiling set);
* a decimal ``0 < o < 1`` is a share of the chunk's size: ``floor(o · size)`` tokens, so a share always
  leaves a stride ``size − overlap`` of at least one token, whatever size a document is matched to;
* anything else (negative, a decimal of 1 or more such as ``1.5`` or ``50.0``, a non-number, a boolean)
  is :class:`OverlapError` naming the key and the value.

``stride = size − overlap`` must be positive: a token overlap at or above ``t_max`` can never hold
(no window is longer), checked at config load by :meth:`Overlap.check_size`; one at or above a
document's size-matched window is an error at chunking time naming the document.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


class OverlapError(ValueError):
    """An overlap declaration that is not a token count or a share below 1, or that leaves no stride."""


@dataclass(frozen=True)
class Overlap:
    """``tokens`` (an int >= 1) or ``share`` (0 < share < 1): exactly one is set."""

    tokens: int | None = None
    share: float | None = None

    def tokens_at(self, size: int) -> int:
        """The overlap in tokens for a chunk of ``size`` tokens: ``tokens``, or ``floor(share · size)``."""
        return self.tokens if self.tokens is not None else math.floor(self.share * size)

    def check_size(self, size: int, where: str) -> None:
        """Raise :class:`OverlapError` unless a chunk of ``size`` tokens leaves a stride of at least one token."""
        if self.tokens_at(size) >= size:
            raise OverlapError(
                f"{where} = {self.text}: an overlap of {self.tokens_at(size)} tokens leaves no stride in a "
                f"chunk of {size} tokens (stride = size − overlap must be at least 1); declare fewer tokens "
                "or a share below 1 (e.g. 0.5)"
            )

    @property
    def text(self) -> str:
        """The declaration as written in config and in paths (``50``, ``0.5``)."""
        return str(self.tokens) if self.tokens is not None else repr(self.share)


def parse_overlap(value, where: str) -> Overlap | None:
    """The overlap ``value`` declares (None for 0: no overlap), or :class:`OverlapError` naming ``where``.

    ``value`` is an int or float from config, or the string of a ``fixed_overlap:<o>`` parameter."""
    number = value
    if isinstance(value, str):
        try:
            number = int(value) if value.lstrip("-").isdigit() else float(value)
        except ValueError:
            number = None
    if isinstance(number, bool) or not isinstance(number, (int, float)) or not math.isfinite(number):
        raise OverlapError(f"{where} = {value!r}: an overlap is a token count (e.g. 50) or a share below 1 (e.g. 0.5)")
    if number < 0:
        raise OverlapError(f"{where} = {value!r}: an overlap cannot be negative")
    if number == 0:
        return None
    if isinstance(number, int):
        return Overlap(tokens=number)
    if number >= 1:
        raise OverlapError(
            f"{where} = {value!r}: a share of the chunk's size must be below 1 (1 would repeat the whole chunk, "
            "leaving no stride); a token count is a whole number (e.g. 50)"
        )
    return Overlap(share=float(number))


def shared_characters(chunks):
    """A chunks table's realized overlap, per pair of consecutive chunks of a document (chunk_id order): the
    characters they share, ``max(0, end_{i-1} - start_i)``, as a polars Series (empty for a set without a
    pair). Polars is imported here, not at module level: the config check imports this module."""
    import polars as pl

    return (
        chunks.sort("chunk_id")
        .select((pl.col("end").shift(1).over("doc_id") - pl.col("start")).clip(lower_bound=0).alias("shared"))["shared"]
        .drop_nulls()
    )
