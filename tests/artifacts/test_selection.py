"""What a config's ``select`` keeps (structbench.artifacts.selection): declared names narrowed by ``select``, and the
contrasts a condition selection leaves whole."""

import pytest

from structbench.artifacts.selection import SelectionError, select_conditions, selected
from structbench.conditions import parse_conditions, parse_contrasts
from structbench.defaults import T_MAX, T_MIN

CONFIG = {"embedders": {"minilm": {}, "bge": {}, "e5": {}}, "corpora": {"kb": {}}}
FLAT = {"boundaries": "structural", "structure": "gold", "prefix": "none", "retrieval": "flat"}


def test_select_narrows_the_declared_names_in_its_own_order():
    assert selected(CONFIG, "embedders") == ["minilm", "bge", "e5"]  # no select: every declared one, declared order
    assert selected(CONFIG | {"select": {"embedders": ["e5", "minilm"]}}, "embedders") == ["e5", "minilm"]
    assert selected(CONFIG | {"select": {"embedders": []}}, "embedders") == ["minilm", "bge", "e5"]
    assert selected(CONFIG | {"select": None}, "corpora") == ["kb"]
    assert selected(CONFIG | {"select": {"embedders": ["bge"]}}, "corpora") == ["kb"]  # another kind's select


def test_a_condition_selection_keeps_the_contrasts_it_leaves_whole_and_names_what_it_does_not_declare():
    chunking = {"t_max": T_MAX, "t_min": T_MIN}
    conditions = parse_conditions(
        {"G2": FLAT, "G3": FLAT | {"prefix": "path:3"}, "F0": FLAT | {"boundaries": "fixed"}}, chunking
    )
    contrasts = parse_contrasts(
        {
            "G3-G2": {"treatment": "G3", "control": "G2", "family": "secondary"},
            "G2-F0": {"treatment": "G2", "control": "F0", "family": "secondary"},
        },
        conditions,
    )
    kept, kept_contrasts = select_conditions(conditions, contrasts, ["G3", "G2"])
    assert list(kept) == ["G2", "G3"] and list(kept_contrasts) == ["G3-G2"]  # declared order, F0's contrast gone
    assert select_conditions(conditions, contrasts, None) == (conditions, contrasts)
    with pytest.raises(SelectionError, match=r"select.conditions names \['G9'\], which config.conditions does not"):
        select_conditions(conditions, contrasts, ["G3", "G9"])
