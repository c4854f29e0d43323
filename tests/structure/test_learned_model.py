"""The learned inducer's model file (structure.learned_model, structure.model_file): arrays and JSON that predict what
the fitted estimators predict, checked before use, and never code."""

import hashlib
import io
import json
import os
import pickle
import struct
import subprocess
import sys
import zipfile
import zlib

import numpy as np
import pytest
from conftest import SHARED_DATA, absolute_pythonpath
from segmentation_testing import HashedBagOfWords, topic_documents

from structbench.corpus.qasper import load_qasper
from structbench.structure.induction import TITLE_CHARS
from structbench.structure.learned import induce_learned
from structbench.structure.learned_features import gap_features, title_feature_width, title_features
from structbench.structure.learned_model import (
    ConstantProbability,
    LearnedInducer,
    TitleClassifier,
    TreeEnsemble,
    load_learned_inducer,
    printable_title,
    title_problem,
)
from structbench.structure.learned_training import fit_boosted_trees, gold_starts, train_learned_inducer
from structbench.structure.model_file import (
    FORMAT,
    MAGIC,
    MAX_ARRAY_BYTES,
    MAX_MEMBERS,
    ModelFileError,
    canonical_json,
    npz_bytes,
)
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
        "from structbench.structure.model_file import ModelFileError\n"
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
        "objects.bin": (object_member_archive(members, "boundary.value", objects), "holds Python objects"),
        "unknown.bin": (object_member_archive(members, "extra", objects), "unexpected members"),
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


# ---- hostile payloads under a valid header and digest ---------------------------------------------------


def small_model(width: int = 8, names: tuple[str, ...] = ("Introduction",)) -> LearnedInducer:
    """A model without trees: constant probabilities and a title classifier for vectors ``width`` wide."""
    titles = TitleClassifier(np.zeros((1, title_feature_width(width))), np.zeros(1), np.array([0, 1]))
    return LearnedInducer(ConstantProbability(0.3), ConstantProbability(0.6), titles, names, 0.5, 0.5, {"documents": 1})


def npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, array, allow_pickle=False)
    return buffer.getvalue()


def npy_header(dtype: str, shape: tuple) -> bytes:
    """A version 1.0 ``.npy`` header stating ``dtype`` and ``shape``, without the data it promises."""
    text = repr({"descr": dtype, "fortran_order": False, "shape": shape}).encode()
    text += b" " * (63 - (len(text) + 10) % 64) + b"\n"
    return np.lib.format.MAGIC_PREFIX + b"\x01\x00" + struct.pack("<H", len(text)) + text


def raw_zip(members: list[tuple[str, bytes, dict]]) -> bytes:
    """A zip archive of ``(name, bytes as stored, fields)``, written by hand so that a member's central
    directory entry can state anything: ``fields`` override the honest method (0: stored), flag bits,
    crc32 and sizes of the bytes."""
    local, central = b"", b""
    for name, data, fields in members:
        f = {"method": 0, "flags": 0, "crc": zlib.crc32(data), "compressed": len(data), "size": len(data), **fields}
        sizes = (f["crc"], f["compressed"], f["size"])
        entry = struct.pack(
            "<4s6H3L5H2L",
            b"PK\x01\x02",
            20,
            20,
            f["flags"],
            f["method"],
            0,
            33,
            *sizes,
            len(name),
            0,
            0,
            0,
            0,
            0,
            len(local),
        )
        central += entry + name.encode()
        local += struct.pack("<4s5H3L2H", b"PK\x03\x04", 20, f["flags"], f["method"], 0, 33, *sizes, len(name), 0)
        local += name.encode() + data
    n = len(members)
    return local + central + struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, n, n, len(central), len(local), 0)


def model_members(model: LearnedInducer) -> list[tuple[str, bytes, dict]]:
    """The members of ``model``'s payload as honest :func:`raw_zip` entries."""
    archive = np.load(io.BytesIO(model.payload()), allow_pickle=False)
    return [(f"{name}.npy", npy(archive[name]), {}) for name in archive.files]


def replaced(members, name: str, data: bytes, **fields) -> list[tuple[str, bytes, dict]]:
    return [(n, data, fields) if n == name else (n, d, f) for n, d, f in members]


def deflated(data: bytes) -> bytes:
    """``data`` as a zip member's raw deflate stream."""
    packer = zlib.compressobj(9, zlib.DEFLATED, -15)
    return packer.compress(data) + packer.flush()


def deflate_bomb(inflated_mib: int, head: bytes = b"") -> bytes:
    """A raw deflate stream of ``head`` and then ``inflated_mib`` MiB of zeros, about 1 KiB per MiB: one
    fully flushed block of zeros (byte-aligned, history reset) repeated, then the final block."""
    packer = zlib.compressobj(9, zlib.DEFLATED, -15)
    start = packer.compress(head) + packer.flush(zlib.Z_FULL_FLUSH)
    block = packer.compress(bytes(2**20)) + packer.flush(zlib.Z_FULL_FLUSH)
    return start + block * inflated_mib + packer.flush()


def refusal(tmp_path, payload: bytes, name: str = "hostile.bin") -> str:
    """The one-line problem :func:`load_learned_inducer` names for ``payload`` under a valid header."""
    path = write(tmp_path, name, with_header(payload))
    with pytest.raises(ModelFileError) as refused:
        load_learned_inducer(path)
    message = str(refused.value)
    assert message.startswith(f"learned-inducer model file {str(path)!r}: ") and "\n" not in message
    return refused.value.problem


def test_the_hand_written_archive_of_a_model_loads_as_the_model(tmp_path):
    """The control of every hostile payload below: the same members, honestly stated, are the model."""
    model = small_model()
    loaded = load_learned_inducer(write(tmp_path, "honest.bin", with_header(raw_zip(model_members(model)))))
    assert loaded.title_names == ("Introduction",) and loaded.vector_width == 8
    assert loaded.boundary.probability(np.zeros((2, 3))).tolist() == [0.3, 0.3]
    packed = [(n, deflated(d), {"method": 8, "size": len(d), "crc": zlib.crc32(d)}) for n, d, _ in model_members(model)]
    assert load_learned_inducer(write(tmp_path, "deflated.bin", with_header(raw_zip(packed)))).vector_width == 8


def test_payloads_that_are_not_archives_of_npy_members_are_named(tmp_path):
    members = model_members(small_model())
    settings = {n: d for n, d, _ in members}["settings.npy"]
    bzip2, lzma = io.BytesIO(), io.BytesIO()
    for buffer, method in ((bzip2, zipfile.ZIP_BZIP2), (lzma, zipfile.ZIP_LZMA)):
        with zipfile.ZipFile(buffer, "w", method) as archive:
            for name, data, _ in members:
                archive.writestr(name, data)
    cases = {
        "bare npy": (npy(np.arange(4)), "it is a bare .npy array, not a zip archive of .npy members"),
        "no magic": (
            raw_zip(replaced(members, "settings.npy", b"JUNK" + settings[4:])),
            "'settings.npy' is not a .npy array",
        ),
        "encrypted": (raw_zip(replaced(members, "settings.npy", settings, flags=1)), "'settings.npy' is encrypted"),
        "bzip2": (bzip2.getvalue(), "is compressed with bzip2; members are stored or deflated"),
        "lzma": (lzma.getvalue(), "is compressed with lzma; members are stored or deflated"),
        "other flags": (raw_zip(replaced(members, "settings.npy", settings, flags=0x20)), "zip flags 0x0020"),
        "bad crc": (raw_zip(replaced(members, "settings.npy", settings, crc=1)), "Bad CRC-32"),
        "version 3": (raw_zip(replaced(members, "settings.npy", settings[:6] + b"\x03" + settings[7:])), "version 3.0"),
        "too many": (raw_zip(members + [(f"m{i}.npy", b"", {}) for i in range(MAX_MEMBERS)]), "a model has at most"),
        "comment": (raw_zip(members)[:-2] + b"\x01\x00!", "one with a comment"),
    }
    for case, (payload, says) in cases.items():
        problem = refusal(tmp_path, payload)
        assert says in problem, (case, problem)


def test_a_member_s_declared_shape_must_fit_its_declared_length_before_anything_is_allocated(tmp_path):
    """A header claiming 2**40 float64 (8 TiB) over 8 bytes, or one whose archive entry claims 4 GiB: refused
    from the headers, nothing allocated; so is another dtype, order or number of dimensions."""
    members = model_members(small_model())
    huge = npy_header("<f8", (2**40,)) + bytes(8)
    claims = npy_header("<f8", (2**29,))
    cases = {
        "2**40 shape": (
            raw_zip(replaced(members, "titles.intercept.npy", huge)),
            "declares shape (1099511627776,) of <f8, 8796093022208 bytes, and the archive states 8 bytes",
        ),
        "4 GiB stated": (
            raw_zip(replaced(members, "titles.coef.npy", deflated(claims), method=8, size=2**32 - 2)),
            f"a model's arrays hold at most {MAX_ARRAY_BYTES}",
        ),
        "dtype": (
            raw_zip(replaced(members, "titles.coef.npy", npy(np.zeros((1, 21), ">f8")))),
            "'titles.coef.npy' is >f8, shape (1, 21), C order; expected <f8, 2-dimensional",
        ),
        "fortran": (
            raw_zip(replaced(members, "titles.coef.npy", npy(np.asfortranarray(np.zeros((2, 21)))))),
            "Fortran order",
        ),
        "ndim": (raw_zip(replaced(members, "boundary.constant.npy", npy(np.zeros(3)))), "shape (3,)"),
    }
    for case, (payload, says) in cases.items():
        problem = refusal(tmp_path, payload)
        assert says in problem, (case, problem)


def test_a_deflate_bomb_is_refused_by_its_stated_size_and_a_lying_one_is_read_no_further_than_its_claim(tmp_path):
    """A bomb whose entry states what it inflates to is refused from the central directory; one whose entry
    states a few bytes is read that far, and its CRC (of the whole) then fails: named either way."""
    members = model_members(small_model())
    header = npy_header("<f8", (2**25,))  # 256 MiB of float64, as the bomb inflates to after its header
    bomb = deflate_bomb(256, header)  # in about a quarter megabyte
    assert len(bomb) < 2**19 and len(zlib.decompress(bomb, -15)) == len(header) + 2**28
    stated = raw_zip(replaced(members, "titles.coef.npy", bomb, method=8, size=len(header) + 2**28, crc=0))
    others = sum(len(data) for name, data, _ in members if name != "titles.coef.npy")
    says = f"its members state {others + len(header) + 2**28} bytes uncompressed; a model's arrays hold at most"
    assert says in refusal(tmp_path, stated)
    small = npy_header("<f8", (1,))
    lying = raw_zip(replaced(members, "titles.intercept.npy", deflate_bomb(256, small), method=8, size=len(small) + 8))
    assert "'titles.intercept.npy' cannot be read (BadZipFile: Bad CRC-32" in refusal(tmp_path, lying)


# The peak resident memory of this process since it started: VmHWM, which exec resets (getrusage's maxrss
# keeps the high-water mark of the forking parent, here pytest).
PEAK_RSS = """
import re, sys
from pathlib import Path
from structbench.structure.learned_model import load_learned_inducer
from structbench.structure.model_file import ModelFileError
for path in sys.argv[1:]:
    try:
        load_learned_inducer(path)
    except ModelFileError as error:
        print(error.problem[:60])
print(int(re.search(r"VmHWM:\\s+(\\d+) kB", Path("/proc/self/status").read_text()).group(1)) // 1024)
"""


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads the peak resident memory from /proc")
def test_the_worst_hostile_files_are_refused_within_a_small_peak_memory(tmp_path):
    """A 1.6 MB deflate bomb of 1.6 GB and a member claiming 2**40 float64, loaded in a fresh process:
    both refused, the process's peak resident memory under 200 MB (the old reader inflated the bomb)."""
    members = model_members(small_model())
    header = npy_header("<f8", (200 * 2**20,))
    bomb = deflate_bomb(1600, header)
    stated = raw_zip(replaced(members, "titles.coef.npy", bomb, method=8, size=len(header) + 1600 * 2**20, crc=0))
    huge = raw_zip(replaced(members, "titles.intercept.npy", npy_header("<f8", (2**40,)) + bytes(8)))
    paths = [write(tmp_path, "bomb.bin", with_header(stated)), write(tmp_path, "huge.bin", with_header(huge))]
    environment = {**os.environ, **absolute_pythonpath()}
    run = subprocess.run(
        [sys.executable, "-c", PEAK_RSS, *map(str, paths)], capture_output=True, text=True, env=environment, timeout=120
    )
    *problems, peak_mb = run.stdout.split("\n")[:-1]
    assert run.returncode == 0 and len(problems) == 2, run.stderr
    assert int(peak_mb) < 200 and 1.5e6 < len(bomb) < 1.7e6


def test_the_header_format_is_the_string_exactly(tmp_path):
    payload = small_model().payload()
    for fake in (2, 2.0, None, ["structbench-learned-inducer/2"]):
        path = write(tmp_path, "format.bin", with_header(payload, format=fake))
        with pytest.raises(ModelFileError, match=r"corrupted: its header's format is .*, not the string"):
            load_learned_inducer(path)
    assert load_learned_inducer(write(tmp_path, "ok.bin", with_header(payload))).vector_width == 8


def test_learned_titles_are_bounded_single_lines_named_by_index(tmp_path):
    injected = "x" * 50_000 + "\n# Injected heading\n" + "y" * 49_980
    cases = {
        (injected,): f"title_names[0] 'xxxx{'x' * 36}...' holds 100000 characters, above the {TITLE_CHARS}",
        (
            "Introduction",
            "Related\n# Work",
        ): r"title_names[1] 'Related\n# Work' holds the control character '\n' (U+000A)",
        ("Intro", "Tab\tbed"): "title_names[1] 'Tab\\tbed' holds the control character '\\t'",
        ("Intro", "Line\u2028break"): "(U+2028): a title is one line",
        ("  ",): "title_names[0] '  ' is empty",
    }
    for names, says in cases.items():
        model = small_model(names=names)
        problem = refusal(tmp_path, model.payload())
        assert problem == f"not a usable model: {says}" or says in problem, problem
    fits = small_model(names=("Ü" * TITLE_CHARS, "Related Work"))
    assert (
        load_learned_inducer(write(tmp_path, "fits.bin", with_header(fits.payload()))).title_names == fits.title_names
    )


def test_training_writes_titles_that_loading_accepts():
    assert printable_title("3.1\nRelated\tWork\x00 ") == "3.1 Related Work"
    long = printable_title("Word " * 40)
    assert len(long) <= TITLE_CHARS and long.endswith("…") and title_problem(long) is None
    assert printable_title("\x00\x07") == "" and title_problem("") == "is empty"


def test_the_title_width_names_the_embedder_the_model_was_trained_with():
    model = small_model(width=8)
    vectors = np.eye(8)[:3]
    assert title_features(vectors, [(0, 3, 1)], 3).shape == (1, title_feature_width(8)) == (1, 21)
    model.check_vector_width(8, "the encoder")
    with pytest.raises(
        ValueError,
        match=r"reads vectors of 8 dimensions \(21 features per section\), and the encoder gives vectors of 384",
    ):
        model.check_vector_width(384, "the encoder")
    with pytest.raises(ValueError, match=r"reads vectors of 8 dimensions"):
        induce_learned(*topic_documents(range(1))[:2], HashedBagOfWords(), model)


def test_a_non_regular_file_is_refused_without_being_read(tmp_path):
    """An endless device and a FIFO without a writer: refused at once (read, the one fills memory; opened,
    the other waits forever)."""
    os.mkfifo(tmp_path / "fifo.bin")
    for path in ("/dev/zero", str(tmp_path / "fifo.bin")):
        with pytest.raises(ModelFileError, match=rf"'{path}': not a regular file"):
            load_learned_inducer(path)


@pytest.mark.parametrize("case", ["bare npy", "bzip2"])
def test_the_cli_names_a_hostile_payload_in_one_line(tmp_path, case):
    members = model_members(small_model())
    if case == "bzip2":
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_BZIP2) as archive:
            for name, data, _ in members:
                archive.writestr(name, data)
        payload, says = buffer.getvalue(), "is compressed with bzip2"
    else:
        payload, says = npy(np.arange(4)), "it is a bare .npy array"
    model = write(tmp_path, "model.bin", with_header(payload))
    document = write(tmp_path, "doc.md", b"First paragraph about lava.\n\nSecond paragraph about violins.\n")
    environment = {**os.environ, **absolute_pythonpath()}
    command = [
        sys.executable,
        "-m",
        "structbench",
        "chunk",
        str(document),
        "--induce",
        "learned",
        "--model",
        str(model),
    ]
    cli = subprocess.run(command, capture_output=True, text=True, env=environment, timeout=120)
    assert cli.returncode == 2 and cli.stdout == "" and cli.stderr.strip().count("\n") == 0
    assert (
        f"learned-inducer model file {str(model)!r}: its payload is not an archive" in cli.stderr and says in cli.stderr
    )
