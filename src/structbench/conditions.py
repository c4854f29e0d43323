"""Conditions and contrasts are configuration (docs/method.md §12) — and this module is the one place
that says which values each axis takes.

A condition is a point on four axes: boundaries, structure source, prefix and retrieval. Each axis
value is a *kind*, optionally followed by ``:<parameter>`` (``path:3``, ``induced:llm``). The config
schema's patterns, the workflow's wildcard constraints and the path-token round trip
(``path:3`` <-> ``path-3``) are all generated from :data:`AXES`, so a new prefix or retrieval kind is
declared here once and implemented in its own module (``structbench.prefixes``' ``RENDERERS``, a module of
``structbench.retrieval``).

Artifacts are keyed by the axes they depend on, so two conditions that agree on an axis share every
artifact upstream of it (the workflow builds them once):

    chunks  <- (boundaries, structure, size)
    texts   <- (boundaries, structure, size, prefix)
    vectors <- (boundaries, structure, size, prefix, embedder)
    runs    <- (condition, embedder, reranker)

A condition's *size* is its own ``t_max``/``t_min`` (docs/method.md §6a): unset, the run's ``chunking`` bounds.
A chunk set's path carries the size only where it differs from the run's (``structural-t200/gold``), so a config
without per-condition sizes keeps every path it had (:func:`size_token`).

Over 500 lines as one concern: :data:`AXES` spells every legal value with the description the schema shows,
and the parsing of conditions and contrasts checks them against it; one table, its readers beside it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace

from structbench.overlap import Overlap, OverlapError, parse_overlap
from structbench.sizes import SIZE_KEYS, SIZE_TOKEN, check_size_curve, own_size, parse_size_token, size_token

# Path tokens use "-" where config values use ":", so a parameter must not contain either.
PARAMETER_SEPARATOR, TOKEN_SEPARATOR = ":", "-"


@dataclass(frozen=True)
class Kind:
    """One kind of value an axis takes: a bare name, or a name with a parameter matching ``parameter``.

    A retrieval kind also says whether it is ``routed`` (a router keeps sections before chunks are ranked
    and writes a routing table, :mod:`structbench.retrieval.routing`) and which registered ``metrics``
    its scores carry beyond the configured set (each reads that routing table), and whether it is
    ``lexical`` (its run is its text set's BM25 run, docs/method.md §8), and whether it is ``readtime`` (its
    run ranks read-time units of variable length, not chunks, docs/method.md §18). A prefix kind says whether it
    is ``late`` (its vectors pooled by the late encoder, docs/method.md §8a). The workflow, the scorer, the
    statistics and the report take these from here."""

    name: str
    parameter: str | None = None  # regex of the parameter; None: the kind takes none
    needs: str | None = None  # what must exist before a condition may use it (None: ready)
    description: str = ""
    routed: bool = False
    metrics: tuple[str, ...] = ()
    lexical: bool = False  # the run is the text set's BM25 run: no vectors, the same for every embedder
    readtime: bool = False  # the run ranks read-time units (sections, merged blocks, windows), not chunks
    late: bool = False  # a prefix whose vectors the late encoder pools from passes over the document

    def value_regex(self, separator: str = PARAMETER_SEPARATOR) -> str:
        return self.name if self.parameter is None else f"{self.name}{separator}{self.parameter}"


# The runs an ``rrf`` condition fuses with its own (structbench.retrieval.fusion): the BM25 run of its chunk set, or
# another prefix of the same chunk set written without its colon (path:2 -> path2), "+"-joined.
FUSION_SOURCE = r"(?:bm25|none|context|path[1-9]|placebo[1-9])"
FUSION_SOURCES = rf"{FUSION_SOURCE}(?:\+{FUSION_SOURCE})*"
FUSION_SEPARATOR = "+"
NO_PREFIX = "none"  # the prefix value of a chunk embedded as its content alone
MIN_DOSE_LEVELS = 3  # a dose-response needs three levels; two are a pairwise contrast (or nothing)
# read-time parameters: a section level, a share in (0, 1] written as a decimal (1, 1.0 and 0.50 are numbers:
# ratio_value reads them, so automerge:1.0 is automerge:1)
LEVEL, RATIO = "[1-4]", r"(?:0\.[0-9]*[1-9][0-9]*|1(?:\.0+)?)"
RATIO_KINDS = ("automerge", "placebo_automerge")  # the retrieval kinds whose parameter is a share (RATIO)
# fixed_overlap's parameter: any number, so that a negative one or a share of 1 or more gets its own named error
OVERLAP = r"-?[0-9]+(?:\.[0-9]+)?"


def fusion_source_names(parameter: str) -> list[str]:
    """The runs an ``rrf:<parameter>`` value names, in the order written, as prefix values
    (``"bm25+path3"`` -> ``["bm25", "path:3"]``)."""
    return [re.sub(r"^(path|placebo)(\d)$", r"\1:\2", name) for name in parameter.split(FUSION_SEPARATOR)]


AXES: dict[str, tuple[Kind, ...]] = {
    "boundaries": (
        Kind("structural", description="one unit per section, split above t_max, merged below t_min"),
        Kind("fixed", description="windows size-matched per document to the structural chunks"),
        # Overlapping windows (docs/method.md §6, "Overlap"): the parameter is the overlap, tokens (50) or a share
        # of the window (0.5), checked by structbench.overlap.parse_overlap with a named error.
        Kind(
            "fixed_overlap",
            OVERLAP,
            description="the fixed windows, consecutive ones sharing that many tokens (an integer) or that share of "
            "the window (a decimal below 1): stride = size − overlap",
        ),
        Kind(
            "semantic", description="the title-chain study: adjacent paragraphs merged at embedding cosine >= threshold"
        ),
        Kind(
            "external",
            r"[A-Za-z0-9_]+",
            description="a practitioner's chunker (config chunkers.<name>: LangChain, chonkie, semchunk, "
            "text-splitter) at t_max or size-matched, its chunks located exactly in the flat text",
        ),
    ),
    "structure": (
        Kind("gold", description="the document's own heading tree"),
        Kind(
            "induced", r"[A-Za-z0-9_]+", description="a structure induced by the named inducer (config inducers.<name>)"
        ),
    ),
    "prefix": (
        Kind(NO_PREFIX, description="the content alone"),
        Kind("path", "[1-9]", description="the real heading path cut to depth d"),
        Kind("placebo", "[1-9]", description="a real path of another document, same depth"),
        Kind("context", description="an LLM-written situating context (config contexts.llm)"),
        # Late chunking (docs/method.md §8a) sits on this axis: it is another way to give a chunk its document,
        # prepending nothing; its texts are the unprefixed ones, its vectors pooled from a pass over the document.
        Kind(
            "late",
            description="late chunking: the chunk's tokens mean-pooled from windows over its document",
            late=True,
        ),
        Kind(
            "late_placebo",
            description="late chunking inside another document of similar length: the chunk's tokens kept, "
            "the window's other tokens foreign",
            late=True,
        ),
    ),
    "retrieval": (
        Kind("flat", description="corpus-wide top-k over every chunk"),
        Kind(
            "two_stage",
            description="stage 1 keeps the top sections by centroid, stage 2 ranks their chunks, flat search backfills",
            routed=True,
            metrics=("section_recall",),
        ),
        Kind(
            "toc",
            description="an LLM names a section from the candidate documents' contents (config "
            "retrieval.toc_llm); its chunks lead, flat search fills",
            routed=True,
            metrics=("section_recall", "toc_fallback"),
        ),
        Kind(
            "bm25",
            description="the lexical baseline: BM25 over the condition's rendered texts, one run per chunk set and "
            "prefix shared by every embedder cell (prefix none: each chunk's content, the BM25 probe's run; "
            "path:d, placebo:d, context: the prefix and content as embedded; not a late prefix)",
            lexical=True,
        ),
        Kind(
            "rrf",
            FUSION_SOURCES,
            description="reciprocal rank fusion (k = retrieval.rrf_k) of the condition's "
            "flat run with the runs its parameter names, '+'-joined: bm25 (the chunk set's BM25 run: hybrid "
            "search) or another prefix of the same chunk set without its colon (none, path2, placebo3, context)",
        ),
        Kind(
            "query_titles",
            "[1-9]",
            description="the title-chain study, section 6(a): the flat run's top retrieval.candidates "
            "rescored by a second query embedding that carries each candidate's title chain (its path cut to "
            "depth d, rendered as a path:d prefix)",
        ),
        Kind(
            "per_candidate",
            "[A-Za-z0-9_]+",
            description="the title-chain study's per-candidate prefix choice: the top "
            "retrieval.candidates of the condition's (prefixed) and the unprefixed index, each scored in both "
            "versions by the named reranker, the better score kept",
        ),
        # Read time (docs/method.md §18, structbench.retrieval.readtime): the flat run's top
        # retrieval.readtime_hits hits, expanded into the spans a reader gets; the run ranks spans (units).
        Kind(
            "parent",
            LEVEL,
            description="each hit replaced by the level-L section block holding it, duplicates dropped",
            readtime=True,
        ),
        Kind(
            "automerge",
            RATIO,
            description="bottom-up, a section block replaces its retrieved chunks once at least that share of its "
            "chunks are retrieved (LlamaIndex's AutoMergingRetriever)",
            readtime=True,
        ),
        Kind(
            "window",
            r"[1-9][0-9]*",
            description="each hit grown to that many tokens of its neighbours, merged where they touch",
            readtime=True,
        ),
        Kind(
            "matched_window",
            LEVEL,
            description="windows sized per query to return as many tokens as parent:L (the 'more text' control)",
            readtime=True,
        ),
        Kind(
            "placebo_parent",
            LEVEL,
            description="parent:L over the placebo section tree (same blocks, shuffled), cut per query to at most "
            "parent:L's tokens",
            readtime=True,
        ),
        Kind("placebo_automerge", RATIO, description="automerge:r over the placebo section tree", readtime=True),
    ),
}
# Holm runs within each family but the last: primary (Kuehlkamp et al.'s pre-registered four), secondary,
# model_free (the questions asked of a model-free structure arm, corrected among themselves so that adding
# the arm leaves the pre-registered families' adjusted p-values as they were) and chunkers (practitioners'
# chunkers against structural chunks, config/chunkers.yaml, likewise their own family), readtime (read-time
# structure against flat search and its controls, config/readtime.yaml, likewise); exploratory rows
# claim no family.
# late (late chunking's four questions, docs/method.md §8a) and readtime (read-time structure, §18) are their own
# families for the same reason.
# overlap (each overlapping chunk set against its tiling twin, docs/method.md §6, "Overlap") likewise.
# lexical (what a heading path does for BM25 over the same chunks, B3 − B2, docs/method.md §8) likewise.
FAMILIES = ("primary", "secondary", "model_free", "chunkers", "late", "readtime", "overlap", "lexical", "exploratory")


def kinds(axis: str) -> tuple[Kind, ...]:
    if axis not in AXES:
        raise KeyError(f"unknown axis {axis!r}; axes are {list(AXES)}")
    return AXES[axis]


def value_pattern(axis: str) -> str:
    """Anchored regex of the values ``axis`` takes in config, e.g. ``^(none|path:[1-9]|...)$``."""
    return "^(" + "|".join(kind.value_regex() for kind in kinds(axis)) + ")$"


def token_pattern(axis: str) -> str:
    """Regex of the path tokens of ``axis`` (unanchored: Snakemake wildcard constraints anchor it)."""
    return "|".join(kind.value_regex(TOKEN_SEPARATOR) for kind in kinds(axis))


def to_token(value: str) -> str:
    """A config value as a path component: ``path:3`` -> ``path-3``, ``induced:llm`` -> ``induced-llm``."""
    return value.replace(PARAMETER_SEPARATOR, TOKEN_SEPARATOR, 1)


def from_token(token: str) -> str:
    """The inverse of :func:`to_token`."""
    return token.replace(TOKEN_SEPARATOR, PARAMETER_SEPARATOR, 1)


def parse_value(axis: str, value: str) -> tuple[Kind, str | None]:
    """The kind of an axis value and its parameter (``"path:2"`` -> (path kind, ``"2"``)).

    Raises ``ValueError`` listing the legal forms when ``value`` is none of them."""
    for kind in kinds(axis):
        if re.fullmatch(kind.value_regex(), str(value)):
            return kind, (str(value).split(PARAMETER_SEPARATOR, 1)[1] if kind.parameter else None)
    legal = ", ".join(kind.value_regex() for kind in kinds(axis))
    raise ValueError(f"{value!r} is not a {axis} value; expected one of: {legal}")


# The prefixes whose vectors the late encoder pools (embedding/late.py): the kinds flagged ``late``, bare names.
LATE_PREFIXES = tuple(kind.name for kind in AXES["prefix"] if kind.late)


def is_late(prefix: str) -> bool:
    """Whether a prefix value is embedded by late chunking rather than text by text."""
    return prefix in LATE_PREFIXES


def retrieval_kind(value: str) -> Kind:
    """The kind of a condition's retrieval value (``rrf:bm25`` -> the rrf kind), with its facts."""
    return parse_value("retrieval", value)[0]


def is_readtime(retrieval: str) -> bool:
    """Whether a retrieval value ranks read-time units (parent sections, merged blocks, windows), not chunks."""
    return retrieval_kind(retrieval).readtime


def readtime_kinds() -> tuple[str, ...]:
    """The names of the read-time retrieval kinds, in declared order."""
    return tuple(kind.name for kind in AXES["retrieval"] if kind.readtime)


def routed_kinds() -> tuple[str, ...]:
    """The names of the routed retrieval kinds, in declared order."""
    return tuple(kind.name for kind in AXES["retrieval"] if kind.routed)


def schema_definitions() -> dict:
    """JSON-schema fragments for each axis and the contrast families, injected into the config schema."""
    return {axis: {"type": "string", "pattern": value_pattern(axis)} for axis in AXES} | {
        "family": {"enum": list(FAMILIES)}
    }


def wildcard_constraints() -> dict[str, str]:
    """Snakemake wildcard constraints of the axis tokens that appear in artifact paths; a chunk set's
    boundaries token carries its size suffix (``structural-t200``), and ``size`` is that suffix alone."""
    constraints = {axis: token_pattern(axis) for axis in ("structure", "prefix")}
    return {"boundaries": f"(?:{token_pattern('boundaries')}){SIZE_TOKEN}", **constraints, "size": SIZE_TOKEN}


@dataclass(frozen=True)
class Condition:
    name: str
    boundaries: str
    structure: str
    prefix: str
    retrieval: str
    # The condition's own chunk bounds where they differ from the run's chunking.t_max / t_min (None: the
    # run's), as parse_conditions resolves them: so equal sizes are one chunk set however they were written.
    t_max: int | None = None
    t_min: int | None = None

    @property
    def boundaries_token(self) -> str:
        """The boundaries as a path component ("external:langchain" -> "external-langchain"), with the
        condition's own size where it has one ("structural-t200")."""
        return to_token(self.boundaries) + size_token(self.t_max, self.t_min)

    def size(self, chunking: Mapping | None = None) -> tuple[int, int]:
        """The ``(t_max, t_min)`` its chunks are held to: its own, else the run's ``chunking`` bounds."""
        return parse_size_token(size_token(self.t_max, self.t_min), chunking)

    def entry(self) -> dict:
        """The condition as a config entry: its four axes, and its own size where it has one."""
        sizes = {key: getattr(self, key) for key in SIZE_KEYS if getattr(self, key) is not None}
        return {axis: getattr(self, axis) for axis in AXES} | sizes

    @property
    def structure_token(self) -> str:
        """The structure source as a path component ("induced:llm" -> "induced-llm")."""
        return to_token(self.structure)

    @property
    def prefix_token(self) -> str:
        return to_token(self.prefix)

    @property
    def chunkset(self) -> str:
        return f"{self.boundaries_token}/{self.structure_token}"

    def kind(self, axis: str) -> str:
        """The kind name of one of its axis values (:func:`parse_value`): ``external:lc`` -> ``external``."""
        return parse_value(axis, getattr(self, axis))[0].name

    def parameter(self, axis: str) -> str | None:
        """The parameter of one of its axis values: ``structure: induced:llm`` -> ``llm``; None for a bare kind."""
        return parse_value(axis, getattr(self, axis))[1]

    @property
    def textset(self) -> str:
        return f"{self.chunkset}/{self.prefix_token}"


@dataclass(frozen=True)
class Contrast:
    """A paired contrast (treatment − control), or a dose-response slope over ordered conditions."""

    name: str
    family: str
    treatment: str | None = None
    control: str | None = None
    conditions: tuple[str, ...] = ()
    depths: tuple[float, ...] = ()
    sizes: tuple[float, ...] = ()  # a size curve: each condition's t_max (docs/method.md §6a)

    @property
    def members(self) -> tuple[str, ...]:
        return self.conditions or (self.treatment, self.control)

    def as_params(self) -> dict:
        """The plain dict the statistics step takes (``structbench.stats.contrast_table``)."""
        if self.conditions:
            entry = {"name": self.name, "family": self.family, "conditions": list(self.conditions)}
            entry |= {"depths": list(self.depths)} if self.depths else {}
            return entry | ({"sizes": list(self.sizes)} if self.sizes else {})
        return {"name": self.name, "family": self.family, "treatment": self.treatment, "control": self.control}


def dropped_contrasts(contrasts: Mapping[str, Contrast], selected: Mapping) -> list[dict]:
    """The declared ``contrasts`` a selection of conditions (``selected``, name -> condition) leaves out,
    each as its :meth:`Contrast.as_params` plus ``missing``: the compared conditions not selected, in the
    contrast's order (docs/method.md §15: the report lists them under Table 1)."""
    dropped = []
    for contrast in contrasts.values():
        missing = [member for member in contrast.members if member not in selected]
        if missing:
            dropped.append(contrast.as_params() | {"missing": missing})
    return dropped


def parse_conditions(
    entries: dict, chunking: Mapping | None = None, chunkers: Mapping | None = None
) -> dict[str, Condition]:
    """Validate the ``conditions`` config block; errors name the condition and the bad value.

    A condition may set its own ``t_max``/``t_min``, and an external chunker's entry (``chunkers``) its own;
    each is resolved against the run's ``chunking`` bounds (:func:`structbench.sizes.own_size`)."""
    conditions = {}
    for name, axes in entries.items():
        missing = [axis for axis in AXES if axis not in (axes or {})]
        unknown = sorted(set(axes or {}) - set(AXES) - set(SIZE_KEYS))
        if missing or unknown:
            raise ValueError(
                f"conditions.{name} needs exactly the axes {list(AXES)}, optionally {list(SIZE_KEYS)} "
                f"(missing {missing}, unknown {unknown})"
            )
        condition = Condition(name=name, **{axis: axes[axis] for axis in AXES})
        for axis in AXES:
            value = getattr(condition, axis)
            try:
                kind, _ = parse_value(axis, value)
            except ValueError as error:
                raise ValueError(f"conditions.{name}.{axis} = {value!r} is not supported: {error}") from None
            if kind.needs:
                raise ValueError(
                    f"conditions.{name}.{axis} = {value!r} needs {kind.needs}, which this version does not ship yet"
                )
        if parse_value("boundaries", condition.boundaries)[0].name == "fixed_overlap":
            fixed_overlap(condition.boundaries, f"conditions.{name}.boundaries")
        if retrieval_kind(condition.retrieval).lexical and is_late(condition.prefix):
            raise ValueError(
                f"conditions.{name}.prefix = {condition.prefix!r} with retrieval = {condition.retrieval!r}: late "
                "chunking prepends no text (it pools vectors), so BM25 would rank each chunk's content alone, the "
                "run of prefix: none; use prefix: none, or a rendered prefix (path:<d>, placebo:<d>, context)"
            )
        conditions[name] = _sized(condition, axes, chunking, chunkers)
    return conditions


def _sized(condition: Condition, entry: Mapping, chunking: Mapping | None, chunkers: Mapping | None) -> Condition:
    """``condition`` with its own size resolved: the entry's ``t_max``/``t_min``, else its external
    chunker's, kept only where they differ from the run's ``chunking`` bounds."""
    kind, parameter = parse_value("boundaries", condition.boundaries)
    chunker = None
    if kind.name == "external" and chunkers and parameter in chunkers:
        chunker = (parameter, chunkers[parameter] or {})
    uses_t_min = chunker is None or bool(chunker[1].get("size_match"))
    t_max, t_min = own_size(f"conditions.{condition.name}", entry, chunking, chunker, uses_t_min)
    return replace(condition, t_max=t_max, t_min=t_min)


FIXED_KINDS = ("fixed", "fixed_overlap")  # the boundaries kinds whose windows are size-matched fixed windows


def fixed_overlap(boundaries: str, where: str = "boundaries") -> Overlap | None:
    """The overlap a ``fixed_overlap:<o>`` value declares (None for any other boundaries); a ``ValueError``
    naming ``where`` for an overlap that is not a token count or a share below 1, or is 0 (say ``fixed``)."""
    kind, parameter = parse_value("boundaries", boundaries)
    if kind.name != "fixed_overlap":
        return None
    overlap = parse_overlap(parameter, f"{where} = {boundaries!r}, overlap")
    if overlap is None:
        raise OverlapError(f"{where} = {boundaries!r}: an overlap of 0 is the tiling windows: write boundaries: fixed")
    return overlap


def ratio_value(parameter: str) -> float:
    """A read-time share (``automerge:<r>``) as the number it writes: ``"1"``, ``"1.0"`` -> 1.0, ``"0.50"`` -> 0.5,
    so two spellings of one share are one condition (:func:`_axes`) and run the same expansion."""
    return float(parameter)


def is_lexical(condition: Condition) -> bool:
    """Whether a condition's run is its text set's BM25 run (retrieval kind ``bm25``): BM25 over the texts of its
    chunk set and prefix, the same table the embedder reads."""
    return retrieval_kind(condition.retrieval).lexical


def _axes(condition: Condition, chunkers: dict | None = None) -> tuple:
    """A condition's axes by meaning, not by spelling: RRF is symmetric in its sources (ties break by
    chunk_id), so ``rrf:bm25+none`` is ``rrf:none+bm25``; two ``chunkers`` entries with one spec are one
    chunker, so ``external:a`` is ``external:b`` when their entries are equal."""
    meaning = []
    for axis in AXES:
        value = getattr(condition, axis)
        kind, parameter = parse_value(axis, value)
        if kind.name == "rrf":
            value = "rrf:" + FUSION_SEPARATOR.join(sorted(fusion_source_names(parameter)))
        elif kind.name in RATIO_KINDS:
            value = (kind.name, ratio_value(parameter))
        elif kind.name == "external" and chunkers and parameter in chunkers:
            # its size is the condition's (resolved from the entry by parse_conditions), compared below
            spec = {key: v for key, v in (chunkers[parameter] or {}).items() if key not in SIZE_KEYS}
            value = ("external", repr(sorted(spec.items())))
        meaning.append(value)
    return (*meaning, condition.t_max, condition.t_min)  # the size: None is the run's


def _axes_text(condition: Condition) -> str:
    sizes = [f"{key}={getattr(condition, key)}" for key in SIZE_KEYS if getattr(condition, key) is not None]
    return ", ".join([f"{axis}={getattr(condition, axis)}" for axis in AXES] + sizes)


def parse_contrasts(
    entries: dict, conditions: dict[str, Condition], chunkers: dict | None = None, chunking: Mapping | None = None
) -> dict[str, Contrast]:
    """Validate the ``contrasts`` block: members are declared conditions, a pair compares two different ones
    (different names and different axes, by meaning (:func:`_axes`, with the ``chunkers`` entries): two
    names for one condition are a self-contrast), and a conditions list holds no condition twice (by
    name or by axes). A size curve (``sizes``) lists conditions that differ in size alone, each size its
    condition's ``t_max`` under the run's ``chunking`` bounds (:func:`structbench.sizes.check_size_curve`)."""
    contrasts = {}
    for name, entry in entries.items():
        pairwise = "treatment" in entry or "control" in entry
        if pairwise == ("conditions" in entry):
            raise ValueError(f"contrasts.{name} needs either treatment + control or a conditions list, not both")
        if pairwise and not ("treatment" in entry and "control" in entry):
            raise ValueError(f"contrasts.{name} needs both treatment and control")
        contrast = Contrast(
            name=name,
            family=entry.get("family", "primary" if pairwise else "exploratory"),
            treatment=entry.get("treatment"),
            control=entry.get("control"),
            conditions=tuple(entry.get("conditions") or ()),
            depths=tuple(entry.get("depths") or ()),
            sizes=tuple(entry.get("sizes") or ()),
        )
        if "sizes" in entry and (pairwise or "depths" in entry):
            raise ValueError(
                f"contrasts.{name} sets sizes with {'treatment/control' if pairwise else 'depths'}: a size curve "
                "is a conditions list with one size per condition, and no depths"
            )
        for member in contrast.members:
            if member not in conditions:
                raise ValueError(
                    f"contrasts.{name} names {member!r}, which is no declared condition "
                    f"(declared: {sorted(conditions)})"
                )
        if pairwise and contrast.treatment == contrast.control:
            raise ValueError(
                f"contrasts.{name} compares {contrast.treatment!r} with itself: every delta is 0, "
                "and in a Holm family it would inflate the other contrasts' adjusted p-values"
            )
        if contrast.conditions and len(contrast.conditions) < MIN_DOSE_LEVELS:
            raise ValueError(
                f"contrasts.{name}.conditions lists {len(contrast.conditions)} condition(s): a dose-response needs "
                "three or more levels; compare two as a pairwise contrast (treatment, control)"
            )
        if len(set(contrast.conditions)) != len(contrast.conditions):
            raise ValueError(f"contrasts.{name}.conditions lists a condition twice: {list(contrast.conditions)}")
        if pairwise and _axes(conditions[contrast.treatment], chunkers) == _axes(
            conditions[contrast.control], chunkers
        ):
            raise ValueError(
                f"contrasts.{name} compares {contrast.treatment!r} with {contrast.control!r}, which have identical "
                f"axes ({_axes_text(conditions[contrast.control])}): every delta is 0, and in a Holm family it "
                "would inflate the other contrasts' adjusted p-values"
            )
        seen: dict[tuple, str] = {}
        for member in contrast.conditions:
            key = _axes(conditions[member], chunkers)
            if key in seen:
                raise ValueError(
                    f"contrasts.{name}.conditions: {seen[key]!r} and {member!r} have identical axes "
                    f"({_axes_text(conditions[member])}): the slope would count one condition twice"
                )
            seen[key] = member
        if contrast.depths and len(contrast.depths) != len(contrast.conditions):
            raise ValueError(f"contrasts.{name}.depths needs one depth per condition")
        if "sizes" in entry:
            contrast = replace(contrast, sizes=_size_curve(name, entry["sizes"], contrast, conditions, chunking))
        if contrast.family not in FAMILIES:
            raise ValueError(f"contrasts.{name}.family = {contrast.family!r}; expected one of {FAMILIES}")
        contrasts[name] = contrast
    return contrasts


def _size_curve(
    name: str, sizes, contrast: Contrast, conditions: dict[str, Condition], chunking: Mapping | None
) -> tuple[float, ...]:
    """A size curve's checked sizes: its conditions differ in size alone (else the slope would mix in
    another axis), and each size is its condition's ``t_max``."""
    first = conditions[contrast.conditions[0]]
    for member in contrast.conditions[1:]:
        other = conditions[member]
        differ = [axis for axis in AXES if getattr(other, axis) != getattr(first, axis)]
        if differ:
            raise ValueError(
                f"contrasts.{name} is a size curve, so its conditions may differ in size alone: {member!r} differs "
                f"from {first.name!r} in {differ}"
            )
    members = {member: conditions[member].size(chunking)[0] for member in contrast.conditions}
    return check_size_curve(name, list(sizes or []), members)
