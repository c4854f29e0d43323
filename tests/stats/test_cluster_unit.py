"""The bootstrap's resampling unit (stats.cluster) and the few-clusters flag of Table 1."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
import yaml
from conftest import REPO

from structbench.config import ConfigError, validate_config
from structbench.stats import cluster_bootstrap, contrast_table
from structbench.stats.contrasts import CLUSTER_UNITS, MIN_CLUSTERS
from structbench.stats.means import condition_mean_cis


def scores_frame(n_docs: int, per_doc: int, seed: int = 3) -> pl.DataFrame:
    """Two conditions over n_docs documents of per_doc queries; B beats A by a document-level effect."""
    rng = np.random.default_rng(seed)
    rows = []
    for d in range(n_docs):
        effect = rng.normal(0.05, 0.1)  # documents disagree: the clustered CI must be the wider one
        for q in range(per_doc):
            base = rng.uniform(0.2, 0.8)
            qid = f"d{d:02d}-q{q:02d}"
            rows.append({"qid": qid, "doc_id": f"d{d:02d}", "condition": "A", "m": base})
            rows.append({"qid": qid, "doc_id": f"d{d:02d}", "condition": "B", "m": base + effect + rng.normal(0, 0.01)})
    return pl.DataFrame(rows).with_columns(corpus=pl.lit("c"), embedder=pl.lit("e"), reranker=pl.lit("none"))


CONTRAST = [{"name": "B-A", "treatment": "B", "control": "A", "family": "primary"}]


def test_five_documents_are_flagged_and_the_unit_is_named():
    table = contrast_table(scores_frame(5, 40), CONTRAST, ["m"], B=2000, seed=1, mixedlm=False)
    row = table.row(0, named=True)
    assert (row["cluster"], row["n_clusters"], row["few_clusters"]) == ("document", 5, True)
    big = contrast_table(scores_frame(MIN_CLUSTERS, 3), CONTRAST, ["m"], B=500, seed=1, mixedlm=False)
    assert big.row(0, named=True)["few_clusters"] is False  # exactly MIN_CLUSTERS is enough


def test_query_unit_resamples_queries_and_equals_the_plain_bootstrap():
    scores = scores_frame(5, 40)
    table = contrast_table(scores, CONTRAST, ["m"], B=2000, seed=1, mixedlm=False, cluster="query")
    row = table.row(0, named=True)
    assert (row["cluster"], row["n_clusters"], row["few_clusters"], row["n_docs"]) == ("query", 200, False, 5)
    # the same draws as cluster_bootstrap with every query its own cluster
    wide = scores.pivot(on="condition", index=["qid", "doc_id"], values="m").sort("qid")
    delta = (wide["B"] - wide["A"]).to_numpy()
    expected = cluster_bootstrap(delta, wide["qid"].to_numpy(), n_boot=2000, seed=1)
    assert (row["ci_low"], row["ci_high"], row["p"]) == (expected.ci_low[0], expected.ci_high[0], expected.p[0])
    # documents disagree, so resampling whole documents gives the wider interval
    by_doc = contrast_table(scores, CONTRAST, ["m"], B=2000, seed=1, mixedlm=False).row(0, named=True)
    assert by_doc["ci_high"] - by_doc["ci_low"] > 2 * (row["ci_high"] - row["ci_low"])
    assert by_doc["delta"] == row["delta"]  # the effect does not depend on the unit


def test_document_unit_is_the_default_and_unchanged():
    scores = scores_frame(6, 10)
    default = contrast_table(scores, CONTRAST, ["m"], B=1000, seed=2, mixedlm=False)
    named = contrast_table(scores, CONTRAST, ["m"], B=1000, seed=2, mixedlm=False, cluster="document")
    assert default.equals(named)
    wide = scores.pivot(on="condition", index=["qid", "doc_id"], values="m").sort("qid")
    expected = cluster_bootstrap((wide["B"] - wide["A"]).to_numpy(), wide["doc_id"].to_numpy(), n_boot=1000, seed=2)
    assert default["ci_low"][0] == expected.ci_low[0] and default["p"][0] == expected.p[0]


def test_an_unknown_unit_is_a_named_error():
    with pytest.raises(ValueError, match=r"stats.cluster must be one of \['document', 'query'\], got 'corpus'"):
        contrast_table(scores_frame(3, 3), CONTRAST, ["m"], B=100, cluster="corpus")
    assert CLUSTER_UNITS == ("document", "query")


def test_condition_means_follow_the_unit_and_keep_counting_documents():
    scores = scores_frame(5, 40)
    by_doc = condition_mean_cis(scores, "m", n_boot=1000, seed=4)
    by_query = condition_mean_cis(scores, "m", n_boot=1000, seed=4, cluster="query")
    assert by_doc["mean"].to_list() == by_query["mean"].to_list()
    assert by_query["n_docs"].to_list() == [5, 5] and by_query["n_queries"].to_list() == [200, 200]
    assert not by_doc["ci_low"].equals(by_query["ci_low"])


def test_config_accepts_the_unit_and_rejects_others():
    schema = REPO / "workflow" / "schemas" / "config.schema.yaml"

    def load(cluster=None):
        config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
        if cluster is not None:
            config["stats"]["cluster"] = cluster
        return validate_config(config, schema)

    assert load()["stats"]["cluster"] == "document"  # the default, written once in the schema
    assert load("query")["stats"]["cluster"] == "query"
    with pytest.raises(ConfigError, match="cluster") as error:
        load("corpus")
    assert "corpus" in str(error.value)
