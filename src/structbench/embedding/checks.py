"""The embedders' start-up checks: late chunking's needs (token embeddings, a window wider than its overlap) and the
warnings for chunks an embedder would truncate. Both read the model's effective window from its files
(:func:`structbench.embedding.local.effective_max_seq_length`), so they live beside the encoder that uses it."""

from __future__ import annotations

from structbench import conditions as axes
from structbench.artifacts.selection import selected
from structbench.configerror import ConfigError
from structbench.embedding.local import SPECIAL_TOKENS, EmbedderSpec, effective_max_seq_length, stated_dimension
from structbench.endpoints.kinds import OPENAI, embedder_kind


def check_late_config(config: dict, conditions: dict) -> None:
    """Late chunking (docs/method.md §8a) needs token embeddings: an endpoint embedder (kind openai), whose API
    returns pooled vectors only, is refused for a late prefix; a local embedder's window must hold more than
    a stated ``late.overlap`` content tokens (skipped for a model this machine cannot locate: its job says why)."""
    late = [name for name, c in conditions.items() if axes.is_late(c.prefix)]
    if not late:
        return
    overlap = config["late"]["overlap"]
    for name in selected(config, "embedders"):
        entry = config["embedders"][name]
        if embedder_kind(entry) == OPENAI:
            raise ConfigError(
                f"conditions.{late[0]}.prefix = {conditions[late[0]].prefix!r} needs token embeddings, but "
                f"embedders.{name} is kind 'openai', whose API returns pooled vectors only; select local embedders "
                "for late chunking (select.embedders)"
            )
        if overlap is None:  # half of each embedder's window (structbench.embedding.late.window_overlap): fits
            continue
        try:
            window = effective_max_seq_length(EmbedderSpec.from_config(entry))
        except (OSError, ValueError, ModuleNotFoundError):
            continue
        if overlap >= window - SPECIAL_TOKENS:
            raise ConfigError(
                f"late.overlap = {overlap} is not below embedders.{name}'s window of {window - SPECIAL_TOKENS} "
                f"content tokens (max_seq_length {window} less [CLS] and [SEP]): windows could never advance"
            )


def stated_width(entry: dict) -> int | None:
    """The width of an ``embedders`` entry's vectors where it is known before any job runs: an endpoint's
    ``dimensions``, a local model's as its files state it (:func:`~.local.stated_dimension`). None where
    neither says (an endpoint without ``dimensions``, a model this machine cannot locate or whose files do
    not state it): the width is then first known from the job's vectors, and checked there."""
    if embedder_kind(entry) == OPENAI:
        return entry.get("dimensions")
    try:
        return stated_dimension(EmbedderSpec.from_config(entry))
    except (OSError, ValueError, ModuleNotFoundError):
        return None


# Room left for a rendered prefix when judging whether chunks fit the embedder: a depth-3 heading path
# is ~15-40 tokens on the study's corpora (the report's prefixes table gives the real numbers).
PREFIX_ALLOWANCE = 48


def truncation_warnings(config: dict, conditions: dict) -> list[str]:
    """Warnings for embedders that would truncate chunks of the configured size (docs/method.md §6).

    A chunk holds up to ``chunking.t_max`` content tokens, plus 2 special tokens and, for a prefixed
    condition, the prefix. When that cannot fit an embedder's effective ``max_seq_length``, the model
    silently drops the end of the text, and drops more of it the longer the prefix is: that confounds
    every prefix contrast. The embedding step counts the truncated texts exactly (the report's
    "Embedder input length" table); this check only says, before any job runs, that truncation is
    certain or likely. An embedder that cannot be located here (a hub id on a machine without it) is
    skipped: its job fails with the reason."""
    # the largest chunk any condition cuts: the run's t_max, or a condition's own (docs/method.md §6a)
    t_max = max([config["chunking"]["t_max"]] + [c.size(config["chunking"])[0] for c in conditions.values()])
    bound = "chunking.t_max" if t_max == config["chunking"]["t_max"] else "a condition's own t_max"
    prefixed = any(c.prefix != axes.NO_PREFIX for c in conditions.values())
    warnings = []
    for name in selected(config, "embedders"):
        entry = config["embedders"][name]
        try:
            # an endpoint's limit is the one its entry states (kind openai: max_input_tokens)
            endpoint = embedder_kind(entry) == OPENAI
            limit = entry["max_input_tokens"] if endpoint else effective_max_seq_length(EmbedderSpec.from_config(entry))
        except (OSError, ValueError, ModuleNotFoundError):
            continue
        key = "max_input_tokens" if endpoint else "max_seq_length"
        needed = t_max + SPECIAL_TOKENS
        if needed > limit:
            warnings.append(
                f"embedders.{name}: {key} {limit} < {bound} {t_max} + {SPECIAL_TOKENS} "
                "special tokens: the longest chunks WILL be truncated, prefixed or not. Set "
                f"embedders.{name}.{key} (up to the model's limit) or lower {bound}."
            )
        elif prefixed and needed + PREFIX_ALLOWANCE > limit:
            warnings.append(
                f"embedders.{name}: {key} {limit} leaves {limit - needed} tokens for a prefix "
                f"on a chunk of {bound} = {t_max} tokens: long prefixed chunks are likely to be "
                f"truncated (the report counts them). Raise {key} or lower t_max."
            )
    return warnings
