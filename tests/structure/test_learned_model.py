"""The learned inducer's model file (structbench.structure.learned_model): arrays and JSON that predict what
the fitted estimators predict, checked before use, and never code."""

import hashlib
import io
import json
import os
import pickle
import subprocess
import sys
import zipfile

import numpy as np
import pytest
from conftest import SHARED_DATA, absolute_pythonpath
from segmentation_testing import HashedBagOfWords, topic_documents

from structbench.corpus.qasper import load_qasper
from structbench.structure.learned import induce_learned
from structbench.structure.learned_features import gap_features
from structbench.structure.learned_model import (
    FORMAT,
    MAGIC,
    ModelFileError,
    TitleClassifier,
    TreeEnsemble,
    canonical_json,
    load_learned_inducer,
    npz_bytes,
)
from structbench.structure.learned_training import fit_boosted_trees, gold_starts, train_learned_inducer
from structbench.structure.model_free import paragraph_vectors
from structbench.structure.sections import paragraph_texts

QASPER10 = SHARED_DATA / "qasper" / "sample-train10" / "qasper-train-first10.official-format.json"


@pytest.fixture(scope="module")
def trained():
    documents, paragraphs, gold = topic_documents(range(12))
    return train_learned_inducer(documents, paragraphs, gold, HashedBagOfWords(), seed=3)


@pytest.fixture(scope="module")
def model_bytes(trained, tmp_path_factory):
    path = tmp_path_factory.mktemp("model") / "model.bin"
    trained.save(path)
    return path.read_bytes()


def write(tmp_path, name: str, data: bytes):
    (tmp_path / name).write_bytes(data)
    return tmp_path / name


def with_header(payload: bytes, **header) -> bytes:
    """A model file around ``payload`` whose header has the right length and digest unless ``header`` says."""
    fields = {"format": FORMAT, "payload_bytes": len(payload), "payload_sha256": hashlib.sha256(payload).hexdigest()}
    return MAGIC + canonical_json({**fields, **header}) + b"\n" + payload


def test_save_load_and_retrain_are_byte_identical(trained, model_bytes, tmp_path):
    payload = model_bytes.split(b"\n", 2)[2]
    assert model_bytes.startswith(MAGIC) and hashlib.sha256(payload).hexdigest() == trained.fingerprint
    assert json.loads(model_bytes.split(b"\n", 2)[1])["payload_sha256"] == trained.fingerprint
    documents, paragraphs, gold = topic_documents(range(12))
    again = train_learned_inducer(documents, paragraphs, gold, HashedBagOfWords(), seed=3)
    again.save(tmp_path / "b.bin")
    assert (tmp_path / "b.bin").read_bytes() == model_bytes
    loaded = load_learned_inducer(write(tmp_path, "a.bin", model_bytes))
    assert loaded.fingerprint == trained.fingerprint
    assert "seconds" not in loaded.training and loaded.training["documents"] == 12
    assert loaded.title_names == trained.title_names and loaded.threshold == trained.threshold
    held = topic_documents(range(100, 103))
    x = np.concatenate([gap_features(t, v) for t, v in held_features(held)])
    for name in ("boundary", "level"):
        assert getattr(loaded, name).probability(x).tobytes() == getattr(trained, name).probability(x).tobytes()
    first = induce_learned(*held[:2], HashedBagOfWords(), trained)
    second = induce_learned(*held[:2], HashedBagOfWords(), loaded)
    assert first[0].equals(second[0]) and first[1].equals(second[1])


def held_features(tables):
    texts = paragraph_texts(tables[0], tables[1])
    vectors = paragraph_vectors(texts, HashedBagOfWords(), "paragraph")
    return [(texts[doc_id], vectors[doc_id]) for doc_id in texts]


@pytest.mark.skipif(not QASPER10.exists(), reason="shared QASPER sample not present")
def test_the_arrays_predict_the_bytes_scikit_learn_predicts_on_qasper_papers():
    """Boosted trees and the title classifier (two and four classes) fitted on real QASPER gaps: the array
    forms' probabilities are byte-identical to scikit-learn's, missing values included."""
    from sklearn.linear_model import LogisticRegression

    tables = load_qasper([QASPER10])
    texts = paragraph_texts(tables.documents, tables.paragraphs)
    vectors = paragraph_vectors(texts, HashedBagOfWords(), "paragraph")
    starts = gold_starts(tables.sections)
    doc_ids = list(texts)
    rows = {d: gap_features(texts[d], vectors[d]) for d in doc_ids}
    labels = {d: np.isin(np.arange(1, len(texts[d])), list(starts[d].every)).astype(int) for d in doc_ids}
    x = np.concatenate([rows[d] for d in doc_ids[:7]])
    y = np.concatenate([labels[d] for d in doc_ids[:7]])
    held = np.concatenate([rows[d] for d in doc_ids[7:]])
    held[::17, 0] = np.nan  # a missing value takes the side the tree learned for it
    assert len(x) > 500 and 0 < y.mean() < 0.5
    fitted = fit_boosted_trees(x, y, seed=5)
    ensemble = TreeEnsemble.from_fitted(fitted)
    assert len(ensemble.tree_starts) == 201
    assert ensemble.probability(held).tobytes() == fitted.predict_proba(held)[:, 1].tobytes()
    position = np.round(x[:, 13] * 3).astype(int)  # relative position in thirds: four classes
    scale = x.std(axis=0) + 1e-9  # standardised, as the title features (unit vectors) nearly are
    inputs, held_inputs = x / scale, np.nan_to_num(held) / scale
    for target in (y, position):
        logistic = LogisticRegression(max_iter=1000).fit(inputs, target)
        ours = TitleClassifier.from_fitted(logistic).probabilities(held_inputs)
        assert ours.tobytes() == logistic.predict_proba(held_inputs).tobytes()


class CreatesMarker:
    """Unpickling this runs ``open(marker, "w")``: the payload a crafted pickle model file would carry."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def test_a_crafted_pickle_is_refused_and_never_run_by_the_cli_or_the_api(tmp_path):
    crafted = write(tmp_path, "model.bin", pickle.dumps(CreatesMarker(tmp_path / "ran")))
    pickle.loads(pickle.dumps(CreatesMarker(tmp_path / "control")))  # the payload works when unpickled
    assert (tmp_path / "control").exists()
    document = write(tmp_path, "doc.md", b"First paragraph about lava.\n\nSecond paragraph about violins.\n")
    environment = {**os.environ, **absolute_pythonpath()}
    command = [sys.executable, "-m", "structbench", "chunk", str(document), "--induce", "learned", "--model"]
    cli = subprocess.run([*command, str(crafted)], capture_output=True, text=True, env=environment, timeout=120)
    assert cli.returncode == 2 and cli.stdout == ""
    assert cli.stderr.strip().count("\n") == 0  # one line, no traceback
    assert (
        f"learned-inducer model file {str(crafted)!r}: not a learned-inducer model file: it is a pickle" in cli.stderr
    )
    api = (
        "import sys\nfrom structbench.api import chunk_markdown\n"
        "from structbench.structure.learned_model import ModelFileError\n"
        "try:\n    chunk_markdown('Some text.', induce='learned', model=sys.argv[1], encode=lambda t: None)\n"
        "except ModelFileError as error:\n    print(error.problem)\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", api, str(crafted)], capture_output=True, text=True, env=environment, timeout=120
    )
    assert run.returncode == 0 and run.stdout.startswith("not a learned-inducer model file: it is a pickle")
    assert not (tmp_path / "ran").exists()


def test_flipped_bytes_anywhere_are_refused(model_bytes, tmp_path):
    positions = np.linspace(0, len(model_bytes) - 8, 30).astype(int)
    problems = set()
    for position in positions:
        flipped = bytearray(model_bytes)
        flipped[position : position + 8] = bytes(b ^ 0xFF for b in flipped[position : position + 8])
        with pytest.raises(ModelFileError) as refused:
            load_learned_inducer(write(tmp_path, "flipped.bin", bytes(flipped)))
        problems.add(refused.value.problem.split(":")[0])
    assert "corrupted" in problems and len(positions) == 30


@pytest.mark.parametrize("fraction", [0.0, 0.01, 0.03, 0.1, 1 / 3, 0.5, 2 / 3, 0.99])
def test_a_truncated_file_is_refused(model_bytes, tmp_path, fraction):
    cut = write(tmp_path, "cut.bin", model_bytes[: int(len(model_bytes) * fraction)])
    with pytest.raises(ModelFileError, match=r"empty|truncated|corrupted"):
        load_learned_inducer(cut)


def test_foreign_files_and_other_versions_are_named(trained, model_bytes, tmp_path):
    payload = model_bytes.split(b"\n", 2)[2]
    cases = {
        "summary.bin": (json.dumps({"fingerprint": "x"}).encode(), "it is JSON"),
        "random.bin": (np.random.default_rng(0).bytes(4096), "does not begin with the line"),
        "old.bin": (pickle.dumps({"format": "structbench-learned-inducer/1"}, protocol=4), "models of format 1"),
        "newer.bin": (with_header(payload, format="structbench-learned-inducer/3"), "train the model again"),
        "appended.bin": (model_bytes + b"\0", "1 bytes after its payload"),
        "bare.npz": (payload, "zip or .npz archive without the model file's header"),
        "missing.bin": (None, "cannot be read"),
    }
    for name, (data, says) in cases.items():
        path = write(tmp_path, name, data) if data is not None else tmp_path / name
        with pytest.raises(ModelFileError, match=says) as refused:
            load_learned_inducer(path)
        assert str(path) in str(refused.value) and "\n" not in str(refused.value)


def object_member_archive(members: dict, name: str, value) -> bytes:
    """An ``.npz`` of ``members`` plus member ``name``: an object array pickled in the ``.npy`` format."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for key, array in {**members, name: value}.items():
            member = io.BytesIO()
            np.lib.format.write_array(member, np.asarray(array), allow_pickle=True)
            archive.writestr(f"{key}.npy", member.getvalue())
    return buffer.getvalue()


def test_a_crafted_archive_with_a_matching_checksum_is_checked_member_by_member(trained, tmp_path):
    """A looping tree, a split feature out of range, an extra member or a pickled object member, each under
    a header whose digest matches: refused before anything is predicted or unpickled."""
    members = dict(np.load(io.BytesIO(trained.payload()), allow_pickle=False))
    loop = dict(members, **{"boundary.left": np.zeros_like(trained.boundary.left)})
    feature = dict(members, **{"boundary.feature": trained.boundary.feature + 100})
    objects = np.array([CreatesMarker(tmp_path / "ran")], dtype=object)
    cases = {
        "loop.bin": (npz_bytes(loop), "left child is not after it"),
        "feature.bin": (npz_bytes(feature), "feature outside"),
        "extra.bin": (npz_bytes(dict(members, extra=np.array([1, 2]))), "unexpected members"),
        "objects.bin": (object_member_archive(members, "extra", objects), "not an archive of arrays"),
    }
    for name, (payload, says) in cases.items():
        with pytest.raises(ModelFileError, match=says):
            load_learned_inducer(write(tmp_path, name, with_header(payload)))
    assert not (tmp_path / "ran").exists()
    loaded = load_learned_inducer(write(tmp_path, "same.bin", with_header(npz_bytes(members))))
    assert loaded.fingerprint == trained.fingerprint  # the members as written pass the same checks


def test_a_title_classifier_given_vectors_of_another_size_is_named():
    classifier = TitleClassifier(np.zeros((3, 4)), np.zeros(3), np.arange(3))
    assert classifier.probabilities(np.ones((2, 4))).tolist() == [[1 / 3] * 3] * 2
    with pytest.raises(ValueError, match=r"reads 4 features per section and was given 5: .* \(another embedder\)"):
        classifier.probabilities(np.ones((2, 5)))
