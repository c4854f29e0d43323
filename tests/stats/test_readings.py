"""Which metric a family reads first (docs/method.md §10, §18): hand-listed orders."""

from __future__ import annotations

from structbench.stats.readings import budget_of, family_reading, table_reading

METRICS = ["cov_nDCG@10", "budget_cov@512", "budget_cov@2048", "budget_cov@1024", "R@50"]


def test_budget_of_reads_the_budget_of_budget_coverage_only():
    assert budget_of("budget_cov@2048") == 2048
    assert budget_of("cov_nDCG@10") is None and budget_of("qid") is None


def test_the_readtime_family_reads_token_budgets_first_in_ascending_budget():
    assert family_reading("readtime", METRICS, "cov_nDCG@10") == [
        "budget_cov@512",
        "budget_cov@1024",
        "budget_cov@2048",
        "cov_nDCG@10",
        "R@50",
    ]
    # budgets sort as numbers (512 before 1024), not as strings, after the primary metric elsewhere
    assert family_reading("primary", METRICS, "cov_nDCG@10") == [
        "cov_nDCG@10",
        "budget_cov@512",
        "budget_cov@1024",
        "budget_cov@2048",
        "R@50",
    ]


def test_a_table_reads_as_its_first_holm_family():
    readtime = family_reading("readtime", METRICS, "cov_nDCG@10")
    assert table_reading(["exploratory", "readtime"], METRICS, "cov_nDCG@10") == readtime  # exploratory sets nothing
    assert table_reading(["readtime", "primary"], METRICS, "cov_nDCG@10")[0] == "cov_nDCG@10"
    assert table_reading(["exploratory"], METRICS, "cov_nDCG@10")[0] == "cov_nDCG@10"
