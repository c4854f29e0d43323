import re

import pytest
from conftest import REPO

from structbench.conditions import (
    AXES,
    from_token,
    parse_conditions,
    parse_contrasts,
    parse_value,
    to_token,
    token_pattern,
    wildcard_constraints,
)
from structbench.config import load_schema


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
        ({"retrieval": "bm25:1"}, "conditions.X.retrieval = 'bm25:1'"),
        ({"retrieval": "bm25", "prefix": "late"}, "conditions.X.prefix = 'late' with retrieval = 'bm25': late"),
        ({"retrieval": "bm25", "prefix": "late_placebo"}, "conditions.X.prefix = 'late_placebo' with retrieval"),
    ],
)
def test_bad_axis_value_names_condition_and_key(bad, message):
    with pytest.raises(ValueError, match=message.replace(".", r"\.")):
        parse_conditions({"X": axes(**bad)})


def test_a_bm25_condition_is_lexical_and_shares_its_chunk_sets_texts():
    from structbench.conditions import is_lexical

    conditions = parse_conditions({"B2": axes(prefix="none", retrieval="bm25"), "G2": axes(prefix="none")})
    assert is_lexical(conditions["B2"]) and not is_lexical(conditions["G2"])
    assert conditions["B2"].textset == conditions["G2"].textset == "structural/gold/none"
    # a contrast of the two is no self-contrast: their retrieval differs
    assert list(parse_contrasts({"G2-B2": {"treatment": "G2", "control": "B2"}}, conditions)) == ["G2-B2"]


@pytest.mark.parametrize("prefix", ["path:3", "path:1", "placebo:3", "context"])
def test_a_bm25_condition_may_rank_any_rendered_prefix_and_contrasts_in_the_lexical_family(prefix):
    """B3 (BM25 over G3's texts): any prefix with rendered texts is allowed, and ranks that text set; the contrast
    with B2 is in family lexical, Holm-corrected among its own members (not the last, exploratory, family)."""
    from structbench.conditions import FAMILIES, is_lexical

    conditions = parse_conditions(
        {"B3": axes(prefix=prefix, retrieval="bm25"), "B2": axes(prefix="none", retrieval="bm25")}
    )
    assert is_lexical(conditions["B3"]) and conditions["B3"].textset == f"structural/gold/{to_token(prefix)}"
    contrasts = parse_contrasts({"B3-B2": {"treatment": "B3", "control": "B2", "family": "lexical"}}, conditions)
    assert contrasts["B3-B2"].family == "lexical" and FAMILIES.index("lexical") < FAMILIES.index("exploratory")
    with pytest.raises(ValueError, match=r"contrasts\.B3-B2\.family = 'lexicon'; expected one of"):
        parse_contrasts({"B3-B2": {"treatment": "B3", "control": "B2", "family": "lexicon"}}, conditions)


def test_contrast_naming_an_undeclared_condition_is_rejected():
    conditions = parse_conditions({"G3": axes()})
    with pytest.raises(ValueError, match=r"contrasts\.C1 names 'G2', which is no declared condition"):
        parse_contrasts({"C1": {"treatment": "G3", "control": "G2"}}, conditions)


def test_dose_response_contrast_is_exploratory_by_default():
    conditions = parse_conditions({f"d{d}": axes(prefix=f"path:{d}") for d in (1, 2, 3)} | {"d0": axes(prefix="none")})
    contrasts = parse_contrasts({"slope": {"conditions": ["d0", "d1", "d2", "d3"]}}, conditions)
    assert contrasts["slope"].as_params() == {
        "name": "slope",
        "family": "exploratory",
        "conditions": ["d0", "d1", "d2", "d3"],
    }
    with pytest.raises(ValueError, match="either treatment"):
        parse_contrasts({"bad": {"treatment": "d1", "conditions": ["d0", "d1"]}}, conditions)
    with pytest.raises(ValueError, match=r"contrasts\.two\.conditions lists 2 condition\(s\): a dose-response needs"):
        parse_contrasts({"two": {"conditions": ["d0", "d3"]}}, conditions)


def test_every_declared_kind_is_implemented():
    """conditions.AXES declares the kinds; each prefix kind has a renderer and each retrieval kind a retriever."""
    from structbench.prefixes import RENDERERS
    from structbench.retrieval.search import RETRIEVERS

    assert set(RENDERERS) == {kind.name for kind in AXES["prefix"]}
    assert set(RETRIEVERS) == {kind.name for kind in AXES["retrieval"] if not kind.lexical}
    # the lexical kind's run is its text set's BM25 run: not routed, no routing metrics
    assert [(k.name, k.routed, k.metrics) for k in AXES["retrieval"] if k.lexical] == [("bm25", False, ())]


AXIS_SAMPLES = {
    "boundaries": ["structural", "fixed", "semantic", "sliding", "Structural", "fixed:1", ""],
    "structure": [
        "gold",
        "induced:llm",
        "induced:my_inducer2",
        "induced:",
        "induced:a-b",
        "induced",
        "gold:1",
        "silver",
    ],
    "prefix": [
        "none",
        "context",
        *[f"path:{d}" for d in range(0, 11)],
        *[f"placebo:{d}" for d in range(0, 11)],
        "path",
        "path:x",
        "path-3",
        "none:1",
        "context:2",
        "placebo:33",
    ],
    "retrieval": ["flat", "two_stage", "toc", "bm25", "flat:1", "two-stage", "toc:1", ""],
}


@pytest.mark.parametrize("axis", sorted(AXIS_SAMPLES))
def test_schema_accepts_exactly_what_conditions_accepts(axis):
    """The schema's axis patterns are generated from conditions.AXES; over legal and illegal values alike,
    the schema and parse_value agree, and every legal value survives the path-token round trip."""
    from jsonschema import Draft202012Validator

    schema = load_schema(REPO / "workflow/schemas/config.schema.yaml")
    fragment = {"$defs": schema["$defs"], "$ref": f"#/$defs/axes/{axis}"}
    validator = Draft202012Validator(fragment)
    for value in AXIS_SAMPLES[axis]:
        try:
            parse_value(axis, value)
            legal = True
        except ValueError:
            legal = False
        assert validator.is_valid(value) == legal, (axis, value)
        if legal:
            token = to_token(value)
            assert from_token(token) == value
            assert re.fullmatch(token_pattern(axis), token), (axis, token)


def test_wildcard_constraints_come_from_the_axes():
    constraints = wildcard_constraints()
    assert re.fullmatch(constraints["prefix"], "path-3") and not re.fullmatch(constraints["prefix"], "path:3")
    assert re.fullmatch(constraints["structure"], "induced-llm")
    assert not re.fullmatch(constraints["boundaries"], "structural/gold")


def test_self_contrast_and_incomplete_pairs_are_refused():
    conditions = parse_conditions({"G3": axes(), "G2": axes(prefix="none")})
    with pytest.raises(ValueError, match=r"contrasts\.C0 compares 'G3' with itself"):
        parse_contrasts({"C0": {"treatment": "G3", "control": "G3"}}, conditions)
    with pytest.raises(ValueError, match=r"contrasts\.C1 needs both treatment and control"):
        parse_contrasts({"C1": {"treatment": "G3"}}, conditions)


def test_contrast_of_two_names_for_one_condition_is_refused():
    """Two differently named conditions with the same four axes rank the same chunks the same way:
    contrasting them is the self-contrast under another name (delta 0, CI [0, 0], p = 1 in a Holm family)."""
    conditions = parse_conditions({"G3": axes(), "G3b": axes(), "G2": axes(prefix="none")})
    twin = r"contrasts\.C0 compares 'G3b' with 'G3', which have identical axes \(boundaries=structural, .*prefix=path:3"
    with pytest.raises(ValueError, match=twin):
        parse_contrasts({"C0": {"treatment": "G3b", "control": "G3"}}, conditions)
    with pytest.raises(ValueError, match=r"contrasts\.D0\.conditions: 'G3' and 'G3b' have identical axes"):
        parse_contrasts({"D0": {"conditions": ["G2", "G3", "G3b"]}}, conditions)
    assert set(parse_contrasts({"C1": {"treatment": "G3b", "control": "G2"}}, conditions)) == {"C1"}


def test_identical_axes_are_found_by_meaning_not_spelling():
    """RRF is symmetric in its sources, and two chunkers entries with one spec are one chunker."""
    conditions = parse_conditions(
        {
            "H1": axes(prefix="path:3", retrieval="rrf:none+bm25"),
            "H2": axes(prefix="path:3", retrieval="rrf:bm25+none"),
            "L1": axes(boundaries="external:langchain", prefix="none"),
            "L2": axes(boundaries="external:langchain2", prefix="none"),
            "S1": axes(boundaries="external:semchunk", prefix="none"),
        }
    )
    with pytest.raises(ValueError, match=r"contrasts\.C0 compares 'H2' with 'H1', which have identical axes"):
        parse_contrasts({"C0": {"treatment": "H2", "control": "H1"}}, conditions)
    spec = {"library": "langchain", "kind": "recursive", "size_match": True, "options": {}}
    chunkers = {"langchain": spec, "langchain2": dict(spec), "semchunk": spec | {"library": "semchunk"}}
    with pytest.raises(ValueError, match=r"contrasts\.C1 compares 'L2' with 'L1', which have identical axes"):
        parse_contrasts({"C1": {"treatment": "L2", "control": "L1"}}, conditions, chunkers)
    assert set(parse_contrasts({"C2": {"treatment": "S1", "control": "L1"}}, conditions, chunkers)) == {"C2"}
    # Without the chunkers entries the names are all there is to compare.
    assert set(parse_contrasts({"C1": {"treatment": "L2", "control": "L1"}}, conditions)) == {"C1"}


def test_llm_kinds_parse_and_their_declarations_are_checked_by_config():
    """induced:<x> and context are ordinary axis values; whether an inducer or a context LLM is
    declared for them is a cross-key check of structbench.config (tests/test_config.py)."""
    parsed = parse_conditions({"A1": axes(boundaries="fixed", structure="induced:llm", prefix="context")})
    assert parsed["A1"].chunkset == "fixed/induced-llm" and parsed["A1"].textset == "fixed/induced-llm/context"
