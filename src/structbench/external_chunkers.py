"""Peer chunkers as chunking conditions (SPEC section 6, "Peer chunkers"): adapters that run LangChain,
chonkie, semchunk and semantic-text-splitter under the study's controls.

A chunker is declared in config as ``chunkers.<name>: {library, kind, size_match, options}``
(:class:`ChunkerSpec`); :func:`external_chunks` runs it over a corpus and returns a CHUNKS table that
every prefix and retrieval kind consumes unchanged, plus a JSON report.

**Input.** Each library gets, per document, either the flat text (kinds that split plain text) or its
Markdown (Markdown-aware kinds): the document title as ``#``, every titled section of ``sections`` as
a heading of ``len(path)`` hashes (capped at six; ``path[0]`` is the title, so a top-level section is
``##``), each followed by the section's own flat text copied verbatim (:func:`render_markdown`).
Heading lines are not flat text; the lead section (title ``""``) and untitled sections get no heading.

**Size and length function.** The study tokenizer (:func:`structbench.tokens.load_tokenizer`) counts
for the library: chonkie gets its ``tokenizers.Tokenizer`` (chonkie counts without special tokens),
semantic-text-splitter the tokenizer's JSON, LangChain and semchunk :meth:`TokenCounter.count` as
their length function (semchunk also gets the vocabulary's longest token, as it derives for a Hugging
Face tokenizer). The size is ``t_max`` unless size-matched (below). ``chunk_overlap``/``overlap`` > 0 is
rejected (see Tiling); options structbench sets itself (the size, the length function) are rejected
too, naming the config key that governs them.

**Per library.** LangChain ``recursive`` is ``RecursiveCharacterTextSplitter`` with its default
separators; ``markdown`` is ``ExperimentalMarkdownSyntaxTextSplitter`` (splits at heading, fence and rule
lines, keeping the input's whitespace) with headings kept in the text, then the recursive splitter per
section. The classic ``MarkdownHeaderTextSplitter`` strips every line and re-joins them with ``"  \n"``,
so its chunks are not text of the input and cannot be located; headings are kept because with
``strip_headers`` a paragraph line starting ``"# "`` (a hashtag, in QASPER 1907.03187) is dropped as a
heading. chonkie is ``RecursiveChunker`` with its default levels minus the last, token-decoding one
(:func:`_chonkie_rules` says why), ``recursive_markdown`` with heading delimiters as a first level
(written here: chonkie's recipes download at run time). semchunk is ``chunkerify``; semantic-text-splitter
``TextSplitter`` or ``MarkdownSplitter``.

**Offsets, verified.** Chunks become content offsets into the flat text: where a library reports
offsets (semchunk ``offsets=True``, semantic-text-splitter ``chunk_indices``, chonkie
``start_index``/``end_index``) they are used and the chunk's text is compared with the input at those
offsets; LangChain reports none, so each chunk is searched for exactly, forward from the end of the
previous one. A chunk whose text is not found exactly is an :class:`ExternalChunkerError` naming the
chunker, the document and the chunk's first characters; nothing is ever matched fuzzily. A Markdown
chunk maps back to the flat characters it holds (heading lines map to nothing); a chunk that holds
only headings and whitespace maps to nothing and is dropped and counted (``heading_only_dropped``).

**Tiling.** Chunks tile the flat text, as every structbench chunker's do (``boundaries.assert_tiling``,
the evidence alignment, the identical-span share and the report assume it): each chunk's content span
is its verified text with surrounding whitespace removed, and a chunk runs from its content start to
the next chunk's content start (the first from 0, the last to the document's end), so the whitespace
between two chunks belongs to the one before, as in :mod:`structbench.boundaries`. Anything but
whitespace between two content spans means the library dropped text (LangChain's Markdown splitter
drops an unclosed code fence, for one): an error naming the document and the text. Overlapping chunks
cannot tile, which is why overlap options are rejected.

**Columns.** ``n_tokens`` is the study tokenizer's count of the chunk's own text (no special tokens; read
from the document's token starts where that is the same number, see :func:`_chunk_document`); a
chunk over ``t_max`` is kept as the library made it and counted (``over_t_max``), never cut again.
``section_id`` and ``path`` are those of the section holding the chunk's first character (the last
non-empty section starting at or before it), so path prefixes and two-stage routing work unchanged.
``cut`` is the strongest boundary at the chunk's end, one of :data:`structbench.boundaries.CUT_KINDS`:
``end``, ``section``, ``paragraph``, ``sentence`` (a sentence start by :mod:`structbench.sentences`),
``line`` (whitespace with a line break precedes it), ``word`` (whitespace precedes it), else ``token``.

**Size matching** (``size_match: true``): per document, the library size ``s`` in ``1..t_max`` whose
realized mean ``n_tokens`` is closest to that document's mean in ``reference`` (its structural
chunks), the fixed windows' target. Realized means grow with ``s`` (not strictly), so ``s`` is found by
bisection for the smallest size whose mean reaches the target (``t_max`` if none does), and the
closest of every size tried wins (ties to the larger size): at most ``1 + ceil(log2(t_max))`` library
runs per document, deterministic because the libraries are.
"""

from __future__ import annotations

import bisect
import functools
import importlib.metadata
import importlib.util
import math
import re
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import NamedTuple

import polars as pl

from structbench.boundaries import cut_counts, size_match_report
from structbench.datamodel import CHUNKS, empty
from structbench.sentences import sentence_starts_near
from structbench.tokens import TokenCounter, TokenSpans, load_tokenizer

EXTRA = "structbench[chunkers]"  # the pyproject extra that installs every library below, pinned


class ExternalChunkerError(ValueError):
    """A peer chunker that is misconfigured, not installed, or whose output cannot be verified."""


class Library(NamedTuple):
    """How structbench reaches one peer library: import name, pinned requirement, and its kinds,
    each mapped to the input it reads (``"text"``: the flat text, ``"markdown"``: :func:`render_markdown`)."""

    module: str
    requirement: str
    kinds: Mapping[str, str]


LIBRARIES: dict[str, Library] = {
    # recursive: RecursiveCharacterTextSplitter; markdown: ExperimentalMarkdownSyntaxTextSplitter (split at
    # headings, keeping the input's whitespace) then RecursiveCharacterTextSplitter per section. The classic
    # MarkdownHeaderTextSplitter cannot be used: it strips lines and re-joins them with "  \n", so its chunks
    # are not text of the input and cannot be located exactly.
    "langchain": Library(
        "langchain_text_splitters", "langchain-text-splitters==1.1.3", {"recursive": "text", "markdown": "markdown"}
    ),
    # RecursiveChunker with its default rules, or with Markdown heading levels first (recipes download at run
    # time, so the Markdown rules are built here).
    "chonkie": Library("chonkie", "chonkie==1.7.0", {"recursive": "text", "recursive_markdown": "markdown"}),
    "semchunk": Library("semchunk", "semchunk==4.1.1", {"chunkerify": "text"}),
    # TextSplitter / MarkdownSplitter
    "text_splitter": Library(
        "semantic_text_splitter", "semantic-text-splitter==0.33.1", {"text": "text", "markdown": "markdown"}
    ),
}

OVERLAP_OPTIONS = ("chunk_overlap", "overlap")
# Options structbench sets itself: the size (t_max or size-matched) and the length function (the study tokenizer).
_RESERVED = {
    "langchain": ("chunk_size", "length_function"),
    "chonkie": ("chunk_size", "tokenizer", "rules"),
    "semchunk": ("chunk_size", "tokenizer_or_token_counter"),
    "text_splitter": ("capacity", "tokenizer", "json"),
}
_CONFIG_KEYS = ("library", "kind", "size_match", "options")
_SEMCHUNK_CACHE = 1 << 16  # semchunk memoizes token counts without bound by default; one cache per size here


# --------------------------------------------------------------------------------------------------
# Configuration


@dataclass(frozen=True)
class ChunkerSpec:
    """One peer chunker: ``chunkers.<name>`` of the config.

    ``kind`` is one of ``LIBRARIES[library].kinds``; ``size_match`` chooses the library size per
    document to match the structural chunks' mean (module docstring); ``options`` are extra keyword
    options for the library's splitter (LangChain: ``RecursiveCharacterTextSplitter``; chonkie:
    ``RecursiveChunker``; semchunk: ``chunkerify``; semantic-text-splitter: the ``from_huggingface_tokenizer_str``
    constructor, e.g. ``trim``). Invalid values raise :class:`ExternalChunkerError` on construction.
    """

    name: str
    library: str
    kind: str
    size_match: bool = False
    options: Mapping = field(default_factory=dict)

    def __post_init__(self):
        where = f"chunkers.{self.name}"
        if self.library not in LIBRARIES:
            raise ExternalChunkerError(f"{where}: unknown library {self.library!r}; one of {sorted(LIBRARIES)}")
        kinds = LIBRARIES[self.library].kinds
        if self.kind not in kinds:
            raise ExternalChunkerError(
                f"{where}: unknown kind {self.kind!r} for library {self.library!r}; one of {sorted(kinds)}"
            )
        if not isinstance(self.size_match, bool):
            raise ExternalChunkerError(f"{where}.size_match must be true or false, got {self.size_match!r}")
        if not isinstance(self.options, Mapping) or not all(isinstance(key, str) for key in self.options):
            raise ExternalChunkerError(f"{where}.options must be a mapping of option names, got {self.options!r}")
        for key in OVERLAP_OPTIONS:
            value = self.options.get(key)
            if value not in (None, 0, False):
                raise ExternalChunkerError(
                    f"{where}.options.{key} = {value!r}: overlapping chunks are not supported, because every "
                    "structbench chunk set tiles its documents (chunks are contiguous and disjoint: the evidence "
                    "alignment, the identical-span share and assert_tiling rely on it); use 0 or leave it out"
                )
        reserved = sorted(set(self.options) & set(_RESERVED[self.library]))
        if reserved:
            raise ExternalChunkerError(
                f"{where}.options sets {reserved}, which structbench sets itself: the size is chunking.t_max "
                "(or size-matched per document with size_match: true) and lengths are counted by `tokenizer`"
            )
        object.__setattr__(self, "options", MappingProxyType(dict(self.options)))

    @property
    def input(self) -> str:
        """What the library reads: ``"text"`` (the flat text) or ``"markdown"``."""
        return LIBRARIES[self.library].kinds[self.kind]

    @classmethod
    def from_config(cls, name: str, entry: Mapping) -> ChunkerSpec:
        """The spec of ``chunkers.<name>``; ``library`` and ``kind`` are required, unknown keys are errors."""
        if not isinstance(entry, Mapping):
            raise ExternalChunkerError(f"chunkers.{name} must be a mapping, got {type(entry).__name__}")
        unknown = sorted(set(entry) - set(_CONFIG_KEYS))
        if unknown:
            raise ExternalChunkerError(f"chunkers.{name} has unknown key(s) {unknown}; allowed: {list(_CONFIG_KEYS)}")
        for key in ("library", "kind"):
            if not entry.get(key):
                raise ExternalChunkerError(f"chunkers.{name} is missing required key {key!r}")
        return cls(
            name=name,
            library=entry["library"],
            kind=entry["kind"],
            size_match=entry.get("size_match", False),
            options=entry.get("options") or {},
        )


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a missing parent package of a dotted name
        return False


def missing_libraries(specs: Iterable[ChunkerSpec]) -> list[str]:
    """One line per spec whose library is not importable, saying what to install."""
    lines = []
    for spec in specs:
        library = LIBRARIES[spec.library]
        if not _installed(library.module):
            lines.append(
                f"chunkers.{spec.name}: library {spec.library} is not installed: pip install '{EXTRA}' "
                f"(or '{library.requirement}')"
            )
    return lines


def require_installed(specs: Iterable[ChunkerSpec]) -> None:
    """Raise :class:`ExternalChunkerError` listing every spec whose library is missing."""
    lines = missing_libraries(specs)
    if lines:
        raise ExternalChunkerError("\n".join(lines))


def library_version(library: str) -> str:
    """The installed version of a peer library's distribution."""
    distribution = LIBRARIES[library].requirement.split("==")[0]
    return importlib.metadata.version(distribution)


# --------------------------------------------------------------------------------------------------
# Markdown rendering and the map back to flat text


@dataclass(frozen=True)
class MarkdownDocument:
    """A document's Markdown and where its copied flat text lies in it.

    ``copied[i] = (markdown_start, flat_start, length)``: ``text[markdown_start:][:length]`` is
    ``flat[flat_start:][:length]``; everything else in ``text`` is heading lines and the blank lines
    around them.
    """

    text: str
    copied: tuple[tuple[int, int, int], ...]

    @functools.cached_property
    def _starts(self) -> list[int]:
        return [m for m, _, _ in self.copied]

    @functools.cached_property
    def _ends(self) -> list[int]:
        return [m + n for m, _, n in self.copied]

    def flat_span(self, start: int, end: int) -> tuple[int, int] | None:
        """The flat-text span from the first to the last copied character in ``text[start:end]``, or
        None when it holds none (only headings and blank lines)."""
        first = bisect.bisect_right(self._ends, start)
        if first == len(self.copied) or self.copied[first][0] >= end:
            return None
        last = bisect.bisect_left(self._starts, end) - 1
        m0, f0, _ = self.copied[first]
        m1, f1, n1 = self.copied[last]
        return f0 + max(start - m0, 0), f1 + min(end - m1, n1)


_SPACES = re.compile(r"\s+")


def render_markdown(title: str, text: str, sections: Sequence[tuple[str, int, int, int]]) -> MarkdownDocument:
    """A document as Markdown: ``# title``, then per section its heading and its own flat text.

    ``sections`` are ``(title, depth, flat_start, flat_end)`` in reading order, ``depth`` the length of
    the section's path (2 for a top-level section) and ``flat_start == flat_end`` for a heading without
    text of its own; the stretches must follow each other in the flat text. A heading is ``depth``
    hashes (at most six) and the title on one line; an empty title gets no heading.
    """
    parts: list[str] = []
    copied: list[tuple[int, int, int]] = []
    cursor = 0

    def add(block: str, flat_start: int | None = None) -> None:
        nonlocal cursor
        if parts:
            parts.append("\n\n")
            cursor += 2
        if flat_start is not None:
            copied.append((cursor, flat_start, len(block)))
        parts.append(block)
        cursor += len(block)

    heading = _SPACES.sub(" ", title or "").strip()
    if heading:
        add(f"# {heading}")
    for section_title, depth, start, end in sections:
        heading = _SPACES.sub(" ", section_title or "").strip()
        if heading:
            add("#" * min(max(depth, 1), 6) + " " + heading)
        if end > start:
            add(text[start:end], start)
    return MarkdownDocument("".join(parts), tuple(copied))


# --------------------------------------------------------------------------------------------------
# Documents


@dataclass
class _Document:
    doc_id: str
    title: str
    text: str
    para_starts: list[int]
    para_ends: list[int]
    section_starts: list[int]  # flat start of each non-empty section, ascending
    section_ids: list[int]
    section_paths: list[list[str]]
    outline: list[tuple[str, int, int, int]]  # every section: (title, depth, flat start, flat end)
    _markdown: MarkdownDocument | None = None
    _tokens: TokenSpans | None = None

    def tokens(self, counter: TokenCounter) -> TokenSpans:
        """The document's token starts (tokenized once)."""
        if self._tokens is None:
            self._tokens = counter.spans_batch([self.text])[0]
        return self._tokens

    @property
    def markdown(self) -> MarkdownDocument:
        if self._markdown is None:
            self._markdown = render_markdown(self.title, self.text, self.outline)
        return self._markdown


def _grouped(frame: pl.DataFrame, order: str, columns: list[str]) -> dict[str, dict[str, list]]:
    groups: dict[str, dict[str, list]] = {}
    for (doc_id,), group in frame.sort(["doc_id", order]).group_by("doc_id", maintain_order=True):
        groups[doc_id] = {column: group[column].to_list() for column in columns}
    return groups


def _documents(documents: pl.DataFrame, paragraphs: pl.DataFrame, sections: pl.DataFrame) -> list[_Document]:
    paras = _grouped(paragraphs, "para_idx", ["start", "end"])
    secs = _grouped(sections, "section_id", ["section_id", "title", "path", "para_start", "para_end"])
    out = []
    ordered = documents.select("doc_id", "title", "text").sort("doc_id")
    for doc_id, title, text in ordered.iter_rows():
        text = text or ""
        para = paras.get(doc_id, {"start": [], "end": []})
        sec = secs.get(doc_id, {column: [] for column in ("section_id", "title", "path", "para_start", "para_end")})
        if text and not para["start"]:
            raise ExternalChunkerError(f"document {doc_id!r} has text but no paragraphs")
        if text and not sec["section_id"]:
            raise ExternalChunkerError(f"document {doc_id!r} has paragraphs but no sections")
        doc = _Document(doc_id, title or "", text, para["start"], para["end"], [], [], [], [])
        for sid, s_title, path, ps, pe in zip(*sec.values()):
            start = para["start"][ps] if ps < len(para["start"]) else len(text)
            end = para["end"][pe - 1] if pe > ps else start
            doc.outline.append((s_title, len(path), start, end))
            if pe > ps:
                doc.section_starts.append(start)
                doc.section_ids.append(int(sid))
                doc.section_paths.append(list(path))
        out.append(doc)
    return out


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


def _searched(source: str, chunks: Iterable[str]) -> list[tuple[int, int]]:
    """Spans of chunk texts found exactly, each forward from the end of the one before."""
    spans, cursor = [], 0
    for chunk in chunks:
        start = source.find(chunk, cursor)
        if start < 0:
            raise _Unverifiable(chunk)
        spans.append((start, start + len(chunk)))
        cursor = start + len(chunk)
    return spans


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

    options = dict(spec.options)
    options.setdefault("chunk_overlap", 0)
    splitter = _per_size(
        lambda size: RecursiveCharacterTextSplitter(chunk_size=size, length_function=counter.count, **options)
    )
    if spec.kind == "recursive":
        return lambda source, size: _searched(source, splitter(size).split_text(source))

    def markdown(source: str, size: int) -> list[tuple[int, int]]:
        # Header sections keep the input's whitespace. Headings stay in them (mapped to nothing later): with
        # strip_headers, a paragraph line starting "# " (a hashtag in QASPER 1907.03187) would be dropped as one.
        headed = ExperimentalMarkdownSyntaxTextSplitter(strip_headers=False).split_text(source)
        return _searched(source, [chunk for doc in headed for chunk in splitter(size).split_text(doc.page_content)])

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
        chunks, offsets = chunker(size)(source, offsets=True)
        return _checked(source, ((a, b, chunk) for chunk, (a, b) in zip(chunks, offsets)))

    return run


def _text_splitter(spec: ChunkerSpec, counter: TokenCounter) -> Adapter:
    from semantic_text_splitter import MarkdownSplitter, TextSplitter

    cls = MarkdownSplitter if spec.kind == "markdown" else TextSplitter
    definition = counter.tokenizer.to_str()
    splitter = _per_size(lambda size: cls.from_huggingface_tokenizer_str(definition, size, **spec.options))
    return lambda source, size: _checked(
        source, ((offset, offset + len(chunk), chunk) for offset, chunk in splitter(size).chunk_indices(source))
    )


_ADAPTERS = {"langchain": _langchain, "chonkie": _chonkie, "semchunk": _semchunk, "text_splitter": _text_splitter}


# --------------------------------------------------------------------------------------------------
# From a library's spans to tiling chunks


@dataclass
class _Chunked:
    """One document chunked at one size."""

    size: int
    starts: list[int]
    ends: list[int]
    n_tokens: list[int]
    heading_only: int

    @property
    def mean(self) -> float:
        return statistics.fmean(self.n_tokens) if self.n_tokens else math.nan


def _content(text: str, start: int, end: int) -> tuple[int, int] | None:
    """``[start, end)`` without its surrounding whitespace; None when only whitespace."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return (start, end) if end > start else None


def _preview(text: str) -> str:
    return repr(text[:60] + ("..." if len(text) > 60 else ""))


def _content_spans(doc: _Document, spec: ChunkerSpec, adapter: Adapter, size: int) -> tuple[list[tuple[int, int]], int]:
    """The library's chunks of ``doc`` at ``size`` as flat content spans, and how many held only headings."""
    markdown = doc.markdown if spec.input == "markdown" else None
    source = markdown.text if markdown else doc.text
    where = f"chunkers.{spec.name} ({spec.library} {spec.kind}), document {doc.doc_id!r}"
    try:
        spans = adapter(source, size)
    except _Unverifiable as error:
        raise ExternalChunkerError(
            f"{where}: a chunk's text is not in the input "
            f"{'at the offsets the library gives' if spec.library != 'langchain' else 'after the previous chunk'}: "
            f"{_preview(error.chunk)}"
        ) from None
    except Exception as error:
        raise ExternalChunkerError(
            f"{where}: the library failed at size {size}: {type(error).__name__}: {error}"
        ) from error
    content, heading_only = [], 0
    for start, end in spans:
        if markdown is not None:
            mapped = markdown.flat_span(start, end)
            if mapped is None:
                heading_only += not source[start:end].isspace()
                continue
            start, end = mapped
        span = _content(doc.text, start, end)
        if span is None:
            heading_only += markdown is not None and not source[start:end].isspace()
            continue
        content.append(span)
    return content, heading_only


def _tile_edges(doc: _Document, spec: ChunkerSpec, content: list[tuple[int, int]]) -> list[int]:
    """Chunk starts that tile the document (module docstring, Tiling); the last chunk ends at ``n_chars``."""
    where = f"chunkers.{spec.name} ({spec.library} {spec.kind}), document {doc.doc_id!r}"
    edges, previous_end = [], 0
    for start, end in content:
        if start < previous_end:
            raise ExternalChunkerError(f"{where}: chunks overlap on [{start}, {previous_end})")
        gap = doc.text[previous_end:start]
        if gap.strip():
            raise ExternalChunkerError(
                f"{where}: the library dropped text at [{previous_end}, {start}): {_preview(gap.strip())}"
            )
        edges.append(start)
        previous_end = end
    tail = doc.text[previous_end:]
    if tail.strip():
        raise ExternalChunkerError(
            f"{where}: the library dropped text at [{previous_end}, {len(doc.text)}): {_preview(tail.strip())}"
        )
    if edges:
        edges[0] = 0
    return edges


def _word_edge(text: str, char: int) -> bool:
    return char == 0 or char >= len(text) or text[char - 1].isspace()


def _chunk_document(doc: _Document, spec: ChunkerSpec, adapter: Adapter, counter: TokenCounter, size: int) -> _Chunked:
    content, heading_only = _content_spans(doc, spec, adapter, size)
    starts = _tile_edges(doc, spec, content)
    ends = starts[1:] + [len(doc.text)]
    text = doc.text
    # A chunk cut where whitespace precedes both its edges splits no word, so with a word-level tokenizer its
    # count is the number of the document's tokens starting in it (structbench.tokens.TokenSpans): the
    # document is tokenized once for every size tried. Any other chunk is counted on its own text.
    tokens = doc.tokens(counter) if counter.additive else None
    n_tokens = [
        tokens.count(a, b) if tokens is not None and _word_edge(text, a) and _word_edge(text, b) else -1
        for a, b in zip(starts, ends)
    ]
    own = [i for i, n in enumerate(n_tokens) if n < 0]
    for i, n in zip(own, counter.count_batch([text[starts[i] : ends[i]] for i in own])):
        n_tokens[i] = n
    return _Chunked(size, starts, ends, n_tokens, heading_only)


def matched_size(evaluate: Callable[[int], float], target: float, t_max: int) -> int:
    """The size in ``1..t_max`` whose realized mean ``evaluate(size)`` is closest to ``target``.

    Bisection for the smallest size whose mean reaches ``target`` (means grow with the size, not
    strictly), then the closest of all sizes evaluated, ties to the larger. ``evaluate`` is called at
    most ``1 + ceil(log2(t_max))`` times, never twice for one size.
    """
    seen: dict[int, float] = {}

    def mean(size: int) -> float:
        if size not in seen:
            seen[size] = evaluate(size)
        return seen[size]

    lo, hi = 1, t_max
    if mean(hi) >= target:
        while lo < hi:
            mid = (lo + hi) // 2
            if mean(mid) >= target:
                hi = mid
            else:
                lo = mid + 1
    return min(seen, key=lambda size: (abs(seen[size] - target), -size))


def _cut_kind(doc: _Document, char: int) -> str:
    """The strongest boundary at ``char``, a chunk end (module docstring, Columns)."""
    text = doc.text
    if char >= len(text):
        return "end"
    index = bisect.bisect_left(doc.section_starts, char)
    if index < len(doc.section_starts) and doc.section_starts[index] == char:
        return "section"
    para = bisect.bisect_right(doc.para_starts, char) - 1
    if doc.para_starts[para] == char:
        return "paragraph"
    lo = char
    while lo > 0 and text[lo - 1].isspace():
        lo -= 1
    if lo == char:
        return "token"
    start, end = doc.para_starts[para], doc.para_ends[para]
    if char < end:
        _, _, sentence_starts = sentence_starts_near(text[start:end], char - start, char - start)
        if char - start in sentence_starts:
            return "sentence"
    return "line" if "\n" in text[lo:char] else "word"


# --------------------------------------------------------------------------------------------------
# The chunker


def _reference_means(reference: pl.DataFrame) -> dict[str, float]:
    means = reference.group_by("doc_id").agg(pl.col("n_tokens").cast(pl.Float64).mean().alias("mean"))
    return dict(zip(means["doc_id"].to_list(), means["mean"].to_list()))


def external_chunks(
    documents: pl.DataFrame,
    paragraphs: pl.DataFrame,
    sections: pl.DataFrame,
    spec: ChunkerSpec,
    tokenizer: TokenCounter | str,
    t_max: int,
    reference: pl.DataFrame | None = None,
) -> tuple[pl.DataFrame, dict]:
    """Run a peer chunker over a corpus: ``(chunks, report)`` (rules in the module docstring).

    ``documents``, ``paragraphs`` and ``sections`` are the corpus tables a structural chunker gets
    (``sections``: the gold or an induced structure); ``reference`` is that structure's structural
    chunk set, required when ``spec.size_match`` and otherwise only reported against. The chunks tile
    every document (``chunk_id`` ordinal over ``(doc_id, start)``). The report holds the library and
    version, chunk and over-``t_max`` counts, heading-only chunks dropped, the cut kinds, per document
    the size used, chunk count and mean tokens, and, with a reference, the keys of
    :func:`structbench.boundaries.size_match_report` (``fixed_*`` there meaning this chunk set), so the
    chunk-size-matching table reads it as it reads a fixed set's.
    """
    if t_max < 1:
        raise ExternalChunkerError(f"chunkers.{spec.name}: t_max must be at least 1, got {t_max}")
    if spec.size_match and reference is None:
        raise ExternalChunkerError(f"chunkers.{spec.name}: size_match needs the structural reference chunks")
    require_installed([spec])
    counter = load_tokenizer(tokenizer)
    adapter = _ADAPTERS[spec.library](spec, counter)
    targets = _reference_means(reference) if reference is not None else {}
    rows: dict[str, list] = {column: [] for column in CHUNKS if column != "chunk_id"}
    per_document, runs, heading_only = [], 0, 0
    for doc in _documents(documents, paragraphs, sections):
        if not doc.text.strip():
            continue
        tried: dict[int, _Chunked] = {}

        def run(size: int, doc=doc, tried=tried) -> float:
            tried[size] = _chunk_document(doc, spec, adapter, counter, size)
            return tried[size].mean

        if spec.size_match:
            if doc.doc_id not in targets:
                raise ExternalChunkerError(
                    f"chunkers.{spec.name}: document {doc.doc_id!r} has no reference chunks to size-match against"
                )
            size = matched_size(run, targets[doc.doc_id], t_max)
        else:
            size = t_max
            run(size)
        chunked = tried[size]
        doc._tokens = doc._markdown = None  # only one document's lookups are held at a time
        runs += len(tried)
        heading_only += chunked.heading_only
        for start, end, n_tokens in zip(chunked.starts, chunked.ends, chunked.n_tokens):
            index = max(bisect.bisect_right(doc.section_starts, start) - 1, 0)
            rows["doc_id"].append(doc.doc_id)
            rows["start"].append(start)
            rows["end"].append(end)
            rows["n_tokens"].append(n_tokens)
            rows["section_id"].append(doc.section_ids[index])
            rows["path"].append(doc.section_paths[index])
            rows["cut"].append(_cut_kind(doc, end))
        per_document.append(
            {
                "doc_id": doc.doc_id,
                "size": size,
                "chunks": len(chunked.starts),
                "mean_tokens": chunked.mean,
                "reference_mean_tokens": targets.get(doc.doc_id),
                "over_t_max": sum(n > t_max for n in chunked.n_tokens),
                "heading_only_dropped": chunked.heading_only,
            }
        )
    if rows["doc_id"]:
        chunks = pl.DataFrame({"chunk_id": list(range(len(rows["doc_id"]))), **rows}, schema=CHUNKS)
    else:
        chunks = empty("chunks")
    sizes = chunks["n_tokens"]
    report = {
        "chunker": spec.name,
        "library": spec.library,
        "kind": spec.kind,
        "version": library_version(spec.library),
        "requirement": LIBRARIES[spec.library].requirement,
        "options": dict(spec.options),
        "size_match": spec.size_match,
        "t_max": t_max,
        "tokenizer": counter.name,
        "chunks": chunks.height,
        "mean_tokens": float(sizes.mean()) if chunks.height else math.nan,
        "max_tokens": int(sizes.max()) if chunks.height else 0,
        "over_t_max": int((sizes > t_max).sum()),
        "heading_only_dropped": heading_only,
        "library_runs": runs,
        **{f"cut_{kind}": count for kind, count in cut_counts(chunks).items()},
        "per_document": per_document,
    }
    if reference is not None:
        report.update(size_match_report(chunks, reference))
    return chunks, report
