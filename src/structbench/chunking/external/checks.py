"""The peer chunkers' start-up checks: the ``chunkers`` entries, the ones conditions name, and the libraries the
selected ones run, checked against the installed library's own signature (the adapters are not imported)."""

from __future__ import annotations

from structbench import conditions as axes
from structbench.artifacts import keys
from structbench.configerror import ConfigError


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
