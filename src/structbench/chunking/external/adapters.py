"""Adapters: (source text, size) -> verified (start, end) spans in the source, one per peer library.

Each library is imported inside its adapter, only when a chunker of it runs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from structbench.chunking.external.chunker_spec import ChunkerSpec
from structbench.tokens import TokenCounter

_SEMCHUNK_CACHE = 1 << 16  # semchunk memoizes token counts without bound by default; one cache per size here


# --------------------------------------------------------------------------------------------------
# Adapters: (source text, size) -> verified (start, end) spans in the source


Adapter = Callable[[str, int], list[tuple[int, int]]]


class _Unverifiable(Exception):
    """A chunk whose text is not in the input where the library says (or anywhere ahead, when searched)."""

    def __init__(self, chunk: str):
        super().__init__(chunk)
        self.chunk = chunk


def _checked(source: str, found: Iterable[tuple[int, int, str]]) -> list[tuple[int, int]]:
    """Spans whose text the library reported alongside: keep each only if the input holds it there."""
    spans = []
    for start, end, chunk in found:
        if source[start:end] != chunk:
            raise _Unverifiable(chunk)
        spans.append((start, end))
    return spans


def _searched(source: str, chunks: Iterable[str], overlapping: bool = False) -> list[tuple[int, int]]:
    """Spans of chunk texts found exactly, each forward from the end of the one before.

    ``overlapping`` (a splitter with an overlap): a chunk begins inside the one before or right after it
    (past whitespace), so it is placed at its LAST occurrence starting after the previous chunk's start and no
    later than the first non-space character from the previous end; the first occurrence would put it too
    early in repeated text (a boilerplate line repeated, as in Chroma's finance document), where its overlap
    with the chunk before is its own suffix, not a whole period. Only a chunk that starts nowhere there is
    searched for forward from the previous end."""
    spans, cursor = [], 0
    for chunk in chunks:
        start = -1
        if overlapping and spans:
            previous_start, limit = spans[-1]
            while limit < len(source) and source[limit].isspace():
                limit += 1
            start = source.rfind(chunk, previous_start + 1, limit + len(chunk))
        if start < 0:
            start = source.find(chunk, cursor)
        if start < 0:
            raise _Unverifiable(chunk)
        spans.append((start, start + len(chunk)))
        cursor = start + len(chunk)
    return spans


def _overlap_tokens(spec: ChunkerSpec, size: int) -> int:
    """The declared overlap in tokens at library size ``size`` (0 without one); a ``ValueError`` (the library's
    failure at this size, skipped by size matching) when it leaves no stride."""
    if spec.overlap is None:
        return 0
    spec.overlap.check_size(size, f"chunkers.{spec.name}.options overlap at size {size}")
    return spec.overlap.tokens_at(size)


def _per_size(make: Callable[[int], object]) -> Callable[[int], object]:
    """``make(size)`` built once per size (splitters are reused across documents)."""
    built: dict[int, object] = {}

    def get(size: int):
        if size not in built:
            built[size] = make(size)
        return built[size]

    return get


def _langchain(spec: ChunkerSpec, counter: TokenCounter) -> Adapter:
    from langchain_text_splitters import ExperimentalMarkdownSyntaxTextSplitter, RecursiveCharacterTextSplitter

    splitter = _per_size(
        lambda size: RecursiveCharacterTextSplitter(
            chunk_size=size, chunk_overlap=_overlap_tokens(spec, size), length_function=counter.count, **spec.options
        )
    )
    overlapping = spec.overlap is not None
    if spec.kind == "recursive":
        return lambda source, size: _searched(source, splitter(size).split_text(source), overlapping)

    def markdown(source: str, size: int) -> list[tuple[int, int]]:
        # Header sections keep the input's whitespace. Headings stay in them (mapped to nothing later): with
        # strip_headers, a paragraph line starting "# " (a hashtag in QASPER 1907.03187) would be dropped as one.
        headed = ExperimentalMarkdownSyntaxTextSplitter(strip_headers=False).split_text(source)
        return _searched(
            source, [chunk for doc in headed for chunk in splitter(size).split_text(doc.page_content)], overlapping
        )

    return markdown


def _chonkie_rules(markdown: bool):
    """chonkie's default levels without the last, plus Markdown heading levels first for ``recursive_markdown``.

    The last default level encodes a piece and decodes runs of token ids, and decoded WordPiece is not
    the input's text (lower-cased, spaced punctuation), so its chunks can never be located. Without it
    a piece that would reach it stays whole, over ``t_max``, and is counted. chonkie reaches it more
    often than a reader would expect: with the default ``min_characters_per_chunk = 24``, splits
    shorter than that merge with their neighbours, so a run of short sentences or any run of words is
    not split at all at those levels.
    """
    from chonkie.types import RecursiveLevel, RecursiveRules

    levels = RecursiveRules().levels[:-1]  # paragraphs, sentences, pauses, words
    if markdown:
        levels = [RecursiveLevel(delimiters=["\n" + "#" * n + " " for n in range(1, 7)], include_delim="next"), *levels]
    return RecursiveRules(levels)


def _chonkie(spec: ChunkerSpec, counter: TokenCounter) -> Adapter:
    from chonkie import RecursiveChunker

    rules = _chonkie_rules(spec.kind == "recursive_markdown")
    chunker = _per_size(
        lambda size: RecursiveChunker(tokenizer=counter.tokenizer, chunk_size=size, rules=rules, **spec.options)
    )
    return lambda source, size: _checked(
        source, ((c.start_index, c.end_index, c.text) for c in chunker(size).chunk(source))
    )


def _semchunk(spec: ChunkerSpec, counter: TokenCounter) -> Adapter:
    import semchunk

    options = dict(spec.options)
    # What chunkerify derives for a Hugging Face tokenizer; the counter itself counts without special tokens.
    options.setdefault("max_token_chars", max(len(token) for token in counter.tokenizer.get_vocab()))
    options.setdefault("cache_maxsize", _SEMCHUNK_CACHE)
    chunker = _per_size(lambda size: semchunk.chunkerify(counter.count, size, **options))

    def run(source: str, size: int) -> list[tuple[int, int]]:
        overlap = _overlap_tokens(spec, size)  # semchunk reads an int >= 1 as tokens; a tiling call passes none
        chunks, offsets = chunker(size)(source, offsets=True, **({"overlap": overlap} if overlap else {}))
        return _checked(source, ((a, b, chunk) for chunk, (a, b) in zip(chunks, offsets)))

    return run


def _text_splitter(spec: ChunkerSpec, counter: TokenCounter) -> Adapter:
    from semantic_text_splitter import MarkdownSplitter, TextSplitter

    cls = MarkdownSplitter if spec.kind == "markdown" else TextSplitter
    definition = counter.tokenizer.to_str()
    splitter = _per_size(
        lambda size: cls.from_huggingface_tokenizer_str(
            definition, size, overlap=_overlap_tokens(spec, size), **spec.options
        )
    )
    return lambda source, size: _checked(
        source, ((offset, offset + len(chunk), chunk) for offset, chunk in splitter(size).chunk_indices(source))
    )


_ADAPTERS = {"langchain": _langchain, "chonkie": _chonkie, "semchunk": _semchunk, "text_splitter": _text_splitter}
