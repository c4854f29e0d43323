"""Peer chunker specs (``chunkers.<name>`` of the config): the libraries, validation and install checks.

Light on purpose: the config check imports it, and it imports no peer library.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import NamedTuple

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
