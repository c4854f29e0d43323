"""Table-of-contents routing (Li (The Chunk Was Never in the Document), after STAIR; docs/method.md §8): the LLM names
the section.

Per query: the candidate documents are those of its top ``candidate_hits`` flat hits (in the order of
their best hit); the LLM reads their numbered contents — one entry per routing unit, a document plus a
top-level section, rendered "Document > Section" (:mod:`structbench.retrieval.routing`) — and the question, and
answers ``{"section": <number>}`` (``prompts/toc_route.txt``; the request carries :func:`toc_schema`, with the
number bounded by the contents' length, so a constrained backend always names an entry). Every reply is
read by its first integer, JSON or not. A reply that is not a number in range falls back to the
entry whose title embedding is nearest the query (:func:`structbench.retrieval.routing.choose_entry`); each
routing row records which happened (``source``: ``llm`` or ``fallback``) and the raw reply, and the
registered metric ``toc_fallback`` counts the fallbacks per query.

The routed unit's chunks then lead the ranking and flat search fills the rest
(:func:`structbench.retrieval.search.toc_search`).

**Contents longer than the model's context.** When the prompt does not fit the model's context less
the reply's token cap, the lowest-ranked candidate documents are left out, one at a time, until it fits
(at least one document stays; a prompt that still does not fit gets the backend's error and the
fallback). The number of queries so shortened is logged, and ``toc_entries`` records what each query's
contents held.

Every response is cached by the LLM layer, so re-running a condition asks the model nothing new.
"""

from __future__ import annotations

import logging

import numpy as np
import polars as pl

from structbench.defaults import TOC_CANDIDATE_HITS
from structbench.llm import LLM, ChatRequest, load_prompt
from structbench.retrieval.routing import (
    candidate_documents,
    choose_entry,
    chunk_units,
    contents_units,
    routing_table,
    section_units,
    toc_contents,
    toc_schema,
)
from structbench.retrieval.search import flat_search
from structbench.tokens import DEFAULT_TOKENIZER, TokenCounter

log = logging.getLogger(__name__)

# Generation cap of a reply: {"section": 12} (about 7 tokens), or a short phrase around a number
# ("Section 12"); a longer answer has failed the instruction anyway and the first integer in what was
# generated decides.
REPLY_TOKENS = 12


def route_toc(
    chunk_vectors: np.ndarray,
    query_vectors: np.ndarray,
    queries: pl.DataFrame,
    *,
    chunks: pl.DataFrame,
    sections: pl.DataFrame,
    title_vectors: np.ndarray,
    llm: LLM,
    candidate_hits: int = TOC_CANDIDATE_HITS,
    use_gpu: bool = False,
    max_title_tokens: int | None = None,
    tokenizer: TokenCounter | str = DEFAULT_TOKENIZER,
) -> pl.DataFrame:
    """The TOC router's routing table: one row per query (row i of ``query_vectors`` is query i of
    ``queries``), the unit it routed to, ``score`` the cosine of the query and the unit's title vector.

    ``title_vectors`` row u embeds the title of unit u of :func:`structbench.retrieval.routing.section_units`
    (``sections``), with the embedder of ``query_vectors``. ``max_title_tokens`` bounds each contents entry
    in ``tokenizer`` tokens by the chunk prefixes' rule (:func:`structbench.retrieval.routing.section_units`);
    the workflow passes half of the condition's ``t_max``."""
    if candidate_hits < 1:
        raise ValueError(f"candidate_hits must be >= 1, got {candidate_hits}")
    units = section_units(sections, max_title_tokens=max_title_tokens, tokenizer=tokenizer)
    chunk_unit = chunk_units(chunks, sections, units)
    if title_vectors.shape[0] != units.height:
        raise ValueError(
            f"{title_vectors.shape[0]} title vectors for {units.height} sections: embed the titles of "
            "section_units(sections) of the same structure"
        )
    if chunk_vectors.shape[0] != chunk_unit.size:
        raise ValueError(f"{chunk_vectors.shape[0]} chunk vectors for {chunk_unit.size} chunks")
    qids, questions = queries["qid"].to_list(), queries["text"].to_list()
    candidates = candidate_documents(
        flat_search(chunk_vectors, query_vectors, qids, top_k=candidate_hits, use_gpu=use_gpu), chunks
    )
    prompt = load_prompt("toc_route")
    titles = units["title"].to_list()
    room = llm.context_tokens - REPLY_TOKENS
    requests, entries_of, shortened = [], [], 0
    for qid, question in zip(qids, questions):
        documents = list(candidates.get(qid, []))
        while True:
            entries = contents_units(documents, units)
            messages = prompt.render(contents=toc_contents([titles[u] for u in entries]), question=question)
            if len(documents) <= 1 or llm.count_tokens(messages) <= room:
                break
            documents.pop()
        shortened += len(documents) < len(candidates.get(qid, []))
        entries_of.append(entries)
        requests.append(
            ChatRequest.of(
                messages, schema=toc_schema(len(entries)), prompt_version=prompt.version_id, max_new_tokens=REPLY_TOKENS
            )
        )
    if shortened:
        log.info(
            "%d of %d queries: candidate documents left out to fit the %d-token context of %s",
            shortened,
            len(qids),
            llm.context_tokens,
            llm.spec.model,
        )
    rows = []
    for row, (qid, entries, response) in enumerate(zip(qids, entries_of, llm.chat(requests))):
        # The raw text decides, JSON or not (a server may ignore the schema); a failed request has none.
        reply = response.text or None
        if reply is None:
            log.warning("query %s: no reply (%s); falling back to the nearest title", qid, response.error)
        entry_vectors = title_vectors[entries]
        chosen, source = choose_entry(reply, query_vectors[row], entry_vectors)
        score = float(np.dot(entry_vectors[chosen], query_vectors[row]))
        rows.append((qid, 1, entries[chosen], score, source, len(entries), response.text))
    kept = pl.DataFrame(
        rows,
        orient="row",
        schema={
            "qid": pl.String,
            "route_rank": pl.Int32,
            "unit": pl.Int64,
            "score": pl.Float32,
            "source": pl.String,
            "toc_entries": pl.Int32,
            "reply": pl.String,
        },
    )
    fallbacks = int((kept["source"] == "fallback").sum())
    log.info(
        "TOC routing: %d queries, %d answered with a section number in range, %d fell back to the nearest "
        "title; mean %.1f contents entries",
        kept.height,
        kept.height - fallbacks,
        fallbacks,
        kept["toc_entries"].mean() or 0.0,
    )
    return routing_table(kept, units, chunk_unit)
