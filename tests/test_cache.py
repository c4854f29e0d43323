import numpy as np

from structbench.cache import VectorCache, stable_hash


def fake_encoder(calls):
    def compute(texts):
        calls.append(list(texts))
        return np.array([[len(t), t.count("a")] for t in texts], dtype=np.float32)

    return compute


def test_second_lookup_computes_nothing(tmp_path):
    calls = []
    cache = VectorCache(tmp_path, {"model": "m"})
    first, n_first = cache.get_or_compute(["aa", "b", "aa"], fake_encoder(calls))
    again, n_again = VectorCache(tmp_path, {"model": "m"}).get_or_compute(["b", "aa"], fake_encoder(calls))
    assert n_first == 2 and n_again == 0
    assert calls == [["aa", "b"]]
    assert first.tolist() == [[2, 2], [1, 0], [2, 2]]
    assert again.tolist() == [[1, 0], [2, 2]]


def test_only_new_texts_are_computed_and_namespaces_are_separate(tmp_path):
    calls = []
    VectorCache(tmp_path, {"model": "m"}).get_or_compute(["x"], fake_encoder(calls))
    VectorCache(tmp_path, {"model": "m"}).get_or_compute(["x", "y"], fake_encoder(calls))
    VectorCache(tmp_path, {"model": "other"}).get_or_compute(["x"], fake_encoder(calls))
    assert calls == [["x"], ["y"], ["x"]]


def test_a_crash_mid_write_leaves_no_partial_shard(tmp_path):
    cache = VectorCache(tmp_path, {"model": "m"})

    def crash(texts):
        raise RuntimeError("killed")

    try:
        cache.get_or_compute(["x"], crash)
    except RuntimeError:
        pass
    assert list(cache.directory.glob("shard-*")) == []
    # A leftover temp file from a killed writer is ignored by readers.
    (cache.directory / ".shard-abc.123.tmp.npz").write_bytes(b"garbage")
    vectors, n = cache.get_or_compute(["x"], fake_encoder([]))
    assert n == 1 and vectors.tolist() == [[1, 0]]


def test_stable_hash_ignores_key_order():
    assert stable_hash({"a": 1, "b": [1, 2]}) == stable_hash({"b": [1, 2], "a": 1})
    assert stable_hash({"a": 1}) != stable_hash({"a": 2})
