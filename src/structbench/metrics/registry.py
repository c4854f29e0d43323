"""The metric registry: every metric of the study by name, ir_measures style (docs/method.md §10).

A metric is registered once, next to the function that computes it, with :func:`register`::

    @register("nDCG", cutoff="k", label="binary nDCG@{cutoff}", description="...")
    def binary_ndcg(evidence, k=10): ...

and is then named like an ir_measures measure: the registered name, then ``@`` and the cutoff when
the metric takes one (``cov_nDCG@10``, ``nDCG@10``, ``R@50``, ``budget_cov@512``), the bare name when
it takes none (``MRR``, ``gold_top1``). That name is the column :func:`~structbench.metrics.score_run`
writes, the ``metric`` of a contrast and the key the report looks labels up by. The function's
docstring is the definition (the formula a reviewer checks); the registration adds what a reader of
the report needs: a human label and a one-line description.

Every metric reads the run's :class:`~structbench.metrics.evidence.RunEvidence`. A metric that needs
more than the run, the gold spans and the chunk set (e.g. section recall needs the sections stage 1
of two-stage retrieval kept per query) declares each extra per-query input by name in ``requires``;
``score_run`` passes them from its ``inputs`` mapping as keyword arguments and refuses, naming the
metric and the input, to score a metric whose inputs are missing.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from structbench.defaults import BUDGETS, NDCG_K, RECALL_K


@dataclass(frozen=True)
class ExtraInput:
    """A per-query input a metric needs beyond the run evidence: its keyword name and what it holds."""

    name: str
    holds: str


@dataclass(frozen=True)
class MetricDefinition:
    """One registered metric family: ``function(evidence[, cutoff], **extra_inputs) -> float per query``.

    ``cutoff`` names the function's parameter that the number after ``@`` fills (``None``: the name
    takes no ``@``); ``label`` is the human label, with ``{cutoff}`` replaced by that number.
    """

    name: str
    function: Callable[..., np.ndarray]
    label: str
    description: str
    cutoff: str | None = None
    requires: tuple[ExtraInput, ...] = ()

    @property
    def formula(self) -> str:
        """The definition: the docstring of the function that computes the metric."""
        return inspect.getdoc(self.function) or ""


@dataclass(frozen=True)
class Metric:
    """A concrete metric: a definition with its cutoff bound. ``name`` is the score column."""

    definition: MetricDefinition
    cutoff: int | None = None

    @property
    def name(self) -> str:
        return self.definition.name if self.cutoff is None else f"{self.definition.name}@{self.cutoff}"

    @property
    def label(self) -> str:
        return self.definition.label.format(cutoff=self.cutoff)

    @property
    def description(self) -> str:
        return self.definition.description

    @property
    def requires(self) -> tuple[ExtraInput, ...]:
        return self.definition.requires

    def compute(self, evidence, inputs: Mapping[str, object] | None = None) -> np.ndarray:
        """Per-query values in the evidence's query order; ``inputs`` must hold every required input."""
        extra = {needed.name: (inputs or {})[needed.name] for needed in self.requires}
        if self.cutoff is None:
            return self.definition.function(evidence, **extra)
        return self.definition.function(evidence, **{self.definition.cutoff: self.cutoff}, **extra)


REGISTRY: dict[str, MetricDefinition] = {}


def register(
    name: str,
    *,
    label: str,
    description: str,
    cutoff: str | None = None,
    requires: Sequence[ExtraInput] = (),
) -> Callable[[Callable[..., np.ndarray]], Callable[..., np.ndarray]]:
    """Decorator registering ``function`` as the metric ``name`` (returned unchanged).

    ``cutoff`` is the name of the function's integer parameter written after ``@`` (``k``,
    ``budget``); ``requires`` lists the extra per-query inputs passed as keyword arguments.
    """
    if "@" in name or not name:
        raise ValueError(f"metric name {name!r}: must be non-empty and without '@' (the cutoff follows it)")

    def decorator(function: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
        if name in REGISTRY:
            raise ValueError(
                f"metric {name!r} is registered twice ({REGISTRY[name].function.__qualname__}, {function.__qualname__})"
            )
        parameters = inspect.signature(function).parameters
        for needed in ([cutoff] if cutoff else []) + [e.name for e in requires]:
            if needed not in parameters:
                raise ValueError(f"metric {name!r}: {function.__qualname__} has no parameter {needed!r}")
        REGISTRY[name] = MetricDefinition(name, function, label, description, cutoff, tuple(requires))
        return function

    return decorator


def registered_metrics() -> list[str]:
    """Names of the registered metric families, in registration order."""
    return list(REGISTRY)


def parse_metric(name: str) -> Metric:
    """The metric a name denotes: ``"nDCG@10"`` -> binary nDCG with k = 10.

    Errors name the bad name: an unknown metric, a missing, extra or non-canonical cutoff
    (``nDCG@010`` must be written ``nDCG@10``, so one metric has exactly one column name).
    """
    base, at, cutoff_text = name.partition("@")
    definition = REGISTRY.get(base)
    if definition is None:
        raise ValueError(
            f"unknown metric {name!r}; registered metrics: {', '.join(_usage(d) for d in REGISTRY.values())}"
        )
    if definition.cutoff is None:
        if at:
            raise ValueError(f"metric {name!r}: {base} takes no cutoff; write {base!r}")
        return Metric(definition)
    if not cutoff_text.isdigit() or int(cutoff_text) < 1 or str(int(cutoff_text)) != cutoff_text:
        raise ValueError(
            f"metric {name!r}: {base} needs a positive integer {definition.cutoff} after '@', e.g. {base}@10"
        )
    return Metric(definition, int(cutoff_text))


def parse_metrics(names: Sequence[str]) -> list[Metric]:
    """:func:`parse_metric` for each name; a name listed twice is an error (it would be one column)."""
    if isinstance(names, str):
        raise TypeError(f"metrics must be a list of names, got the string {names!r}")
    seen = set()
    for name in names:
        if name in seen:
            raise ValueError(f"metric {name!r} is listed twice")
        seen.add(name)
    return [parse_metric(name) for name in names]


def is_metric(name: str) -> bool:
    """Whether ``name`` denotes a registered metric (a score column that is a metric)."""
    try:
        parse_metric(name)
    except ValueError:
        return False
    return True


def metric_label(name: str) -> str:
    """The human label of a metric name (``cov_nDCG@10`` -> ``coverage-nDCG@10``); an unregistered
    name is its own label."""
    return parse_metric(name).label if is_metric(name) else name


def metric_names(ndcg_k: int = NDCG_K, recall_k: int = RECALL_K, budgets: Sequence[int] = BUDGETS) -> list[str]:
    """The study's metric set (docs/method.md §10), in the order of the score table's columns::

    cov_nDCG@k, nDCG@k, MRR, R@recall_k, budget_cov@b for each b in budgets, gold_top1
    """
    return [
        f"cov_nDCG@{ndcg_k}",
        f"nDCG@{ndcg_k}",
        "MRR",
        f"R@{recall_k}",
        *[f"budget_cov@{b}" for b in budgets],
        "gold_top1",
    ]


def metrics_from_config(metrics_config: Mapping) -> list[str]:
    """The metric names config's ``metrics`` block asks for (keys ``ndcg_k``, ``recall_k``,
    ``budgets``, and optionally ``extra``; see config/README.md), validated against the registry.

    ``extra`` lists further registered metric names (e.g. ``span_IoU@10``, ``span_precision_omega``)
    scored after the study's set; empty by default, so the default score tables keep their columns.
    """
    missing = [key for key in ("ndcg_k", "recall_k", "budgets") if key not in metrics_config]
    if missing:
        raise ValueError(f"config metrics is missing {', '.join('metrics.' + key for key in missing)}")
    names = metric_names(metrics_config["ndcg_k"], metrics_config["recall_k"], list(metrics_config["budgets"]))
    parse_metrics(names)
    extra = metrics_config.get("extra") or []
    if isinstance(extra, str):
        raise TypeError(f"config metrics.extra must be a list of metric names, got the string {extra!r}")
    try:  # an unknown name, or one the study's set already scores
        parse_metrics(names + list(extra))
    except ValueError as error:
        raise ValueError(f"config metrics.extra: {error}") from None
    return names + list(extra)


def _usage(definition: MetricDefinition) -> str:
    return f"{definition.name}@<{definition.cutoff}>" if definition.cutoff else definition.name


# The identifying and grouping columns of a score or means table: never metrics.
ID_COLUMNS = {"qid", "doc_id", "qtype", "corpus", "condition", "embedder", "reranker"}


def metric_columns(scores) -> list[str]:
    """The columns of ``scores`` (or of a means table) that are registered metrics, in table order:
    ids, counts and any other column are not metrics."""
    return [c for c in scores.columns if c not in ID_COLUMNS and is_metric(c)]
