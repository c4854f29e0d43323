"""Two runs of one config that differ only in ``embedders.<name>.dtype``: how far apart are their results?

    PYTHONPATH=src .venv/bin/python benchmarks/compare_dtypes.py WORKDIR_A WORKDIR_B [--recheck 64]

A workdir holds a run's ``results/``, ``logs/`` and (for ``--recheck``) the config it ran under; A is the
reference (float32), B the other precision. ``benchmarks/dtype_study.yaml`` says how the two runs of the
README's study were made (the gold arm on 50 QASPER dev papers, MiniLM). Tables, every dense cell both runs
have:

* **vectors**: per text set, the largest difference of any component and the smallest and mean cosine of
  a text's vector in B to its vector in A;
* **top-10 agreement**: per condition and query, the Jaccard index of the two top-10 chunk sets and
  overlap@10 (shared chunks / 10), averaged; the share of queries whose top 10 is the same set, and the
  same ranking;
* **per-query scores** (``--metric``, default cov-nDCG@10): each run's mean, then per query B − A: mean
  |Δ|, max |Δ|, and the share of queries whose score changed at all;
* **contrasts**: every contrast's Δ and 95% CI in both runs, and whether its conclusion (the CI's side of
  0) is the same;
* **embedding jobs**: texts encoded and texts/s per text set, from each embed job's log (the cache's last
  progress line: its time includes the one model load per job). A job encodes only what the cache lacks,
  so where job order differed (texts two sets share) the counts read "A / B". Wall-clock rates follow the
  machine's load; ``benchmarks/bench_embed.py --dtypes`` times the precisions per CPU-second.

``--recheck N`` checks B's vectors are reproducible: it embeds the first N texts of each of B's text sets
again in this process, in reverse order and among the last N texts of another set (so every text has other
batch companions), with the embedder settings B's run used (its cache namespace's ``namespace.json``), and
counts the rows that are byte-identical to B's stored vectors.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import numpy as np
import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

TOP = 10
PROGRESS = re.compile(r"encoded (\d+)/(\d+) texts, ([\d.]+) texts/s, ([\d.]+) s elapsed")


def jaccard(a: set, b: set) -> float:
    return len(a & b) / len(a | b) if a | b else 1.0


def top_lists(run: pl.DataFrame, depth: int = TOP) -> dict[str, list[int]]:
    """Each query's first ``depth`` chunk ids, in rank order."""
    ordered = run.sort("qid", "rank").group_by("qid", maintain_order=True).head(depth)
    return {qid: group["chunk_id"].to_list() for (qid,), group in ordered.group_by("qid", maintain_order=True)}


def top_agreement(run_a: pl.DataFrame, run_b: pl.DataFrame, depth: int = TOP) -> dict:
    """Mean Jaccard and overlap@depth of the two runs' top lists over the queries of A (a query B lacks
    counts as no overlap), and the shares of queries with the same set and the same ranking."""
    a, b = top_lists(run_a, depth), top_lists(run_b, depth)
    jaccards, overlaps, same_set, same_order = [], [], 0, 0
    for qid, first in a.items():
        second = b.get(qid, [])
        jaccards.append(jaccard(set(first), set(second)))
        overlaps.append(len(set(first) & set(second)) / depth)
        same_set += set(first) == set(second)
        same_order += first == second
    n = len(a)
    return {
        "queries": n,
        "jaccard": float(np.mean(jaccards)),
        "overlap": float(np.mean(overlaps)),
        "same set": same_set / n,
        "same ranking": same_order / n,
    }


def score_differences(scores_a: pl.DataFrame, scores_b: pl.DataFrame, metric: str) -> dict:
    """Each run's mean ``metric`` and the per-query differences B − A over the queries both scored."""
    joined = scores_a.select("qid", pl.col(metric).alias("a")).join(
        scores_b.select("qid", pl.col(metric).alias("b")), on="qid", how="inner"
    )
    delta = (joined["b"] - joined["a"]).abs().to_numpy()
    return {
        "queries": joined.height,
        "mean A": float(joined["a"].mean()),
        "mean B": float(joined["b"].mean()),
        "mean |d|": float(delta.mean()),
        "max |d|": float(delta.max()),
        "changed": float((delta > 0).mean()),
    }


def embed_rate(log: Path) -> tuple[int, float, float] | None:
    """(texts encoded, texts/s, seconds) from an embed job's last cache progress line; None if it encoded
    nothing (everything came from the cache)."""
    found = PROGRESS.findall(log.read_text(encoding="utf-8", errors="replace"))
    if not found:
        return None
    done, _, rate, elapsed = found[-1]
    return int(done), float(rate), float(elapsed)


def dense_runs(results: Path) -> dict[tuple[str, str, str], Path]:
    """(corpus, embedder, condition) -> run file, for every dense first-stage run under ``results``."""
    found = {}
    for path in sorted(results.glob("*/runs/*/*.parquet")):
        corpus, _, embedder = path.parts[-4:-1]
        if embedder != "bm25" and not path.name.endswith(".routing.parquet"):
            found[(corpus, embedder, path.stem)] = path
    return found


def vector_sets(results: Path) -> dict[str, Path]:
    return {str(p.relative_to(results)): p for p in sorted(results.glob("*/vectors/**/*.npy"))}


def print_table(title: str, rows: list[dict]) -> None:
    print(f"\n{title}")
    if not rows:
        print("  (none)")
        return
    columns = list(rows[0])
    text = [[f"{v:.4f}" if isinstance(v, float) else str(v) for v in (row[c] for c in columns)] for row in rows]
    widths = [max(len(c), *(len(r[i]) for r in text)) for i, c in enumerate(columns)]
    print("  " + "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(columns, widths))))
    for r in text:
        print("  " + "  ".join(v.ljust(w) if i == 0 else v.rjust(w) for i, (v, w) in enumerate(zip(r, widths))))


def compare(a: Path, b: Path, metric: str) -> None:
    results_a, results_b = a / "results", b / "results"
    vector_rows = []
    for name, path_a in vector_sets(results_a).items():
        path_b = results_b / name
        if not path_b.exists():
            continue
        va, vb = np.load(path_a), np.load(path_b)
        cosine = (va * vb).sum(axis=1)
        vector_rows.append(
            {
                "vectors": name.replace("/vectors/", ": ").removesuffix(".npy"),
                "texts": len(va),
                "max |d|": f"{np.abs(va - vb).max():.1e}",
                "identical rows": f"{int((va == vb).all(axis=1).sum())}/{len(va)}",
                "min cos": f"{cosine.min():.6f}",
                "mean cos": f"{cosine.mean():.6f}",
            }
        )
    print_table("Vectors, B against A", vector_rows)

    agreement_rows, score_rows = [], []
    runs_b = dense_runs(results_b)
    for key, path_a in dense_runs(results_a).items():
        if key not in runs_b:
            continue
        corpus, embedder, condition = key
        label = f"{corpus}/{embedder}/{condition}"
        agreement = top_agreement(pl.read_parquet(path_a), pl.read_parquet(runs_b[key]))
        agreement_rows.append({"condition": label, **agreement})
        scored = [r / corpus / "scores" / embedder / "none" / f"{condition}.parquet" for r in (results_a, results_b)]
        if all(p.exists() for p in scored):
            differences = score_differences(pl.read_parquet(scored[0]), pl.read_parquet(scored[1]), metric)
            score_rows.append({"condition": label, **differences})
    print_table(f"Top-{TOP} agreement, B against A (per query, averaged)", agreement_rows)
    print_table(f"Per-query {metric}, B - A", score_rows)

    contrast_rows = []
    for path_a in sorted(results_a.glob("contrasts/*/*/*/contrasts.parquet")):
        path_b = results_b / path_a.relative_to(results_a)
        if not path_b.exists():
            continue
        table_b = pl.read_parquet(path_b).filter(pl.col("metric") == metric)
        for row in pl.read_parquet(path_a).filter(pl.col("metric") == metric).iter_rows(named=True):
            match = table_b.filter(pl.col("contrast") == row["contrast"])
            if match.is_empty():
                continue
            other = match.row(0, named=True)
            side = lambda r: "+" if r["ci_low"] > 0 else "-" if r["ci_high"] < 0 else "0"  # noqa: E731
            contrast_rows.append(
                {
                    "contrast": row["contrast"],
                    "delta A [95% CI]": f"{row['delta']:+.4f} [{row['ci_low']:+.4f}, {row['ci_high']:+.4f}]",
                    "delta B [95% CI]": f"{other['delta']:+.4f} [{other['ci_low']:+.4f}, {other['ci_high']:+.4f}]",
                    "B - A": f"{other['delta'] - row['delta']:+.4f}",
                    "conclusion": "same" if side(row) == side(other) else f"CHANGED ({side(row)} -> {side(other)})",
                }
            )
    print_table(f"Contrasts ({metric}); conclusion: the CI's side of 0 (+, -, 0 = spans it)", contrast_rows)

    embed_rows = []
    for log_a in sorted((a / "logs" / "embed").glob("*/*.log")):
        log_b = b / log_a.relative_to(a)
        rates = [embed_rate(log_a), embed_rate(log_b) if log_b.exists() else None]
        if None in rates:
            continue
        (n_a, rate_a, seconds_a), (n_b, rate_b, seconds_b) = rates
        embed_rows.append(
            {
                "embed job": f"{log_a.parent.name}/{log_a.stem}",
                "texts": f"{n_a}" if n_a == n_b else f"{n_a} / {n_b}",
                "A texts/s": f"{rate_a:.1f}",
                "B texts/s": f"{rate_b:.1f}",
                "B / A": f"{rate_b / rate_a:.2f}",
                "A s": f"{seconds_a:.0f}",
                "B s": f"{seconds_b:.0f}",
            }
        )
    print_table("Embedding jobs (texts/s over the job's encoding, model load included)", embed_rows)


def namespace_spec(workdir: Path, report: Path):
    """The embedder a vector file was made with, from its cache namespace's ``namespace.json``."""
    from structbench.embedding.local import EmbedderSpec

    namespace = json.loads(report.read_text(encoding="utf-8"))["namespace"]
    described = json.loads(
        (workdir / "cache" / "embeddings" / namespace / "namespace.json").read_text(encoding="utf-8")
    )
    spec = EmbedderSpec(
        model=described["model"],
        batch_size=32,  # unused by the exact passes, which size themselves (structbench.embedding.passes)
        device="cpu",
        fp16=False,
        max_seq_length=described["max_seq_length"],
        query_prefix="",  # queries only; text sets are rechecked
        dtype=described.get("dtype", "float32"),
    )
    return spec, described["device"]


def recheck(b: Path, n: int) -> None:
    """Re-embed the first ``n`` texts of each of B's text sets among other companions, in reverse order,
    and count the rows byte-identical to B's stored vectors (module docstring)."""
    from structbench.embedding.local import device_identity, encode, load_model

    results = b / "results"
    rows, models = [], {}
    for npy in sorted(results.glob("*/vectors/*/*/*/*.npy")):
        corpus, _, embedder, boundaries, structure = npy.parts[-6:-1]
        texts_path = results / corpus / "texts" / boundaries / structure / f"{npy.stem}.parquet"
        if not texts_path.exists():
            continue
        spec, device = namespace_spec(b, npy.with_suffix("").with_suffix(".embed.json"))
        if device != device_identity("cpu"):
            raise SystemExit(f"{npy} was embedded on {device}, this machine is {device_identity('cpu')}")
        if spec not in models:
            models[spec] = load_model(spec)
        texts = pl.read_parquet(texts_path).sort("chunk_id")["text_for_embedding"].to_list()
        first = texts[:n]
        others = [t for t in reversed(texts[-n:]) if t not in set(first)]
        vectors = encode(models[spec], list(reversed(first)) + others)  # other order, companions
        again = vectors[: len(first)][::-1]
        stored = np.load(npy)[: len(first)]
        rows.append(
            {
                "vectors": f"{corpus}: {embedder}/{boundaries}/{structure}/{npy.stem} ({spec.dtype})",
                "rechecked": len(first),
                "identical bytes": int((again == stored).all(axis=1).sum()),
                "max |d|": f"{np.abs(again - stored).max():.1e}",
            }
        )
    print_table("Reproducibility of B's vectors: re-embedded in a new process, other companions and order", rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("workdir_a", type=Path, help="the reference run (float32)")
    parser.add_argument("workdir_b", type=Path, help="the run in the other precision")
    parser.add_argument("--metric", default="cov_nDCG@10")
    parser.add_argument("--recheck", type=int, default=0, metavar="N", help="re-embed N texts per set of B")
    args = parser.parse_args()
    for workdir in (args.workdir_a, args.workdir_b):
        if not (workdir / "results").is_dir():
            raise SystemExit(f"{workdir} has no results/ folder: pass the workdir a run wrote")
    compare(args.workdir_a, args.workdir_b, args.metric)
    if args.recheck:
        recheck(args.workdir_b, args.recheck)


if __name__ == "__main__":
    main()
