"""Findings and their replication: one contrast table beside another run's on a disjoint sample, as Markdown.

    PYTHONPATH=src .venv/bin/python benchmarks/replication.py \\
        --discovery results/findings-dev --replication results/findings-train [--metric cov_nDCG@10]
    PYTHONPATH=src .venv/bin/python benchmarks/replication.py --discovery results/qasper_full \\
        --discovery-corpus qasper_train --replication results/qasper_full --replication-corpus qasper_dev

Reads each run's ``contrasts/<corpus>/<embedder>/<reranker>/contrasts.parquet`` (of the named corpus where a run
has several) (the statistics step's table:
Δ, 95% bootstrap CI, Holm p with its Monte-Carlo error) and prints, per contrast, the discovery's numbers, the
replication's, and the verdict by docs/results.md's pre-registered rule: a **finding** when both Holm p are below
α with the same sign and neither decision is fragile (α within two Monte-Carlo errors of the Holm p); **does not
replicate** when the discovery's is below α and the replication's Δ has the other sign; **found, not
replicated** when the discovery's is below α and otherwise (the replication's p at or above α, or a fragile
decision on either sample); **no finding** when the discovery's Holm p is not below α. docs/results.md is this
script's output with its context.

Where both runs wrote subgroup tables (``subgroups.parquet``, config ``subgroups``: docs/method.md §11), a second
table gives each (contrast, moderator) interaction Δ_A − Δ_B on both samples and its verdict by the same rule
(Holm over the moderators of each contrast): an interaction a sample cannot test (a side in fewer than 20
documents) is **not testable** on the discovery sample, and **found, not replicated** when only the replication
sample cannot test it.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import polars as pl

ALPHA = 0.05


def contrast_table(results: Path, metric: str, corpus: str = "*") -> pl.DataFrame:
    files = sorted(results.glob(f"contrasts/{corpus}/*/*/contrasts.parquet"))
    if len(files) != 1:
        raise SystemExit(f"{results}: expected one contrasts table, found {[str(f) for f in files]}")
    table = pl.read_parquet(files[0]).filter(pl.col("metric") == metric)
    if table.is_empty():
        raise SystemExit(f"{files[0]}: no contrast on {metric}")
    return table


def verdict(discovery: dict, replication: dict | None) -> str:
    """The pre-registered rule (module docstring) on two rows of the statistics step's contrast table."""
    if discovery["p_holm"] >= ALPHA:
        return "no finding"
    if replication is None:
        return "found, not replicated (no contrast on the replication sample)"
    if (discovery["delta"] > 0) != (replication["delta"] > 0):
        return "does not replicate"
    if replication["p_holm"] < ALPHA and not discovery["holm_fragile"] and not replication["holm_fragile"]:
        return "finding"
    return "found, not replicated"


def subgroup_table(results: Path, metric: str, corpus: str = "*") -> pl.DataFrame | None:
    """A run's interaction rows on ``metric`` (None where the run wrote no subgroup table)."""
    files = sorted(results.glob(f"contrasts/{corpus}/*/*/subgroups.parquet"))
    if not files:
        return None
    if len(files) != 1:
        raise SystemExit(f"{results}: expected one subgroup table, found {[str(f) for f in files]}")
    table = pl.read_parquet(files[0])
    return table.filter((pl.col("metric") == metric) & (pl.col("kind") == "interaction"))


def interaction_verdict(discovery: dict, replication: dict | None) -> str:
    """The pre-registered rule (:func:`verdict`) on two interaction rows of the subgroup tables (``delta`` is the
    interaction, ``p_holm`` its Holm p over the contrast's moderators), where an untestable sample decides first."""
    if not discovery["testable"]:
        return "not testable"
    if replication is None or replication["testable"]:
        return verdict(discovery, replication)
    found = verdict(discovery, None)
    return found if found == "no finding" else "found, not replicated (not testable on the replication sample)"


def interaction_cell(row: dict) -> str:
    holm = "not testable" if not row["testable"] else f"{row['p_holm']:.4f} ± {row['p_holm_mcse']:.4f}"
    fragile = " (fragile)" if row["testable"] and row["holm_fragile"] else ""
    return (
        f"{row['delta']:+.3f} [{row['ci_low']:+.3f}, {row['ci_high']:+.3f}] | {holm}{fragile} | "
        f"{row['n_queries']} q, {row['n_docs']} docs"
    )


def print_interactions(discovery: pl.DataFrame, replication: pl.DataFrame) -> None:
    """Each (contrast, moderator) interaction of the discovery run beside the replication's, with its verdict."""
    print()
    print(
        "| contrast | moderator | interaction | discovery Δ_A − Δ_B [95% CI] | Holm p ± MC s.e. | sample "
        "| replication Δ_A − Δ_B [95% CI] | Holm p ± MC s.e. | sample | verdict |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    others = {(row["contrast"], row["moderator"]): row for row in replication.iter_rows(named=True)}
    for row in discovery.iter_rows(named=True):
        other = others.get((row["contrast"], row["moderator"]))
        shown = interaction_cell(other) if other else "— | — | —"
        print(
            f"| {row['contrast']} | {row['moderator']} | {row['level']} | {interaction_cell(row)} | {shown} | "
            f"{interaction_verdict(row, other)} |"
        )


def cell(row: dict) -> str:
    fragile = " (fragile)" if row.get("holm_fragile") else ""
    return (
        f"{row['delta']:+.3f} [{row['ci_low']:+.3f}, {row['ci_high']:+.3f}] | {row['p_holm']:.4f} ± "
        f"{row['p_holm_mcse']:.4f}{fragile} | {row['dz']:+.2f} | {row['wins']}/{row['ties']}/{row['losses']} | "
        f"{row['n_queries']} q, "
        f"{row['n_docs']} docs"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--discovery", type=Path, required=True)
    parser.add_argument("--replication", type=Path, required=True)
    parser.add_argument("--discovery-corpus", default="*", help="the discovery run's corpus, where it has several")
    parser.add_argument("--replication-corpus", default="*", help="the replication run's corpus, likewise")
    parser.add_argument("--metric", default="cov_nDCG@10")
    args = parser.parse_args()
    discovery = contrast_table(args.discovery, args.metric, args.discovery_corpus)
    replication = contrast_table(args.replication, args.metric, args.replication_corpus)
    discovery = {row["contrast"]: row for row in discovery.iter_rows(named=True)}
    replication = {row["contrast"]: row for row in replication.iter_rows(named=True)}
    print(
        "| contrast | discovery Δ [95% CI] | Holm p ± MC s.e. | dz | W/T/L | sample "
        "| replication Δ [95% CI] | Holm p ± MC s.e. | dz | W/T/L | sample | verdict |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name, row in discovery.items():
        other = replication.get(name)
        print(f"| {name} | {cell(row)} | {cell(other) if other else '— | — | — | — | —'} | {verdict(row, other)} |")
    subgroups = [
        subgroup_table(run, args.metric, corpus)
        for run, corpus in ((args.discovery, args.discovery_corpus), (args.replication, args.replication_corpus))
    ]
    if all(table is not None for table in subgroups):
        print_interactions(*subgroups)


if __name__ == "__main__":
    main()
