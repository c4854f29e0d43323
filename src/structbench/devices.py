"""The torch device of a GPU-kind step, shared by embedding, reranking and the LLM backend.

Its own module so that a step importing it pulls in no other step's dependencies (tests/workflow/test_rules.py
checks each rule's environment against what its code reaches)."""

from __future__ import annotations


def pick_device(requested: str, what: str = "embedder") -> str:
    """The torch device for ``auto`` | ``cpu`` | ``cuda``; ``cuda`` without a visible GPU is an error
    naming ``what`` asked for it."""
    import torch

    if requested == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if requested == "cuda" and not torch.cuda.is_available():
        raise RuntimeError(f"{what} device 'cuda' requested but no GPU is visible; use 'auto' or 'cpu'")
    return requested
