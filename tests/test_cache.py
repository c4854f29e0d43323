import json
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from structbench.cache import (
    QUARANTINE,
    VectorCache,
    atomic_write_text,
    read_shard,
    shard_checksum,
    stable_hash,
    text_keys,
)

SRC = Path(__file__).resolve().parents[1] / "src"


def fake_encoder(calls):
    """Vector of a text: [its length, its count of 'a'] (a pure function of the text, easy to check)."""

    def compute(texts):
        calls.append(list(texts))
        return np.array([[len(t), t.count("a")] for t in texts], dtype=np.float32)

    return compute


def test_second_lookup_computes_nothing(tmp_path):
    calls = []
    first = VectorCache(tmp_path, {"model": "m"}).get_or_compute(["aa", "b", "aa"], fake_encoder(calls))
    again = VectorCache(tmp_path, {"model": "m"}).get_or_compute(["b", "aa"], fake_encoder(calls))
    assert (first.n_computed, first.n_from_cache, first.n_quarantined) == (2, 0, 0)
    assert (again.n_computed, again.n_from_cache, again.n_quarantined) == (0, 2, 0)
    assert calls == [["aa", "b"]]
    assert first.vectors.tolist() == [[2, 2], [1, 0], [2, 2]]
    assert again.vectors.tolist() == [[1, 0], [2, 2]]


def test_only_new_texts_are_computed_and_namespaces_are_separate(tmp_path):
    calls = []
    VectorCache(tmp_path, {"model": "m"}).get_or_compute(["x"], fake_encoder(calls))
    VectorCache(tmp_path, {"model": "m"}).get_or_compute(["x", "y"], fake_encoder(calls))
    VectorCache(tmp_path, {"model": "other"}).get_or_compute(["x"], fake_encoder(calls))
    assert calls == [["x"], ["y"], ["x"]]


def test_namespace_file_describes_the_namespace(tmp_path):
    cache = VectorCache(tmp_path, {"model": "m", "weights": {"sha256": "ab"}})
    written = json.loads((cache.directory / "namespace.json").read_text())
    assert written == cache.namespace and written["model"] == "m" and "shard_format" in written
    assert cache.directory.name == stable_hash(cache.namespace)[:24]
    assert [p.name for p in cache.directory.iterdir()] == ["namespace.json"]  # no temp file left behind


def test_computation_is_chunked_and_every_finished_chunk_survives_a_crash(tmp_path):
    cache = VectorCache(tmp_path, {"model": "m"})
    calls = []

    def dies_on_second_chunk(texts):
        if calls:
            raise RuntimeError("killed")
        return fake_encoder(calls)(texts)

    texts = ["a", "bb", "ccc", "dddd", "eeeee"]
    with pytest.raises(RuntimeError):
        cache.get_or_compute(texts, dies_on_second_chunk, chunk_size=2)
    assert len(cache.shards()) == 1
    calls.clear()
    resumed = cache.get_or_compute(texts, fake_encoder(calls), chunk_size=2)
    assert calls == [["ccc", "dddd"], ["eeeee"]]
    assert (resumed.n_computed, resumed.n_from_cache) == (3, 2)
    assert resumed.vectors[:, 0].tolist() == [1, 2, 3, 4, 5]
    assert len(cache.shards()) == 3


def test_progress_is_logged(tmp_path, caplog):
    with caplog.at_level(logging.INFO, logger="structbench.cache"):
        VectorCache(tmp_path, {"model": "m"}).get_or_compute(
            ["a", "b", "c"], fake_encoder([]), chunk_size=2, verb="encoded"
        )
    assert any(r.getMessage().startswith("encoded 3/3 texts") for r in caplog.records)


def test_a_crash_mid_write_leaves_no_partial_shard(tmp_path):
    cache = VectorCache(tmp_path, {"model": "m"})

    def crash(texts):
        raise RuntimeError("killed")

    with pytest.raises(RuntimeError):
        cache.get_or_compute(["x"], crash)
    assert cache.shards() == []
    # A leftover temp file from a killed writer is ignored by readers.
    (cache.directory / ".shard-abc.npz.123.ff.tmp").write_bytes(b"garbage")
    lookup = cache.get_or_compute(["x"], fake_encoder([]))
    assert lookup.n_computed == 1 and lookup.n_quarantined == 0 and lookup.vectors.tolist() == [[1, 0]]


KILLED_WRITER = """
import os, sys, time
import numpy as np
from structbench.cache import VectorCache
flag = sys.argv[2]
real_replace = os.replace
def stall(source, target):  # the shard's bytes are in its temp file; the writer dies before the rename
    if not os.path.basename(target).startswith("shard-"):
        return real_replace(source, target)
    open(flag, "w").close()
    time.sleep(120)
os.replace = stall
VectorCache(sys.argv[1], {"model": "m"}).get_or_compute(["x", "y"], lambda t: np.ones((len(t), 3), np.float32))
"""


def test_a_killed_writer_leaves_no_shard_that_is_ever_read(tmp_path):
    flag = tmp_path / "about-to-rename"
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    writer = subprocess.Popen([sys.executable, "-c", KILLED_WRITER, str(tmp_path), str(flag)], env=env)
    try:
        deadline = time.monotonic() + 60
        while not flag.exists():
            assert writer.poll() is None, "the writer exited before reaching the rename"
            assert time.monotonic() < deadline, "the writer never reached the rename"
            time.sleep(0.05)
        writer.send_signal(signal.SIGKILL)
    finally:
        writer.wait()
    cache = VectorCache(tmp_path, {"model": "m"})
    leftovers = [p.name for p in cache.directory.iterdir() if p.name.endswith(".tmp")]
    assert len(leftovers) == 1 and leftovers[0].startswith(".shard-")
    assert cache.shards() == []
    calls = []
    lookup = cache.get_or_compute(["x", "y"], fake_encoder(calls))
    assert calls == [["x", "y"]] and lookup.n_quarantined == 0
    assert lookup.vectors.tolist() == [[1, 0], [1, 0]]


def filled_cache(tmp_path, texts):
    cache = VectorCache(tmp_path, {"model": "m"})
    cache.get_or_compute(texts, fake_encoder([]))
    (shard,) = cache.shards()
    return cache, shard


def test_a_rewritten_shard_with_a_stale_checksum_is_quarantined_and_recomputed(tmp_path, caplog):
    cache, shard = filled_cache(tmp_path, ["alpha", "beta"])
    with np.load(shard) as stored:
        keys, checksum = stored["keys"], stored["checksum"]
    np.savez(shard, keys=keys, vectors=np.full((2, 2), 7, np.float32), checksum=checksum)  # valid npz, wrong vectors
    calls = []
    with caplog.at_level(logging.WARNING, logger="structbench.cache"):
        lookup = VectorCache(tmp_path, {"model": "m"}).get_or_compute(["beta", "alpha"], fake_encoder(calls))
    assert lookup.n_quarantined == 1 and lookup.n_computed == 2
    assert calls == [["beta", "alpha"]]
    assert lookup.vectors.tolist() == [[4, 1], [5, 2]]
    assert (cache.quarantine / shard.name).exists()
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and str(shard) in warnings[0] and "checksum" in warnings[0]
    # The recomputed shard verifies; a third lookup computes nothing and quarantines nothing.
    third = VectorCache(tmp_path, {"model": "m"}).get_or_compute(["alpha", "beta"], fake_encoder(calls))
    assert (third.n_computed, third.n_quarantined) == (0, 0)


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data[: len(data) // 2],  # truncated
        lambda data: b"\x00garbage" * 10,  # not a zip at all
        lambda data: b"",  # empty
    ],
    ids=["truncated", "garbage", "empty"],
)
def test_an_unreadable_shard_is_quarantined_named_and_recomputed(tmp_path, caplog, damage):
    cache, shard = filled_cache(tmp_path, ["alpha", "beta"])
    shard.write_bytes(damage(shard.read_bytes()))
    with caplog.at_level(logging.WARNING, logger="structbench.cache"):
        lookup = cache.get_or_compute(["alpha"], fake_encoder([]))
    assert (lookup.n_quarantined, lookup.n_computed) == (1, 1)
    assert lookup.vectors.tolist() == [[5, 2]]
    assert (cache.directory / QUARANTINE / shard.name).exists()
    assert any(str(shard) in r.getMessage() for r in caplog.records if r.levelno == logging.WARNING)


def test_a_shard_without_checksum_is_not_trusted(tmp_path, caplog):
    cache = VectorCache(tmp_path, {"model": "m"})
    keys = np.asarray(text_keys(["alpha"]))
    np.savez(cache.directory / "shard-old.npz", keys=keys, vectors=np.full((1, 2), 9, np.float32))
    with caplog.at_level(logging.WARNING, logger="structbench.cache"):
        lookup = cache.get_or_compute(["alpha"], fake_encoder([]))
    assert lookup.n_quarantined == 1 and lookup.vectors.tolist() == [[5, 2]]
    assert "no checksum" in caplog.text


def test_a_shard_damaged_twice_keeps_both_quarantined_copies(tmp_path):
    cache, shard = filled_cache(tmp_path, ["alpha"])
    for _ in range(2):
        shard.write_bytes(b"junk")  # the recomputed shard has the same name (same keys) as the first
        assert cache.get_or_compute(["alpha"], fake_encoder([])).n_quarantined == 1
    assert len(list(cache.quarantine.iterdir())) == 2 and shard.exists()


def test_checksum_covers_keys_vectors_and_shape():
    keys = np.asarray(["k1", "k2"])
    vectors = np.arange(6, dtype=np.float32).reshape(2, 3)
    reference = shard_checksum(keys, vectors)
    assert shard_checksum(keys.copy(), vectors.copy()) == reference
    assert shard_checksum(np.asarray(["k1", "k3"]), vectors) != reference
    changed = vectors.copy()
    changed[1, 2] = np.nextafter(changed[1, 2], np.float32(np.inf))  # one ulp
    assert shard_checksum(keys, changed) != reference
    assert shard_checksum(keys, vectors.reshape(3, 2)) != reference


def test_read_shard_returns_what_was_stored(tmp_path):
    cache = VectorCache(tmp_path, {"model": "m"})
    vectors = np.array([[0.25, -1.0], [3.0, 0.5]], np.float32)
    path = cache.store(["k1", "k2"], vectors)
    keys, stored = read_shard(path)
    assert keys == ["k1", "k2"] and stored.tobytes() == vectors.tobytes()


def test_atomic_writes_leave_only_the_target_and_clean_up_on_failure(tmp_path):
    from structbench.atomic import atomic_path

    target = tmp_path / "out.npy"
    temps = []
    for _ in range(20):
        with atomic_path(target) as tmp:
            temps.append(tmp)
            assert tmp.parent == tmp_path and tmp.name.startswith(".out.npy.")
            tmp.write_text("y")
    assert len(set(temps)) == 20
    atomic_write_text(target, "x")
    assert [p.name for p in tmp_path.iterdir()] == ["out.npy"] and target.read_text() == "x"
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        tmp.write_text("half")
        raise RuntimeError("writer died")
    assert [p.name for p in tmp_path.iterdir()] == ["out.npy"] and target.read_text() == "x"


def test_stable_hash_ignores_key_order():
    assert stable_hash({"a": 1, "b": [1, 2]}) == stable_hash({"b": [1, 2], "a": 1})
    assert stable_hash({"a": 1}) != stable_hash({"a": 2})
