"""``structbench check-config``: the workflow's start-up checks on a Snakemake command line's config, each
problem named at the FILE:LINE that set its key.

:func:`check_command_line` layers the config exactly as Snakemake does (:mod:`structbench.configfiles`: the
workflow's ``config/config.yaml``, each ``--configfile``, the ``--config`` entries) and runs
:func:`structbench.plan.study.start_up`, the one function ``rules/common.smk`` runs too, so the command refuses
what the workflow refuses and nothing else. Endpoint probes send requests, so they run only when asked
(``probe``), as the workflow's ``onstart`` runs them only for a real run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from structbench.config import ConfigError, config_file_problems
from structbench.configfiles import (
    DEFAULT_CONFIG,
    SCHEMA,
    SCHEMA_DEFAULT,
    LayeredConfig,
    key_text,
    layer_configs,
    named_key_path,
    snakemake_config_arguments,
)


@dataclass
class ConfigCheck:
    """The answer: ``problems`` (each ``FILE:LINE: ...``; any makes the command fail), ``warnings`` (logged by
    the workflow too, not failures) and ``probed`` (one line per endpoint a probe reached)."""

    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    probed: list[str] = field(default_factory=list)


def workflow_root(start: Path | None = None) -> Path:
    """The workflow folder whose defaults and schema apply: ``start`` (the working directory) when it holds
    a Snakefile, as Snakemake finds it; else the checkout this package is installed from."""
    start = Path.cwd() if start is None else start
    if (start / "Snakefile").is_file():
        return start
    return Path(__file__).resolve().parents[2]


def located(error: ConfigError, layered: LayeredConfig) -> list[str]:
    """A start-up error as ``WHERE: ...`` lines: each schema violation at its key's FILE:LINE, a cross-key
    error at the first key its message names (:func:`structbench.configfiles.named_key_path`); a key no
    file set is named with ``(schema default)``."""
    if error.problems:
        return [_at(layered, path, f"{key_text(path)}: {problem}") for path, problem in error.problems]
    path = named_key_path(str(error), layered.config)
    return [_at(layered, path, str(error)) if path else f"config: {error}"]


def _at(layered: LayeredConfig, path: tuple, text: str) -> str:
    where = layered.where(path)
    if where.endswith(f"({SCHEMA_DEFAULT})") and text.startswith(key_text(path)):
        return f"{where}{text[len(key_text(path)) :]}"  # "chunking.t_min (schema default): ...", the key once
    return f"{where}: {text}"


def check_command_line(
    files: Sequence[str] = (), snakemake_args: Sequence[str] = (), root: Path | None = None, probe: bool = False
) -> ConfigCheck:
    """Check the config of ``files`` plus a Snakemake command line's ``--configfile``/``--config``, layered
    over ``root``'s default config, with the workflow's start-up checks (and, with ``probe``, its probes)."""
    from structbench.plan.study import start_up

    root = workflow_root() if root is None else root
    configfiles, entries = snakemake_config_arguments(snakemake_args)
    files = [*files, *configfiles]
    check = ConfigCheck(problems=config_file_problems(files))
    if check.problems:
        return check
    try:
        layered = layer_configs([root / DEFAULT_CONFIG, *files], entries)
    except ValueError as error:  # a malformed --config entry
        return ConfigCheck(problems=[str(error)])
    try:
        startup = start_up(layered.config, root / SCHEMA)
    except ConfigError as error:
        return ConfigCheck(problems=located(error, layered))
    check.warnings = startup.warnings
    if probe:
        check.probed, check.problems = _probe(layered.config)
    return check


def _probe(config: dict) -> tuple[list[str], list[str]]:
    """The workflow's endpoint probes (its ``onstart``): the lines probed, or the error that stopped them."""
    from structbench.endpoints.probe import probe_endpoints
    from structbench.http import EndpointError

    try:
        return probe_endpoints(config, f"{config['cache']}/embeddings"), []
    except (EndpointError, OSError, ValueError) as error:
        return [], [f"endpoint probe: {error}"]
