"""Which metric each Holm family reads first (docs/method.md §10 and §18).

A family's *reading* is the order in which its Table 1 rows are read, its leading metric the one a
reader takes for the family's answer. Families of chunk runs lead with the primary metric
(coverage-nDCG@10, stats.primary_metric). A family whose runs return units of variable length (the
``readtime`` family: parent sections, merged blocks, windows) leads with token-budget coverage: a
coverage-nDCG credits the evidence a unit covers without charging the text the reader pays for it, so a
longer unit buys a higher score (above 1 against the chunk set's ideal), while a fixed token budget
charges every returned token and is at most 1 by construction (§10).
"""

from __future__ import annotations

from collections.abc import Sequence

from structbench.conditions import FAMILIES
from structbench.metrics.registry import is_metric, parse_metric

BUDGET_METRIC = "budget_cov"
# families whose runs rank units of variable length, read on token budgets first
BUDGET_FIRST_FAMILIES = frozenset({"readtime"})


def budget_of(metric: str) -> int | None:
    """The token budget of a token-budget coverage metric (``budget_cov@512`` -> 512), else None."""
    if not is_metric(metric):
        return None
    parsed = parse_metric(metric)
    return parsed.cutoff if parsed.definition.name == BUDGET_METRIC else None


def family_reading(family: str, metrics: Sequence[str], primary_metric: str | None) -> list[str]:
    """``metrics`` (distinct) in the order ``family`` reads them.

    Budget-first families (:data:`BUDGET_FIRST_FAMILIES`): token-budget coverage by ascending budget,
    then the primary metric, then the rest in the given order. Every other family: the primary metric,
    then token-budget coverage by ascending budget, then the rest in the given order.
    """
    budgets = sorted((m for m in metrics if budget_of(m) is not None), key=budget_of)
    primary = [primary_metric] if primary_metric in metrics else []
    rest = [m for m in metrics if m not in budgets and m not in primary]
    lead = budgets + primary if family in BUDGET_FIRST_FAMILIES else primary + budgets
    return lead + rest


def table_reading(families: Sequence[str], metrics: Sequence[str], primary_metric: str | None) -> list[str]:
    """One metric order for a table whose rows belong to ``families``: the reading
    (:func:`family_reading`) of the first family of :data:`~structbench.conditions.FAMILIES` among them
    that claims a Holm family (exploratory rows claim none, so they never set it; a table of them alone
    reads as the primary family). A table of the readtime family leads with the budgets; one holding the
    primary family leads with the primary metric and puts the budgets right after it."""
    claiming = [family for family in FAMILIES[:-1] if family in set(families)]
    return family_reading(claiming[0] if claiming else FAMILIES[0], list(dict.fromkeys(metrics)), primary_metric)
