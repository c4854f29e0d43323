"""What a config's ``select`` keeps: the declared names of one kind it narrows a run to, and the conditions and
contrasts a condition selection leaves (docs/method.md §15). One definition, read by the config check, the
study and the endpoint probe."""

from __future__ import annotations

from collections.abc import Mapping


class SelectionError(ValueError):
    """A ``select`` entry naming something the config does not declare; the message names the key."""


def select_entry(config: Mapping, kind: str) -> list[str]:
    """The names ``select.<kind>`` lists, as written, with no fallback (empty when the key is absent or empty):
    what the config check verifies against the declared names. :func:`selected` is the names a run uses."""
    return list((config.get("select") or {}).get(kind) or [])


def selected(config: Mapping, kind: str) -> list[str]:
    """The declared names of one kind (``corpora``, ``embedders``, ``rerankers``) a run uses: ``select.<kind>``
    when given (:func:`select_entry`), else every name ``config[kind]`` declares, in declared order."""
    return select_entry(config, kind) or list(config[kind])


def select_conditions(conditions: dict, contrasts: dict, chosen_names: list[str] | None) -> tuple[dict, dict]:
    """The conditions named by ``select.conditions`` (all when None or empty) and the contrasts among them.

    A contrast runs only when every condition it compares is selected: half a contrast is no contrast,
    and the Holm family is then the selected contrasts of that family (the caller logs the ones left
    out). A name that is not declared is a :class:`SelectionError` naming it."""
    if not chosen_names:
        return conditions, contrasts
    unknown = [name for name in chosen_names if name not in conditions]
    if unknown:
        raise SelectionError(
            f"select.conditions names {unknown}, which config.conditions does not declare ({list(conditions)})"
        )
    kept = {name: condition for name, condition in conditions.items() if name in chosen_names}
    return kept, {
        name: contrast for name, contrast in contrasts.items() if all(member in kept for member in contrast.members)
    }
