"""Statistics of the situating contexts (condition A1's prefixes) for the report.

Kept apart from :mod:`structbench.prefixes.contexts`, which calls the LLM: this module imports nothing of
the LLM layer, so the CPU job that merges and summarizes the contexts stays light.
"""

from __future__ import annotations

import polars as pl


def context_summary(contexts: pl.DataFrame) -> dict:
    """Length distribution of one chunk set's situating contexts (``contexts.CONTEXTS``), in study tokens:
    mean and max, how many were cut at the cap, how many are empty (a failed request)."""
    tokens = contexts["context_tokens"]
    return {
        "chunks": contexts.height,
        "mean_context_tokens": float(tokens.mean()) if contexts.height else float("nan"),
        "max_context_tokens": int(tokens.max()) if contexts.height else 0,
        "truncated": int(contexts["truncated"].sum()),
        "empty": int((tokens == 0).sum()),
    }
