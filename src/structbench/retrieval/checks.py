"""The retrieval kinds' start-up checks: an ``rrf`` condition's sources, a ``per_candidate`` condition's reranker,
``report.compare_runs``, and the read-time modes (docs/method.md §18) (:func:`structbench.crosskeys.check_cross_keys`
runs them on the selected conditions)."""

from __future__ import annotations

from structbench import conditions as axes
from structbench.configerror import ConfigError


def check_retrieval_config(config: dict, conditions: dict) -> None:
    """The retrieval kinds' and run comparisons' cross-key checks: an ``rrf`` condition's sources are
    legal and distinct from its own run (a ``context`` source needs ``contexts.llm``); a
    ``per_candidate:<reranker>`` condition names a declared cross-encoder and has a prefix (its
    unprefixed version is the other candidate); ``report.compare_runs`` pairs two different declared
    conditions of one chunk set (chunk_id is the identity the comparison counts)."""
    from structbench.retrieval.fusion import fusion_sources

    for name, condition in conditions.items():
        kind, parameter = axes.parse_value("retrieval", condition.retrieval)
        where = f"conditions.{name}.retrieval = {condition.retrieval!r}"
        if kind.name == "rrf":
            try:
                sources = fusion_sources(parameter, condition.prefix)
            except ValueError as error:
                raise ConfigError(f"{where}: {error}") from None
            if "context" in sources and (config.get("contexts") or {}).get("llm") is None:
                raise ConfigError(f"{where} fuses the context text set, which needs contexts.llm (not set)")
        if kind.name == "per_candidate":
            declared = sorted(n for n, entry in config["rerankers"].items() if entry is not None)
            if parameter not in declared:
                raise ConfigError(
                    f"{where} names reranker {parameter!r}, which is no declared cross-encoder (declared: {declared})"
                )
            if condition.prefix == axes.NO_PREFIX:
                raise ConfigError(
                    f"{where} needs a prefixed condition (the candidates are its prefixed and its "
                    "unprefixed version); this one has prefix 'none'"
                )
    for position, pair in enumerate((config.get("report") or {}).get("compare_runs") or []):
        where = f"report.compare_runs[{position}] = {pair}"
        unknown = [member for member in pair if member not in config["conditions"]]
        if unknown:
            raise ConfigError(
                f"{where} names {unknown}, no declared condition (declared: {sorted(config['conditions'])})"
            )
        unselected = [member for member in pair if member not in conditions]
        if unselected:
            raise ConfigError(
                f"{where} names {unselected}, which select.conditions leaves out of this run: the comparison "
                f"reads both runs (selected: {sorted(conditions)})"
            )
        first, second = (conditions[member] for member in pair)
        if first.name == second.name:
            raise ConfigError(f"{where} compares a condition with itself")
        if first.chunkset != second.chunkset:
            raise ConfigError(
                f"{where} compares different chunk sets ({first.chunkset} and {second.chunkset}): "
                "the comparison counts shared chunk_ids, so both must rank one chunk set"
            )


def known_tree_depth(config: dict, condition) -> int | None:
    """The deepest section level a condition's structure can have, where config says it: a segmentation or
    learned inducer's ``max_levels``. None for gold headings and an LLM inducer, whose depth only the data
    shows."""
    kind, inducer = axes.parse_value("structure", condition.structure)
    if kind.name != "induced":
        return None
    entry = (config.get("inducers") or {}).get(inducer) or {}
    return entry.get("max_levels") if entry.get("kind") in ("segmentation", "learned") else None


def check_readtime_config(config: dict, conditions: dict) -> None:
    """A read-time condition (docs/method.md §18) is defined before any job runs:

    - its prefix is ``none``: a read-time run returns spans of document text (a section block, a window),
      never a chunk's embedded text, so a heading-path, placebo or context prefix, or late chunking, would
      change only which hits are expanded, a second treatment the span scores cannot separate from the first;
    - a level ``L`` (``parent:<L>``, ``placebo_parent:<L>``, ``matched_window:<L>``) no deeper than the tree
      can be: on a tree of depth 2, level 4 cuts where level 2 does (structbench.retrieval.readtime's level
      partition), so ``parent:4`` would silently run as ``parent:2``. Refused where config bounds the depth
      (a segmentation or learned inducer's ``max_levels``); for gold headings and LLM inducers the depth is the
      data's, and the read-time step counts the documents shallower than L in its log
      (structbench.retrieval.unit_runs.shallower_documents)."""
    from structbench.retrieval.unit_runs import LEVEL_KINDS

    for name, condition in conditions.items():
        if not axes.is_readtime(condition.retrieval):
            continue
        where = f"conditions.{name}"
        if condition.prefix != axes.NO_PREFIX:
            raise ConfigError(
                f"{where}.prefix = {condition.prefix!r} with retrieval = {condition.retrieval!r}: a read-time mode "
                "returns spans of document text, not the chunks' embedded texts, so a prefix or late chunking "
                "would only change which hits are expanded, a second treatment its scores cannot separate; "
                "use prefix: none (config/README.md, 'Read-time structure')"
            )
        kind, parameter = axes.parse_value("retrieval", condition.retrieval)
        depth = known_tree_depth(config, condition)
        if kind.name in LEVEL_KINDS and depth is not None and int(parameter) > depth:
            raise ConfigError(
                f"{where}.retrieval = {condition.retrieval!r}: level {parameter} is deeper than structure "
                f"{condition.structure!r} can be (inducers.{condition.parameter('structure')}.max_levels = {depth}), "
                f"so it would run as level {depth}; use level {depth} or less, or raise max_levels"
            )
