"""Query generation's start-up check (:func:`structbench.crosskeys.check_cross_keys` runs it)."""

from __future__ import annotations

from structbench.artifacts.selection import selected
from structbench.configerror import ConfigError
from structbench.defaults import SEED


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
