"""The ``subgroups`` key at start-up (structbench.stats.checks through the workflow's checks): a named error for an
unknown moderator, an undeclared contrast or a dose-response; a contrast the selection drops is not analysed; no
request, no job; and the study's inputs and settings of the subgroup step."""

import copy
import io
from contextlib import redirect_stderr

import pytest
import yaml
from conftest import REPO

from structbench.cli import main
from structbench.config import ConfigError
from structbench.plan.study import start_up

SCHEMA = REPO / "workflow/schemas/config.schema.yaml"
DEFAULT = yaml.safe_load((REPO / "config/config.yaml").read_text())
ALL = ["tree_depth", "anchoring", "qtype", "evidence_spans"]


def study(subgroups, **keys):
    """The default config with ``subgroups`` (and ``keys``) through the workflow's start-up."""
    config = copy.deepcopy(DEFAULT) | keys
    if subgroups is None:
        config.pop("subgroups")
    else:
        config["subgroups"] = subgroups
    return start_up(config, SCHEMA).study


@pytest.mark.parametrize(
    "subgroups, named",
    [
        (
            {"moderators": ["tree_depth", "depth"], "contrasts": ["C2"]},
            r"subgroups\.moderators names \['depth'\], which are not moderators; moderators are \['tree_depth', ",
        ),
        (
            {"moderators": ALL, "contrasts": ["G3-G2", "G3-Z9"]},
            r"subgroups\.contrasts names \['G3-Z9'\], which config\.contrasts does not declare "
            r"\(declared: \['B3-B2', 'C1', ",
        ),
        (
            {"moderators": ALL, "contrasts": ["induced-depth"]},
            r"subgroups\.contrasts names \['induced-depth'\], which are dose-response contrasts",
        ),
        ({"moderators": ALL, "contrasts": "G3-G2"}, r"subgroups\.contrasts: 'G3-G2' is not of type 'array'"),
        ({"moderators": ALL, "contrasts": ["C2", "C2"]}, r"subgroups\.contrasts: .* non-unique"),
        ({"moderators": ALL, "strata": ["C2"]}, r"subgroups\.strata: unknown key"),
    ],
)
def test_a_bad_subgroups_key_is_a_config_error_naming_it(subgroups, named):
    with pytest.raises(ConfigError, match=named):
        study(subgroups)


def test_the_default_asks_for_its_path_contrasts_and_a_selection_drops_the_others():
    whole = study(DEFAULT["subgroups"])
    assert whole.subgroup_contrasts() == ["C2", "G3-G2"]
    assert whole.subgroup_params() == {
        "moderators": ALL,
        "contrasts": [
            {"name": "C2", "family": "primary", "treatment": "A3", "control": "P"},
            {"name": "G3-G2", "family": "secondary", "treatment": "G3", "control": "G2"},
        ],
    }
    gold = study(DEFAULT["subgroups"], select={"conditions": ["G2", "G3", "G4"]})
    assert gold.subgroup_contrasts() == ["G3-G2"]  # C2's conditions are not selected: not run, not split
    assert gold.subgroup_inputs("kb", "minilm", "none") == {
        "scores": ["results/kb/scores/minilm/none/G3.parquet", "results/kb/scores/minilm/none/G2.parquet"],
        "queries": "results/kb/corpus/queries.parquet",
        "sections": "results/kb/structure/gold/sections.parquet",
    }
    assert gold.all_subgroups() == ["results/contrasts/kb/minilm/none/subgroups.parquet"]
    assert gold.qtype_reference("kb") == "factoid"
    assert study(DEFAULT["subgroups"], select={"conditions": ["G2", "G4"]}).all_subgroups() == []


@pytest.mark.parametrize(
    "subgroups", [None, {}, {"moderators": ALL}, {"contrasts": ["G3-G2"]}, {"moderators": [], "contrasts": ["C2"]}]
)
def test_no_subgroup_request_plans_no_subgroup_table(subgroups):
    plan = study(subgroups)
    assert plan.subgroup_contrasts() == [] and plan.all_subgroups() == []
    assert "subgroups" in plan.report_input_files() and plan.report_input_files()["subgroups"] == []


def test_check_config_names_the_file_and_line_of_a_bad_subgroups_key(tmp_path):
    (tmp_path / "my.yaml").write_text("# subgroups\nsubgroups:\n  contrasts: [G3-G2, G9-G2]\n")
    err = io.StringIO()
    with redirect_stderr(err):
        status = main(["check-config", str(tmp_path / "my.yaml")])
    assert status == 1
    assert err.getvalue().startswith(
        f"{tmp_path / 'my.yaml'}:3: subgroups.contrasts names ['G9-G2'], which config.contrasts does not declare"
    )
