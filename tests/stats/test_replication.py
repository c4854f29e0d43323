"""benchmarks/replication.py: the pre-registered finding rule of docs/results.md, row by row, and the table it prints
from two runs' contrast tables (the statistics step's columns)."""

import importlib.util
import subprocess
import sys

import polars as pl
import pytest
from conftest import REPO

spec = importlib.util.spec_from_file_location("replication", REPO / "benchmarks/replication.py")
replication = importlib.util.module_from_spec(spec)
spec.loader.exec_module(replication)


def row(delta: float, p_holm: float, fragile: bool = False, **extra) -> dict:
    return {"delta": delta, "p_holm": p_holm, "holm_fragile": fragile, **extra}


@pytest.mark.parametrize(
    "discovery, found_again, expected",
    [
        (row(+0.02, 0.001), row(+0.01, 0.01), "finding"),
        (row(-0.02, 0.001), row(-0.03, 0.04), "finding"),
        (row(+0.02, 0.001), row(+0.01, 0.20), "found, not replicated"),
        (row(+0.02, 0.001), row(+0.01, 0.04, fragile=True), "found, not replicated"),
        (row(+0.02, 0.049, fragile=True), row(+0.01, 0.001), "found, not replicated"),
        (row(+0.02, 0.001), row(-0.01, 0.80), "does not replicate"),
        (row(+0.02, 0.001), row(-0.01, 0.001), "does not replicate"),
        (row(+0.02, 0.05), row(+0.05, 0.0001), "no finding"),
        (row(+0.02, 0.30), None, "no finding"),
        (row(+0.02, 0.001), None, "found, not replicated (no contrast on the replication sample)"),
    ],
)
def test_the_verdict_is_the_preregistered_rule(discovery, found_again, expected):
    assert replication.verdict(discovery, found_again) == expected


def contrasts(rows: list[tuple]) -> pl.DataFrame:
    names = ("contrast", "delta", "ci_low", "ci_high", "p_holm", "p_holm_mcse", "holm_fragile", "dz")
    table = pl.DataFrame([dict(zip(names, values)) for values in rows])
    return table.with_columns(
        metric=pl.lit("cov_nDCG@10"), wins=pl.lit(5), ties=pl.lit(3), losses=pl.lit(2), n_queries=10, n_docs=4
    )


def test_the_table_sets_each_contrast_beside_its_replication(tmp_path):
    for run, corpus, rows in (
        (
            "a",
            "train",
            [
                ("G3-P3", 0.021, 0.009, 0.033, 0.0016, 0.0011, False, 0.13),
                ("G2-F0", 0.002, -0.01, 0.014, 1.0, 0.0, False, 0.01),
            ],
        ),
        ("b", "dev", [("G3-P3", 0.015, 0.002, 0.03, 0.03, 0.002, False, 0.08)]),
    ):
        folder = tmp_path / run / "contrasts" / corpus / "minilm" / "none"
        folder.mkdir(parents=True)
        contrasts(rows).write_parquet(folder / "contrasts.parquet")
    command = [sys.executable, str(REPO / "benchmarks/replication.py"), "--discovery", str(tmp_path / "a")]
    printed = subprocess.run(
        command + ["--replication", str(tmp_path / "b")], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert printed[0].count("|") == 13 and printed[1] == "|---|---|---|---|---|---|---|---|---|---|---|---|"
    assert printed[2] == (
        "| G3-P3 | +0.021 [+0.009, +0.033] | 0.0016 ± 0.0011 | +0.13 | 5/3/2 | 10 q, 4 docs "
        "| +0.015 [+0.002, +0.030] | 0.0300 ± 0.0020 | +0.08 | 5/3/2 | 10 q, 4 docs | finding |"
    )
    assert printed[3].startswith("| G2-F0 | +0.002") and printed[3].endswith("| — | — | — | — | — | no finding |")
    assert len(printed) == 4  # neither run wrote a subgroup table: no interaction table


@pytest.mark.parametrize(
    "discovery, found_again, expected",
    [
        (row(+0.03, 0.001, testable=True), row(+0.02, 0.01, testable=True), "finding"),
        (row(+0.03, 0.001, testable=True), row(-0.02, 0.01, testable=True), "does not replicate"),
        (row(+0.03, 0.20, testable=True), row(+0.02, 0.01, testable=True), "no finding"),
        (row(+0.03, float("nan"), testable=False), row(+0.02, 0.01, testable=True), "not testable"),
        (
            row(+0.03, 0.001, testable=True),
            row(+0.02, float("nan"), testable=False),
            "found, not replicated (not testable on the replication sample)",
        ),
        (row(+0.03, 0.30, testable=True), row(+0.02, float("nan"), testable=False), "no finding"),
    ],
)
def test_an_interactions_verdict_is_the_same_rule_after_testability(discovery, found_again, expected):
    assert replication.interaction_verdict(discovery, found_again) == expected


def interactions(rows: list[tuple]) -> pl.DataFrame:
    names = ("contrast", "moderator", "delta", "p_holm", "testable")
    table = pl.DataFrame([dict(zip(names, values)) for values in rows])
    return table.with_columns(
        metric=pl.lit("cov_nDCG@10"),
        kind=pl.lit("interaction"),
        level=pl.lit("A − B"),
        ci_low=pl.col("delta") - 0.01,
        ci_high=pl.col("delta") + 0.01,
        p_holm_mcse=pl.lit(0.001),
        holm_fragile=pl.lit(False),
        n_queries=pl.lit(40),
        n_docs=pl.lit(30),
    )


def test_the_interactions_are_printed_with_their_verdicts_when_both_runs_split(tmp_path):
    for run, corpus, rows in (
        ("a", "train", [("G3-P3", "tree_depth", 0.04, 0.002, True), ("G3-P3", "qtype", 0.01, float("nan"), False)]),
        ("b", "dev", [("G3-P3", "tree_depth", 0.03, 0.01, True)]),
    ):
        folder = tmp_path / run / "contrasts" / corpus / "minilm" / "none"
        folder.mkdir(parents=True)
        contrasts([("G3-P3", 0.021, 0.009, 0.033, 0.0016, 0.0011, False, 0.13)]).write_parquet(
            folder / "contrasts.parquet"
        )
        interactions(rows).write_parquet(folder / "subgroups.parquet")
    command = [sys.executable, str(REPO / "benchmarks/replication.py"), "--discovery", str(tmp_path / "a")]
    printed = subprocess.run(
        command + ["--replication", str(tmp_path / "b")], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert printed[3] == ""
    assert printed[4].startswith("| contrast | moderator | interaction | discovery Δ_A − Δ_B")
    assert printed[6] == (
        "| G3-P3 | tree_depth | A − B | +0.040 [+0.030, +0.050] | 0.0020 ± 0.0010 | 40 q, 30 docs "
        "| +0.030 [+0.020, +0.040] | 0.0100 ± 0.0010 | 40 q, 30 docs | finding |"
    )
    assert printed[7].startswith("| G3-P3 | qtype | A − B | +0.010 [+0.000, +0.020] | not testable |")
    assert printed[7].endswith("| — | — | — | not testable |")
