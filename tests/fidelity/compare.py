"""Print a fidelity run's means and contrasts beside seed 000's QASPER numbers, and say where the
ordering of the conditions agrees.

    python tests/fidelity/compare.py results/fidelity/report

Reads the report's CSV tables (``conditions``, ``table2_condition_means``, ``table1_contrasts``). Each of
our conditions is matched to the paper's condition with the same treatment (:func:`paper_analog`): fixed
windows without a prefix are A0, a placebo path is P, gold structural chunks are G2 (no prefix) and G3
(depth-3 path). The paper's differ in embedder (bge-large-en-v1.5 vs MiniLM), corpus size (1,508 papers vs a
few) and, for A0 and P, structure source (induced, where ours are gold): levels are not comparable, the
ordering and the signs of the contrasts are what a fidelity run can check.
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import polars as pl

# Seed 000, Table 2: per-condition cov-nDCG@10 on QASPER (strong embedder, no reranker).
PAPER_QASPER = {
    "A0": 0.098,
    "A1": 0.114,
    "A2": 0.117,
    "A3": 0.125,
    "P": 0.109,
    "A4": 0.111,
    "G2": 0.120,
    "G3": 0.126,
    "G4": 0.111,
}
# Seed 000, Table 1: bootstrap deltas on QASPER, where the paper reports one.
PAPER_QASPER_CONTRASTS = {("A3", "P"): 0.0161, ("G3", "A3"): 0.0011}


def paper_analog(axes: dict) -> str | None:
    """The seed 000 condition with the same boundaries, prefix and retrieval (induced-structure letters A,
    gold-structure G; a fixed window or a placebo maps to the paper's A0/A1/P, which had only induced ones)."""
    boundaries, structure, prefix, retrieval = (axes[k] for k in ("boundaries", "structure", "prefix", "retrieval"))
    gold = structure == "gold"
    if boundaries == "fixed":
        return {"none": "A0", "context": "A1"}.get(prefix)
    if boundaries != "structural":
        return None
    if prefix.startswith("placebo:"):
        return "P" if retrieval == "flat" else None
    if prefix == "none" and retrieval == "flat":
        return "G2" if gold else "A2"
    if prefix == "path:3":
        return {"flat": "G3" if gold else "A3", "two_stage": "G4" if gold else "A4"}.get(retrieval)
    return None


def ordering_agreement(ours: dict[str, float], paper: dict[str, float]) -> tuple[int, int, list[str]]:
    """Pairs of conditions ordered the same way by both (ties count as disagreement), of all pairs, and
    the pairs that disagree."""
    agree, disagreements = 0, []
    pairs = list(itertools.combinations(sorted(ours), 2))
    for a, b in pairs:
        if (ours[a] - ours[b]) * (paper[a] - paper[b]) > 0:
            agree += 1
        else:
            disagreements.append(f"{a}/{b}")
    return agree, len(pairs), disagreements


def main(report: Path) -> int:
    tables = report / "tables"
    conditions = pl.read_csv(tables / "conditions.csv")
    analog = {row["condition"]: paper_analog(row) for row in conditions.iter_rows(named=True)}
    means = pl.read_csv(tables / "table2_condition_means.csv")
    ladder = pl.read_csv(tables / "condition_means_ci.csv")
    contrasts = pl.read_csv(tables / "table1_contrasts.csv")
    for cell in means.iter_rows(named=True):
        corpus, embedder, reranker = cell["corpus"], cell["embedder"], cell["reranker"]
        counts = ladder.filter(
            (pl.col("corpus") == corpus) & (pl.col("embedder") == embedder) & (pl.col("reranker") == reranker)
        )
        print(
            f"\nFidelity run: {corpus}, {counts['n_queries'].max()} questions over {counts['n_docs'].max()} papers, "
            f"{embedder}, reranker {reranker}; cov-nDCG@10 (seed 000: QASPER, bge-large-en-v1.5, 4,303 questions)"
        )
        print(f"{'condition':<10} {'ours':>7}  {'95% CI':<17} {'seed 000':>9}")
        ours, paper = {}, {}
        for name in [c for c in means.columns[3:] if cell[c] is not None]:
            ci = counts.filter(pl.col("condition") == name).row(0, named=True)
            reference = analog.get(name)
            shown = f"{reference} {PAPER_QASPER[reference]:.3f}" if reference in PAPER_QASPER else "–"
            print(f"{name:<10} {cell[name]:>7.3f}  [{ci['ci_low']:.3f}, {ci['ci_high']:.3f}]  {shown:>9}")
            if reference in PAPER_QASPER:
                ours[name], paper[name] = cell[name], PAPER_QASPER[reference]
        order = lambda values: " < ".join(sorted(values, key=values.get))  # noqa: E731
        print(f"ordering, ours:     {order(ours)}")
        print(f"ordering, seed 000: {order(paper)} (as {', '.join(f'{n} = {analog[n]}' for n in paper)})")
        agree, total, disagree = ordering_agreement(ours, paper)
        print(f"pairs ordered alike: {agree} of {total}" + (f"; differ: {', '.join(disagree)}" if disagree else ""))
        rows = contrasts.filter(
            (pl.col("corpus") == corpus) & (pl.col("embedder") == embedder) & (pl.col("reranker") == reranker)
        )
        print(f"\n{'contrast':<10} {'Δ':>8}  {'95% CI':<19} {'p (Holm)':>9}  {'sign':<7}  seed 000 Δ")
        for row in rows.iter_rows(named=True):
            treatment, control = analog.get(row["treatment"]), analog.get(row["control"])
            reported, source = PAPER_QASPER_CONTRASTS.get((treatment, control)), "Table 1"
            if reported is None and treatment in PAPER_QASPER and control in PAPER_QASPER:
                reported, source = PAPER_QASPER[treatment] - PAPER_QASPER[control], "Table 2"  # difference of means
            sign = "–" if reported is None else ("agrees" if reported * row["delta"] > 0 else "differs")
            paper_delta = "–" if reported is None else f"{reported:+.4f} ({treatment} − {control}, {source})"
            print(
                f"{row['contrast']:<10} {row['delta']:>+8.4f}  [{row['ci_low']:+.4f}, {row['ci_high']:+.4f}]  "
                f"{row['p_holm']:>9.4f}  {sign:<7}  {paper_delta}"
            )
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(f"usage: {sys.argv[0]} <results>/report")
    sys.exit(main(Path(sys.argv[1])))
