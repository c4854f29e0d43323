"""Peer chunker specs (``chunkers.<name>`` of the config): the libraries, validation and install checks.

Light on purpose: the config check imports it, and it imports a peer library only inside :func:`check_options`,
for a chunker the config uses.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.metadata
import importlib.util
import inspect
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import NamedTuple

from structbench.overlap import Overlap, OverlapError, parse_overlap

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

OVERLAP_OPTIONS = ("chunk_overlap", "overlap")  # the names a chunker entry may declare its overlap under
# Each library's own overlap parameter, which the adapter sets to the declared overlap in tokens at the size it
# runs (docs/method.md §6, "Overlap"); chonkie's RecursiveChunker has none.
OVERLAP_PARAMETERS = {
    "langchain": "RecursiveCharacterTextSplitter(chunk_overlap=)",
    "semchunk": "the chunker's call (overlap=)",
    "text_splitter": "the splitter's constructor (overlap=)",
}
# Options structbench sets itself: the size (t_max or size-matched) and the length function (the study tokenizer).
_RESERVED = {
    "langchain": ("chunk_size", "length_function"),
    "chonkie": ("chunk_size", "tokenizer", "rules"),
    "semchunk": ("chunk_size", "tokenizer_or_token_counter"),
    "text_splitter": ("capacity", "tokenizer", "json"),
}
# t_max / t_min: the chunker's own size (docs/method.md §6a), resolved with the condition's by structbench.sizes
_CONFIG_KEYS = ("library", "kind", "size_match", "options", "t_max", "t_min")
# What each adapter (adapters.py) passes ``options`` to, per library and kind: (module, dotted attribute).
_OPTION_TARGETS = {
    "langchain": dict.fromkeys(
        ("recursive", "markdown"), ("langchain_text_splitters", "RecursiveCharacterTextSplitter")
    ),
    "chonkie": dict.fromkeys(("recursive", "recursive_markdown"), ("chonkie", "RecursiveChunker")),
    "semchunk": {"chunkerify": ("semchunk", "chunkerify")},
    "text_splitter": {
        "text": ("semantic_text_splitter", "TextSplitter.from_huggingface_tokenizer_str"),
        "markdown": ("semantic_text_splitter", "MarkdownSplitter.from_huggingface_tokenizer_str"),
    },
}


# --------------------------------------------------------------------------------------------------
# Configuration


@dataclass(frozen=True)
class ChunkerSpec:
    """One peer chunker: ``chunkers.<name>`` of the config.

    ``kind`` is one of ``LIBRARIES[library].kinds``; ``size_match`` chooses the library size per
    document to match the structural chunks' mean (module docstring); ``options`` are extra keyword
    options for the library's splitter (LangChain: ``RecursiveCharacterTextSplitter``; chonkie:
    ``RecursiveChunker``; semchunk: ``chunkerify``; semantic-text-splitter: the ``from_huggingface_tokenizer_str``
    constructor, e.g. ``trim``). ``options.chunk_overlap`` or ``options.overlap`` (either name, any library
    that overlaps) declares an overlap in tokens or as a share of the size
    (:mod:`structbench.overlap`): it becomes :attr:`overlap`, leaves ``options`` and reaches the
    library as its own parameter (:data:`OVERLAP_PARAMETERS`). Invalid values raise
    :class:`ExternalChunkerError` on construction.
    """

    name: str
    library: str
    kind: str
    size_match: bool = False
    options: Mapping = field(default_factory=dict)
    # the declared options.chunk_overlap / options.overlap (taken out of options), None for a tiling chunker
    overlap: Overlap | None = field(default=None, init=False)

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
        object.__setattr__(self, "overlap", _declared_overlap(self))
        reserved = sorted(set(self.options) & set(_RESERVED[self.library]))
        if reserved:
            raise ExternalChunkerError(
                f"{where}.options sets {reserved}, which structbench sets itself: the size is chunking.t_max "
                "(or size-matched per document with size_match: true) and lengths are counted by `tokenizer`"
            )
        options = {key: value for key, value in self.options.items() if key not in OVERLAP_OPTIONS}
        object.__setattr__(self, "options", MappingProxyType(options))

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


def _declared_overlap(spec: ChunkerSpec) -> Overlap | None:
    """The overlap ``spec.options`` declares (under one of :data:`OVERLAP_OPTIONS`), checked."""
    where = f"chunkers.{spec.name}.options"
    named = [key for key in OVERLAP_OPTIONS if key in spec.options]
    if len(named) > 1:
        raise ExternalChunkerError(f"{where} declares both {named}: one overlap, under either name")
    if not named or spec.options[named[0]] in (None, False):
        return None
    try:
        overlap = parse_overlap(spec.options[named[0]], f"{where}.{named[0]}")
    except OverlapError as error:
        raise ExternalChunkerError(str(error)) from None
    if overlap is not None and spec.library not in OVERLAP_PARAMETERS:
        raise ExternalChunkerError(
            f"{where}.{named[0]} = {overlap.text}: {spec.library}'s {_OPTION_TARGETS[spec.library][spec.kind][1]} "
            f"takes no overlap; libraries that overlap: {sorted(OVERLAP_PARAMETERS)}"
        )
    return overlap


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


def _keyword_names(target) -> tuple[set[str], bool]:
    """The keyword names ``target`` accepts, and whether it also takes ``**kwargs`` it does not forward."""
    parameters = inspect.signature(target).parameters.values()
    names = {p.name for p in parameters if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and p.name != "self"}
    return names, any(p.kind is p.VAR_KEYWORD for p in parameters)


def accepted_options(spec: ChunkerSpec) -> tuple[str, list[str]]:
    """``(what the adapter calls, the option names it accepts)``, read from the installed library's own
    signature. A class whose ``__init__`` takes ``**kwargs`` forwards them up its MRO (LangChain's
    ``RecursiveCharacterTextSplitter`` to ``TextSplitter``), so the bases' names count too. Options
    structbench sets itself (``_RESERVED``) are not offered."""
    module, attribute = _OPTION_TARGETS[spec.library][spec.kind]
    target = importlib.import_module(module)
    for part in attribute.split("."):
        target = getattr(target, part)
    names: set[str] = set()
    for owner in inspect.getmro(target) if inspect.isclass(target) else (target,):
        own, forwards = _keyword_names(owner.__init__ if inspect.isclass(owner) else owner)
        names |= own
        if not forwards or owner is object:
            break
    return f"{module}.{attribute}", sorted(names - set(_RESERVED[spec.library]))


def check_options(spec: ChunkerSpec) -> None:
    """Every ``options`` key is a keyword the library's splitter takes (docs/method.md §6, "Peer chunkers"):
    checked against its signature at config load, so a misspelt option stops the run before any job
    rather than the ``external_chunks`` job. The library is imported here, only for a chunker in use."""
    if not spec.options:
        return
    where = f"chunkers.{spec.name}"
    library = LIBRARIES[spec.library]
    if not _installed(library.module):
        raise ExternalChunkerError(
            f"{where}: library {spec.library} is not installed, so its options {sorted(spec.options)} cannot be "
            f"checked: pip install '{EXTRA}' (or '{library.requirement}')"
        )
    target, accepted = accepted_options(spec)
    for option in sorted(spec.options):
        if option not in accepted:
            close = difflib.get_close_matches(option, accepted, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise ExternalChunkerError(
                f"{where}.options.{option}: {target} takes no option {option!r}{hint} (it accepts {accepted}; "
                f"{sorted(_RESERVED[spec.library])} are set by structbench)"
            )
