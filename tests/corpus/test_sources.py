"""The content digest of a corpus's source files (structbench.corpus.sources.source_digest): the corpus step's
``sources`` params, so a corpus reruns on its files' bytes, never on their modification times."""

from __future__ import annotations

import hashlib
import os

from structbench.corpus.sources import source_digest

A, B = b"# A\n\nAlpha.\n", b"# B\n\nBeta.\n"


def write_folder(root):
    docs = root / "docs"
    docs.mkdir()
    (docs / "a.md").write_bytes(A)
    (docs / "b.md").write_bytes(B)
    return docs


def test_the_digest_is_one_sha256_over_each_files_path_and_content(tmp_path):
    docs = write_folder(tmp_path)
    questions = tmp_path / "q.jsonl"
    paths = [str(docs / "a.md"), str(docs / "b.md"), str(questions)]
    # hand-worked: each file's path and SHA-256 on a line, the questions file not there yet
    listing = (
        f"{docs / 'a.md'}\t{hashlib.sha256(A).hexdigest()}\n"
        f"{docs / 'b.md'}\t{hashlib.sha256(B).hexdigest()}\n"
        f"{questions}\tmissing\n"
    )
    first = source_digest(paths)
    assert first == hashlib.sha256(listing.encode()).hexdigest()
    questions.write_text('{"id": "q1", "question": "What?", "answers": ["Alpha."], "doc_id": "a"}\n')
    with_questions = source_digest(paths)
    assert with_questions != first
    os.utime(docs / "a.md", (0, 0))  # a new modification time, the same bytes
    assert source_digest(paths) == with_questions
    (docs / "b.md").write_text("# B\n\nBeta, edited.\n")
    assert source_digest(paths) != with_questions


def test_the_digest_of_a_fixed_folder_is_the_value_finished_runs_stored(tmp_path, monkeypatch):
    """The value the plan computed before the hashing moved here (``Study.corpus_source_digest``), for the same
    relative paths and bytes: a finished corpus step sees the same ``sources`` params and does not rerun."""
    monkeypatch.chdir(tmp_path)
    write_folder(tmp_path)
    digest = source_digest(["docs/a.md", "docs/b.md", "q.jsonl"])
    assert digest == "43f1ec6def41490da732e9d11c3db5627596be48b87282b09c02959061833afa"
    assert source_digest(["docs/b.md", "docs/a.md", "q.jsonl"]) != digest  # the order is part of it
