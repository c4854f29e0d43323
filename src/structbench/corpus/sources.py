"""The content digest of a corpus's source files, read where the files are read rather than in the plan.

The corpus step reruns when this digest changes, not when a file's modification time does
(``rules/corpus.smk`` passes it as the step's ``sources`` params): a data folder copied, synced or checked out
again with the same bytes reruns nothing."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

from structbench.fingerprint import hashed_files


def source_digest(paths: Sequence[str]) -> str:
    """One SHA-256 over the path and content digest of every file in ``paths``, one ``path<TAB>sha256`` line
    each in the given order (a file that is not there counts as ``missing``: Snakemake names it as a missing
    input). One short value whatever the number of files, as Snakemake stores and prints it with each output."""
    sources = [Path(source) for source in paths]
    digests = hashed_files([source for source in sources if source.is_file()], None)
    listing = "".join(f"{source}\t{digests.get(source, 'missing')}\n" for source in sources)
    return hashlib.sha256(listing.encode()).hexdigest()
