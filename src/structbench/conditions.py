"""Conditions and contrasts are configuration (SPEC section 12).

A condition is a point on four axes: boundaries (fixed | structural | semantic), structure source
(gold | induced:<inducer>), prefix (none | path:d | placebo:d | context) and retrieval (flat | ...).
Artifacts are keyed by the axes they depend on, so two conditions that agree on an axis share every
artifact upstream of it (the workflow builds them once):

    chunks  <- (boundaries, structure)
    texts   <- (boundaries, structure, prefix)
    vectors <- (boundaries, structure, prefix, embedder)
    runs    <- (condition, embedder, reranker)
"""

from __future__ import annotations

import re
from dataclasses import dataclass

BOUNDARIES = ("structural", "fixed", "semantic")
RETRIEVALS = ("flat",)  # two_stage, toc and rrf plug in with the retrieval issue
FAMILIES = ("primary", "secondary", "exploratory")
PREFIX_PATTERN = re.compile(r"^(none|context|path:[1-9]|placebo:[1-9])$")
STRUCTURE_PATTERN = re.compile(r"^(gold|induced:[A-Za-z0-9_]+)$")


@dataclass(frozen=True)
class Condition:
    name: str
    boundaries: str
    structure: str
    prefix: str
    retrieval: str

    @property
    def structure_token(self) -> str:
        """The structure source as a path component ("induced:llm" -> "induced-llm")."""
        return self.structure.replace(":", "-")

    @property
    def prefix_token(self) -> str:
        return self.prefix.replace(":", "-")

    @property
    def chunkset(self) -> str:
        return f"{self.boundaries}/{self.structure_token}"

    @property
    def textset(self) -> str:
        return f"{self.chunkset}/{self.prefix_token}"


@dataclass(frozen=True)
class Contrast:
    """A paired contrast (treatment − control), or a dose-response slope over ordered conditions."""

    name: str
    family: str
    treatment: str | None = None
    control: str | None = None
    conditions: tuple[str, ...] = ()
    depths: tuple[float, ...] = ()

    @property
    def members(self) -> tuple[str, ...]:
        return self.conditions or (self.treatment, self.control)

    def as_params(self) -> dict:
        """The plain dict the statistics step takes (``structbench.stats.contrast_table``)."""
        if self.conditions:
            entry = {"name": self.name, "family": self.family, "conditions": list(self.conditions)}
            return entry | ({"depths": list(self.depths)} if self.depths else {})
        return {"name": self.name, "family": self.family, "treatment": self.treatment, "control": self.control}


def parse_conditions(entries: dict) -> dict[str, Condition]:
    """Validate the ``conditions`` config block; errors name the condition and the bad value."""
    conditions = {}
    for name, axes in entries.items():
        condition = Condition(name=name, **axes)
        checks = [
            ("boundaries", condition.boundaries in BOUNDARIES, f"one of {BOUNDARIES}"),
            ("structure", bool(STRUCTURE_PATTERN.match(condition.structure)), "gold or induced:<inducer>"),
            ("prefix", bool(PREFIX_PATTERN.match(condition.prefix)), "none, context, path:<d> or placebo:<d>"),
            ("retrieval", condition.retrieval in RETRIEVALS, f"one of {RETRIEVALS}"),
        ]
        for axis, ok, expected in checks:
            if not ok:
                raise ValueError(
                    f"conditions.{name}.{axis} = {getattr(condition, axis)!r} is not supported; expected {expected}"
                )
        if condition.structure != "gold":
            raise ValueError(
                f"conditions.{name}.structure = {condition.structure!r}: induced structure needs the LLM layer, "
                "which this version does not ship yet; use 'gold'"
            )
        if condition.prefix == "context":
            raise ValueError(
                f"conditions.{name}.prefix = 'context': LLM situating contexts need the LLM layer, "
                "which this version does not ship yet"
            )
        conditions[name] = condition
    return conditions


def parse_contrasts(entries: dict, conditions: dict[str, Condition]) -> dict[str, Contrast]:
    contrasts = {}
    for name, entry in entries.items():
        pairwise = "treatment" in entry or "control" in entry
        if pairwise == ("conditions" in entry):
            raise ValueError(f"contrasts.{name} needs either treatment + control or a conditions list, not both")
        contrast = Contrast(
            name=name,
            family=entry.get("family", "primary" if pairwise else "exploratory"),
            treatment=entry.get("treatment"),
            control=entry.get("control"),
            conditions=tuple(entry.get("conditions") or ()),
            depths=tuple(entry.get("depths") or ()),
        )
        for member in contrast.members:
            if member not in conditions:
                raise ValueError(
                    f"contrasts.{name} names {member!r}, which is no declared condition (declared: {sorted(conditions)})"
                )
        if contrast.depths and len(contrast.depths) != len(contrast.conditions):
            raise ValueError(f"contrasts.{name}.depths needs one depth per condition")
        if contrast.family not in FAMILIES:
            raise ValueError(f"contrasts.{name}.family = {contrast.family!r}; expected one of {FAMILIES}")
        contrasts[name] = contrast
    return contrasts
