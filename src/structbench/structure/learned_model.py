"""The learned inducer's trained model and its file: data, never code (docs/method.md §5, "Learned inducer").

A trained model is arrays and a few settings: each boosted classifier's trees as node arrays (the feature
and threshold of a split, its children, a leaf's value), the recurring-title classifier's coefficients, the
chosen thresholds, the title names and the training summary. Predictions come from those arrays
(:meth:`TreeEnsemble.probability`, :meth:`TitleClassifier.probabilities`), computed as scikit-learn computes
them and in the same order of operations, so a model read back predicts the very bytes its fitted
estimators did; reading or using a model imports no scikit-learn.

**The file** (format :data:`FORMAT`) is three parts: the line :data:`MAGIC`, a header line of canonical
JSON (``{"format": ..., "payload_bytes": ..., "payload_sha256": ...}``) and the payload, an ``.npz``
archive of the arrays with the settings as one JSON member, written with fixed member dates so that the same
model is the same bytes. :func:`load_learned_inducer` checks, before it reads any of the payload, that the
file is a regular file of at most :data:`MAX_FILE_BYTES`, begins with the magic line, that the header is this
format's canonical JSON with ``format`` this very string, and that the payload has the stated length and
sha256 (the model's :attr:`~LearnedInducer.fingerprint`). A sha256 proves integrity, not origin (whoever
writes a file writes its digest), so the payload is then read as hostile by one reader,
:func:`archive_members`: a zip archive whose members, stated in its central directory, are this format's
(:data:`MEMBERS`), stored or deflated and unencrypted; each member's ``.npy`` header parsed here, its dtype
and number of dimensions the layout's (never an object dtype: nothing is unpickled), its shape's bytes the
member's declared length, all within :data:`MAX_ARRAY_BYTES`, before anything of that size is allocated or
inflated, and no member read past its declared length. Then every tree's shape is checked (children after
their parent and inside their tree, split features in range), so that prediction cannot loop or index out
of bounds, and every title name (:func:`title_problem`: one line, within the induced titles' bound). Every
failure is a :class:`ModelFileError` naming the file and what is wrong. Whether the title classifier reads
vectors as wide as the embedder gives (:attr:`LearnedInducer.vector_width`) is checked where the embedder is
known: the config checks (``structbench.crosskeys.check_title_width``) and the induction's first vectors.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import os
import stat
import struct
import unicodedata
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from structbench.graphemes import bounded_title
from structbench.structure.learned_features import FEATURES, TITLE_POSITION, title_feature_width
from structbench.structure.sections import TITLE_CHARS

FORMAT = "structbench-learned-inducer/2"
MAGIC = b"structbench learned-inducer model\n"
HEADER_KEYS = ("format", "payload_bytes", "payload_sha256")
MAX_HEADER_BYTES = 512  # the header line is about 150 bytes; a longer one is not a header
# A payload holds two ensembles of at most 200 trees of 61 nodes, 42 bytes a node (0.5 MB each), and a title
# classifier of at most 51 rows of two vectors and 5 (8 bytes each: 3.3 MB at 4096 dimensions): ten times
# that is not a model this code wrote.
MAX_PAYLOAD_BYTES = 32 * 2**20
MAX_FILE_BYTES = len(MAGIC) + MAX_HEADER_BYTES + MAX_PAYLOAD_BYTES
MAX_ARRAY_BYTES = MAX_PAYLOAD_BYTES  # all members inflated: stored, a model's arrays are its payload
MAX_SETTINGS_BYTES = 2**20  # the settings' JSON is a few kilobytes; parsing a larger one costs memory
MAX_NPY_HEADER_BYTES = 1024  # a member's .npy magic, version, length and header: numpy writes 128 bytes
TIMING_KEYS = ("seconds", "fit_seconds", "embedding_seconds")  # left out of the file: they vary run to run
SETTINGS = "settings"  # the archive member holding the settings' JSON (UTF-8 bytes as uint8)
TREE_ARRAYS = {  # a tree ensemble's node arrays: dtype of each (one entry per node of every tree)
    "value": "<f8",
    "feature": "<i8",
    "threshold": "<f8",
    "missing_left": "|u1",
    "left": "<i8",
    "right": "<i8",
    "is_leaf": "|u1",
}
ESTIMATOR_ARRAYS = {  # a boundary or level estimator's members: (dtype, number of dimensions) of each
    "constant": ("<f8", 0),
    "baseline": ("<f8", 0),
    "tree_starts": ("<i8", 1),
    **{key: (dtype, 1) for key, dtype in TREE_ARRAYS.items()},
}
MEMBERS = {  # every member a payload may hold (``<name>.npy``): its dtype and number of dimensions
    SETTINGS: ("|u1", 1),
    **{f"{name}.{key}": layout for name in ("boundary", "level") for key, layout in ESTIMATOR_ARRAYS.items()},
    "titles.coef": ("<f8", 2),
    "titles.intercept": ("<f8", 1),
    "titles.classes": ("<i8", 1),
}
MAX_MEMBERS = len(MEMBERS)


class ModelFileError(ValueError):
    """A learned-inducer model file that cannot be used: not one, truncated, corrupted, crafted (a payload
    this format never writes) or of another format version. The message names the file and what is wrong."""

    def __init__(self, path: str | Path, problem: str):
        super().__init__(f"learned-inducer model file {str(path)!r}: {problem}")
        self.path = str(path)
        self.problem = problem


# ------------------------------------------------------------------------------------------ estimators


@dataclass(frozen=True)
class ConstantProbability:
    """The probability of a label that had one class in training: ``p`` for every row."""

    p: float

    def probability(self, x: np.ndarray) -> np.ndarray:
        return np.full(len(x), self.p)


@dataclass(frozen=True, eq=False)
class TreeEnsemble:
    """A boosted binary classifier as node arrays: tree ``t`` holds nodes ``tree_starts[t]`` up to
    ``tree_starts[t + 1]``, its root first; a split sends a row left when its ``feature`` is at most
    ``threshold`` (a missing value: ``missing_left``); ``left`` and ``right`` are node indices in the same
    arrays; a leaf's ``value`` is its contribution to the raw score, which starts at ``baseline``."""

    baseline: float
    tree_starts: np.ndarray
    value: np.ndarray
    feature: np.ndarray
    threshold: np.ndarray
    missing_left: np.ndarray
    left: np.ndarray
    right: np.ndarray
    is_leaf: np.ndarray

    @classmethod
    def from_fitted(cls, estimator) -> TreeEnsemble:
        """The arrays of a fitted binary ``HistGradientBoostingClassifier`` on numeric features (read from its
        predictors' node records and baseline, private attributes: the byte-identity test on QASPER papers
        fails if a scikit-learn release changes them)."""
        if estimator.n_trees_per_iteration_ != 1 or [int(c) for c in estimator.classes_] != [0, 1]:
            raise ValueError(f"a tree ensemble is a binary 0/1 classifier, got classes {list(estimator.classes_)}")
        trees = [predictor.nodes for iteration in estimator._predictors for predictor in iteration]
        if any(tree["is_categorical"].any() for tree in trees):
            raise ValueError("a tree ensemble splits numeric features only")
        starts = np.cumsum([0] + [len(tree) for tree in trees]).astype(np.int64)
        nodes = np.concatenate(trees)
        offset = np.repeat(starts[:-1], [len(tree) for tree in trees])
        return cls(
            baseline=float(estimator._baseline_prediction.reshape(-1)[0]),
            tree_starts=starts,
            value=nodes["value"].astype(np.float64),
            feature=nodes["feature_idx"].astype(np.int64),
            threshold=nodes["num_threshold"].astype(np.float64),
            missing_left=nodes["missing_go_to_left"].astype(np.uint8),
            left=np.where(nodes["is_leaf"], 0, nodes["left"].astype(np.int64) + offset),
            right=np.where(nodes["is_leaf"], 0, nodes["right"].astype(np.int64) + offset),
            is_leaf=nodes["is_leaf"].astype(np.uint8),
        )

    def probability(self, x: np.ndarray) -> np.ndarray:
        """The probability of class 1 for each row of ``x``: the sigmoid of ``baseline`` plus each tree's
        leaf value, added tree by tree as scikit-learn adds them (byte-identical to its ``predict_proba``)."""
        from scipy.special import expit

        raw = np.zeros(len(x))
        raw += self.baseline
        is_leaf = self.is_leaf.astype(bool)
        missing_left = self.missing_left.astype(bool)
        for start in self.tree_starts[:-1]:
            node = np.full(len(x), start, np.int64)
            open_rows = np.flatnonzero(~is_leaf[node])
            while len(open_rows):  # children come after their parent: at most one step per node
                current = node[open_rows]
                values = x[open_rows, self.feature[current]]
                go_left = np.where(np.isnan(values), missing_left[current], values <= self.threshold[current])
                node[open_rows] = np.where(go_left, self.left[current], self.right[current])
                open_rows = open_rows[~is_leaf[node[open_rows]]]
            raw += self.value[node]
        return expit(raw)

    def arrays(self) -> dict[str, np.ndarray]:
        return {
            "baseline": np.array(self.baseline, np.float64),
            "tree_starts": self.tree_starts,
            **{name: getattr(self, name) for name in TREE_ARRAYS},
        }


@dataclass(frozen=True, eq=False)
class TitleClassifier:
    """A multinomial logistic regression as arrays: ``coef`` (one row for two classes, one per class
    above two), ``intercept`` and the ``classes`` (0: any other title, ``k``: the model's ``k``-th name)."""

    coef: np.ndarray
    intercept: np.ndarray
    classes: np.ndarray

    @classmethod
    def from_fitted(cls, estimator) -> TitleClassifier:
        return cls(
            coef=np.array(estimator.coef_, np.float64),
            intercept=np.array(estimator.intercept_, np.float64),
            classes=np.array(estimator.classes_, np.int64),
        )

    def probabilities(self, x: np.ndarray) -> np.ndarray:
        """Each row's probability of each class, as scikit-learn's ``predict_proba`` computes it (a sigmoid
        for two classes, a softmax above two; byte-identical)."""
        from scipy.special import expit

        if x.shape[1] != self.coef.shape[1]:
            raise ValueError(
                f"the learned title classifier reads {self.coef.shape[1]} features per section and was given "
                f"{x.shape[1]}: the model was trained with vectors of another size (another embedder)"
            )
        scores = x @ self.coef.T + self.intercept
        if len(self.classes) <= 2:
            p = expit(scores.reshape(-1))
            return np.stack([1 - p, p], axis=1)
        scores -= scores.max(axis=1).reshape((-1, 1))
        np.exp(scores, out=scores)
        scores /= scores.sum(axis=1).reshape((-1, 1))
        return scores

    def arrays(self) -> dict[str, np.ndarray]:
        return {"coef": self.coef, "intercept": self.intercept, "classes": self.classes}


Probability = TreeEnsemble | ConstantProbability


def one_thread():
    """scikit-learn's OpenMP and BLAS pools held to one thread, for fitting and for the title classifier's
    product: on shared cores OpenMP's busy waiting made boosting fits many times slower than one thread
    (docs/benchmarks.md)."""
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1)


# ---------------------------------------------------------------------------------------------- model


@dataclass(frozen=True, eq=False)
class LearnedInducer:
    """A trained learned inducer: the ``boundary`` and ``level`` probabilities, the recurring-title
    classifier (None without recurring titles) and the names of its classes, the chosen thresholds, and the
    JSON-able ``training`` summary. :attr:`fingerprint` is the sha256 of the model file's payload."""

    boundary: Probability
    level: Probability
    titles: TitleClassifier | None
    title_names: tuple[str, ...]
    threshold: float
    level_threshold: float
    training: dict
    features: tuple[str, ...] = FEATURES
    _payload: list[bytes] = field(default_factory=list, repr=False)  # the payload, once built

    @property
    def fingerprint(self) -> str:
        return hashlib.sha256(self.payload()).hexdigest()

    @property
    def vector_width(self) -> int | None:
        """The width of the embedder's vectors the title classifier reads (two per section, then
        :data:`~.learned_features.TITLE_POSITION`): the embedder the model was trained with must give
        vectors this wide. None without a title classifier."""
        return None if self.titles is None else (self.titles.coef.shape[1] - len(TITLE_POSITION)) // 2

    def check_vector_width(self, width: int, embedder: str) -> None:
        """A ``ValueError`` unless ``embedder``'s vectors, ``width`` wide, are the ones the title classifier
        reads (:attr:`vector_width`): a model trained with another embedder would fail at its first title."""
        if self.vector_width is not None and width != self.vector_width:
            raise ValueError(
                f"the learned inducer's title classifier reads vectors of {self.vector_width} dimensions "
                f"({title_feature_width(self.vector_width)} features per section), and {embedder} gives vectors "
                f"of {width}: the model was trained with another embedder; use that one, or train it again"
            )

    def payload(self) -> bytes:
        """The model file's payload: the ``.npz`` archive of the arrays and settings (module docstring)."""
        if not self._payload:
            settings = {
                "features": list(self.features),
                "title_names": list(self.title_names),
                "threshold": self.threshold,
                "level_threshold": self.level_threshold,
                "training": {k: v for k, v in self.training.items() if k not in TIMING_KEYS},
            }
            members = {SETTINGS: np.frombuffer(canonical_json(settings), np.uint8)}
            for name, estimator in (("boundary", self.boundary), ("level", self.level), ("titles", self.titles)):
                if isinstance(estimator, ConstantProbability):
                    members[f"{name}.constant"] = np.array(estimator.p, np.float64)
                elif estimator is not None:
                    members.update({f"{name}.{key}": array for key, array in estimator.arrays().items()})
            self._payload.append(npz_bytes(members))
        return self._payload[0]

    def save(self, path: str | Path) -> None:
        """Write the model file: magic line, header line, payload."""
        payload = self.payload()
        header = {"format": FORMAT, "payload_bytes": len(payload), "payload_sha256": self.fingerprint}
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_bytes(MAGIC + canonical_json(header) + b"\n" + payload)


def canonical_json(value) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False).encode()


def npz_bytes(members: dict[str, np.ndarray]) -> bytes:
    """An uncompressed ``.npz`` archive of ``members`` (``np.load`` reads it) whose bytes depend on the
    arrays alone: members in sorted order, each dated 1980-01-01 (``np.savez`` dates them now)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
        for name in sorted(members):
            info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            array_bytes = io.BytesIO()
            np.lib.format.write_array(array_bytes, np.array(members[name], order="C"), allow_pickle=False)
            archive.writestr(info, array_bytes.getvalue())
    return buffer.getvalue()


# -------------------------------------------------------------------------------------------- reading


def load_learned_inducer(path: str | Path) -> LearnedInducer:
    """The model in a file written by :meth:`LearnedInducer.save`, checked before use (module docstring);
    a :class:`ModelFileError` naming the file for one that is not such a model or not intact."""
    payload = verified_payload(read_model_file(path), path)
    members = archive_members(payload, path)
    return model_from_members(members, path, payload)


def read_model_file(path: str | Path) -> bytes:
    """The bytes of a model file, read only when it is a regular file of at most :data:`MAX_FILE_BYTES`
    (a device such as ``/dev/zero`` or a file of gigabytes is refused without reading it whole)."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):  # asked before opening: opening a FIFO waits for a writer
            raise ModelFileError(path, "not a regular file")
        with open(path, "rb") as file:
            data = file.read(MAX_FILE_BYTES + 1)
    except OSError as error:
        raise ModelFileError(path, f"cannot be read ({error.strerror or error})") from None
    if len(data) > MAX_FILE_BYTES:
        raise ModelFileError(path, f"larger than the {MAX_FILE_BYTES} bytes a model file holds at most")
    return data


def foreign_kind(data: bytes) -> str:
    """What a file that does not begin with :data:`MAGIC` looks like, for the error message."""
    if not data:
        return "it is empty"
    if MAGIC.startswith(data):
        return f"it is truncated ({len(data)} bytes, inside the first line)"
    if data[:1] == b"\x80":
        return "it is a pickle, not a model of this format (models of format 1 were pickles: train it again)"
    if data.lstrip()[:1] in (b"{", b"["):
        return "it is JSON (a training summary?), not a model file"
    if data[:4] == b"PK\x03\x04":
        return "it is a zip or .npz archive without the model file's header"
    return f"it does not begin with the line {MAGIC.decode().strip()!r} (it begins {data[:16]!r})"


def verified_payload(data: bytes, path: str | Path) -> bytes:
    """The payload of a model file whose magic line, header, length and sha256 are all as written. The
    header's ``format`` is this format's string, exactly (a number or another string is another format)."""
    if not data.startswith(MAGIC):
        raise ModelFileError(path, f"not a learned-inducer model file: {foreign_kind(data)}")
    end = data.find(b"\n", len(MAGIC), len(MAGIC) + MAX_HEADER_BYTES)
    if end < 0:
        state = "truncated in its header" if len(data) < len(MAGIC) + MAX_HEADER_BYTES else "corrupted"
        raise ModelFileError(path, f"{state}: its header line does not end")
    raw_header = data[len(MAGIC) : end]
    try:
        header = json.loads(raw_header.decode("ascii"))
    except ValueError:
        raise ModelFileError(path, f"corrupted: its header is not JSON ({raw_header[:80]!r})") from None
    if isinstance(header, dict) and header.get("format") != FORMAT and isinstance(header.get("format"), str):
        raise ModelFileError(
            path, f"format {header['format']!r}, and this structbench reads {FORMAT!r}: train the model again"
        )
    if not isinstance(header, dict) or sorted(header) != list(HEADER_KEYS) or canonical_json(header) != raw_header:
        raise ModelFileError(path, f"corrupted: its header is not this format's ({raw_header[:80]!r})")
    if type(header["format"]) is not str:
        raise ModelFileError(path, f"corrupted: its header's format is {header['format']!r}, not the string {FORMAT!r}")
    payload = data[end + 1 :]
    expected = header["payload_bytes"]
    if type(expected) is not int or len(payload) < expected:
        raise ModelFileError(path, f"truncated: {len(payload)} payload bytes, its header says {expected!r}")
    if len(payload) > expected:
        raise ModelFileError(path, f"corrupted: {len(payload) - expected} bytes after its payload of {expected}")
    digest = hashlib.sha256(payload).hexdigest()
    if digest != header["payload_sha256"]:
        raise ModelFileError(
            path, f"corrupted: its payload's sha256 is {digest[:16]}..., its header says {header['payload_sha256']!r}"
        )
    return payload


# A verified payload is read by the function below and nothing else: its sha256 proves that it is what its
# writer wrote, not who wrote it, so every byte of it is checked as if hostile, and every size it states is
# held to the layout below before anything of that size is allocated or inflated.

END_RECORD = struct.Struct("<4s4H2LH")  # a zip archive's end of central directory record (22 bytes)
ZIP64_LOCATOR = b"PK\x06\x07"  # what precedes END_RECORD in a zip64 archive
CENTRAL_ENTRY_BYTES = 256  # a central directory entry: 46 bytes and the member's name (and no extra fields)
ALLOWED_FLAGS = 0x0002 | 0x0004 | 0x0008 | 0x0800  # deflate's speed options, a data descriptor, UTF-8 names
METHODS = {zipfile.ZIP_STORED: "stored", zipfile.ZIP_DEFLATED: "deflated"}
METHOD_NAMES = {zipfile.ZIP_BZIP2: "bzip2", zipfile.ZIP_LZMA: "lzma", 93: "zstandard", 99: "AES encryption"}
NPY_VERSIONS = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}
READ_ERRORS = (
    zipfile.BadZipFile,
    zlib.error,
    struct.error,
    EOFError,
    OSError,
    ValueError,
    TypeError,
    OverflowError,
    SyntaxError,
    RecursionError,
    NotImplementedError,
    RuntimeError,
)


class BoundedReader:
    """At most ``limit`` bytes of ``stream``, counted in :attr:`position`: what a member's ``.npy`` header is
    parsed from, so a header that claims megabytes is read no further than the bound."""

    def __init__(self, stream, limit: int):
        self.stream = stream
        self.left = limit
        self.position = 0

    def read(self, size: int = -1) -> bytes:
        size = self.left if size < 0 else min(size, self.left)
        data = self.stream.read(size)
        self.left -= len(data)
        self.position += len(data)
        return data


def archive_members(payload: bytes, path: str | Path) -> dict[str, np.ndarray]:
    """The arrays of a verified payload, each checked before anything of its size is read.

    The payload must be a zip archive (no comment, no zip64, at most :data:`MAX_MEMBERS` members, read
    from its end record before the central directory is parsed) whose every member is named in
    :data:`MEMBERS`, stored or deflated, unencrypted (flag bits and method from the central directory,
    before reading any member). Each member's ``.npy`` header is parsed here, from a bounded stream:
    version 1.0 or 2.0, the layout's dtype (never an object dtype: nothing is unpickled) and number of
    dimensions, C order, and a shape whose bytes and the header's fill exactly the member's declared
    uncompressed length, all members together at most :data:`MAX_ARRAY_BYTES` (the settings member at
    most :data:`MAX_SETTINGS_BYTES`). Only then is the member read, exactly its declared length and never
    more (an inflated member that claims less than it holds is read no further than its claim); a member
    whose bytes fail its CRC is refused. Every failure is a :class:`ModelFileError` naming the file,
    the member and the fault."""

    def bad(problem: str) -> ModelFileError:
        return ModelFileError(path, f"its payload is not an archive of this format's arrays: {problem}")

    archive = central_directory(payload, bad)
    arrays = {}
    for info in archive.infolist():
        name = info.filename.removesuffix(".npy")
        try:
            with archive.open(info) as stream:
                arrays[name] = member_array(stream, info, MEMBERS[name], bad)
        except ModelFileError:
            raise
        except READ_ERRORS as error:
            raise bad(f"member {info.filename!r} cannot be read ({type(error).__name__}: {error})") from None
    return arrays


def central_directory(payload: bytes, bad) -> zipfile.ZipFile:
    """The archive ``payload``, opened once its end record and every member its central directory states
    are checked (:func:`archive_members`), before any member is read."""
    if payload[:6] == np.lib.format.MAGIC_PREFIX:
        raise bad("it is a bare .npy array, not a zip archive of .npy members")
    if len(payload) < END_RECORD.size or payload[-END_RECORD.size : -END_RECORD.size + 4] != b"PK\x05\x06":
        raise bad(f"it is not a zip archive, or one with a comment (it begins {payload[:8]!r})")
    _, disk, start_disk, disk_entries, entries, directory_bytes, _, comment = END_RECORD.unpack(
        payload[-END_RECORD.size :]
    )
    if payload[-END_RECORD.size - 20 : -END_RECORD.size - 16] == ZIP64_LOCATOR:
        raise bad("it is a zip64 archive")
    if disk or start_disk or disk_entries != entries or comment:
        raise bad("its end record states several disks or a comment")
    if entries > MAX_MEMBERS or directory_bytes > entries * CENTRAL_ENTRY_BYTES:
        raise bad(f"it states {entries} members in {directory_bytes} bytes; a model has at most {MAX_MEMBERS}")
    try:
        archive = zipfile.ZipFile(io.BytesIO(payload))
    except READ_ERRORS as error:
        raise bad(f"its central directory cannot be read ({type(error).__name__}: {error})") from None
    infos = archive.infolist()
    names = [info.filename for info in infos]
    unexpected = sorted(name for name in names if name.removesuffix(".npy") not in MEMBERS or name[-4:] != ".npy")
    if unexpected:
        raise bad(f"unexpected members {unexpected}")
    if len(infos) > MAX_MEMBERS:  # more entries than its end record states
        raise bad(f"it holds {len(infos)} members; a model has at most {MAX_MEMBERS}")
    if len(set(names)) != len(names):
        raise bad(f"members {sorted(names)} are not distinct")
    for info in infos:
        if info.flag_bits & 0x0001:
            raise bad(f"member {info.filename!r} is encrypted")
        if info.flag_bits & ~ALLOWED_FLAGS:
            raise bad(f"member {info.filename!r} has zip flags {info.flag_bits:#06x}, which this format never sets")
        if info.compress_type not in METHODS:
            method = METHOD_NAMES.get(info.compress_type, f"method {info.compress_type}")
            raise bad(f"member {info.filename!r} is compressed with {method}; members are stored or deflated")
        if info.compress_type == zipfile.ZIP_STORED and info.compress_size != info.file_size:
            raise bad(f"stored member {info.filename!r} states {info.compress_size} bytes and {info.file_size}")
    if sum(info.file_size for info in infos) > MAX_ARRAY_BYTES:
        raise bad(
            f"its members state {sum(info.file_size for info in infos)} bytes uncompressed; a model's arrays "
            f"hold at most {MAX_ARRAY_BYTES}"
        )
    return archive


def member_array(stream, info: zipfile.ZipInfo, layout: tuple[str, int], bad) -> np.ndarray:
    """One member's array, from its ``.npy`` header parsed and checked against ``layout`` (dtype, number of
    dimensions) and the member's declared length before its data is read (:func:`archive_members`)."""
    dtype_str, ndim = layout
    limit = MAX_SETTINGS_BYTES if info.filename == f"{SETTINGS}.npy" else MAX_ARRAY_BYTES
    if info.file_size > limit:
        raise bad(f"member {info.filename!r} states {info.file_size} bytes; it holds at most {limit}")
    header = BoundedReader(stream, min(info.file_size, MAX_NPY_HEADER_BYTES))
    start = header.read(len(np.lib.format.MAGIC_PREFIX) + 2)
    if len(start) < 8 or start[:6] != np.lib.format.MAGIC_PREFIX:
        raise bad(f"member {info.filename!r} is not a .npy array (it begins {start[:8]!r})")
    version = (start[6], start[7])
    if version not in NPY_VERSIONS:
        raise bad(f"member {info.filename!r} is .npy version {version[0]}.{version[1]}; this format writes 1.0")
    shape, fortran_order, dtype = NPY_VERSIONS[version](header, max_header_size=MAX_NPY_HEADER_BYTES)
    if dtype.hasobject:
        raise bad(f"member {info.filename!r} holds Python objects (dtype {dtype.str!r}), which are never unpickled")
    if dtype.str != dtype_str or len(shape) != ndim or (fortran_order and ndim > 1) or min(shape, default=0) < 0:
        order = "Fortran" if fortran_order else "C"
        raise bad(
            f"member {info.filename!r} is {dtype.str}, shape {shape}, {order} order; expected {dtype_str}, "
            f"{ndim}-dimensional, C order"
        )
    data_bytes = math.prod(shape) * dtype.itemsize
    if header.position + data_bytes != info.file_size:
        raise bad(
            f"member {info.filename!r} declares shape {shape} of {dtype.str}, {data_bytes} bytes, and the "
            f"archive states {info.file_size - header.position} bytes after its header"
        )
    data = stream.read(data_bytes)
    if len(data) != data_bytes or stream.read(1):
        raise bad(f"member {info.filename!r} holds {len(data)} bytes after its header, not {data_bytes}")
    return np.frombuffer(data, dtype).reshape(shape)


def model_from_members(members: dict[str, np.ndarray], path: str | Path, payload: bytes) -> LearnedInducer:
    """The model the archive's members state, each checked (dtype, shape, ranges) before use."""

    def bad(problem: str) -> ModelFileError:
        return ModelFileError(path, f"not a usable model: {problem}")

    settings_bytes = members.pop(SETTINGS, None)
    if settings_bytes is None or settings_bytes.dtype != np.uint8 or settings_bytes.ndim != 1:
        raise bad(f"no {SETTINGS!r} member of bytes")
    try:
        settings = json.loads(settings_bytes.tobytes().decode("utf-8"))
    except (ValueError, RecursionError):
        raise bad(f"its {SETTINGS!r} are not JSON") from None
    if not isinstance(settings, dict):
        raise bad(f"its {SETTINGS!r} are not a JSON object")
    if settings.get("features") != list(FEATURES):
        raise bad(f"trained on features {settings.get('features')}, this code computes {list(FEATURES)}")
    thresholds = [settings.get("threshold"), settings.get("level_threshold")]
    if not all(isinstance(t, (int, float)) and 0 <= t <= 1 for t in thresholds):
        raise bad(f"thresholds {thresholds} are not probabilities")
    names = settings.get("title_names")
    if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
        raise bad("title_names is not a list of strings")
    for index, name in enumerate(names):
        problem = title_problem(name)
        if problem:
            shown = name if len(name) <= 40 else name[:40] + "..."
            raise bad(f"title_names[{index}] {shown!r} {problem}")
    if not isinstance(settings.get("training"), dict):
        raise bad("no training summary")
    boundary = read_probability(members, "boundary", bad)
    level = read_probability(members, "level", bad)
    titles = read_titles(members, len(names), bad)
    if members:
        raise bad(f"unexpected members {sorted(members)}")
    return LearnedInducer(
        boundary=boundary,
        level=level,
        titles=titles,
        title_names=tuple(names),
        threshold=float(settings["threshold"]),
        level_threshold=float(settings["level_threshold"]),
        training=settings["training"],
        _payload=[payload],
    )


def take(members: dict[str, np.ndarray], name: str, dtype: str, ndim: int, bad) -> np.ndarray:
    """Member ``name`` (removed from ``members``) if it has the ``dtype`` and number of dimensions."""
    array = members.pop(name, None)
    if array is None:
        raise bad(f"no member {name!r}")
    if array.dtype.str != dtype or array.ndim != ndim:
        raise bad(f"member {name!r} is {array.dtype.str}, {array.ndim}-dimensional; expected {dtype}, {ndim}")
    return array


def read_probability(members: dict[str, np.ndarray], name: str, bad) -> Probability:
    """The boundary or level probability: a constant or a tree ensemble whose every tree is well formed."""
    if f"{name}.constant" in members:
        p = float(take(members, f"{name}.constant", "<f8", 0, bad))
        if not 0 <= p <= 1:
            raise bad(f"{name}.constant {p} is not a probability")
        return ConstantProbability(p)
    baseline = float(take(members, f"{name}.baseline", "<f8", 0, bad))
    starts = take(members, f"{name}.tree_starts", "<i8", 1, bad)
    nodes = {key: take(members, f"{name}.{key}", dtype, 1, bad) for key, dtype in TREE_ARRAYS.items()}
    n_nodes = len(nodes["value"])
    if any(len(array) != n_nodes for array in nodes.values()):
        raise bad(f"{name}'s node arrays differ in length")
    if len(starts) < 2 or starts[0] != 0 or starts[-1] != n_nodes or np.any(np.diff(starts) < 1):
        raise bad(f"{name}.tree_starts do not divide its {n_nodes} nodes into trees")
    if not math.isfinite(baseline) or not np.isfinite(nodes["value"]).all():
        raise bad(f"{name} has a value that is not finite")
    split = nodes["is_leaf"] == 0
    tree_end = np.repeat(starts[1:], np.diff(starts))
    index = np.arange(n_nodes)
    for child in ("left", "right"):
        inside = (nodes[child] > index) & (nodes[child] < tree_end)
        if not inside[split].all():
            raise bad(f"{name} has a split whose {child} child is not after it in its tree")
    if not ((nodes["feature"][split] >= 0) & (nodes["feature"][split] < len(FEATURES))).all():
        raise bad(f"{name} splits on a feature outside the {len(FEATURES)} features")
    if (nodes["is_leaf"] > 1).any() or (nodes["missing_left"] > 1).any():
        raise bad(f"{name} has a flag that is neither 0 nor 1")
    return TreeEnsemble(baseline, starts, **nodes)


def read_titles(members: dict[str, np.ndarray], n_names: int, bad) -> TitleClassifier | None:
    """The recurring-title classifier, or None when the file has none."""
    if not any(name.startswith("titles.") for name in members):
        return None
    coef = take(members, "titles.coef", "<f8", 2, bad)
    intercept = take(members, "titles.intercept", "<f8", 1, bad)
    classes = take(members, "titles.classes", "<i8", 1, bad)
    rows = 1 if len(classes) == 2 else len(classes)
    if len(classes) < 2 or coef.shape[0] != rows or len(intercept) != rows or not np.isfinite(coef).all():
        raise bad(f"the title classifier's {len(classes)} classes do not fit its coefficients {coef.shape}")
    vectors = coef.shape[1] - len(TITLE_POSITION)
    if vectors < 2 or vectors % 2:
        raise bad(
            f"the title classifier reads {coef.shape[1]} features per section, not two vectors and "
            f"{len(TITLE_POSITION)} position features"
        )
    if not ((classes >= 0) & (classes <= n_names)).all() or len(set(classes.tolist())) != len(classes):
        raise bad(f"title classes {classes.tolist()} are not distinct among 0..{n_names}")
    return TitleClassifier(coef, intercept, classes)


# Control characters (newlines, tabs, escapes) and the line and paragraph separators: what would break a
# title out of its one line of a heading path, a prefix or a Markdown export.
LINE_BREAKING = frozenset({"Cc", "Zl", "Zp"})


def title_problem(title: str) -> str | None:
    """Why ``title`` cannot be a learned title, or None: it is empty, longer than the bound of every
    induced title (:data:`~structbench.structure.induction.TITLE_CHARS` characters), or holds a control
    character or line break (a title is one line: a newline in it would open a line, or a heading, in
    every path and prefix of its sections). :func:`printable_title` makes a gold heading pass."""
    if not title.strip():
        return "is empty"
    if len(title) > TITLE_CHARS:
        return f"holds {len(title)} characters, above the {TITLE_CHARS} an induced title holds"
    control = next((c for c in title if unicodedata.category(c) in LINE_BREAKING), None)
    if control is not None:
        return f"holds the control character {control!r} (U+{ord(control):04X}): a title is one line"
    return None


def printable_title(title: str) -> str:
    """``title`` as a learned title holds it (:func:`title_problem`): every run of whitespace, line breaks
    included, one space; other control characters dropped; cut to the induced titles' bound as the LLM
    inducer's repair cuts (:func:`~structbench.graphemes.bounded_title`). Empty when nothing printable is
    left."""
    line = "".join(c for c in " ".join(title.split()) if unicodedata.category(c) not in LINE_BREAKING)
    return bounded_title(line, TITLE_CHARS)
