"""The artifacts a run needs, as keys (docs/architecture.md, "Plan"): pure functions over the parsed conditions
and the validated config, each answering one question the workflow asks — which chunk sets, which of them are
size-matched and to what, which text sets are embedded, which inducers run. :class:`structbench.plan.study.Study`
turns these keys into paths (:mod:`structbench.artifacts.layout`); every axis value is read through
:meth:`structbench.conditions.Condition.kind`, never by its spelling."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace

from structbench.conditions import FIXED_KINDS, NO_PREFIX, Condition, is_lexical

# The report a size-matched chunk set's rule writes beside its chunks: an external chunker's (``.chunker.json``,
# its options and realized sizes) or the fixed windows' (``.size_match.json``).
SIZE_REPORT = {"external": "chunker", **dict.fromkeys(FIXED_KINDS, "size_match")}


def size_matched(condition: Condition, chunkers: Mapping) -> bool:
    """Whether a condition's chunk set is size-matched to the structural set of its structure: fixed windows
    always (overlapping or not), an external chunker when its ``chunkers`` entry says ``size_match``."""
    kind = condition.kind("boundaries")
    if kind == "external":
        return bool(chunkers[condition.parameter("boundaries")]["size_match"])
    return kind in FIXED_KINDS


def size_reference(condition: Condition) -> str:
    """The structural chunk set a size-matched condition is matched to: the one of its own size and structure."""
    return replace(condition, boundaries="structural").chunkset


def matched_chunk_sets(conditions: Iterable[Condition], chunkers: Mapping) -> list[tuple[str, str]]:
    """``(chunk set, report kind)`` of every size-matched chunk set, in chunk-set order; the kind names the
    size report its rule writes (:data:`SIZE_REPORT`)."""
    matched = {c.chunkset: SIZE_REPORT[c.kind("boundaries")] for c in conditions if size_matched(c, chunkers)}
    return sorted(matched.items())


def chunk_sets(conditions: Iterable[Condition], chunkers: Mapping) -> list[str]:
    """Every chunk set a condition uses, and the structural set each size-matched set is matched to, in order."""
    conditions = list(conditions)
    references = {size_reference(c) for c in conditions if size_matched(c, chunkers)}
    return sorted(set(used_chunk_sets(conditions)) | references)


def used_chunk_sets(conditions: Iterable[Condition]) -> list[str]:
    """The chunk sets the conditions rank (each scored once by the BM25 probe), in order."""
    return sorted({c.chunkset for c in conditions})


def text_sets(conditions: Iterable[Condition]) -> list[str]:
    """Every rendered text set (chunk set and prefix) a condition uses, in order."""
    return sorted({c.textset for c in conditions})


def embedded_text_sets(conditions: Iterable[Condition]) -> list[str]:
    """The text sets an embedder encodes: all but those of BM25 conditions, which embed nothing."""
    return sorted({c.textset for c in conditions if not is_lexical(c)})


def prefixed_lexical_text_sets(conditions: Iterable[Condition]) -> list[str]:
    """The text sets BM25 conditions rank with a prefix (``structural/gold/path-3``), in order: each is a BM25 run of
    its own, beside its chunk set's unprefixed run (the probe's, which every chunk set a condition uses has)."""
    return sorted({c.textset for c in conditions if is_lexical(c) and c.prefix != NO_PREFIX})


def semantic_chunk_sets(conditions: Iterable[Condition]) -> list[str]:
    """The semantic merge's chunk sets, whose paragraphs the semantic embedder encodes."""
    return sorted({c.chunkset for c in conditions if c.kind("boundaries") == "semantic"})


def context_chunk_sets(conditions: Iterable[Condition]) -> list[str]:
    """The chunk sets whose chunks get an LLM-written situating context (a ``context`` prefix)."""
    return sorted({c.chunkset for c in conditions if c.kind("prefix") == "context"})


def used_inducers(conditions: Iterable[Condition]) -> list[str]:
    """The inducers some condition's structure names (``structure: induced:<inducer>``), in name order."""
    return sorted({c.parameter("structure") for c in conditions if c.kind("structure") == "induced"})


def external_chunkers(conditions: Iterable[Condition]) -> list[str]:
    """The ``chunkers`` entries that conditions name (``boundaries: external:<name>``), in name order."""
    return sorted({c.parameter("boundaries") for c in conditions if c.kind("boundaries") == "external"})
