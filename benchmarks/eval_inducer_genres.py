"""Agreement of the shipped default learned inducer across genres (docs/inducer.md, docs/benchmarks.md).

Each genre's held-out documents (the manifest's ``evaluation`` sources: QASPER dev papers, WikiText
articles, httpx's docs) lose their headings and are segmented by: the shipped model (the package file), a
model trained on that genre's training documents only (in-genre), one trained on the other genres' only
(transfer), TextTiling (``induce_segmentation`` defaults) and the even split at gold's section count (an
oracle on the count). Scores: :mod:`structbench.structure.agreement`'s Pk, WindowDiff and boundary F1
(tolerance one), all levels, averaged over the genre's documents::

    python benchmarks/eval_inducer_genres.py --source qasper=... --source click-docs=... \\
        --source starlette-docs=... --source wikitext-train=... --source wikitext-heldout=... \\
        --source qasper-dev=... --source httpx-docs=... --cache /root/structbench-cache

The comparison models are trained here from the manifest's lists (WikiText's only here: it is not in the
shipped model, see docs/inducer.md, "Licences")."""

from __future__ import annotations

import argparse
import json
import time

from train_default_inducer import MANIFEST, MINILM, read_source, source_paths

from structbench.corpus.build import build_tables
from structbench.embedding.encoders import make_encoder
from structbench.structure.agreement import agreement_summary, baseline_sections
from structbench.structure.default_inducer import default_inducer
from structbench.structure.learned import induce_learned
from structbench.structure.learned_training import train_learned_inducer
from structbench.structure.segmentation import induce_segmentation

# genre: (its held-out source, its training sources); the transfer model trains on every other genre's
GENRES = {
    "papers (QASPER dev)": ("qasper-dev", ("qasper",)),
    "wiki (WikiText held out)": ("wikitext-heldout", ("wikitext-train",)),
    "docs (httpx, never trained on)": ("httpx-docs", ("click-docs", "starlette-docs")),
}
KEYS = ("pk", "windowdiff", "boundary_f1")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--source", action="append", default=[], metavar="NAME=PATH")
    parser.add_argument("--cache", default="/root/structbench-cache")
    args = parser.parse_args()
    manifest = json.loads(MANIFEST.read_text(encoding="utf-8"))
    entries = {e["name"]: e for e in manifest["sources"] + manifest["evaluation"]}
    paths = source_paths(args.source)
    encoder = make_encoder(MINILM, args.cache, 2)
    training = {name: read_source(entries[name], paths[name]) for _, names in GENRES.values() for name in names}

    def trained(names) -> object:
        documents = [doc for name in names for doc in training[name]]
        return train_learned_inducer(*build_tables("train", documents), encoder, ", ".join(names), **manifest["train"])

    shipped = default_inducer()
    print(f"shipped model: {shipped.training['documents']} documents, {shipped.training['gaps']} gaps")
    print("| genre | segmentation | documents | Pk | WindowDiff | boundary F1 | sections/doc |")
    print("|---|---|---|---|---|---|---|")
    for genre, (held, own) in GENRES.items():
        started = time.perf_counter()
        others = [n for _, names in GENRES.values() for n in names if n not in own]
        documents, paragraphs, gold = build_tables("eval", read_source(entries[held], paths[held]))
        doc_ids = documents["doc_id"].to_list()
        rows = {
            "shipped (papers + docs)": induce_learned(documents, paragraphs, encoder, shipped)[0],
            f"in-genre ({' + '.join(own)})": induce_learned(documents, paragraphs, encoder, trained(own))[0],
            f"transfer ({' + '.join(others)})": induce_learned(documents, paragraphs, encoder, trained(others))[0],
            "TextTiling (segmentation defaults)": induce_segmentation(documents, paragraphs, encoder)[0],
            "even split, gold count (oracle)": baseline_sections(gold, doc_ids, "even split, gold count"),
        }
        for name, sections in rows.items():
            summary = agreement_summary(sections, gold, doc_ids)
            values = " | ".join(f"{summary[key]:.3f}" for key in KEYS)
            print(f"| {genre} | {name} | {len(doc_ids)} | {values} | {summary['sections_per_doc']:.1f} |", flush=True)
        print(f"<!-- {genre}: {time.perf_counter() - started:.0f} s -->", flush=True)


if __name__ == "__main__":
    main()
