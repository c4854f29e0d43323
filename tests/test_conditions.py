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
    with pytest.raises(ValueError, match=r"contrasts\.C1 names 'G2', which is no declared condition"):
        parse_contrasts({"C1": {"treatment": "G3", "control": "G2"}}, conditions)


def test_dose_response_contrast_is_exploratory_by_default():
    conditions = parse_conditions({f"d{d}": axes(prefix=f"path:{d}") for d in (1, 2, 3)} | {"d0": axes(prefix="none")})
    contrasts = parse_contrasts({"slope": {"conditions": ["d0", "d1", "d2", "d3"]}}, conditions)
    assert contrasts["slope"].as_params() == {"name": "slope", "family": "exploratory", "conditions": ["d0", "d1", "d2", "d3"]}
    with pytest.raises(ValueError, match="either treatment"):
        parse_contrasts({"bad": {"treatment": "d1", "conditions": ["d0", "d1"]}}, conditions)
