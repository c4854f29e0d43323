"""Situating contexts (A1): the 80-token cap in study tokens, the table render_texts takes, caching,
and document windows for documents longer than the model's context."""

import polars as pl
import pytest
from llm_testing import ScriptedBackend, build_tiny_model

from structbench.corpus.build import build_tables
from structbench.datamodel import CHUNKS, ParsedDocument, SectionSpec
from structbench.llm import LLM, LLMSpec, ResponseCache, load_llm, load_prompt
from structbench.prefixes import render_texts
from structbench.prefixes.contexts import CONTEXTS, cap_tokens, document_window, situate_chunks
from structbench.tokens import load_tokenizer

PARAGRAPHS = [f"Paragraph {i}: the keeper checks hive {i} for queen cells and stores." for i in range(12)]


@pytest.fixture(scope="module")
def counter():
    return load_tokenizer()


def corpus(paragraphs=PARAGRAPHS):
    doc = ParsedDocument("bees", "Rooftop bees", list(paragraphs), [SectionSpec("", 1, 0, len(paragraphs))])
    documents, paragraph_table, _ = build_tables("test", [doc])
    # one chunk per three paragraphs, tiling the document (the separator stays with the chunk before it)
    starts = paragraph_table["start"].to_list()[::3]
    ends = starts[1:] + [documents["n_chars"][0]]
    chunks = pl.DataFrame(
        {
            "chunk_id": range(len(starts)),
            "doc_id": "bees",
            "start": starts,
            "end": ends,
            "n_tokens": 10,
            "section_id": 0,
            "path": [["Rooftop bees"]] * len(starts),
            "cut": ["paragraph"] * (len(starts) - 1) + ["end"],
        },
        schema=CHUNKS,
    )
    return documents, chunks


def chunk_of(request) -> str:
    return request.messages[0][1].split("<chunk>\n", 1)[1].split("\n</chunk>", 1)[0]


def test_cap_cuts_at_a_token_boundary(counter):
    text = " ".join(f"word{i}" for i in range(100))
    capped, tokens, cut = cap_tokens(text, 80, counter)
    assert cut and tokens == counter.count(capped) <= 80 and text.startswith(capped)
    assert counter.count(capped + " x") > 80 or len(capped) == len(text)  # nothing more fits
    assert cap_tokens("  short context. ", 80, counter) == ("short context.", 3, False)
    capped, tokens, cut = cap_tokens("unbelievably " * 40, 7, counter)
    assert tokens == counter.count(capped) <= 7 and cut


def test_contexts_are_capped_counted_and_rendered(counter):
    documents, chunks = corpus()
    long_answer = "This chunk describes hive inspections " * 30

    def respond(request):
        return long_answer if "Paragraph 3:" in chunk_of(request) else f"Hives, part {chunk_of(request)[10]}."

    backend = ScriptedBackend(respond)
    table = situate_chunks(documents, chunks, LLM(backend, LLMSpec("transformers", "scripted")), tokenizer=counter)
    assert table.schema == pl.Schema(CONTEXTS) and table["chunk_id"].to_list() == [0, 1, 2, 3]
    assert table["truncated"].to_list() == [False, True, False, False]
    assert table["context_tokens"].to_list() == [counter.count(c) for c in table["context"].to_list()]
    assert table["context_tokens"][1] == 80 and long_answer.startswith(table["context"][1])
    assert table["context"][0] == "Hives, part 0."
    # each chunk is shown with the whole document, as the recipe says
    assert all("<document>\n" + documents["text"][0] + "\n</document>" in r.messages[0][1] for r in backend.requests)
    texts, report = render_texts(documents, chunks, "context", counter, contexts=table)
    assert texts["prefix"][1] == "[" + table["context"][1] + "]\n\n"
    assert report["max_prefix_tokens"] <= 80 + 3  # brackets and the blank line


def test_contexts_are_cached(tmp_path, counter):
    documents, chunks = corpus()
    backend = ScriptedBackend(lambda request: "A context.")
    llm = LLM(backend, LLMSpec("transformers", "scripted"), ResponseCache(tmp_path))
    first = situate_chunks(documents, chunks, llm, tokenizer=counter)
    second = situate_chunks(documents, chunks, llm, tokenizer=counter)
    assert backend.calls == 1 and first.equals(second)


def test_long_documents_are_shown_as_a_window_around_the_chunk(counter):
    documents, chunks = corpus()
    full_words = ScriptedBackend(lambda r: "").count_tokens([{"role": "user", "content": documents["text"][0]}])
    # room for the document's word count: the whole prompt (document + instructions + chunk) does not fit
    answer = 100  # the default model cap: contexts.max_tokens (80) plus a quarter
    backend = ScriptedBackend(lambda request: "Context.", context_tokens=full_words + answer)
    llm = LLM(backend, LLMSpec("transformers", "scripted"))
    situate_chunks(documents, chunks, llm, tokenizer=counter)
    for request, (start, end) in zip(backend.requests, chunks.select("start", "end").rows()):
        shown = request.messages[0][1].split("<document>\n", 1)[1].split("\n</document>", 1)[0]
        assert documents["text"][0][start:end].strip() in shown
        assert backend.count_tokens(request.as_dicts()) <= backend.context_tokens - answer
        assert request.max_new_tokens == answer
        assert "[...]" in shown and len(shown) < len(documents["text"][0])


def test_document_window_grows_evenly_and_cuts_at_paragraph_breaks():
    text = "\n\n".join(f"p{i} " + "x" * 20 for i in range(10))  # 10 paragraphs of 24 chars
    start = text.index("p5")
    end = start + 23  # "p5 " + 20 x
    window = document_window(text, start, end, lambda excerpt: len(excerpt) <= 90)
    assert window == "[...]\np4 " + "x" * 20 + "\n\np5 " + "x" * 20 + "\n\np6 " + "x" * 20 + "\n[...]"
    assert document_window(text, start, end, lambda excerpt: True) == text
    assert document_window(text, start, end, lambda excerpt: False) == "[...]\n" + text[start:end] + "\n[...]"


def test_real_transformers_backend_windows_a_document_beyond_its_context(tmp_path, counter):
    """A tiny random Llama with a 1024-token context: the document does not fit, so every chunk is
    situated from a window; random weights produce long gibberish, which the cap cuts."""
    model = build_tiny_model(tmp_path / "model", context=1024)
    paragraphs = [p + " More about wax, frames and honey." for p in PARAGRAPHS]
    documents, chunks = corpus(paragraphs)
    llm = load_llm({"backend": "transformers", "model": str(model), "max_new_tokens": 40}, tmp_path / "llm")
    whole = load_prompt("situate_chunk").render(document=documents["text"][0], chunk="")
    assert llm.count_tokens(whole) > 1024 - 40  # no chunk would fit with the whole document
    table = situate_chunks(documents, chunks, llm, tokenizer=counter, context_max_tokens=12, max_new_tokens=40)
    assert table.height == 4 and (table["context_tokens"] <= 12).all() and (table["context_tokens"] > 0).all()
    assert table["context_tokens"].to_list() == [counter.count(c) for c in table["context"].to_list()]
    assert table["truncated"].any()
