"""The shipped default learned inducer: the package file, its pinned digest and manifest, its use when no
model is given (API and CLI), and byte-for-byte retraining from a manifest."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest

from structbench.structure.default_inducer import DATA_PACKAGE, MODEL_FILE, default_inducer, default_manifest
from structbench.structure.learned_model import LearnedInducer, load_learned_inducer

ROOT = Path(__file__).resolve().parents[1]
SHIPPED_SHA256 = "b474d76f547a6e1e8c006f8900859ceff40951d038771c4329e3f95bfb294cc8"


def shipped_file() -> Path:
    return Path(str(resources.files(DATA_PACKAGE).joinpath(MODEL_FILE)))


def test_the_shipped_model_is_the_pinned_file_and_loads_through_the_safe_loader():
    path = shipped_file()
    assert hashlib.sha256(path.read_bytes()).hexdigest() == SHIPPED_SHA256
    assert path.stat().st_size < 3 * 1024 * 1024
    manifest = default_manifest()
    assert manifest["model"]["sha256"] == SHIPPED_SHA256
    model = load_learned_inducer(path)
    assert isinstance(model, LearnedInducer) and model.fingerprint == default_inducer().fingerprint
    trained = sum(len(source["documents"]) for source in manifest["sources"])
    assert model.training["documents"] == trained
    # shipped sources only: licences that allow redistribution with attribution; WikiText evaluates only
    assert {source["licence"] for source in manifest["sources"]} == {"CC BY 4.0", "BSD-3-Clause"}
    assert all(source["kind"] != "wikitext" for source in manifest["sources"])
    assert model.vector_width == 384  # the packaged MiniLM's


def test_the_held_out_documents_never_train_the_shipped_model():
    manifest = default_manifest()

    def key(source: dict, doc_id: str) -> tuple[str, str]:  # a QASPER paper id, or a file of one repository
        return source.get("repository", source["kind"]), doc_id

    trained = {key(s, d) for s in manifest["sources"] for d in s["documents"]}
    held = {key(s, d) for s in manifest["evaluation"] if s["name"] != "wikitext-train" for d in s["documents"]}
    assert held and not trained & held
    assert not any("httpx" in s.get("repository", "") for s in manifest["sources"])


def test_chunk_induce_learned_without_a_model_uses_the_shipped_one(tmp_path):
    plain = tmp_path / "plain.txt"
    plain.write_text(
        "\n\n".join(
            [f"The volcano erupted lava and ash over the island, paragraph {i}." for i in range(6)]
            + [f"The violin's strings and bow give its tone, in the orchestra, paragraph {i}." for i in range(6)]
        )
        + "\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "structbench", "chunk", str(plain), "--induce", "learned", "--json", "--t-min", "0"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    assert rows and all(row["path"][0] == "plain" and len(row["path"]) == 2 for row in rows)
    # the shipped model splits the two topics where they change, and titles each from its words
    assert not any("volcano" in row["content"] and "violin" in row["content"] for row in rows)
    assert "volcano" in rows[0]["path"][1] and "violin" in rows[-1]["path"][1]
    assert "".join(row["content"] for row in rows).count("paragraph") == 12


def git_docs(folder: Path, files: dict[str, str]) -> str:
    """A git directory under ``folder`` with ``files`` committed; its commit."""
    env = {"GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z"}
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    for command in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x"]):
        subprocess.run(["git", "-C", str(folder), *command], check=True, env={**env, "PATH": "/usr/bin:/bin"})
    return subprocess.run(
        ["git", "-C", str(folder), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()


@pytest.mark.model
def test_two_trainings_from_one_manifest_write_identical_bytes(tmp_path):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from segmentation_testing import TOPICS, topic_paragraph
    from train_default_inducer import SourceError, train_model

    files = {}
    for d in range(6):
        parts = []
        for topic in TOPICS:
            parts.append(f"## {topic.title()}")
            parts += [topic_paragraph(topic, d + v) for v in range(3)]
        files[f"docs/doc{d}.md"] = "\n\n".join(parts) + "\n"
    repo = tmp_path / "repo"
    commit = git_docs(repo, files)
    manifest = {
        "train": {"seed": 3, "title_min_docs": 2, "min_section_paragraphs": 1},
        "sources": [
            {"name": "docs", "kind": "markdown-git", "commit": commit, "folder": "docs", "documents": sorted(files)}
        ],
    }
    written = []
    for run in range(2):
        model = train_model(manifest, {"docs": repo / ".git"}, str(tmp_path / "cache"), limit=5)
        model.save(tmp_path / f"model{run}.bin")
        written.append((tmp_path / f"model{run}.bin").read_bytes())
    assert model.training["documents"] == 5
    assert written[0] == written[1]
    manifest["sources"][0]["documents"].append("docs/absent.md")
    with pytest.raises(SourceError, match=r"source docs: 1 listed documents not in .*docs/absent.md"):
        train_model(manifest, {"docs": repo / ".git"}, str(tmp_path / "cache"))
