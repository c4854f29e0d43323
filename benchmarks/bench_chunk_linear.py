"""Is ``chunk_markdown`` linear in the text? One heading-less paragraph of 4,000, 16,000 and 64,000 sentences.

    .venv/bin/python benchmarks/bench_chunk_linear.py [--sentences 4000,16000,64000] [--repeat 1]

Input: one Markdown paragraph of ``n`` sentences of 6-20 words (seeded), no heading, so the whole text is one
section that the structural chunker must split at sentence boundaries into ``t_max``-sized parts. Each size is
chunked by the practitioner API at its defaults, with structbench's sentence caches cleared before every run (a
first call pays segmentation, as a new document does).

Printed per size: CPU seconds of the process (all threads; steadier than wall time on a shared machine),
wall seconds, the chunk count, and at the end ``time(64k) / time(16k)`` on CPU seconds. A linear chunker
gives about 4 for a 4-fold text; the goal is within 5 (PASS, else FAIL and exit status 1). Each timing is
the best of ``--repeat`` runs.
"""

from __future__ import annotations

import argparse
import random
import sys
import time

from bench_chunk_scaling import WORDS  # the sibling benchmark's vocabulary (this folder is on sys.path)

GOAL_PER_4X = 5.0  # time(64k) / time(16k) must stay within this for a 4-fold text (4 is linear)


def paragraph(n_sentences: int, seed: int) -> str:
    """``n_sentences`` capitalized sentences of 6-20 random words, each ended by a full stop, on one line."""
    rng = random.Random(seed)
    sentences = (
        " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 20))).capitalize() + "." for _ in range(n_sentences)
    )
    return " ".join(sentences)


def time_chunking(text: str) -> tuple[float, float, int]:
    """CPU and wall seconds of one cold ``chunk_markdown(text)``, and its number of chunks."""
    from structbench.api import chunk_markdown
    from structbench.sentences import clear_cache

    clear_cache()
    cpu_started, wall_started = time.process_time(), time.perf_counter()
    chunks = chunk_markdown(text)
    return time.process_time() - cpu_started, time.perf_counter() - wall_started, len(chunks)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sentences", default="4000,16000,64000", help="paragraph sizes in sentences")
    parser.add_argument("--repeat", type=int, default=1, help="best of this many runs per size")
    parser.add_argument("--seed", type=int, default=20260710)
    args = parser.parse_args(argv)

    from structbench.api import chunk_markdown

    chunk_markdown("Warm-up: the tokenizer and the segmenter load here, outside the timings.")
    sizes = [int(size) for size in args.sentences.split(",")]
    print(f"{'sentences':>10}{'chars':>12}{'cpu s':>9}{'wall s':>9}{'chunks':>8}")
    cpu_seconds = {}
    for size in sizes:
        text = paragraph(size, args.seed)
        runs = [time_chunking(text) for _ in range(args.repeat)]
        cpu, wall, n_chunks = min(runs)
        cpu_seconds[size] = cpu
        print(f"{size:>10}{len(text):>12}{cpu:>9.2f}{wall:>9.2f}{n_chunks:>8}", flush=True)
    if len(sizes) < 2:
        return 0
    small, large = sizes[-2], sizes[-1]
    ratio = cpu_seconds[large] / cpu_seconds[small]
    goal = GOAL_PER_4X * (large / small) / 4  # the same allowance over linear for other size steps
    verdict = "PASS" if ratio <= goal else "FAIL"
    print(
        f"{verdict} cpu time({large}) / cpu time({small}) = {ratio:.1f} (text x{large / small:.0f}; goal <= {goal:.1f})"
    )
    return 0 if verdict == "PASS" else 1


if __name__ == "__main__":
    sys.exit(main())
