"""Per-condition start-up checks (structbench.config): every size check against the condition's own effective
size, read-time modes only where they are defined, ratios compared as numbers. Config-level: no job runs."""

import copy

import polars as pl
import pytest
import yaml
from conftest import REPO

from structbench.conditions import parse_conditions, parse_contrasts
from structbench.config import ConfigError
from structbench.plan.study import start_up
from structbench.retrieval.unit_runs import shallower_documents

SCHEMA = REPO / "workflow/schemas/config.schema.yaml"
DEFAULT = yaml.safe_load((REPO / "config/config.yaml").read_text())
GOLD = {"structure": "gold", "prefix": "none", "retrieval": "flat"}


def started(conditions: dict, chunking: dict | None = None, **keys):
    """The default config with ``conditions`` (and their contrasts and subgroups dropped) through the workflow's
    start-up."""
    config = copy.deepcopy(DEFAULT)
    config["conditions"] = conditions
    config["contrasts"], config["subgroups"] = {}, {}
    config["chunking"] |= chunking or {}
    config |= keys
    return start_up(config, SCHEMA)


def test_an_overlap_is_checked_against_the_conditions_own_t_max():
    # 300 tokens of overlap at a condition's t_max 800, under a run t_max of 200: a valid stride of 500
    fine = {"W": {"boundaries": "fixed_overlap:300", "t_max": 800, "t_min": 40, **GOLD}}
    assert started(fine, {"t_max": 200, "t_min": 40}).study.conditions["W"].t_max == 800
    # 150 tokens at a condition's t_max 100, under a run t_max of 350: no stride, named with its own t_max
    bad = {"W": {"boundaries": "fixed_overlap:150", "t_max": 100, "t_min": 40, **GOLD}}
    with pytest.raises(
        ConfigError,
        match=r"W.boundaries = 'fixed_overlap:150'.* no stride in a chunk of 100 .*"
        r"\(conditions\.W\.t_max = 100\)",
    ):
        started(bad)


def test_a_chunkers_overlap_is_checked_against_its_own_t_max():
    chunkers = {"lc": {"library": "langchain", "kind": "recursive", "t_max": 100, "options": {"chunk_overlap": 120}}}
    conditions = {"LC": {"boundaries": "external:lc", **GOLD}}
    with pytest.raises(ConfigError, match=r"no stride in a chunk of 100 .*\(chunkers\.lc\.t_max = 100\)"):
        started(conditions, chunkers=chunkers)


@pytest.mark.parametrize(
    ("prefix", "retrieval"),
    [("path:3", "parent:2"), ("placebo:3", "automerge:0.5"), ("late", "window:256"), ("context", "matched_window:2")],
)
def test_read_time_over_a_prefixed_or_late_chunk_set_is_refused_by_name(prefix, retrieval):
    conditions = {"R": {"boundaries": "structural", "structure": "gold", "prefix": prefix, "retrieval": retrieval}}
    with pytest.raises(
        ConfigError,
        match=rf"conditions\.R\.prefix = '{prefix}' with retrieval = '{retrieval}': .*"
        "use prefix: none",
    ):
        started(conditions, contexts={"llm": "smollm2"})


def test_a_level_deeper_than_a_segmentation_tree_is_refused_and_gold_is_counted():
    tiling = {
        "R": {"boundaries": "structural", "structure": "induced:tiling", "prefix": "none", "retrieval": "parent:3"}
    }
    with pytest.raises(
        ConfigError,
        match=r"conditions\.R\.retrieval = 'parent:3': level 3 is deeper .*"
        r"inducers\.tiling\.max_levels = 2",
    ):
        started(tiling)
    assert started({"R": tiling["R"] | {"retrieval": "parent:2"}}).study.conditions
    gold = {"R": {"boundaries": "structural", "structure": "gold", "prefix": "none", "retrieval": "parent:4"}}
    assert started(gold).study.conditions  # the depth is the data's: counted at read time
    sections = pl.DataFrame({"doc_id": ["a", "a", "b", "c"], "level": [1, 2, 4, 1]})
    documents = pl.DataFrame({"doc_id": ["a", "b", "c", "d"]})
    assert shallower_documents("parent:4", sections, documents) == (3, 4)
    assert shallower_documents("matched_window:2", sections, documents) == (2, 4)
    assert shallower_documents("automerge:0.5", sections, documents) == (0, 4)


def test_a_level_deeper_than_a_learned_tree_is_refused():
    learned = {
        "R": {"boundaries": "structural", "structure": "induced:learned", "prefix": "none", "retrieval": "parent:3"}
    }
    with pytest.raises(
        ConfigError,
        match=r"conditions\.R\.retrieval = 'parent:3': level 3 is deeper .*inducers\.learned\.max_levels = 2",
    ):
        started(learned)
    assert started({"R": learned["R"] | {"retrieval": "parent:2"}}).study.conditions


def test_ratios_are_compared_as_numbers():
    merge = {"boundaries": "structural", "structure": "gold", "prefix": "none"}
    conditions = started({"A": merge | {"retrieval": "automerge:1.0"}, "B": merge | {"retrieval": "automerge:1"}})
    assert set(conditions.study.conditions) == {"A", "B"}
    parsed = parse_conditions(
        {"A": merge | {"retrieval": "automerge:0.50"}, "B": merge | {"retrieval": "automerge:0.5"}}
    )
    with pytest.raises(ValueError, match="identical axes"):
        parse_contrasts({"C": {"treatment": "A", "control": "B"}}, parsed)
