"""Cores an embedding job asks for, sized to the texts it embeds.

An embedding job's fixed cost is start-up: importing sentence-transformers and loading the model, about 6 s of
one core on the 2-core development machine, while encoding a text takes tens of milliseconds. A job of a few
dozen texts that asked for its rule's full thread count (8, scaled down to ``--cores``) held every core for
that start-up and ran alone: the default run's 19 embedding jobs ran one after another, 180 s of its 440 s
wall. Sized to its texts, such a job asks for one core and runs beside another job. Vectors do not depend on
the thread count (every pass runs on one intra-op thread, the threads run whole passes side by side:
``embedding/passes.py``), so this changes when a job runs, never what it writes.
"""

from __future__ import annotations

import os

# Texts that keep one thread busy long enough to be worth another core's wait through the start-up: about
# 10 s of MiniLM encoding on one core of the development machine, past the ~6 s start-up.
TEXTS_PER_THREAD = 256


def threads_for_texts(n_texts: int | None, most: int) -> int:
    """One thread per :data:`TEXTS_PER_THREAD` texts begun, at least 1 and at most ``most`` (the rule's own
    count); ``most`` where the count is not known (``None``: the table does not exist yet, as in a dry run)."""
    if n_texts is None:
        return most
    if n_texts < 0 or most < 1:
        raise ValueError(f"threads_for_texts: n_texts={n_texts}, most={most}")
    return max(1, min(most, -(-n_texts // TEXTS_PER_THREAD)))


def table_rows(path: str | os.PathLike) -> int | None:
    """Rows of the Parquet table at ``path`` from its footer alone (no column is read); ``None`` where the file
    does not exist yet: a dry run plans before its inputs are made."""
    if not os.path.exists(path):
        return None
    import pyarrow.parquet as pq

    return pq.read_metadata(path).num_rows
