"""The learned inducer's model file: its layout, its writer's helpers and its bounded reader (docs/method.md §5,
"Learned inducer"). The model itself, and the composition that reads one (``load_learned_inducer``), are in
:mod:`.learned_model`; this module knows bytes, arrays and JSON, never a model.

**The file** (format :data:`FORMAT`) is three parts: the line :data:`MAGIC`, a header line of canonical
JSON (``{"format": ..., "payload_bytes": ..., "payload_sha256": ...}``) and the payload, an ``.npz``
archive of the arrays with the settings as one JSON member (:func:`npz_bytes`), written with fixed member
dates so that the same model is the same bytes. Reading checks, before any of the payload is read, that the
file is a regular file of at most :data:`MAX_FILE_BYTES` (:func:`read_model_file`), begins with the magic
line, that the header is this format's canonical JSON with ``format`` this very string, and that the payload
has the stated length and sha256 (:func:`verified_payload`). A sha256 proves integrity, not origin (whoever
writes a file writes its digest), so the payload is then read as hostile by one reader,
:func:`archive_members`: a zip archive whose members, stated in its central directory, are this format's
(:data:`MEMBERS`), stored or deflated and unencrypted; each member's ``.npy`` header parsed here, its dtype
and number of dimensions the layout's (never an object dtype: nothing is unpickled), its shape's bytes the
member's declared length, all within :data:`MAX_ARRAY_BYTES`, before anything of that size is allocated or
inflated, and no member read past its declared length. Every failure is a :class:`ModelFileError` naming
the file and what is wrong.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import os
import stat
import struct
import zipfile
import zlib
from pathlib import Path

import numpy as np

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


# -------------------------------------------------------------------------------------------- writing


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
