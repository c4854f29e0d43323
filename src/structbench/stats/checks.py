"""The statistics step's start-up check: the ``subgroups`` key (docs/method.md §11, "Subgroups (moderators)")."""

from __future__ import annotations

from collections.abc import Mapping

from structbench.configerror import ConfigError
from structbench.stats.moderators import MODERATORS


def subgroup_entry(config: Mapping) -> tuple[list[str], list[str]]:
    """The ``subgroups`` key's moderators and contrasts (the schema fills both as empty lists; a config read
    without the schema may lack them)."""
    entry = config.get("subgroups") or {}
    return list(entry.get("moderators") or []), list(entry.get("contrasts") or [])


def subgroups_requested(config: Mapping) -> bool:
    """Whether the config asks for a subgroup analysis: both ``subgroups.moderators`` and ``subgroups.contrasts``
    name something (either empty: no analysis, no job, so a layered config turns it off with ``contrasts: []``)."""
    moderators, contrasts = subgroup_entry(config)
    return bool(moderators and contrasts)


def check_subgroups_config(config: Mapping, contrasts: Mapping) -> None:
    """``subgroups.moderators`` are moderators of :data:`structbench.stats.moderators.MODERATORS`, and
    ``subgroups.contrasts`` are declared (``contrasts``: name -> :class:`structbench.conditions.Contrast`,
    every declared one) pairwise contrasts; each a :class:`ConfigError` naming the key. A declared contrast that
    ``select.conditions`` leaves out is no error: it is not run, so it has no subgroups either."""
    moderators, named = subgroup_entry(config)
    unknown = [name for name in moderators if name not in MODERATORS]
    if unknown:
        raise ConfigError(
            f"subgroups.moderators names {unknown}, which are not moderators; moderators are {list(MODERATORS)}"
        )
    undeclared = [name for name in named if name not in contrasts]
    if undeclared:
        raise ConfigError(
            f"subgroups.contrasts names {undeclared}, which config.contrasts does not declare "
            f"(declared: {sorted(contrasts)})"
        )
    slopes = [name for name in named if contrasts[name].conditions]
    if slopes:
        raise ConfigError(
            f"subgroups.contrasts names {slopes}, which are dose-response contrasts: a subgroup analysis splits a "
            "pairwise contrast's per-question deltas (treatment − control); name pairwise contrasts"
        )
