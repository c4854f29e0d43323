"""Start-up validation of a workflow config: the schema, its defaults, and the checks a schema cannot say.

Everything here runs before any job does, so a bad config stops the run with an error that names the
key (``chunking.t_min``, ``contrasts.C1``), never minutes into it.

- :func:`load_schema` reads ``workflow/schemas/config.schema.yaml`` and fills its ``$defs/axes`` from
  :mod:`structbench.conditions`, the one definition of the legal axis values.
- :func:`validate_config` checks a config against it and fills the schema's defaults in place (the
  rules and the library then read every value from the config and restate none).
- :func:`check_config` adds the cross-key checks: t_min <= t_max, a primary metric that is computed,
  contrasts of declared and distinct conditions, selections of declared names, the LLM steps'
  keys (:func:`check_llm_config`, which also checks TOC routing's LLM), query generation's
  (:func:`check_querygen_config`), the retrieval kinds' inputs and run comparisons
  (:func:`check_retrieval_config`), and a prefix budget that holds the shortest prefix
  (:func:`check_prefix_budget_config`).
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from pathlib import Path

import yaml

from structbench import conditions as axes
from structbench.defaults import SEED
from structbench.plan import keys
from structbench.plan.selection import SelectionError, chosen, select_conditions, selected


class ConfigError(ValueError):
    """A config that cannot run; the message names the key. ``problems`` lists ``(key path, problem)`` where
    the check knows each key path (the schema's violations); else it is empty and the message names the key."""

    def __init__(self, message: str, problems: list[tuple[tuple, str]] | None = None):
        super().__init__(message)
        self.problems = problems or []


def config_file_problems(paths) -> list[str]:
    """``FILE:LINE:COLUMN: problem`` for each of ``paths`` that is not valid YAML, ``FILE: problem`` for one
    whose top level is not a mapping, ``FILE: no such file`` for a missing one and ``FILE: empty`` for one
    that holds no keys (``[]`` when every file reads cleanly). Snakemake prints a traceback for a missing
    ``--configfile`` and a message naming no file for an empty one.

    Snakemake loads ``--configfile`` itself, before it reads the workflow, and reports a YAML error as
    "Config file is not valid JSON or YAML" naming neither the file nor the line (9.27; ``--verbose``
    shows the parser's traceback). ``structbench check-config`` runs this on the files of a Snakemake
    command line; ``make run``, ``dryrun`` and ``resume`` run it before Snakemake."""
    problems = []
    for path in paths:
        path = Path(path)
        if not path.exists():
            problems.append(f"{path}: no such file")
            continue
        if not path.is_file():
            problems.append(f"{path}: not a file")
            continue
        try:
            loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
        except UnicodeDecodeError as error:
            problems.append(f"{path}: not valid UTF-8 (byte {error.start})")
            continue
        except yaml.MarkedYAMLError as error:
            mark = error.problem_mark or error.context_mark
            where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
            problem = error.problem or error.context or "not valid YAML"
            if error.context and error.problem and error.context_mark:
                context = error.context_mark
                problem += f" ({error.context} at line {context.line + 1}, column {context.column + 1})"
            problems.append(f"{where}: {problem}")
            continue
        except yaml.YAMLError as error:
            problems.append(f"{path}: not valid YAML ({error})")
            continue
        if loaded is None or loaded == {}:
            problems.append(f"{path}: empty (no config keys; a --configfile must set at least one)")
        elif not isinstance(loaded, dict):
            problems.append(f"{path}: the top level is a {type(loaded).__name__}, not a mapping of config keys")
    return problems


def load_schema(path: str | Path) -> dict:
    # libyaml's loader where PyYAML has it: the schema is read at every Snakemake start-up (each cluster job's too)
    schema = yaml.load(Path(path).read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    schema.setdefault("$defs", {})["axes"] = axes.schema_definitions()
    return schema


def _validator_with_defaults(schema: dict):
    """A Draft 2020-12 validator that also writes each ``default`` into the instance (jsonschema FAQ recipe)."""
    from jsonschema import Draft202012Validator, validators

    set_properties = Draft202012Validator.VALIDATORS["properties"]

    def properties_with_defaults(validator, properties, instance, schema):
        if isinstance(instance, dict):
            for name, subschema in properties.items():
                if isinstance(subschema, dict) and "default" in subschema:
                    instance.setdefault(name, copy.deepcopy(subschema["default"]))
        yield from set_properties(validator, properties, instance, schema)

    extended = validators.extend(Draft202012Validator, {"properties": properties_with_defaults})
    return extended(schema)


def non_finite_numbers(value, path=()) -> list[tuple[tuple, float]]:
    """``(path, value)`` of every NaN or infinite float in a config: YAML reads ``.nan`` and ``.inf`` as
    numbers, which a schema's ``type: number`` accepts and every comparison with a bound then ignores."""
    if isinstance(value, float):
        return [] if math.isfinite(value) else [(path, value)]
    if isinstance(value, dict):
        return [found for key, item in value.items() for found in non_finite_numbers(item, (*path, key))]
    if isinstance(value, list):
        return [found for index, item in enumerate(value) for found in non_finite_numbers(item, (*path, index))]
    return []


def _key(path) -> str:
    return ".".join(str(part) for part in path) or "(top level)"


def _coerce_command_line_strings(validator, config: dict) -> None:
    """Give scalars inside ``--config key='{...}'`` the type the schema asks for.

    Snakemake parses a ``--config`` value that is a mapping with YAML's BaseLoader, so every scalar in
    it arrives as a string (``'20000'``). Where the schema wants an integer, number or boolean and the
    string reads as one in YAML, it is replaced by that value; anything else is left for the schema
    to reject by name."""
    for error in list(validator.iter_errors(config)):
        if error.validator != "type" or not isinstance(error.instance, str) or not error.absolute_path:
            continue
        try:
            value = yaml.safe_load(error.instance)
        except yaml.YAMLError:
            continue
        wanted = error.validator_value if isinstance(error.validator_value, list) else [error.validator_value]
        if any(validator.is_type(value, kind) for kind in wanted if kind != "string"):
            parent = config
            for part in list(error.absolute_path)[:-1]:
                parent = parent[part]
            parent[error.absolute_path[-1]] = value


def validate_config(config: dict, schema_path: str | Path) -> dict:
    """Validate ``config`` in place against the schema and fill its defaults; return it.

    Raises :class:`ConfigError` listing every violation with the key it sits at."""
    validator = _validator_with_defaults(load_schema(schema_path))
    _coerce_command_line_strings(validator, config)
    errors = sorted(validator.iter_errors(config), key=lambda e: [str(p) for p in e.absolute_path])
    problems = [(tuple(error.absolute_path), error.message) for error in errors]
    problems += [(path, f"{value!r} is not a finite number") for path, value in non_finite_numbers(config)]
    if problems:
        lines = [f"  {_key(path)}: {problem}" for path, problem in problems]
        raise ConfigError(
            "invalid config (workflow/schemas/config.schema.yaml; keys in config/README.md):\n" + "\n".join(lines),
            problems,
        )
    return config


@dataclass(frozen=True)
class CheckedConditions:
    """What :func:`check_config_plan` parsed and checked: the ``selected`` conditions (``select.conditions``,
    every declared one when none), the ``selected_contrasts`` among them, and the declared contrasts the
    selection leaves out (``dropped_contrasts``, each with its ``missing`` conditions: docs/method.md §15)."""

    selected: dict
    selected_contrasts: dict
    dropped_contrasts: list[dict]


def check_config(config: dict, metric_names: list[str]) -> tuple[dict, dict]:
    """The cross-key checks; returns the selected conditions and the contrasts among them.

    ``metric_names`` are the metrics the scoring step computes under this config (the statistics step
    can only test one of them)."""
    checked = check_config_plan(config, metric_names)
    return checked.selected, checked.selected_contrasts


def check_config_plan(config: dict, metric_names: list[str]) -> CheckedConditions:
    """:func:`check_config`, also answering which declared contrasts the selection drops (parsed once)."""
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
    semantic = config["chunking"]["semantic_embedder"]
    if any(c.boundaries == "semantic" for c in conditions.values()) and semantic not in config["embedders"]:
        raise ConfigError(
            f"chunking.semantic_embedder = {semantic!r} names no declared embedder ({list(config['embedders'])})"
        )
    for kind in ("corpora", "embedders", "rerankers"):
        unknown = [name for name in chosen(config, kind) if name not in config[kind]]
        if unknown:
            raise ConfigError(
                f"select.{kind} names {unknown}, which config.{kind} does not declare ({list(config[kind])})"
            )
    check_metric_depth(config, metric_names, conditions)
    check_llm_config(config, conditions)
    check_querygen_config(config)
    check_retrieval_config(config, conditions)
    check_chunker_config(config, conditions)
    check_overlap_config(config, conditions)
    check_prefix_budget_config(config, conditions)
    check_readtime_config(config, conditions)
    check_learned_config(config, conditions)
    try:
        kept, kept_contrasts = select_conditions(conditions, contrasts, chosen(config, "conditions"))
    except SelectionError as error:
        raise ConfigError(str(error)) from None
    check_late_config(config, kept)  # a late condition left out of the run asks nothing of its embedders
    require_chunker_libraries(config, kept)
    check_metric_inputs(kept, metric_names)
    return CheckedConditions(kept, kept_contrasts, axes.dropped_contrasts(contrasts, kept))


def check_metric_depth(config: dict, metric_names: list[str], conditions: dict | None = None) -> None:
    """Every metric cutoff within what retrieval keeps (``retrieval.top_k`` ranks per query).

    A rank cutoff ``@k`` deeper than ``top_k`` would be computed from a shorter ranking than its name
    says. A token budget is filled from the ranking too: every chunk holds at least ``chunking.t_min``
    content tokens (a document shorter than that is its one chunk), so ``top_k * t_min`` tokens is the
    most a budget can be sure to find; a larger budget could silently stop at the ranking's end. A condition
    with its own smaller ``t_min`` (docs/method.md §6a) lowers that floor: the smallest of ``conditions`` counts."""
    from structbench.metrics.registry import parse_metric

    top_k, t_min = config["retrieval"]["top_k"], config["chunking"]["t_min"]
    t_min = min([t_min] + [c.size(config["chunking"])[1] for c in (conditions or {}).values()])
    for name in metric_names:
        metric = parse_metric(name)
        kind = metric.definition.cutoff
        if kind == "k" and metric.cutoff > top_k:
            raise ConfigError(
                f"metric {name} ranks deeper than retrieval.top_k = {top_k} keeps: "
                f"raise retrieval.top_k to at least {metric.cutoff} or lower the cutoff"
            )
        if kind == "budget" and metric.cutoff > top_k * t_min:
            # t_min 0 promises no tokens per chunk: no top_k is sure to fill the budget
            remedy = (
                f"raise retrieval.top_k to at least {-(-metric.cutoff // t_min)} or lower the budget"
                if t_min > 0
                else "raise chunking.t_min above 0 (at 0 no top_k is sure to fill it) or drop the budget metric"
            )
            raise ConfigError(
                f"metric {name}: retrieval.top_k = {top_k} chunks of at least chunking.t_min = {t_min} tokens "
                f"are sure to hold only {top_k * t_min} tokens, less than the budget {metric.cutoff}: {remedy}"
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


def external_chunker_names(conditions: dict) -> list[str]:
    """The ``chunkers`` entries that conditions name (``boundaries: external:<name>``), in name order."""
    return keys.external_chunkers(conditions.values())


def check_chunker_config(config: dict, conditions: dict) -> None:
    """An ``external:<name>`` condition names a declared ``chunkers`` entry whose library and kind the
    adapters know (structbench.chunking.external.chunker_spec.ChunkerSpec.from_config names what is wrong)."""
    declared = config.get("chunkers") or {}
    if not declared and not keys.external_chunkers(conditions.values()):
        return
    from structbench.chunking.external.chunker_spec import ChunkerSpec, ExternalChunkerError

    for name, condition in conditions.items():
        kind, chunker = axes.parse_value("boundaries", condition.boundaries)
        if kind.name == "external" and chunker not in declared:
            raise ConfigError(
                f"conditions.{name}.boundaries = {condition.boundaries!r} names chunker {chunker!r}, which "
                f"config.chunkers does not declare (declared: {sorted(declared)})"
            )
    for chunker, entry in declared.items():
        try:
            ChunkerSpec.from_config(chunker, entry)
        except ExternalChunkerError as error:
            raise ConfigError(str(error)) from None


def chunkset_overlap(condition, chunkers: dict):
    """The overlap a condition's chunk set declares (docs/method.md §6, "Overlap"): a ``fixed_overlap:<o>``
    window's, or its peer chunker's ``options.chunk_overlap`` / ``options.overlap``; None when it tiles."""
    kind, parameter = axes.parse_value("boundaries", condition.boundaries)
    if kind.name == "external":
        from structbench.chunking.external.chunker_spec import ChunkerSpec

        return ChunkerSpec.from_config(parameter, chunkers[parameter]).overlap
    return axes.fixed_overlap(condition.boundaries)


def t_max_source(config: dict, name: str, condition) -> str:
    """The key a condition's effective ``t_max`` comes from (docs/method.md §6a): its own ``conditions.<name>.t_max``,
    its external chunker's ``chunkers.<chunker>.t_max``, else the run's ``chunking.t_max``."""
    if (config["conditions"].get(name) or {}).get("t_max") is not None:
        return f"conditions.{name}.t_max"
    kind, chunker = axes.parse_value("boundaries", condition.boundaries)
    if kind.name == "external" and ((config.get("chunkers") or {}).get(chunker) or {}).get("t_max") is not None:
        return f"chunkers.{chunker}.t_max"
    return "chunking.t_max"


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
            raise ConfigError(f"{error} ({t_max_source(config, name, condition)} = {t_max})") from None
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


def known_tree_depth(config: dict, condition) -> int | None:
    """The deepest section level a condition's structure can have, where config says it: a segmentation
    inducer's ``max_levels``. None for gold headings and an LLM inducer, whose depth only the data shows."""
    kind, inducer = axes.parse_value("structure", condition.structure)
    if kind.name != "induced":
        return None
    entry = (config.get("inducers") or {}).get(inducer) or {}
    return entry.get("max_levels") if entry.get("kind") == "segmentation" else None


def check_learned_config(config: dict, conditions: dict) -> None:
    """A learned inducer's training is defined before any job runs: a declared ``model`` file exists;
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


def check_readtime_config(config: dict, conditions: dict) -> None:
    """A read-time condition (docs/method.md §18) is defined before any job runs:

    - its prefix is ``none``: a read-time run returns spans of document text (a section block, a window),
      never a chunk's embedded text, so a heading-path, placebo or context prefix, or late chunking, would
      change only which hits are expanded, a second treatment the span scores cannot separate from the first;
    - a level ``L`` (``parent:<L>``, ``placebo_parent:<L>``, ``matched_window:<L>``) no deeper than the tree
      can be: on a tree of depth 2, level 4 cuts where level 2 does (structbench.retrieval.readtime's level
      partition), so ``parent:4`` would silently run as ``parent:2``. Refused where config bounds the depth
      (a segmentation inducer's ``max_levels``); for gold headings and LLM inducers the depth is the data's,
      and the read-time step counts the documents shallower than L in its log
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


def require_chunker_libraries(config: dict, conditions: dict) -> None:
    """Every library a selected condition's chunker runs is importable: else stop before any job, with
    the install command (a job would fail only after the corpus was built)."""
    names = external_chunker_names(conditions)
    if not names:
        return
    from structbench.chunking.external.chunker_spec import (
        ChunkerSpec,
        ExternalChunkerError,
        check_options,
        missing_libraries,
    )

    specs = [ChunkerSpec.from_config(name, config["chunkers"][name]) for name in names]
    missing = missing_libraries(specs)
    if missing:
        raise ConfigError("; ".join(missing))
    for spec in specs:  # against the installed library's own signature (imported only for chunkers in use)
        try:
            check_options(spec)
        except ExternalChunkerError as error:
            raise ConfigError(str(error)) from None


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
        unknown = [member for member in pair if member not in conditions]
        if unknown:
            raise ConfigError(f"{where} names {unknown}, no declared condition (declared: {sorted(conditions)})")
        first, second = (conditions[member] for member in pair)
        if first.name == second.name:
            raise ConfigError(f"{where} compares a condition with itself")
        if first.chunkset != second.chunkset:
            raise ConfigError(
                f"{where} compares different chunk sets ({first.chunkset} and {second.chunkset}): "
                "the comparison counts shared chunk_ids, so both must rank one chunk set"
            )


def check_llm_config(config: dict, conditions: dict) -> None:
    """The LLM steps' cross-key checks: every ``llms.<name>`` entry is a valid ``LLMSpec``
    (:meth:`structbench.llm.LLMSpec.from_config`, whose errors name ``llms.<name>``), inducers and
    contexts name declared LLMs, a condition's ``induced:<x>`` names a declared inducer, a
    ``context`` prefix has ``contexts.llm`` set, and a ``toc`` retrieval has ``retrieval.toc_llm`` set
    to a declared LLM."""
    from structbench.llm.spec import LLMSpec

    llms = config.get("llms") or {}
    for name, entry in llms.items():
        try:
            LLMSpec.from_config(entry, name)
        except (TypeError, ValueError) as error:
            raise ConfigError(str(error)) from None
    declared = f"(declared: {sorted(llms)})"
    embedders = config.get("embedders") or {}
    for name, inducer in (config.get("inducers") or {}).items():
        # the schema gives each kind its own keys: llm names an LLM, segmentation and learned an embedder
        if inducer["kind"] == "llm":
            if inducer["llm"] not in llms:
                raise ConfigError(f"inducers.{name}.llm = {inducer['llm']!r} names no llms entry {declared}")
        elif inducer["embedder"] not in embedders:
            raise ConfigError(
                f"inducers.{name}.embedder = {inducer['embedder']!r} names no embedders entry "
                f"(declared: {sorted(embedders)}); a {inducer['kind']} inducer reads that embedder's vectors"
            )
    context_llm = (config.get("contexts") or {}).get("llm")
    if context_llm is not None and context_llm not in llms:
        raise ConfigError(f"contexts.llm = {context_llm!r} names no llms entry {declared}")
    toc_llm = (config.get("retrieval") or {}).get("toc_llm")
    if toc_llm is not None and toc_llm not in llms:
        raise ConfigError(f"retrieval.toc_llm = {toc_llm!r} names no llms entry {declared}")
    inducers = config.get("inducers") or {}
    for name, condition in conditions.items():
        if condition.retrieval == "toc" and toc_llm is None:
            raise ConfigError(
                f"conditions.{name}.retrieval = 'toc' needs retrieval.toc_llm (the llms entry that reads "
                "the table of contents and names a section), which is not set"
            )
        kind, inducer = axes.parse_value("structure", condition.structure)
        if kind.name == "induced" and inducer not in inducers:
            raise ConfigError(
                f"conditions.{name}.structure = {condition.structure!r} names inducer {inducer!r}, "
                f"which inducers does not declare (declared: {sorted(inducers)})"
            )
        if condition.prefix == "context" and context_llm is None:
            raise ConfigError(
                f"conditions.{name}.prefix = 'context' needs contexts.llm (the llms entry that "
                "writes the situating contexts), which is not set"
            )


def check_late_config(config: dict, conditions: dict) -> None:
    """Late chunking (docs/method.md §8a) needs token embeddings: an endpoint embedder (kind openai), whose API
    returns pooled vectors only, is refused for a late prefix; a local embedder's window must hold more than
    a stated ``late.overlap`` content tokens (skipped for a model this machine cannot locate: its job says why)."""
    late = [name for name, c in conditions.items() if axes.is_late(c.prefix)]
    if not late:
        return
    from structbench.embedding.local import EmbedderSpec, effective_max_seq_length
    from structbench.endpoints.kinds import OPENAI, embedder_kind

    overlap = config["late"]["overlap"]
    for name in selected(config, "embedders"):
        entry = config["embedders"][name]
        if embedder_kind(entry) == OPENAI:
            raise ConfigError(
                f"conditions.{late[0]}.prefix = {conditions[late[0]].prefix!r} needs token embeddings, but "
                f"embedders.{name} is kind 'openai', whose API returns pooled vectors only; select local embedders "
                "for late chunking (select.embedders)"
            )
        if overlap is None:  # half of each embedder's window (structbench.embedding.late.window_overlap): fits
            continue
        try:
            window = effective_max_seq_length(EmbedderSpec.from_config(entry))
        except (OSError, ValueError, ModuleNotFoundError):
            continue
        if overlap >= window - SPECIAL_TOKENS:
            raise ConfigError(
                f"late.overlap = {overlap} is not below embedders.{name}'s window of {window - SPECIAL_TOKENS} "
                f"content tokens (max_seq_length {window} less [CLS] and [SEP]): windows could never advance"
            )


def check_querygen_config(config: dict) -> None:
    """Query generation's cross-key checks: a selected corpus with ``queries: generated`` needs
    ``querygen.llm``, which must name a declared ``llms`` entry, and the ``querygen`` thresholds must
    make a valid :class:`structbench.querygen.settings.QuerygenSettings`."""
    from structbench.querygen.settings import QuerygenSettings

    querygen = config.get("querygen") or {}
    llm = querygen.get("llm")
    llms = config.get("llms") or {}
    if llm is not None and llm not in llms:
        raise ConfigError(f"querygen.llm = {llm!r} names no llms entry (declared: {sorted(llms)})")
    generated = [
        name for name in selected(config, "corpora") if (config["corpora"][name] or {}).get("queries") == "generated"
    ]
    if generated and llm is None:
        raise ConfigError(
            f"corpora.{generated[0]}.queries = 'generated' needs querygen.llm (the llms entry that "
            "writes the queries), which is not set"
        )
    try:
        QuerygenSettings.from_config(querygen, config.get("seed", SEED))
    except ValueError as error:
        raise ConfigError(str(error)) from None


# Room left for a rendered prefix when judging whether chunks fit the embedder: a depth-3 heading path
# is ~15-40 tokens on the study's corpora (the report's prefixes table gives the real numbers).
PREFIX_ALLOWANCE = 48
SPECIAL_TOKENS = 2  # [CLS] and [SEP]


def truncation_warnings(config: dict, conditions: dict) -> list[str]:
    """Warnings for embedders that would truncate chunks of the configured size (docs/method.md §6).

    A chunk holds up to ``chunking.t_max`` content tokens, plus 2 special tokens and, for a prefixed
    condition, the prefix. When that cannot fit an embedder's effective ``max_seq_length``, the model
    silently drops the end of the text, and drops more of it the longer the prefix is: that confounds
    every prefix contrast. The embedding step counts the truncated texts exactly (the report's
    "Embedder input length" table); this check only says, before any job runs, that truncation is
    certain or likely. An embedder that cannot be located here (a hub id on a machine without it) is
    skipped: its job fails with the reason."""
    from structbench.embedding.local import EmbedderSpec, effective_max_seq_length
    from structbench.endpoints.kinds import OPENAI, embedder_kind

    # the largest chunk any condition cuts: the run's t_max, or a condition's own (docs/method.md §6a)
    t_max = max([config["chunking"]["t_max"]] + [c.size(config["chunking"])[0] for c in conditions.values()])
    bound = "chunking.t_max" if t_max == config["chunking"]["t_max"] else "a condition's own t_max"
    prefixed = any(c.prefix != axes.NO_PREFIX for c in conditions.values())
    warnings = []
    for name in selected(config, "embedders"):
        entry = config["embedders"][name]
        try:
            # an endpoint's limit is the one its entry states (kind openai: max_input_tokens)
            endpoint = embedder_kind(entry) == OPENAI
            limit = entry["max_input_tokens"] if endpoint else effective_max_seq_length(EmbedderSpec.from_config(entry))
        except (OSError, ValueError, ModuleNotFoundError):
            continue
        key = "max_input_tokens" if endpoint else "max_seq_length"
        needed = t_max + SPECIAL_TOKENS
        if needed > limit:
            warnings.append(
                f"embedders.{name}: {key} {limit} < {bound} {t_max} + {SPECIAL_TOKENS} "
                "special tokens: the longest chunks WILL be truncated, prefixed or not. Set "
                f"embedders.{name}.{key} (up to the model's limit) or lower {bound}."
            )
        elif prefixed and needed + PREFIX_ALLOWANCE > limit:
            warnings.append(
                f"embedders.{name}: {key} {limit} leaves {limit - needed} tokens for a prefix "
                f"on a chunk of {bound} = {t_max} tokens: long prefixed chunks are likely to be "
                f"truncated (the report counts them). Raise {key} or lower t_max."
            )
    return warnings
