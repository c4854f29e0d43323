"""Chunk size as a condition attribute (docs/method.md §6a): how a condition's own t_max/t_min keys its chunk
set, the named errors of a bad size or size curve, and a size curve's slope per doubling, hand-checked on
synthetic per-query scores through the contrasts table, the report's table and its figure."""

import math
import re

import numpy as np
import polars as pl
import pytest
import yaml
from conftest import REPO
from test_config import layered
from test_figures import png_chunks

from structbench.conditions import parse_conditions, parse_contrasts, wildcard_constraints
from structbench.config import ConfigError, validate_config
from structbench.crosskeys import check_cross_keys
from structbench.metrics.diagnostics import retrieval_layer_pairs
from structbench.report.catalog import TABLES, build_tables
from structbench.report.figures import FIGURES, RenderedFigure, render_figures
from structbench.report.size_curve import size_curve_rows
from structbench.report.table_registry import ReportInputs, Table
from structbench.sizes import chunkset_size, parse_size_token, size_doses, size_token
from structbench.stats.contrasts import contrast_table
from structbench.stats.means import condition_mean_cis, dose_series

CHUNKING = {"t_max": 350, "t_min": 60}


def gold(**extra):
    return {"boundaries": "structural", "structure": "gold", "prefix": "none", "retrieval": "flat", **extra}


def test_a_condition_without_its_own_size_keeps_its_path_and_equal_sizes_share_one_chunk_set():
    conditions = parse_conditions(
        {
            "G2": gold(),
            "G2-350": gold(t_max=350),  # the run's t_max written out: the run's chunk set, not a copy
            "G2-200": gold(t_max=200),
            "G3-200": gold(prefix="path:3", t_max=200),
            "F0-200": gold(boundaries="fixed", t_max=200),
            "G2-200-30": gold(t_max=200, t_min=30),
            "G2-m30": gold(t_min=30),
        },
        CHUNKING,
    )
    chunksets = {name: c.chunkset for name, c in conditions.items()}
    assert chunksets == {
        "G2": "structural/gold",
        "G2-350": "structural/gold",
        "G2-200": "structural-t200/gold",
        "G3-200": "structural-t200/gold",
        "F0-200": "fixed-t200/gold",
        "G2-200-30": "structural-t200-m30/gold",
        "G2-m30": "structural-m30/gold",
    }
    assert conditions["G3-200"].textset == "structural-t200/gold/path-3"
    assert conditions["G2-350"].t_max is None and conditions["G2"].size(CHUNKING) == (350, 60)
    assert conditions["G2-200-30"].size(CHUNKING) == (200, 30) and conditions["G2-m30"].size(CHUNKING) == (350, 30)
    # the path token round trip the chunk rules read, under another run's bounds too
    assert parse_size_token("-t200", CHUNKING) == (200, 60) and parse_size_token("", {"t_max": 500}) == (500, 60)
    assert chunkset_size("external-lc-t200-m30") == (200, 30) and chunkset_size("fixed", CHUNKING) == (350, 60)
    assert size_token(None, None) == "" and size_token(800, None) == "-t800"
    constraints = wildcard_constraints()

    for token in ("structural", "structural-t200", "fixed-t800-m0", "external-lc_1-t200"):
        assert re.fullmatch(constraints["boundaries"], token)
    assert not re.fullmatch(constraints["boundaries"], "structural-t0")
    assert re.fullmatch(constraints["size"], "") and re.fullmatch(constraints["size"], "-t200-m30")


def test_an_external_chunkers_own_size_keys_its_conditions():
    chunkers = {"lc": {"library": "langchain", "kind": "recursive", "t_max": 200}, "m": {"size_match": True}}
    conditions = parse_conditions(
        {
            "LC": gold(boundaries="external:lc"),
            "LC2": gold(boundaries="external:lc", t_max=200),
            "M": gold(boundaries="external:m", t_max=800, t_min=100),
        },
        CHUNKING,
        chunkers,
    )
    assert conditions["LC"].chunkset == conditions["LC2"].chunkset == "external-lc-t200/gold"
    assert conditions["M"].chunkset == "external-m-t800-m100/gold"


@pytest.mark.parametrize(
    "entry, chunkers, named",
    [
        (gold(t_max=50), None, "conditions.X: t_min = 60 (chunking.t_min) exceeds t_max = 50 (conditions.X.t_max)"),
        (gold(t_max=200, t_min=300), None, "conditions.X: t_min = 300 (conditions.X.t_min) exceeds t_max = 200"),
        (gold(t_max=0), None, "conditions.X.t_max = 0 must be at least 1 tokens"),
        (gold(t_max=-5), None, "conditions.X.t_max = -5 must be at least 1"),
        (gold(t_min=-1), None, "conditions.X.t_min = -1 must be at least 0"),
        (gold(t_max="200"), None, "conditions.X.t_max = '200' is not an integer"),
        (gold(t_max=True), None, "conditions.X.t_max = True is not an integer"),
        (gold(t_mx=200), None, "unknown ['t_mx']"),
        (
            gold(boundaries="external:lc", t_max=300),
            {"lc": {"t_max": 200}},
            "conditions.X.t_max = 300 but its chunker's chunkers.lc.t_max = 200",
        ),
        (
            gold(boundaries="external:lc", t_min=30),
            {"lc": {"library": "langchain"}},
            "conditions.X.t_min is set, but these boundaries never read t_min",
        ),
        (
            gold(boundaries="external:lc"),
            {"lc": {"t_min": 30}},
            "chunkers.lc.t_min is set, but these boundaries never read t_min",
        ),
    ],
)
def test_a_bad_size_is_a_named_error(entry, chunkers, named):
    with pytest.raises(ValueError) as error:
        parse_conditions({"X": entry}, CHUNKING, chunkers)
    assert named in str(error.value)


CURVE = {"G2-200": gold(t_max=200), "G2": gold(), "G2-800": gold(t_max=800), "G3": gold(prefix="path:3")}


@pytest.mark.parametrize(
    "entry, named",
    [
        (
            {"sizes": [200, 400, 800]},
            "sizes = [200, 400, 800] disagrees with its conditions: G2 is chunked at t_max = 350",
        ),
        ({"sizes": [200, 350]}, "lists 2 size(s) for 3 condition(s)"),
        ({"sizes": [200, 200, 800]}, "lists a size twice"),
        ({"sizes": [200, 0, 800]}, "every size is a positive number of tokens, got 0"),
        ({"sizes": [200, -350, 800]}, "every size is a positive number of tokens, got -350"),
        ({"sizes": [200, 350, 800], "depths": [0, 1, 2]}, "sets sizes with depths"),
        ({"sizes": []}, "lists 0 size(s) for 3 condition(s)"),
    ],
)
def test_a_bad_size_curve_is_a_named_error(entry, named):
    conditions = parse_conditions(CURVE, CHUNKING)
    with pytest.raises(ValueError) as error:
        parse_contrasts({"sc": {"conditions": ["G2-200", "G2", "G2-800"], **entry}}, conditions, None, CHUNKING)
    assert named in str(error.value)


def test_a_size_curve_compares_size_alone_and_names_every_other_difference():
    conditions = parse_conditions(CURVE | {"G2-350": gold(t_max=350)}, CHUNKING)
    with pytest.raises(ValueError, match=r"differs from 'G2-200' in \['prefix'\]"):
        parse_contrasts({"sc": {"conditions": ["G2-200", "G3", "G2-800"], "sizes": [200, 350, 800]}}, conditions)
    with pytest.raises(ValueError, match="'G2' and 'G2-350' have identical axes"):  # one chunk set, twice
        parse_contrasts({"sc": {"conditions": ["G2", "G2-350", "G2-800"], "sizes": [350, 350, 800]}}, conditions)
    with pytest.raises(ValueError, match="sets sizes with treatment/control"):
        parse_contrasts({"sc": {"treatment": "G2-800", "control": "G2", "sizes": [800, 350]}}, conditions)
    # pairwise contrasts across sizes are ordinary contrasts; the same axes at two sizes are no self-contrast
    pair = parse_contrasts({"d": {"treatment": "G2-800", "control": "G2-200"}}, conditions)
    assert pair["d"].as_params()["treatment"] == "G2-800"
    curve = parse_contrasts(
        {"sc": {"conditions": ["G2-200", "G2", "G2-800"], "sizes": [200, 350, 800]}}, conditions, None, CHUNKING
    )["sc"]
    assert curve.family == "exploratory" and curve.as_params()["sizes"] == [200, 350, 800]
    # a size curve is no heading-path series, and a series never mixes sizes
    entries = {name: c.entry() for name, c in conditions.items()}
    assert dose_series(entries, [curve.as_params()]) == []
    assert retrieval_layer_pairs(entries) == [("G3", "G2")]


def test_the_config_checks_sizes_before_any_job_and_sizes_yaml_validates():
    config = layered(None)
    config["conditions"]["G2-50"] = gold(t_max=50)
    with pytest.raises(ConfigError, match=r"conditions.G2-50: t_min = 60 \(chunking.t_min\) exceeds t_max = 50"):
        check_cross_keys(config, ["cov_nDCG@10"])
    config = layered(None)
    config["conditions"]["G2-0"] = gold(t_max=0)
    with pytest.raises(ConfigError, match="conditions.G2-0.t_max: 0 is less than the minimum of 1"):
        validate_config(config, REPO / "workflow/schemas/config.schema.yaml")
    sizes = layered("sizes.yaml")
    checked = check_cross_keys(sizes, ["cov_nDCG@10"])
    conditions, contrasts = checked.selected, checked.selected_contrasts
    assert sorted(c.chunkset for c in conditions.values()) == [
        "fixed-t200/gold",
        "fixed-t800/gold",
        "fixed/gold",
        "structural-t200/gold",
        "structural-t800/gold",
        "structural/gold",
    ]
    assert contrasts["size-curve"].sizes == (200, 350, 800)
    assert set(yaml.safe_load((REPO / "config/sizes.yaml").read_text())["select"]["conditions"]) == set(conditions)


def curve_scores() -> pl.DataFrame:
    """12 documents x 2 queries; per query y(200) = b, y(400) = b + 0.05, y(800) = b + 0.10 + e, e = +-0.02
    by document, alternating, so the per-query slope on log2(size) is (0.10 + e) / 2 and its mean exactly 0.05."""
    rows = []
    rng = np.random.default_rng(3)
    for d in range(12):
        for q in range(2):
            base = float(rng.uniform(0.2, 0.6))
            e = 0.02 if d % 2 else -0.02  # by document, so the bootstrap varies
            for condition, value in (("S200", base), ("S400", base + 0.05), ("S800", base + 0.10 + e)):
                rows.append({"qid": f"q{d}-{q}", "doc_id": f"d{d}", "condition": condition, "cov_nDCG@10": value})
    return pl.DataFrame(rows).with_columns(corpus=pl.lit("kb"), embedder=pl.lit("minilm"), reranker=pl.lit("none"))


SIZE_CURVE = {"name": "sc", "family": "exploratory", "conditions": ["S200", "S400", "S800"], "sizes": [200, 400, 800]}


def test_a_size_curve_is_the_slope_per_doubling_hand_checked():
    scores = curve_scores()
    assert size_doses([200, 400, 800]) == [math.log2(200), math.log2(400), math.log2(800)]
    table = contrast_table(scores, [SIZE_CURVE], ["cov_nDCG@10"], B=500, seed=7, mixedlm=False)
    (row,) = table.rows(named=True)
    # weights (x - mean x) / sum (x - mean x)^2 on x = log2 size = (7.64, 8.64, 9.64): (-1/2, 0, 1/2)
    assert row["delta"] == pytest.approx(0.05, abs=1e-12)
    assert row["ci_low"] < 0.05 < row["ci_high"] and row["ci_high"] - row["ci_low"] < 0.02  # per-query ±0.01
    assert math.isnan(row["p_holm"]) and row["label"] == "exploratory" and row["n_queries"] == 24
    # Unequal steps (200, 350, 800): the mean per-query slope is the OLS slope of the means on log2(size)
    uneven = SIZE_CURVE | {"sizes": [200, 350, 800]}
    slope = contrast_table(scores, [uneven], ["cov_nDCG@10"], B=100, seed=7, mixedlm=False)["delta"][0]
    means = scores.group_by("condition").agg(pl.col("cov_nDCG@10").mean()).sort("condition")["cov_nDCG@10"]
    assert slope == pytest.approx(np.polyfit(np.log2([200, 350, 800]), means.to_numpy(), 1)[0], abs=1e-12)


def test_the_report_shows_the_size_curve_table_and_figure():
    scores = curve_scores()
    contrasts = contrast_table(scores, [SIZE_CURVE], ["cov_nDCG@10"], B=500, seed=7, mixedlm=False).with_columns(
        corpus=pl.lit("kb"), embedder=pl.lit("minilm"), reranker=pl.lit("none")
    )
    means = condition_mean_cis(scores, "cov_nDCG@10", n_boot=500, seed=7)
    rows = size_curve_rows(contrasts, means, [SIZE_CURVE], "cov_nDCG@10")
    assert rows["condition"].to_list() == ["S200", "S400", "S800"] and rows["t_max"].to_list() == [200, 400, 800]
    assert rows["slope"].to_list() == [contrasts["delta"][0]] * 3
    assert rows["mean"].to_list() == means.sort("condition")["mean"].to_list()
    inputs = ReportInputs(
        scores=scores,
        contrasts=contrasts,
        conditions={name: gold() for name in SIZE_CURVE["conditions"]},
        primary_metric="cov_nDCG@10",
        contrast_specs=[SIZE_CURVE],
        bootstrap_iters=500,
        condition_means=means,
    )
    (table,) = build_tables(inputs, [TABLES["size_curve"]])
    assert isinstance(table, Table)
    (block,) = table.content.blocks
    shown = block.frame.row(0, named=True)
    assert shown["series"] == "sc" and shown["slope per doubling [95% CI]"].startswith("+0.0500 [")
    assert shown["mean by t_max [95% CI]"].startswith("S200 (200): ")
    (figure,) = render_figures([table], inputs, [FIGURES["size_curve"]])
    assert isinstance(figure, RenderedFigure)
    kinds = [kind for kind, _ in png_chunks(figure.png)]  # as every figure: no metadata that varies by run
    assert kinds[0] == b"IHDR" and not {b"tEXt", b"iTXt", b"zTXt", b"tIME"} & set(kinds)


def test_a_chunkers_size_and_a_conditions_are_one_size_when_contrasts_look_for_self_contrasts():
    chunkers = {
        "a": {"library": "langchain", "kind": "recursive", "t_max": 200},
        "b": {"library": "langchain", "kind": "recursive"},
    }
    conditions = parse_conditions(
        {"A": gold(boundaries="external:a"), "B": gold(boundaries="external:b", t_max=200)}, CHUNKING, chunkers
    )
    with pytest.raises(ValueError, match="'A' with 'B', which have identical axes"):
        parse_contrasts({"AB": {"treatment": "A", "control": "B"}}, conditions, chunkers)
