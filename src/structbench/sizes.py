"""Chunk size as a condition attribute (docs/method.md §6a): a condition's own ``t_max``/``t_min``, how a chunk
set's path names it, and the checks of the size curve.

Pure and light: :mod:`structbench.conditions` resolves each condition's size with :func:`own_size`, the
workflow reads a chunk set's bounds back from its path with :func:`parse_size_token`, and the statistics step
puts a size curve's sizes on its dose axis with :func:`size_doses`.

A size differs from the run's ``chunking`` bounds or it is no size of its own: ``own_size`` keeps only the
bounds that differ, so ``t_max: 350`` under ``chunking.t_max: 350`` is the run's chunk set, not a copy of it,
and a config without per-condition sizes keeps every path it had.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence

from structbench.defaults import T_MAX, T_MIN

SIZE_KEYS = ("t_max", "t_min")
# A chunk set's size in its path: "-t<t_max>" and/or "-m<t_min>" where they differ from the run's bounds.
SIZE_TOKEN = r"(?:-t[1-9][0-9]*)?(?:-m[0-9]+)?"
MINIMUM = {"t_max": 1, "t_min": 0}  # as chunking.t_max / t_min in the config schema


def size_token(t_max: int | None, t_min: int | None) -> str:
    """The path suffix of a condition's own size (``None``: the run's bound): ``(200, None)`` -> ``-t200``,
    ``(200, 30)`` -> ``-t200-m30``, ``(None, None)`` -> ``""``."""
    return (f"-t{t_max}" if t_max is not None else "") + (f"-m{t_min}" if t_min is not None else "")


def run_size(chunking: Mapping | None) -> tuple[int, int]:
    """The run's ``(t_max, t_min)``: ``chunking.t_max`` / ``t_min``, the study's defaults where unset."""
    chunking = chunking or {}
    return int(chunking.get("t_max", T_MAX)), int(chunking.get("t_min", T_MIN))


def parse_size_token(token: str, chunking: Mapping | None = None) -> tuple[int, int]:
    """The ``(t_max, t_min)`` a chunk set's size suffix names, the run's ``chunking`` bounds where it is
    silent (the inverse of :func:`size_token`): ``"-t200"`` -> ``(200, 60)`` under the default bounds."""
    match = re.fullmatch(r"(?:-t([1-9][0-9]*))?(?:-m([0-9]+))?", token)
    if match is None:
        raise ValueError(f"{token!r} is not a chunk-set size suffix (-t<t_max>, -m<t_min>, both, or empty)")
    default_max, default_min = run_size(chunking)
    t_max, t_min = match.groups()
    return int(t_max) if t_max else default_max, int(t_min) if t_min else default_min


def split_size(boundaries_token: str) -> tuple[str, str]:
    """A chunk set's boundaries path token as (boundaries, size suffix): ``structural-t200`` ->
    ``("structural", "-t200")``, ``external-lc`` -> ``("external-lc", "")``."""
    match = re.fullmatch(rf"(.*?)({SIZE_TOKEN})", boundaries_token)
    return match.group(1), match.group(2)


def chunkset_size(boundaries_token: str, chunking: Mapping | None = None) -> tuple[int, int]:
    """The ``(t_max, t_min)`` of a chunk set from its boundaries path token (``structural-t200`` -> ``(200,
    60)`` under the default bounds; ``external-x`` -> the run's bounds)."""
    return parse_size_token(split_size(boundaries_token)[1], chunking)


def _bound(where: str, key: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{where}.{key} = {value!r} is not an integer number of tokens")
    if value < MINIMUM[key]:
        raise ValueError(f"{where}.{key} = {value} must be at least {MINIMUM[key]} tokens")
    return value


def own_size(
    where: str,
    entry: Mapping,
    chunking: Mapping | None = None,
    chunker: tuple[str, Mapping] | None = None,
    uses_t_min: bool = True,
) -> tuple[int | None, int | None]:
    """A condition's own ``(t_max, t_min)``, each ``None`` where it equals the run's bound.

    ``entry`` is the condition's config entry (``where`` names it: ``conditions.G2-200``); ``chunker`` is
    ``(name, chunkers.<name> entry)`` for an external chunker, whose own size applies to every condition
    that runs it (a condition that sets a different one is an error). ``uses_t_min`` is false for
    boundaries that never read ``t_min`` (an external chunker that is not size-matched cuts at ``t_max``
    alone), where a ``t_min`` of the condition's own would change nothing but the bounds report.

    Raises ``ValueError`` naming the key: a bound that is no integer or below its minimum, a condition
    and its chunker that disagree, a ``t_min`` the boundaries ignore, ``t_min`` above ``t_max``."""
    run = dict(zip(SIZE_KEYS, run_size(chunking)))
    resolved: dict[str, int] = {}
    for key in SIZE_KEYS:
        mine = _bound(where, key, entry[key]) if entry.get(key) is not None else None
        theirs = None
        if chunker is not None and (chunker[1] or {}).get(key) is not None:
            theirs = _bound(f"chunkers.{chunker[0]}", key, chunker[1][key])
        if mine is not None and theirs is not None and mine != theirs:
            raise ValueError(
                f"{where}.{key} = {mine} but its chunker's chunkers.{chunker[0]}.{key} = {theirs}: a chunker "
                f"entry's size applies to every condition that runs it; set one of the two"
            )
        if key == "t_min" and not uses_t_min and (mine if mine is not None else theirs) is not None:
            source = where if mine is not None else f"chunkers.{chunker[0]}"
            raise ValueError(
                f"{source}.t_min is set, but these boundaries never read t_min (an external chunker without "
                "size_match cuts at t_max alone): it would change nothing but the bounds report; leave it out"
            )
        resolved[key] = next(value for value in (mine, theirs, run[key]) if value is not None)
    if resolved["t_min"] > resolved["t_max"]:
        origin = {key: f"{where}.{key}" if entry.get(key) is not None else f"chunking.{key}" for key in SIZE_KEYS}
        raise ValueError(
            f"{where}: t_min = {resolved['t_min']} ({origin['t_min']}) exceeds t_max = {resolved['t_max']} "
            f"({origin['t_max']}): no chunk could satisfy both bounds"
        )
    own = [resolved[key] if resolved[key] != run[key] else None for key in SIZE_KEYS]
    return own[0], own[1]


def check_size_curve(name: str, sizes: Sequence, member_sizes: Mapping[str, int]) -> tuple[float, ...]:
    """A size curve's ``sizes``, checked against its conditions' ``t_max`` (``member_sizes``, condition ->
    its resolved ``t_max``, in the curve's order): one positive size per condition, no size twice, and each
    the ``t_max`` of its condition, so the curve's axis is what was chunked. Raises ``ValueError`` naming
    ``contrasts.<name>.sizes``."""
    where = f"contrasts.{name}.sizes"
    members = list(member_sizes)
    if len(sizes) != len(members):
        raise ValueError(f"{where} lists {len(sizes)} size(s) for {len(members)} condition(s): one per condition")
    for value in sizes:
        if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0 or math.isinf(value):
            raise ValueError(f"{where} = {list(sizes)}: every size is a positive number of tokens, got {value!r}")
    if len(set(sizes)) != len(sizes):
        raise ValueError(f"{where} = {list(sizes)} lists a size twice: a curve needs one condition per size")
    disagree = [
        f"{member} is chunked at t_max = {member_sizes[member]}, not {size:g}"
        for member, size in zip(members, sizes)
        if member_sizes[member] != size
    ]
    if disagree:
        raise ValueError(f"{where} = {list(sizes)} disagrees with its conditions: " + "; ".join(disagree))
    return tuple(sizes)


def size_doses(sizes: Sequence[float]) -> list[float]:
    """A size curve's dose axis: log2 of each size, so its slope is the change per doubling of ``t_max``
    (docs/method.md §6a: a chunk size's effect is read on a ratio scale, 200 -> 400 as 400 -> 800)."""
    return [math.log2(float(size)) for size in sizes]
