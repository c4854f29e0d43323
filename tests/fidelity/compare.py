"""Print a fidelity run's means and contrasts beside Kuehlkamp et al.'s QASPER numbers, and say where the
ordering of the conditions agrees.

    python tests/fidelity/compare.py results/fidelity/report

Reads the report's CSV tables (``conditions``, ``table2_condition_means``, ``table1_contrasts``). Each of
our conditions is matched to the paper's condition on the same four axes (:func:`paper_analog`): gold
structural chunks are G2 (no prefix), G3 (depth-3 path) and G4 (two-stage); LLM-induced ones A2..A4, P.
Fixed windows sized to gold chunks and a placebo over gold paths are named variants of A0 and P (the
paper's were induced); a model-free inducer's conditions have no analog. Orderings are counted like with
like, then with the variants; ties are counted as ties. The paper's numbers differ in embedder
(bge-large-en-v1.5 vs MiniLM) and corpus size (1,508 papers vs a few): levels are not comparable, the
ordering and the signs of the contrasts are what a fidelity run can check.
"""

from __future__ import annotations

import itertools
import sys
from dataclasses import dataclass
from pathlib import Path

import polars as pl

# Kuehlkamp et al., Table 2: per-condition cov-nDCG@10 on QASPER (strong embedder, no reranker).
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
# Kuehlkamp et al., Table 1: bootstrap deltas on QASPER, where the paper reports one.
PAPER_QASPER_CONTRASTS = {("A3", "P"): 0.0161, ("G3", "A3"): 0.0011}


LLM_INDUCERS = ("llm",)  # the inducers whose sections play the paper's LLM-induced structure


@dataclass(frozen=True)
class Analog:
    """Kuehlkamp et al.'s condition one of ours is compared with: ``same`` when every axis agrees (gold with
    gold, LLM-induced with LLM-induced), else a named variant whose difference ``note`` states."""

    paper: str
    same: bool
    note: str = ""


def paper_analog(axes: dict) -> Analog | None:
    """Kuehlkamp et al.'s condition with the same boundaries, structure source, prefix and retrieval (A: induced
    by an LLM, G: gold), or a named variant: fixed windows sized to gold chunks (the paper's A0 and A1 were
    sized to LLM-induced ones) and a placebo over gold paths (the paper's P permutes induced paths).
    A model-free inducer's conditions have no analog: the paper has no such arm."""
    boundaries, structure, prefix, retrieval = (axes[k] for k in ("boundaries", "structure", "prefix", "retrieval"))
    gold = structure == "gold"
    llm = structure.startswith("induced:") and structure.split(":", 1)[1] in LLM_INDUCERS
    if not (gold or llm):
        return None
    if boundaries == "fixed":
        paper = {"none": "A0", "context": "A1"}.get(prefix)
        if paper is None:
            return None
        return Analog(paper, True) if llm else Analog(paper, False, "windows sized to gold chunks")
    if boundaries != "structural":
        return None
    if prefix == "placebo:3" and retrieval == "flat":
        return Analog("P", True) if llm else Analog("P", False, "placebo over gold paths")
    if prefix == "none" and retrieval == "flat":
        return Analog("G2" if gold else "A2", True)
    if prefix == "path:3":
        paper = {"flat": "G3" if gold else "A3", "two_stage": "G4" if gold else "A4"}.get(retrieval)
        return Analog(paper, True) if paper else None
    return None


@dataclass(frozen=True)
class Agreement:
    """Pairs of conditions ordered alike by both, tied in ours (equal means: no order to compare), and
    ordered differently (named ``a/b``), of all pairs."""

    alike: int
    tied: int
    differ: tuple[str, ...]
    total: int


def ordering_agreement(ours: dict[str, float], paper: dict[str, float]) -> Agreement:
    alike, tied, differ = 0, 0, []
    pairs = list(itertools.combinations(sorted(ours), 2))
    for a, b in pairs:
        product = (ours[a] - ours[b]) * (paper[a] - paper[b])
        if ours[a] == ours[b] or paper[a] == paper[b]:
            tied += 1
        elif product > 0:
            alike += 1
        else:
            differ.append(f"{a}/{b}")
    return Agreement(alike, tied, tuple(differ), len(pairs))


def agreement_line(label: str, ours: dict[str, float], paper: dict[str, float]) -> str:
    result = ordering_agreement(ours, paper)
    line = f"pairs ordered alike ({label}): {result.alike} of {result.total}"
    if result.tied:
        line += f", {result.tied} tied"
    return line + (f"; differ: {', '.join(result.differ)}" if result.differ else "")


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
            f"{embedder}, reranker {reranker}; cov-nDCG@10 (Kuehlkamp et al.: QASPER, bge-large-en-v1.5, 4,303 "
            "questions)"
        )
        print(f"{'condition':<10} {'ours':>7}  {'95% CI':<17} {'paper':>9}")
        ours, paper, same, unmapped = {}, {}, set(), []
        for name in [c for c in means.columns[3:] if cell[c] is not None]:
            ci = counts.filter(pl.col("condition") == name).row(0, named=True)
            reference = analog.get(name)
            known = reference is not None and reference.paper in PAPER_QASPER
            shown = f"{reference.paper} {PAPER_QASPER[reference.paper]:.3f}" if known else "–"
            note = "" if not known or reference.same else f"  variant: {reference.note}"
            print(f"{name:<10} {cell[name]:>7.3f}  [{ci['ci_low']:.3f}, {ci['ci_high']:.3f}]  {shown:>9}{note}")
            if known:
                ours[name], paper[name] = cell[name], PAPER_QASPER[reference.paper]
                same |= {name} if reference.same else set()
            else:
                unmapped.append(name)
        order = lambda values: " < ".join(sorted(values, key=values.get))  # noqa: E731
        print(f"ordering, ours:     {order(ours)}")
        print(f"ordering, Kuehlkamp et al.: {order(paper)} (as {', '.join(f'{n} = {analog[n].paper}' for n in paper)})")
        print(
            f"mapped like with like: {', '.join(sorted(same)) or 'none'}; as named variants: "
            f"{', '.join(sorted(set(ours) - same)) or 'none'}; no analog: {', '.join(unmapped) or 'none'}"
        )
        print(agreement_line("like with like", {n: ours[n] for n in same}, {n: paper[n] for n in same}))
        print(agreement_line("variants included", ours, paper))
        rows = contrasts.filter(
            (pl.col("corpus") == corpus) & (pl.col("embedder") == embedder) & (pl.col("reranker") == reranker)
        )
        print(f"\n{'contrast':<10} {'Δ':>8}  {'95% CI':<19} {'p (Holm)':>9}  {'sign':<7}  paper Δ")
        for row in rows.iter_rows(named=True):
            treatment, control = (getattr(analog.get(row[side]), "paper", None) for side in ("treatment", "control"))
            reported, source = PAPER_QASPER_CONTRASTS.get((treatment, control)), "Table 1"
            if reported is None and treatment in PAPER_QASPER and control in PAPER_QASPER:
                reported, source = PAPER_QASPER[treatment] - PAPER_QASPER[control], "Table 2"  # difference of means
            sign = "–" if reported is None else ("agrees" if reported * row["delta"] > 0 else "differs")
            paper_delta = "–" if reported is None else f"{reported:+.4f} ({treatment} − {control}, {source})"
            if reported is not None and str(row["comparison"]).startswith("slope"):
                # A slope per depth level beside a difference of two means: only the signs compare.
                paper_delta = f"sign of {treatment} − {control} only ({source}): a slope is per depth level"
            print(
                f"{row['contrast']:<10} {row['delta']:>+8.4f}  [{row['ci_low']:+.4f}, {row['ci_high']:+.4f}]  "
                f"{row['p_holm']:>9.4f}  {sign:<7}  {paper_delta}"
            )
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(f"usage: {sys.argv[0]} <results>/report")
    sys.exit(main(Path(sys.argv[1])))
