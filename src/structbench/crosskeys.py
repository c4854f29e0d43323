"""Start-up validation of a workflow config, part two: the cross-key checks a schema cannot say.

:func:`check_cross_keys` runs on a config :func:`structbench.config.validate_config` has checked and filled,
and answers which conditions and contrasts run (:class:`CheckedConditions`). What concerns the whole config
is checked here: t_min <= t_max, a primary metric that is computed, contrasts of declared and distinct
conditions, selections of declared names, metric cutoffs the ranking can fill, overlaps and prefix budgets
a condition's size can hold, a learned inducer's training. What concerns one subsystem is checked beside it:
the LLM steps' keys (:mod:`structbench.llm.checks`), query generation's (:mod:`structbench.querygen.checks`),
late chunking's and the embedders' windows (:mod:`structbench.embedding.checks`), the retrieval kinds' inputs,
run comparisons and read-time modes (:mod:`structbench.retrieval.checks`), the peer chunkers
(:mod:`structbench.chunking.external.checks`) and the subgroup analysis (:mod:`structbench.stats.checks`). Only
the selected conditions are checked: a declared condition that ``select.conditions`` leaves out asks nothing of
the run.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from structbench import conditions as axes
from structbench.artifacts import keys
from structbench.artifacts.selection import SelectionError, select_conditions, select_entry, selected
from structbench.chunking.external.checks import check_chunker_config, require_chunker_libraries
from structbench.configerror import ConfigError
from structbench.embedding.checks import check_late_config, stated_width
from structbench.llm.checks import check_llm_config
from structbench.querygen.checks import check_querygen_config
from structbench.retrieval.checks import check_readtime_config, check_retrieval_config
from structbench.stats.checks import check_subgroups_config


@dataclass(frozen=True)
class CheckedConditions:
    """What :func:`check_cross_keys` parsed and checked: the ``selected`` conditions (``select.conditions``,
    every declared one when none), the ``selected_contrasts`` among them, and the declared contrasts the
    selection leaves out (``dropped_contrasts``, each with its ``missing`` conditions: docs/method.md §15)."""

    selected: dict
    selected_contrasts: dict
    dropped_contrasts: list[dict]


def check_cross_keys(config: dict, metric_names: list[str]) -> CheckedConditions:
    """The checks a schema cannot say, on a validated config (module docstring); the conditions and contrasts that
    run, and the declared contrasts the selection drops (parsed once).

    ``metric_names`` are the metrics the scoring step computes under this config (the statistics step
    can only test one of them)."""
    chunking = config["chunking"]
    if chunking["t_min"] > chunking["t_max"]:
        raise ConfigError(
            f"chunking.t_min = {chunking['t_min']} exceeds chunking.t_max = {chunking['t_max']}: "
            "no chunk could satisfy both bounds"
        )
    try:
        conditions = axes.parse_conditions(config["conditions"], chunking, config.get("chunkers"))
        contrasts = axes.parse_contrasts(config["contrasts"], conditions, config.get("chunkers"), chunking)
    except ValueError as error:
        raise ConfigError(str(error)) from None
    primary = config["stats"]["primary_metric"]
    if primary not in metric_names:
        raise ConfigError(
            f"stats.primary_metric = {primary!r} is not computed under this config; the metrics are {metric_names}"
        )
    for extra in config["stats"].get("contrast_metrics") or []:
        if extra not in metric_names:
            raise ConfigError(
                f"stats.contrast_metrics names {extra!r}, which is not computed under this config; "
                f"the metrics are {metric_names}"
            )
    for kind in ("corpora", "embedders", "rerankers"):
        unknown = [name for name in select_entry(config, kind) if name not in config[kind]]
        if unknown:
            raise ConfigError(
                f"select.{kind} names {unknown}, which config.{kind} does not declare ({list(config[kind])})"
            )
    # a declared condition that select.conditions leaves out asks nothing of this run: only the selected are checked
    try:
        kept, kept_contrasts = select_conditions(conditions, contrasts, select_entry(config, "conditions"))
    except SelectionError as error:
        raise ConfigError(str(error)) from None
    semantic = config["chunking"]["semantic_embedder"]
    if any(c.boundaries == "semantic" for c in kept.values()) and semantic not in config["embedders"]:
        raise ConfigError(
            f"chunking.semantic_embedder = {semantic!r} names no declared embedder ({list(config['embedders'])})"
        )
    check_metric_depth(config, metric_names, kept)
    check_llm_config(config, kept)
    check_querygen_config(config)
    check_retrieval_config(config, kept)
    check_chunker_config(config, kept)
    check_overlap_config(config, kept)
    check_prefix_budget_config(config, kept)
    check_readtime_config(config, kept)
    check_learned_config(config, kept)
    check_late_config(config, kept)
    require_chunker_libraries(config, kept)
    check_metric_inputs(kept, metric_names)
    check_subgroups_config(config, contrasts)
    return CheckedConditions(kept, kept_contrasts, axes.dropped_contrasts(contrasts, kept))


def check_metric_depth(config: dict, metric_names: list[str], conditions: dict | None = None) -> None:
    """Every metric cutoff within what retrieval keeps (``retrieval.top_k`` ranks per query).

    A rank cutoff ``@k`` deeper than ``top_k`` would be computed from a shorter ranking than its name
    says. A token budget is filled from the ranking too: every chunk holds at least ``chunking.t_min``
    content tokens (a document shorter than that is its one chunk), so ``top_k * t_min`` tokens is the
    most a budget can be sure to find; a larger budget could silently stop at the ranking's end. A condition
    with its own smaller ``t_min`` (docs/method.md §6a) lowers that floor: the smallest of ``conditions`` counts,
    and the error names the key that sets it (``conditions.<name>.t_min``, ``chunkers.<name>.t_min``)."""
    from structbench.metrics.registry import parse_metric

    top_k = config["retrieval"]["top_k"]
    t_min, t_min_key = config["chunking"]["t_min"], "chunking.t_min"
    for name, condition in (conditions or {}).items():
        if condition.size(config["chunking"])[1] < t_min:
            t_min, t_min_key = condition.size(config["chunking"])[1], size_source(config, name, condition, "t_min")
    for name in metric_names:
        metric = parse_metric(name)
        kind = metric.definition.cutoff
        if kind == "k" and metric.cutoff > top_k:
            raise ConfigError(
                f"metric {name} ranks deeper than retrieval.top_k = {top_k} keeps: "
                f"raise retrieval.top_k to at least {metric.cutoff} or lower the cutoff"
            )
        if kind == "budget" and metric.cutoff > top_k * t_min:
            if t_min == 0:  # t_min 0 promises no tokens per chunk: no top_k is sure to fill the budget
                raise ConfigError(
                    f"{t_min_key} = 0 tokens: metric {name}'s budget of {metric.cutoff} tokens is filled from "
                    f"retrieval.top_k = {top_k} chunks, and chunks of at least 0 tokens are sure to hold none of it: "
                    f"raise {t_min_key} above 0 (at 0 no top_k is sure to fill it) or drop the budget metric"
                )
            raise ConfigError(
                f"metric {name}: retrieval.top_k = {top_k} chunks of at least {t_min_key} = {t_min} tokens "
                f"are sure to hold only {top_k * t_min} tokens, less than the budget {metric.cutoff}: "
                f"raise retrieval.top_k to at least {-(-metric.cutoff // t_min)} or lower the budget"
            )


def check_metric_inputs(conditions: dict, metric_names: list[str]) -> None:
    """Every metric's extra per-query inputs exist for every condition it scores: ``section_recall``
    needs the sections a router kept, which only a routed retrieval kind (``two_stage``, ``toc``)
    writes. Checked here, so the error names the conditions before any job runs."""
    from structbench.metrics.registry import parse_metric

    unrouted = sorted(name for name, c in conditions.items() if not axes.retrieval_kind(c.retrieval).routed)
    for name in metric_names:
        needs = [extra.name for extra in parse_metric(name).definition.requires]
        if "kept_sections" in needs and unrouted:
            raise ConfigError(
                f"metric {name} (metrics.extra) needs the sections a router kept, which only routed "
                f"conditions (retrieval: two_stage or toc) have; conditions {unrouted} are not routed: "
                "select only routed conditions (select.conditions) or drop the metric"
            )


def chunkset_overlap(condition, chunkers: dict):
    """The overlap a condition's chunk set declares (docs/method.md §6, "Overlap"): a ``fixed_overlap:<o>``
    window's, or its peer chunker's ``options.chunk_overlap`` / ``options.overlap``; None when it tiles."""
    kind, parameter = axes.parse_value("boundaries", condition.boundaries)
    if kind.name == "external":
        from structbench.chunking.external.chunker_spec import ChunkerSpec

        return ChunkerSpec.from_config(parameter, chunkers[parameter]).overlap
    return axes.fixed_overlap(condition.boundaries)


def size_source(config: dict, name: str, condition, bound: str = "t_max") -> str:
    """The key a condition's effective ``t_max`` or ``t_min`` (``bound``) comes from (docs/method.md §6a): its own
    ``conditions.<name>.<bound>``, its external chunker's ``chunkers.<chunker>.<bound>``, else the run's
    ``chunking.<bound>``."""
    if (config["conditions"].get(name) or {}).get(bound) is not None:
        return f"conditions.{name}.{bound}"
    kind, chunker = axes.parse_value("boundaries", condition.boundaries)
    if kind.name == "external" and ((config.get("chunkers") or {}).get(chunker) or {}).get(bound) is not None:
        return f"chunkers.{chunker}.{bound}"
    return f"chunking.{bound}"


def check_overlap_config(config: dict, conditions: dict) -> None:
    """Overlapping chunk sets are well-defined before any job runs: a token overlap leaves a stride below
    the condition's own ``t_max`` (its effective size: no chunk of its set is longer, so a larger overlap can
    never hold, and a smaller one is valid however the run's ``chunking.t_max`` compares), and no condition
    asks an overlapping set for what only a tiling set has: late chunking pools each token into the one chunk
    holding it (§8a) and the read-time modes count a section block's chunks and grow a hit by its
    neighbours (§18)."""
    from structbench.overlap import OverlapError

    for name, condition in conditions.items():
        t_max = condition.size(config["chunking"])[0]
        try:
            overlap = chunkset_overlap(condition, config.get("chunkers") or {})
            if overlap is None:
                continue
            overlap.check_size(t_max, f"conditions.{name}.boundaries = {condition.boundaries!r}, overlap")
        except OverlapError as error:
            raise ConfigError(f"{error} ({size_source(config, name, condition)} = {t_max})") from None
        uses = "late chunking (prefix " if axes.is_late(condition.prefix) else None
        if uses is None and axes.is_readtime(condition.retrieval):
            uses = "a read-time mode (retrieval "
        if uses is not None:
            value = condition.prefix if axes.is_late(condition.prefix) else condition.retrieval
            raise ConfigError(
                f"conditions.{name}: {uses}{value!r}) needs a chunk set that tiles its documents, and "
                f"boundaries {condition.boundaries!r} overlaps ({overlap.text}): late chunking gives each token to "
                "the one chunk holding it, read-time modes count a block's chunks (docs/method.md §§8a, 18)"
            )


def check_title_width(config: dict, name: str, model) -> None:
    """A declared learned model's title classifier reads vectors as wide as ``inducers.<name>.embedder``
    gives: a model trained with another embedder would otherwise fail inside its induction job, after
    every job before it. Where the embedder's width is not stated before a job runs
    (:func:`structbench.embedding.checks.stated_width`), the induction checks it against the first
    vectors, before any title is predicted."""
    entry = config["inducers"][name]
    embedder = (config.get("embedders") or {}).get(entry["embedder"])
    if model.vector_width is None or embedder is None:
        return
    width = stated_width(embedder)
    if width is not None and width != model.vector_width:
        raise ConfigError(
            f"inducers.{name}.model = {entry['model']!r}: its title classifier reads vectors of "
            f"{model.vector_width} dimensions, and embedders.{entry['embedder']} gives vectors of {width}: the "
            f"model was trained with another embedder; name that one in inducers.{name}.embedder, or train "
            "the model again with this one (structbench train-inducer)"
        )


TEXT_PREFIX_KINDS = ("path", "placebo", "context")  # prefix kinds that prepend text (and take a budget)


SMALL_PREFIX_BUDGET = 16  # tokens: any tokenizer renders '[…]' in fewer, so larger budgets need no count


def check_prefix_budget_config(config: dict, conditions: dict) -> None:
    """Every prefixed condition's budget (half of its own ``t_max``) holds the shortest prefix, ``[…]``,
    in the study tokenizer (docs/method.md §7): below that no shortening rule keeps a prefix within half
    of ``t_max``, and the render job would fail. The tokenizer is loaded only for a budget under
    ``SMALL_PREFIX_BUDGET`` tokens."""
    small = {
        name: condition.size(config["chunking"])[0] // 2
        for name, condition in conditions.items()
        if condition.kind("prefix") in TEXT_PREFIX_KINDS
        and condition.size(config["chunking"])[0] // 2 < SMALL_PREFIX_BUDGET
    }
    if not small:
        return
    from structbench.prefixes import render_prefix
    from structbench.prefixes.budget import ELLIPSIS
    from structbench.tokens import load_tokenizer

    shortest = render_prefix((ELLIPSIS,))
    needed = load_tokenizer(config["tokenizer"]).count(shortest)
    for name, budget in small.items():
        if budget < needed:
            condition = conditions[name]
            raise ConfigError(
                f"conditions.{name}: prefix {condition.prefix!r} at t_max {condition.size(config['chunking'])[0]} "
                f"leaves a prefix budget of {budget} tokens (half of t_max), and the shortest prefix {shortest!r} "
                f"takes {needed} in tokenizer {config['tokenizer']!r}: raise t_max to {2 * needed} or more, "
                "or use prefix: none"
            )


def check_learned_config(config: dict, conditions: dict) -> None:
    """A learned inducer's training is defined before any job runs: a declared ``model`` file exists and is
    an intact model of this version (read and checked, never run: ``structure.learned_model``) whose title
    classifier reads vectors as wide as the inducer's embedder gives (:func:`check_title_width`);
    ``train.corpus`` is ``self`` or a declared corpus; and a corpus never trains the model that states its
    own sections (a used inducer whose training corpus is one of the run's corpora would be graded on its
    training documents: ``self`` cross-fits instead, docs/method.md §5)."""
    used = set(keys.used_inducers(conditions.values()))
    run_corpora = selected(config, "corpora")
    for name, entry in (config.get("inducers") or {}).items():
        if entry["kind"] != "learned":
            continue
        if entry["model"] is not None:
            if not Path(entry["model"]).is_file():
                raise ConfigError(f"inducers.{name}.model = {entry['model']!r}: no such file")
            from structbench.structure.learned_model import load_learned_inducer
            from structbench.structure.model_file import ModelFileError

            try:
                model = load_learned_inducer(entry["model"])
            except ModelFileError as error:
                raise ConfigError(f"inducers.{name}.model: {error}") from None
            check_title_width(config, name, model)
            continue
        corpus = entry["train"]["corpus"]
        if corpus == "self":
            continue
        if corpus not in config["corpora"]:
            raise ConfigError(
                f"inducers.{name}.train.corpus = {corpus!r} names no corpora entry (declared: "
                f"{sorted(config['corpora'])}); 'self' cross-fits on the corpus the inducer is applied to"
            )
        if name in used and corpus in run_corpora:
            raise ConfigError(
                f"inducers.{name}.train.corpus = {corpus!r} is also a corpus of this run, so the inducer would "
                f"state the sections of its own training documents: leave {corpus!r} out of select.corpora "
                "(it is built for training only), or use train.corpus: self (cross-fitted)"
            )
