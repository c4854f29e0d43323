import pytest

from structbench.conditions import parse_conditions, parse_contrasts


def axes(**overrides):
    return {"boundaries": "structural", "structure": "gold", "prefix": "path:3", "retrieval": "flat", **overrides}


def test_conditions_share_artifacts_by_axis():
    conditions = parse_conditions(
        {"G2": axes(prefix="none"), "G3": axes(), "F0": axes(boundaries="fixed", prefix="none")}
    )
    assert conditions["G2"].chunkset == conditions["G3"].chunkset == "structural/gold"
    assert conditions["G3"].textset == "structural/gold/path-3"
    assert conditions["F0"].textset == "fixed/gold/none"


@pytest.mark.parametrize(
    "bad, message",
    [
        ({"boundaries": "sliding"}, "conditions.X.boundaries = 'sliding'"),
        ({"prefix": "path:x"}, "conditions.X.prefix = 'path:x'"),
        ({"retrieval": "bm25"}, "conditions.X.retrieval = 'bm25'"),
    ],
)
def test_bad_axis_value_names_condition_and_key(bad, message):
    with pytest.raises(ValueError, match=message.replace(".", r"\.")):
        parse_conditions({"X": axes(**bad)})


def test_contrast_naming_an_undeclared_condition_is_rejected():
    conditions = parse_conditions({"G3": axes()})
    with pytest.raises(ValueError, match=r"contrasts\.C1\.control = 'G2' names no declared condition"):
        parse_contrasts({"C1": {"treatment": "G3", "control": "G2"}}, conditions)
