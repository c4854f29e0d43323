"""Chunking time against text length: is it linear? structbench now vs its pre-fallback code, same run.

    .venv/bin/python benchmarks/bench_chunk_scaling.py [--sizes 250,500,1000,2000] [--baseline-max 2000]
        [--repeat 1] [--qasper ../shared/data/qasper/qasper-dev-v0.3.rebuilt.json]

Input: one document holding one paragraph of ``size`` KB, of two kinds — punctuated prose (sentences of
6-30 words, seeded) and the same words with no punctuation at all (one "sentence" with no boundary).
Each size is chunked with ``structural_chunks`` and ``fixed_chunks`` (size-matched to the structural
set) at the study's ``t_max``/``t_min``; the time includes tokenizing and sentence segmentation (the
sentence cache is cleared before every run), as a workflow job pays them.

Baseline, named ``dabaef8``: ``src/structbench/boundaries.py`` as of commit dabaef8 (before the
fallback cuts and the linear-time split), read with ``git show`` into a temporary module and run on
the same inputs against the same sentence segmenter and tokenizer. It predates the ``cut`` column, so
it builds its table with the schema without it. Without git (or with ``--baseline-max 0``) the
baseline is skipped; the timings measured for it when the work was done were 1.0 / 2.9 / 9.8 / 48.6 s
for a single 250 KB / 500 KB / 1 MB / 2 MB paragraph.

Printed per kind and size, for each contender: CPU seconds of the process (all threads; on a machine
shared with other jobs this is steadier than wall time, also printed), the largest chunk (the
baseline leaves unpunctuated text as one chunk far over ``t_max``), and ``time(2 MB) / time(250 KB)``
on CPU seconds: a linear chunker gives about 8 for an 8-fold text, a quadratic one about 64. Each
timing is the best of ``--repeat`` runs.

With ``--qasper`` the same two contenders also chunk a real corpus of ordinary papers (QASPER, whose
paragraphs are short), to show the linear-time split costs normal prose nothing; the chunks are
compared too (identical except where the baseline passed ``t_max`` or used a fallback cut).
"""

from __future__ import annotations

import argparse
import inspect
import random
import sys
import time
from pathlib import Path

import polars as pl

REPO = Path(__file__).resolve().parents[1]
BASELINE_COMMIT = "dabaef8"
WORDS = [
    "model",
    "data",
    "results",
    "method",
    "training",
    "language",
    "task",
    "performance",
    "approach",
    "baseline",
    "dataset",
    "features",
    "network",
    "attention",
    "layer",
    "encoder",
    "decoder",
    "sentence",
    "token",
    "corpus",
    "evaluation",
    "accuracy",
    "retrieval",
    "query",
    "document",
    "structure",
    "section",
    "heading",
    "chunk",
    "embedding",
    "vector",
    "semantic",
]


def prose(n_chars: int, seed: int) -> str:
    """Sentences of 6-30 random words, capitalized and ended with a full stop, up to ``n_chars``."""
    rng = random.Random(seed)
    sentences, size = [], 0
    while size < n_chars:
        sentence = " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 30))).capitalize() + "."
        sentences.append(sentence)
        size += len(sentence) + 1
    return " ".join(sentences)[:n_chars].rstrip()


def unpunctuated(n_chars: int, seed: int) -> str:
    return prose(n_chars, seed).replace(".", "")


def one_paragraph_tables(text: str):
    """Documents, paragraphs and sections tables of one document that is one paragraph."""
    from structbench.datamodel import DOCUMENTS, PARAGRAPHS, SECTIONS

    documents = pl.DataFrame(
        [dict(corpus="bench", doc_id="d", title="T", text=text, n_chars=len(text), meta="{}")], schema=DOCUMENTS
    )
    paragraphs = pl.DataFrame([dict(doc_id="d", para_idx=0, start=0, end=len(text))], schema=PARAGRAPHS)
    sections = pl.DataFrame(
        [
            dict(
                doc_id="d",
                section_id=0,
                title="A",
                level=1,
                path=["T", "A"],
                para_start=0,
                para_end=1,
                start=0,
                end=len(text),
                top_section_id=0,
            )
        ],
        schema=SECTIONS,
    )
    return documents, paragraphs, sections


def load_baseline():
    """The boundaries module of BASELINE_COMMIT as a module object, or None without git."""
    from git_baseline import module_at

    from structbench.datamodel import CHUNKS

    # structbench.tables was renamed structbench.datamodel after the baseline (same CHUNKS and empty)
    renames = {"from structbench.tables import": "from structbench.datamodel import"}
    module = module_at(BASELINE_COMMIT, "src/structbench/boundaries.py", "boundaries_baseline", renames)
    if module is None:
        print(f"quoting {BASELINE_COMMIT}'s recorded times instead", file=sys.stderr)
        return None
    module.CHUNKS = {column: dtype for column, dtype in CHUNKS.items() if column != "cut"}  # its own schema
    return module


def time_chunking(module, tables, tokenizer, t_max: int, t_min: int) -> tuple[float, float, int]:
    """CPU and wall seconds for structural + fixed chunks of ``tables`` (cold sentence cache), and the largest chunk."""
    from structbench.sentences import clear_cache

    documents, paragraphs, sections = tables
    # ``module`` is the current ``structbench.chunking`` (one chunker signature: the corpus tables and the
    # tokenizer, then ``reference_chunks=`` by keyword) or the BASELINE_COMMIT module, whose ``fixed_chunks``
    # keeps its old ``(documents, reference_chunks, tokenizer, *, paragraphs, sections)``. This branches on
    # whether ``reference_chunks`` is keyword-only: the old signature accepts it by keyword too (it is
    # positional-or-keyword there), so accepting it would not tell the two apart. Decided before the clock starts.
    reference = inspect.signature(module.fixed_chunks).parameters["reference_chunks"]
    current = reference.kind is inspect.Parameter.KEYWORD_ONLY
    clear_cache()
    cpu_started, wall_started = time.process_time(), time.perf_counter()
    structural = module.structural_chunks(documents, paragraphs, sections, tokenizer, t_max=t_max, t_min=t_min)
    if current:
        fixed = module.fixed_chunks(
            documents, paragraphs, sections, tokenizer, reference_chunks=structural, t_min=t_min
        )
    else:  # the baseline's own signature
        fixed = module.fixed_chunks(
            documents, structural, tokenizer, paragraphs=paragraphs, sections=sections, t_min=t_min
        )
    cpu, wall = time.process_time() - cpu_started, time.perf_counter() - wall_started
    module.assert_tiling(documents, structural)
    module.assert_tiling(documents, fixed)
    return cpu, wall, int(max(structural["n_tokens"].max(), fixed["n_tokens"].max()))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="250,500,1000,2000", help="paragraph sizes in KB (1 KB = 1000 chars)")
    parser.add_argument(
        "--baseline-max",
        type=int,
        default=2000,
        help="largest size (KB) to run the baseline on (it is quadratic); 0 skips it",
    )
    parser.add_argument("--repeat", type=int, default=1, help="best of this many runs per timing")
    parser.add_argument("--seed", type=int, default=20260710)
    parser.add_argument("--qasper", type=Path, help="also time a QASPER JSON file (e.g. the dev split)")
    args = parser.parse_args(argv)

    from structbench import chunking
    from structbench.defaults import T_MAX, T_MIN
    from structbench.tokens import load_tokenizer

    sizes = [int(size) for size in args.sizes.split(",")]
    tokenizer = load_tokenizer()
    baseline = load_baseline() if args.baseline_max > 0 else None
    contenders = [("now", chunking)] + ([(BASELINE_COMMIT, baseline)] if baseline else [])
    print(
        f"one paragraph per document; structural + fixed chunks, t_max={T_MAX}, t_min={T_MIN}; "
        f"baseline {BASELINE_COMMIT if baseline else 'skipped'}"
    )
    print(
        f"{'kind':<13}{'KB':>6}{'tokens':>9}"
        + "".join(f"{name + ' cpu s':>16}{'wall s':>9}{'max tok':>9}" for name, _ in contenders)
    )
    for kind, make in (("prose", prose), ("unpunctuated", unpunctuated)):
        times: dict[str, dict[int, float]] = {name: {} for name, _ in contenders}
        for size in sizes:
            text = make(size * 1000, args.seed)
            tables = one_paragraph_tables(text)
            row = f"{kind:<13}{size:>6}{tokenizer.count(text):>9}"
            for name, module in contenders:
                if module is baseline and size > args.baseline_max:
                    row += f"{'-':>16}{'-':>9}{'-':>9}"
                    continue
                runs = [time_chunking(module, tables, tokenizer, T_MAX, T_MIN) for _ in range(args.repeat)]
                cpu, wall, largest = min(runs, key=lambda run: run[0])
                times[name][size] = cpu
                row += f"{cpu:>16.2f}{wall:>9.2f}{largest:>9}"
            print(row, flush=True)
        smallest, largest = min(sizes), max(sizes)
        for name, measured in times.items():
            if smallest in measured and largest in measured and smallest != largest:
                ratio = measured[largest] / measured[smallest]
                print(
                    f"  {kind} {name}: cpu time({largest} KB) / cpu time({smallest} KB) = {ratio:.1f} "
                    f"(text x{largest / smallest:.0f}; linear ~{largest / smallest:.0f}, "
                    f"quadratic ~{(largest / smallest) ** 2:.0f})"
                )
        if BASELINE_COMMIT in times:
            for size in sizes:
                if size in times[BASELINE_COMMIT]:
                    print(
                        f"  {kind} {size} KB: cpu time {BASELINE_COMMIT} / now = "
                        f"{times[BASELINE_COMMIT][size] / times['now'][size]:.1f}x"
                    )
    if args.qasper:
        time_corpus(args.qasper, contenders, tokenizer, args.repeat, T_MAX, T_MIN)
    return 0


def time_corpus(path: Path, contenders, tokenizer, repeat: int, t_max: int, t_min: int) -> None:
    """CPU seconds of structural + fixed chunks of a QASPER file per contender, and how many documents differ."""
    from structbench.corpus.qasper import load_qasper

    corpus = load_qasper([path])
    tables = (corpus.documents, corpus.paragraphs, corpus.sections)
    n_tokens = sum(tokenizer.count_batch(corpus.documents["text"].to_list()))
    print(f"\nQASPER {path.name}: {corpus.documents.height} papers, {n_tokens:,} tokens")
    measured, chunks = {}, {}
    for name, module in contenders:
        runs = [time_chunking(module, tables, tokenizer, t_max, t_min) for _ in range(repeat)]
        measured[name] = min(run[0] for run in runs)
        chunks[name] = module.structural_chunks(*tables, tokenizer, t_max=t_max, t_min=t_min)
        print(f"  {name}: {measured[name]:.2f} cpu s (structural + fixed)")
    if BASELINE_COMMIT in measured:
        print(f"  cpu time {BASELINE_COMMIT} / now = {measured[BASELINE_COMMIT] / measured['now']:.2f}x")
        columns = ["doc_id", "start", "end", "n_tokens", "section_id", "path"]
        now, then = (chunks[name].select(columns) for name in ("now", BASELINE_COMMIT))
        differing = now.join(then, on=columns, how="anti")["doc_id"].unique().to_list()
        over = then.filter(pl.col("n_tokens") > t_max)["doc_id"].unique().to_list()
        print(
            f"  structural chunks: {len(differing)} papers differ from {BASELINE_COMMIT}, "
            f"{len(set(differing) - set(over))} of them without a baseline chunk over t_max"
        )


if __name__ == "__main__":
    sys.exit(main())
