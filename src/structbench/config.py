"""Start-up validation of a workflow config, part one: its files, the schema and its defaults.

Everything here runs before any job does, so a bad config stops the run with an error that names the
key (``chunking.t_min``, ``contrasts.C1``), never minutes into it.

- :func:`config_file_problems` names a ``--configfile`` that is missing, empty or not YAML, with its line, and
  one the bounded reader refuses (:mod:`structbench.yamlsafe`: an alias bomb, nesting past its bound, a key
  written twice), where Snakemake's own loader would expand it, overflow or keep the last value silently.
- :func:`load_schema` reads ``workflow/schemas/config.schema.yaml`` and fills its ``$defs/axes`` from
  :mod:`structbench.conditions`, the one definition of the legal axis values.
- :func:`validate_config` checks a config against it and fills the schema's defaults in place (the
  rules and the library then read every value from the config and restate none); an unknown key is named
  at its own path, with the key it may mean.

The checks a schema cannot say are :func:`structbench.crosskeys.check_cross_keys`, which runs the ones kept
beside each subsystem. :class:`ConfigError` (:mod:`structbench.configerror`) is what all of them raise.
"""

from __future__ import annotations

import copy
import difflib
import math
from pathlib import Path

import yaml

from structbench import conditions as axes
from structbench.configerror import ConfigError
from structbench.yamlsafe import RefusedYAMLError, load_yaml, load_yaml_file, unbounded_value

__all__ = ["ConfigError", "config_file_problems", "load_schema", "validate_config"]


def config_file_problems(paths) -> list[str]:
    """``FILE:LINE:COLUMN: problem`` for each of ``paths`` that is not valid YAML, ``FILE: problem`` for one
    whose top level is not a mapping, ``FILE: no such file`` for a missing one and ``FILE: empty`` for one
    that holds no keys, and ``FILE:LINE: problem`` for one the bounded reader refuses (:mod:`structbench.yamlsafe`;
    ``[]`` when every file reads cleanly). Snakemake prints a traceback for a missing ``--configfile`` and a
    message naming no file for an empty one; it keeps a duplicate key's last value silently.

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
            loaded = load_yaml_file(path)
        except UnicodeDecodeError as error:
            problems.append(f"{path}: not valid UTF-8 (byte {error.start})")
            continue
        except RefusedYAMLError as error:  # an alias bomb, nesting past the bound, a duplicate key
            problems.append(str(error))
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
            value = load_yaml(error.instance, f"--config {_key(error.absolute_path)}")
        except (yaml.YAMLError, RefusedYAMLError):
            continue
        wanted = error.validator_value if isinstance(error.validator_value, list) else [error.validator_value]
        if any(validator.is_type(value, kind) for kind in wanted if kind != "string"):
            parent = config
            for part in list(error.absolute_path)[:-1]:
                parent = parent[part]
            parent[error.absolute_path[-1]] = value


UNEXPECTED_KEYS = ("additionalProperties", "unevaluatedProperties")


def schema_problems(error, paths: list[tuple] = ()) -> list[tuple[tuple, str]]:
    """``(key path, problem)`` for one schema violation. A key the schema does not allow is named at its own
    path (so check-config gives the line that wrote it), with the nearest allowed key when one is close (a
    typo); any other violation at the path it sits at, in jsonschema's words. ``paths`` are every violation's
    path: a kind's branch that fails deeper (``paths`` below this entry) leaves all its keys unevaluated, so
    then only keys no kind declares are named (the deeper violation says what is wrong)."""
    path = tuple(error.absolute_path)
    if error.validator not in UNEXPECTED_KEYS or not isinstance(error.instance, dict):
        return [(path, error.message)]
    unexpected = [key for key in error.instance if repr(key) in error.message]  # the message lists each repr
    here = set(error.schema.get("properties") or {})
    elsewhere = _branch_keys(error.schema) - here
    branch_failed = any(len(other) > len(path) and other[: len(path)] == path for other in paths)
    problems = []
    for key in unexpected:
        if key in elsewhere:  # a key of another kind of entry (then / else, allOf branches)
            if not branch_failed:
                problems.append(
                    ((*path, key), "not a key of this kind of entry (its kind takes other keys: config/README.md)")
                )
            continue
        close = difflib.get_close_matches(str(key), sorted(map(str, here | elsewhere)), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        problems.append(((*path, key), f"unknown key{hint} (config/README.md lists every key)"))
    return problems if problems or branch_failed else [(path, error.message)]


def _branch_keys(schema: dict) -> set:
    """The property names a schema node and its conditional branches (``then``, ``else``, ``allOf``, ``anyOf``,
    ``oneOf``) declare: the keys some entry of its kind may hold."""
    keys = set(schema.get("properties") or {})
    branches = [schema.get(name) for name in ("then", "else")]
    branches += [item for name in ("allOf", "anyOf", "oneOf") for item in schema.get(name) or []]
    for branch in branches:
        if isinstance(branch, dict):
            keys |= _branch_keys(branch)
    return keys


def validate_config(config: dict, schema_path: str | Path) -> dict:
    """Validate ``config`` in place against the schema and fill its defaults; return it.

    Raises :class:`ConfigError` listing every violation with the key it sits at. A config past the YAML
    reader's bounds with its shared parts written out (a ``--config`` value Snakemake parsed with aliases) is
    refused first, before any walk of it (:func:`structbench.yamlsafe.unbounded_value`)."""
    unbounded = unbounded_value(config)
    if unbounded:
        path, problem = unbounded
        raise ConfigError(f"invalid config: {_key(path)}: {problem}", [unbounded])
    validator = _validator_with_defaults(load_schema(schema_path))
    _coerce_command_line_strings(validator, config)
    errors = sorted(validator.iter_errors(config), key=lambda e: [str(p) for p in e.absolute_path])
    paths = [tuple(error.absolute_path) for error in errors]
    problems = [problem for error in errors for problem in schema_problems(error, paths)]
    problems += [(path, f"{value!r} is not a finite number") for path, value in non_finite_numbers(config)]
    if problems:
        lines = [f"  {_key(path)}: {problem}" for path, problem in problems]
        raise ConfigError(
            "invalid config (workflow/schemas/config.schema.yaml; keys in config/README.md):\n" + "\n".join(lines),
            problems,
        )
    return config
