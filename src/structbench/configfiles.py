"""Config files layered as Snakemake layers them, with the FILE:LINE each key came from.

Snakemake (9.x) builds a run's config in this order, each layer merged over the last key by key
(``snakemake.utils.update_config``: a mapping merges into a mapping, anything else replaces):

1. the workflow's ``configfile:`` (``config/config.yaml``, the Snakefile's default);
2. each ``--configfile`` file, in the order given;
3. the ``--config KEY=VALUE`` entries, each value read as Snakemake reads it (:func:`parse_config_entries`).

:func:`layer_configs` does the same and keeps, for every key path, the layer that set it last
(:class:`Origin`), so ``structbench check-config`` can name ``config/my.yaml:12`` for a problem at
``chunking.t_min``. A key no layer set was filled from the schema's defaults: :meth:`LayeredConfig.where`
then names the key path alone. Light: PyYAML only, through the bounded reader (:mod:`structbench.yamlsafe`: no
alias bomb, no nesting past its bound, no duplicate key); no Snakemake import (the library never imports it).
"""

from __future__ import annotations

import copy
import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from structbench.yamlsafe import BoundedBaseLoader, BoundedSafeLoader, RefusedYAMLError, load_yaml

KeyPath = tuple  # ("chunking", "t_min"), ("contrasts", "C1", "conditions", 0)
SCHEMA_DEFAULT = "schema default"
# Under a workflow checkout: the Snakefile's ``configfile:`` (layer 1 above) and the schema that validates the
# layered config; ``structbench check-config`` and ``structbench export`` read a run's config from both.
DEFAULT_CONFIG = Path("config", "config.yaml")
SCHEMA = Path("workflow", "schemas", "config.schema.yaml")


@dataclass(frozen=True)
class Origin:
    """Where a key's value was written: a config file and its 1-based ``line``, or a ``--config`` entry."""

    source: str
    line: int | None = None

    def __str__(self) -> str:
        return self.source if self.line is None else f"{self.source}:{self.line}"


def key_lines(node: yaml.Node, loader: yaml.SafeLoader, path: KeyPath = ()) -> dict[KeyPath, int]:
    """The 1-based line of every key (and list item) under ``node``, by key path."""
    lines: dict[KeyPath, int] = {}
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            key = loader.construct_object(key_node, deep=True)
            lines[(*path, key)] = key_node.start_mark.line + 1
            lines |= key_lines(value_node, loader, (*path, key))
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            lines[(*path, index)] = item.start_mark.line + 1
            lines |= key_lines(item, loader, (*path, index))
    return lines


def load_with_lines(path: str | Path) -> tuple[dict, dict[KeyPath, int]]:
    """A config file's mapping and the line of each of its keys (``(config, {key path: line})``).

    The file is assumed readable YAML holding a mapping (``structbench.config.config_file_problems`` says
    when it is not); an empty file is an empty mapping. Read with the bounds of :mod:`structbench.yamlsafe`
    (a :class:`~structbench.yamlsafe.RefusedYAMLError` naming the file and line past them)."""
    loader = BoundedSafeLoader(Path(path).read_text(encoding="utf-8"), source=str(path))
    try:
        node = loader.get_single_node()
        if node is None:
            return {}, {}
        return loader.construct_document(node), key_lines(node, loader)
    finally:
        loader.dispose()


def _bool(value: str) -> bool:
    if value in ("True", "False"):
        return value == "True"
    raise ValueError(value)


def parse_config_value(text: str, source: str = "--config"):
    """A ``--config KEY=VALUE`` value as Snakemake reads it (``snakemake.cli.parse_config``, 9.27): the first
    of int, float, ``True``/``False``, YAML's BaseLoader (a ``{...}`` mapping of strings) that parses, else
    the string. The schema check then types a mapping's strings (``config._coerce_command_line_strings``).

    The YAML is read with the bounds of :mod:`structbench.yamlsafe`: a value past them is a
    :class:`~structbench.yamlsafe.RefusedYAMLError` naming ``source``, not a string to pass on."""
    if text == "":
        return None
    base_yaml = functools.partial(load_yaml, source=source, loader=BoundedBaseLoader)
    for parse in (int, float, _bool, base_yaml):
        try:
            value = parse(text)
        except RefusedYAMLError as error:  # one line on the command line: the source alone names it
            raise RefusedYAMLError(source, None, error.problem) from None
        except Exception:  # Snakemake tries each parser and moves on, whatever it raised
            continue
        if not callable(value) and value is not None:
            return value
    return text


CONFIG_KEY = re.compile(r"[a-zA-Z_][\w-]*\w$")  # Snakemake's rule for a --config key


def parse_config_entries(entries: Sequence[str]) -> list[tuple[str, object]]:
    """``--config`` ``KEY=VALUE`` entries as ``(key, value)`` pairs; a ``ValueError`` naming a malformed one."""
    pairs = []
    for entry in entries:
        key, equals, value = entry.partition("=")
        if not equals:
            raise ValueError(f"--config {entry!r}: a config entry is KEY=VALUE")
        if not CONFIG_KEY.match(key):
            raise ValueError(f"--config {entry!r}: the key must be an identifier (letters, digits, _ and -)")
        pairs.append((key, parse_config_value(value.strip("'\""), f"--config {key}=...")))
    return pairs


@dataclass
class LayeredConfig:
    """A merged ``config`` and, per key path, the :class:`Origin` of the layer that set it last."""

    config: dict = field(default_factory=dict)
    origins: dict[KeyPath, Origin] = field(default_factory=dict)

    def merge(self, layer: Mapping, origin_of) -> None:
        """Merge ``layer`` over the config as Snakemake's ``update_config`` does; ``origin_of(path)`` is the
        :class:`Origin` of each key path the layer sets."""
        _merge(self.config, layer, (), origin_of, self.origins)

    def where(self, path: Sequence) -> str:
        """Where a key path was set: ``FILE:LINE`` (or ``--config KEY=...``); for a key no layer set, the key
        path and ``schema default`` (the schema filled it, or it is missing)."""
        path = tuple(path)
        if path in self.origins:
            return str(self.origins[path])
        return f"{key_text(path)} ({SCHEMA_DEFAULT})"


def key_text(path: Sequence) -> str:
    """A key path as the config's errors write it: ``conditions.G2.t_max``, ``contrasts.C1.conditions.0``."""
    return ".".join(str(part) for part in path) or "(top level)"


def _merge(into: dict, layer: Mapping, path: KeyPath, origin_of, origins: dict) -> None:
    for key, value in layer.items():
        here = (*path, key)
        if isinstance(value, Mapping):
            if not isinstance(into.get(key), dict):
                _forget(origins, here)
                into[key] = {}
            origins[here] = origin_of(here)
            _merge(into[key], value, here, origin_of, origins)
        else:
            _forget(origins, here)
            into[key] = copy.deepcopy(value)
            origins[here] = origin_of(here)
            for index in range(len(value)) if isinstance(value, list) else ():
                origins[(*here, index)] = origin_of((*here, index))


def _forget(origins: dict, path: KeyPath) -> None:
    """Drop the origins under ``path``: a replaced value's old keys are no longer in the config."""
    for known in [known for known in origins if known[: len(path)] == path and len(known) > len(path)]:
        del origins[known]


def layer_configs(files: Sequence[str | Path], entries: Sequence[str] = ()) -> LayeredConfig:
    """``files`` (the workflow's default first, then each ``--configfile``) and ``--config`` ``entries``,
    merged in Snakemake's order, each key's origin kept. The files must read cleanly (see module docstring)."""
    layered = LayeredConfig()
    for path in files:
        loaded, lines = load_with_lines(path)
        layered.merge(loaded, lambda key, path=path, lines=lines: _file_origin(path, lines, key))
    for key, value in parse_config_entries(entries):
        layered.merge({key: value}, lambda _, key=key: Origin(f"--config {key}=..."))
    return layered


def _file_origin(path, lines: dict[KeyPath, int], key: KeyPath) -> Origin:
    """A key's line in ``path``; for a key inside a flow mapping on one line, that line too."""
    while key and key not in lines:
        key = key[:-1]
    return Origin(str(path), lines.get(key))


KEY_MENTION = re.compile(r"[A-Za-z_][\w-]*(?:\.[\w:-]+)+")  # chunking.t_min, conditions.G2-200.t_max


def named_key_path(message: str, config: Mapping) -> KeyPath | None:
    """The first key path of ``config`` that ``message`` names (``chunking.t_min = 200 exceeds ...`` ->
    ``("chunking", "t_min")``), cut to the part that exists; None when it names none.

    The cross-key checks (``structbench.crosskeys``) name the key they refuse at the start of their message;
    a key holding a dot of its own is matched whole, so ``a.b`` as one key is not read as ``a`` then ``b``."""
    for mention in KEY_MENTION.finditer(message):
        path = _existing_prefix(mention.group(0).rstrip(":"), config)
        if path:
            return path
    return None


def _existing_prefix(dotted: str, config: Mapping) -> KeyPath:
    path: list = []
    node, rest = config, dotted
    while rest and isinstance(node, Mapping | list):
        keys = [str(index) for index in range(len(node))] if isinstance(node, list) else [str(k) for k in node]
        found = max((k for k in keys if rest == k or rest.startswith(k + ".")), key=len, default=None)
        if found is None:
            break
        key = int(found) if isinstance(node, list) else next(k for k in node if str(k) == found)
        path.append(key)
        node, rest = node[key], rest[len(found) + 1 :]
    return tuple(path)


CONFIGFILE_OPTIONS = ("--configfile", "--configfiles")
CONFIG_OPTIONS = ("--config", "-C")


def snakemake_config_arguments(arguments: Sequence[str]) -> tuple[list[str], list[str]]:
    """The ``--configfile`` files and the ``--config`` ``KEY=VALUE`` entries of a Snakemake command line.

    Each option takes every following argument up to the next option (``--configfile=FILE``, ``--config=K=V``
    one); ``--configfiles`` and ``-C`` are their other spellings."""
    files: list[str] = []
    entries: list[str] = []
    taking: list[str] | None = None
    for argument in arguments:
        option, equals, value = argument.partition("=")
        if option in CONFIGFILE_OPTIONS or option in CONFIG_OPTIONS:
            taking = files if option in CONFIGFILE_OPTIONS else entries
            if equals:
                taking.append(value)
                taking = None
        elif argument.startswith("-"):
            taking = None
        elif taking is not None:
            taking.append(argument)
    return files, entries
