"""Checks of the practitioner API's and the CLI's arguments: each names the argument, the value and what it takes.

Pure and light (no tokenizer, no polars): :mod:`structbench.api` checks every argument with these before any
work, and :mod:`structbench.cli` builds its argparse types on them, so ``chunk_markdown(t_max="300")`` and
``structbench chunk --t-max 0`` are refused in the same words. A wrong type is a ``TypeError``, a value of
the right type out of its range a ``ValueError``. The bounds are the workflow's (``structbench.sizes``:
``t_max >= 1``, ``t_min >= 0``, ``t_min <= t_max``; ``structbench.overlap`` for the overlap), so a size or an
overlap accepted here means what the same number means in a config.
"""

from __future__ import annotations

import numbers
import os
import re
from collections.abc import Collection, Mapping
from pathlib import Path

from structbench.overlap import Overlap, parse_overlap


def _shown(value) -> str:
    """A value as an error message shows it: its type and repr (``str '300'``, ``NoneType None``)."""
    return f"{type(value).__name__} {value!r}"


def whole_number(name: str, value, minimum: int, unit: str = "tokens") -> int:
    """``value`` as an ``int`` of at least ``minimum``: a ``TypeError`` for anything but a whole number (a
    ``bool``, a string such as ``'300'``, a float, None), a ``ValueError`` below ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be a whole number of {unit} (int), got {_shown(value)}")
    if value < minimum:
        raise ValueError(f"{name} must be a whole number of {unit} >= {minimum}, got {value}")
    return int(value)


def size_bounds(t_max, t_min) -> tuple[int, int]:
    """``(t_max, t_min)`` checked as the workflow checks a condition's size (:mod:`structbench.sizes`):
    whole numbers, ``t_max >= 1``, ``t_min >= 0``, and ``t_min <= t_max`` (else no chunk could satisfy both)."""
    t_max = whole_number("t_max", t_max, 1)
    t_min = whole_number("t_min", t_min, 0)
    if t_min > t_max:
        raise ValueError(f"t_min = {t_min} exceeds t_max = {t_max}: no chunk could satisfy both bounds")
    return t_max, t_min


def text(name: str, value, *, optional: bool = False, visible: bool = False) -> str | None:
    """``value`` as a ``str`` (None too when ``optional``): a ``TypeError`` otherwise; with ``visible``, a
    ``ValueError`` for text of whitespace only."""
    if value is None and optional:
        return None
    if not isinstance(value, str):
        expected = "text (str) or None" if optional else "text (str)"
        raise TypeError(f"{name} must be {expected}, got {_shown(value)}")
    if visible and not value.strip():
        raise ValueError(f"{name} must be visible text such as ' > ', got {value!r}")
    return encodable(name, value)


LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def encodable(name: str, value: str) -> str:
    """``value`` when UTF-8 can encode it, else a ``ValueError`` naming the first lone surrogate and its position.

    A ``str`` may hold a lone surrogate (U+D800..U+DFFF): bytes decoded with ``errors="surrogateescape"`` (how
    Python reads undecodable file names and arguments) or half of a UTF-16 pair. The tokenizer cannot encode it
    and would fail with a bare ``UnicodeEncodeError`` naming no argument."""
    found = LONE_SURROGATE.search(value)
    if found:
        raise ValueError(
            f"{name} holds a lone surrogate U+{ord(found.group()):04X} at character {found.start()}, which no UTF-8 "
            "text can hold (bytes decoded with errors='surrogateescape', or half of a UTF-16 pair): decode the "
            "source with errors='strict' to find the bad bytes, or with errors='replace' to drop them"
        )
    return value


def overlap(value, t_max: int) -> Overlap | None:
    """The overlap ``value`` declares, as the workflow reads ``fixed_overlap:<o>`` (:mod:`structbench.overlap`):
    None or 0 for none, an ``int`` of tokens, or a ``float`` share of the window below 1. A ``TypeError`` for
    any other type (a string, a bool); a ``ValueError`` for a negative overlap, a share of 1 or more, or a
    token overlap at or above ``t_max`` (no window is longer, so it leaves no stride), as at config load."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(
            f"overlap must be a number: tokens (int, e.g. 50) or a share of the window below 1 (float, e.g. 0.5), "
            f"got {_shown(value)}"
        )
    declared = parse_overlap(int(value) if isinstance(value, numbers.Integral) else float(value), "overlap")
    if declared is not None:
        declared.check_size(t_max, "overlap")  # no window is longer than t_max
    return declared


def one_of(name: str, value, choices: Collection):
    """``value`` when it is one of ``choices``, else a ``ValueError`` naming them."""
    if not any(value is choice or (type(value) is type(choice) and value == choice) for choice in choices):
        raise ValueError(f"{name} must be one of {tuple(choices)}, got {value!r}")
    return value


def function_or_none(name: str, value, expected: str):
    """``value`` when it is callable or None, else a ``TypeError`` saying what function is ``expected``."""
    if value is not None and not callable(value):
        raise TypeError(f"{name} must be {expected} or None, got {_shown(value)}")
    return value


def options(name: str, value, accepted: Collection[str]) -> dict:
    """``value`` (a mapping of option names, or None) as a dict: a ``TypeError`` for another type, a
    ``ValueError`` naming an option that is not among ``accepted``."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise TypeError(f"{name} must be a dict of options or None, got {_shown(value)}")
    unknown = sorted(str(key) for key in value if key not in accepted)
    if unknown:
        raise ValueError(f"{name} has unknown options {unknown}; the options are {sorted(accepted)}")
    return dict(value)


def path_like(name: str, value) -> os.PathLike | str:
    """``value`` when it is a path (``str`` or ``os.PathLike``), else a ``TypeError``."""
    if not isinstance(value, (str, os.PathLike)):
        raise TypeError(f"{name} must be a path (str or pathlib.Path), got {_shown(value)}")
    return value


def writable_file(name: str, value) -> Path:
    """``value`` as the path of a file this process can write, checked before the work that makes the file
    (training a model takes seconds to minutes): a ``ValueError`` for a path that is an existing folder, one
    whose nearest existing folder above it is a file, or one in a folder it cannot write. Folders missing
    above it are fine (the writer makes them)."""
    path = Path(path_like(name, value))
    if path.is_dir():
        raise ValueError(
            f"{name} {str(path)!r} is a folder; name the file to write, such as {str(path / 'model.bin')!r}"
        )
    if path.exists() and not os.access(path, os.W_OK):
        raise ValueError(f"{name} {str(path)!r} exists and cannot be written (permission denied)")
    above = next(parent for parent in path.absolute().parents if parent.exists())
    if not above.is_dir():
        raise ValueError(f"{name} {str(path)!r} cannot be made: {str(above)!r} is a file, not a folder")
    if not os.access(above, os.W_OK | os.X_OK):
        raise ValueError(f"{name} {str(path)!r} cannot be made: folder {str(above)!r} is not writable")
    return path
