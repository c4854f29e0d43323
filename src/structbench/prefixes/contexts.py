"""LLM situating contexts for chunks (condition A1; Kuehlkamp et al., section 2.2; docs/method.md §7).

The Anthropic contextual-retrieval recipe: one LLM call per chunk, showing the whole document and the
chunk, asking for a short context that situates the chunk in the document for search retrieval
(``prompts/situate_chunk.txt`` holds the recipe's prompt). The answer is capped at
``context_max_tokens`` (the study's 80) counted with the study's tokenizer
(:func:`structbench.tokens.load_tokenizer`), the one that counts content and prefix tokens everywhere:
a longer answer is cut at a token boundary and marked ``truncated``. The model's own token cap
(``max_new_tokens``, default a quarter above the limit, since the model's tokenizer is not the study's)
only bounds generation time: small models rarely stop on their own, and every token past the cap is
thrown away, so a loose cap is pure cost (most of a CPU run's LLM time).

**Documents longer than the model's context.** When the prompt with the whole document does not fit
(the model's context less ``max_new_tokens``), the model sees a window of the document around the chunk
instead: the largest excerpt, grown evenly on both sides of the chunk and cut at paragraph breaks where
possible, that fits; ``[...]`` marks each side where document text was left out. The number of chunks
situated from a window is logged, never silent.

The output table (``CONTEXTS``: ``chunk_id, context, context_tokens, truncated``) is what
``structbench.prefixes.render_texts(..., prefix="context", contexts=table)`` takes. A request the backend
could not answer (e.g. a chunk alone longer than the context) gets an empty context and a logged warning.
Every response is cached by the LLM layer, so re-running a condition asks the model nothing new.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import polars as pl

from structbench.datamodel import PARAGRAPH_SEPARATOR, document_texts
from structbench.defaults import CONTEXT_MAX_TOKENS, ELISION, TOKENIZER
from structbench.llm import LLM, ChatRequest, load_prompt
from structbench.tokens import TokenCounter, load_tokenizer

log = logging.getLogger(__name__)

CONTEXTS = {"chunk_id": pl.Int64, "context": pl.String, "context_tokens": pl.Int32, "truncated": pl.Boolean}


def cap_tokens(text: str, limit: int, counter: TokenCounter) -> tuple[str, int, bool]:
    """``text`` cut to at most ``limit`` tokens of ``counter`` at a token boundary: ``(text, tokens, cut)``.

    The cut falls at the start of the first token past the limit (trailing whitespace removed); if
    re-tokenizing the cut text still gives more than ``limit`` tokens (a word split mid-way can tokenize
    differently), the cut moves back one token at a time until it fits."""
    text = text.strip()
    offsets = counter.offsets(text)
    if len(offsets) <= limit:
        return text, len(offsets), False
    keep = limit
    while keep > 0:
        cut = text[: offsets[keep][0]].rstrip()
        tokens = counter.count(cut)
        if tokens <= limit:
            return cut, tokens, True
        keep -= 1
    return "", 0, True


def document_window(text: str, start: int, end: int, fits: Callable[[str], bool]) -> str:
    """The largest excerpt of ``text`` around ``[start, end)`` for which ``fits(excerpt)`` holds.

    The excerpt grows by the same number of characters on each side (binary search over that radius),
    each side snapped inward to the nearest paragraph break inside the radius when there is one, and is
    marked with ``[...]`` where text was left out. The chunk itself is always included."""

    def excerpt(radius: int) -> str:
        left, right = max(0, start - radius), min(len(text), end + radius)
        if left > 0:
            brk = text.find(PARAGRAPH_SEPARATOR, left, start)
            left = brk + len(PARAGRAPH_SEPARATOR) if brk >= 0 else left
        if right < len(text):
            brk = text.rfind(PARAGRAPH_SEPARATOR, end, right)
            right = brk if brk >= 0 else right
        body = text[left:right].strip()
        return (ELISION + "\n" if left > 0 else "") + body + ("\n" + ELISION if right < len(text) else "")

    low, high = 0, max(start, len(text) - end)
    while low < high:
        middle = (low + high + 1) // 2
        if fits(excerpt(middle)):
            low = middle
        else:
            high = middle - 1
    return excerpt(low)


def situate_chunks(
    documents: pl.DataFrame,
    chunks: pl.DataFrame,
    llm: LLM,
    *,
    tokenizer: str | TokenCounter = TOKENIZER,
    context_max_tokens: int = CONTEXT_MAX_TOKENS,
    max_new_tokens: int | None = None,
) -> pl.DataFrame:
    """One situating context per chunk of ``chunks`` (a CHUNKS table): a ``CONTEXTS`` table in chunk order.

    The chunk shown to the model is its content (its span of the flat text, stripped), the same text
    ``render_texts`` embeds. See the module docstring for the cap and for long documents."""
    prompt = load_prompt("situate_chunk")
    counter = load_tokenizer(tokenizer)
    answer_tokens = max_new_tokens or -(-5 * context_max_tokens // 4)
    room = llm.context_tokens - answer_tokens
    texts = document_texts(documents)
    ordered = chunks.sort("chunk_id")
    missing = sorted(set(ordered["doc_id"].to_list()) - set(texts))
    if missing:
        raise ValueError(f"chunks refer to documents missing from the documents table: {missing[:5]}")
    requests, windowed = [], 0
    for doc_id, start, end in ordered.select("doc_id", "start", "end").iter_rows():
        text = texts[doc_id]
        chunk = text[start:end].strip()
        messages = prompt.render(document=text, chunk=chunk)
        if llm.count_tokens(messages) > room:
            shown = document_window(
                text,
                start,
                end,
                lambda excerpt: llm.count_tokens(prompt.render(document=excerpt, chunk=chunk)) <= room,  # noqa: B023 (called here)
            )
            messages = prompt.render(document=shown, chunk=chunk)
            windowed += 1
        requests.append(ChatRequest.of(messages, prompt_version=prompt.version_id, max_new_tokens=answer_tokens))
    if windowed:
        log.info(
            "%d of %d chunks were situated from a document window (document longer than the %d-token context of %s)",
            windowed,
            len(requests),
            llm.context_tokens,
            llm.spec.model,
        )
    rows, failed = [], 0
    for chunk_id, response in zip(ordered["chunk_id"].to_list(), llm.chat(requests)):
        if not response.ok:
            failed += 1
            log.warning("chunk %d: no context (%s)", chunk_id, response.error)
        context, tokens, truncated = cap_tokens(response.text if response.ok else "", context_max_tokens, counter)
        rows.append((chunk_id, context, tokens, truncated))
    table = pl.DataFrame(rows, schema=CONTEXTS, orient="row")
    log.info(
        "situated %d chunks: %d contexts cut to %d tokens, %d empty after a failed request, mean %.1f tokens",
        table.height,
        int(table["truncated"].sum()),
        context_max_tokens,
        failed,
        table["context_tokens"].mean() or 0.0,
    )
    return table
