"""The LLM steps' start-up checks: the ``llms`` entries and the keys that name them (inducers, contexts, TOC
routing), and the selected conditions that need an LLM (:func:`structbench.crosskeys.check_cross_keys` runs it)."""

from __future__ import annotations

from structbench import conditions as axes
from structbench.configerror import ConfigError


def check_llm_config(config: dict, conditions: dict) -> None:
    """The LLM steps' cross-key checks: every ``llms.<name>`` entry is a valid ``LLMSpec``
    (:meth:`structbench.llm.LLMSpec.from_config`, whose errors name ``llms.<name>``), inducers and
    contexts name declared LLMs, a condition's ``induced:<x>`` names a declared inducer, a
    ``context`` prefix has ``contexts.llm`` set, and a ``toc`` retrieval has ``retrieval.toc_llm`` set
    to a declared LLM."""
    from structbench.llm.spec import LLMSpec

    llms = config.get("llms") or {}
    for name, entry in llms.items():
        try:
            LLMSpec.from_config(entry, name)
        except (TypeError, ValueError) as error:
            raise ConfigError(str(error)) from None
    declared = f"(declared: {sorted(llms)})"
    embedders = config.get("embedders") or {}
    for name, inducer in (config.get("inducers") or {}).items():
        # the schema gives each kind its own keys: llm names an LLM, segmentation and learned an embedder
        if inducer["kind"] == "llm":
            if inducer["llm"] not in llms:
                raise ConfigError(f"inducers.{name}.llm = {inducer['llm']!r} names no llms entry {declared}")
        elif inducer["embedder"] not in embedders:
            raise ConfigError(
                f"inducers.{name}.embedder = {inducer['embedder']!r} names no embedders entry "
                f"(declared: {sorted(embedders)}); a {inducer['kind']} inducer reads that embedder's vectors"
            )
    context_llm = (config.get("contexts") or {}).get("llm")
    if context_llm is not None and context_llm not in llms:
        raise ConfigError(f"contexts.llm = {context_llm!r} names no llms entry {declared}")
    toc_llm = (config.get("retrieval") or {}).get("toc_llm")
    if toc_llm is not None and toc_llm not in llms:
        raise ConfigError(f"retrieval.toc_llm = {toc_llm!r} names no llms entry {declared}")
    inducers = config.get("inducers") or {}
    for name, condition in conditions.items():
        if condition.retrieval == "toc" and toc_llm is None:
            raise ConfigError(
                f"conditions.{name}.retrieval = 'toc' needs retrieval.toc_llm (the llms entry that reads "
                "the table of contents and names a section), which is not set"
            )
        kind, inducer = axes.parse_value("structure", condition.structure)
        if kind.name == "induced" and inducer not in inducers:
            raise ConfigError(
                f"conditions.{name}.structure = {condition.structure!r} names inducer {inducer!r}, "
                f"which inducers does not declare (declared: {sorted(inducers)})"
            )
        if condition.prefix == "context" and context_llm is None:
            raise ConfigError(
                f"conditions.{name}.prefix = 'context' needs contexts.llm (the llms entry that "
                "writes the situating contexts), which is not set"
            )
