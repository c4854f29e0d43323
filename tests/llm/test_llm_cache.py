"""The response cache: keys cover everything that determines a response, writes survive SIGKILL,
corrupt entries are quarantined, and a repeated call reaches no backend."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
from conftest import REPO
from llm_testing import CountingBackend, ScriptedBackend, build_tiny_model

from structbench.llm import LLM, ChatRequest, LLMSpec, ResponseCache, load_llm, weights_fingerprint
from structbench.llm.cache import request_key

SRC = REPO / "src"


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model")


def test_second_identical_call_makes_zero_backend_calls(tiny_model, tmp_path):
    """A real transformers backend behind a counter: the second call, even from a fresh client
    (another workflow pointing at the same folder), is served entirely from the cache."""
    requests = [ChatRequest.of([{"role": "user", "content": f"hive {k}"}], prompt_version="t@1") for k in range(3)]
    first = load_llm({"backend": "transformers", "model": str(tiny_model), "max_new_tokens": 6}, tmp_path / "llm")
    first.backend = counting = CountingBackend(first.backend)
    answers = first.chat(requests)
    assert counting.calls == 1 and counting.requests == 3 and not any(r.cached for r in answers)

    again = LLM(CountingBackend(first.backend.inner), first.spec, ResponseCache(tmp_path / "llm"))
    replayed = again.chat(requests)
    assert again.backend.calls == 0 and again.backend.requests == 0
    assert [r.text for r in replayed] == [r.text for r in answers] and all(r.cached for r in replayed)
    assert again.cache.hits == 3 and again.cache.misses == 0


def test_key_changes_with_every_determining_input(tmp_path):
    def key(spec=None, model="m", weights="w1", **request):
        spec = spec or LLMSpec("transformers", "m")
        backend = ScriptedBackend(lambda r: "", model=model)
        backend.identity = lambda: {"model": model, "weights": weights}
        defaults = dict(messages=[{"role": "user", "content": "hi"}], schema=None, prompt_version="p@1")
        return request_key(LLM(backend, spec).material(ChatRequest.of(**{**defaults, **request})))

    base = key()
    variants = [
        key(model="m2"),
        key(weights="w2"),
        key(prompt_version="p@2"),
        key(messages=[{"role": "user", "content": "hi!"}]),
        key(messages=[{"role": "system", "content": "hi"}]),
        key(schema={"type": "object"}),
        key(max_new_tokens=7),
        key(spec=LLMSpec("transformers", "m", temperature=0.5)),
        key(spec=LLMSpec("transformers", "m", seed=1)),
    ]
    assert base == key()  # stable
    assert len({base, *variants}) == 1 + len(variants)
    # the batch size decides scheduling, not the answer: same key
    assert key(spec=LLMSpec("transformers", "m", batch_size=3)) == base


def test_weights_fingerprint_hashes_content_and_memoizes(tmp_path, monkeypatch):
    from structbench import fingerprint

    model = tmp_path / "model"
    model.mkdir()
    (model / "a.bin").write_bytes(b"weights")
    (model / "config.json").write_text("{}")
    memo = tmp_path / "memo"
    first = weights_fingerprint(model, memo)
    reads = []
    original = fingerprint.file_sha256
    monkeypatch.setattr(fingerprint, "file_sha256", lambda f: reads.append(f.name) or original(f))
    assert weights_fingerprint(model, memo) == first and reads == []
    (model / "a.bin").write_bytes(b"weightz")  # same size, new content and mtime
    os.utime(model / "a.bin", ns=(1, 1))
    changed = weights_fingerprint(model, memo)
    assert changed != first and reads == ["a.bin"]
    copy = tmp_path / "copy"
    copy.mkdir()
    (copy / "a.bin").write_bytes(b"weightz")
    (copy / "config.json").write_text("{}")
    assert weights_fingerprint(copy) == changed  # content, not location


KILLED_WRITER = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, {src!r})
    from structbench.llm import cache
    def stall_half_way(handle, payload, size=1 << 16):
        handle.write(payload[: len(payload) // 2])
        handle.flush()
        print("HALF", flush=True)
        time.sleep(60)
    cache._write_chunks = stall_half_way
    cache.ResponseCache({root!r}).put({key!r}, {{"m": 1}}, {{"text": "x" * 500000}})
""")


def test_writer_killed_mid_write_leaves_no_entry(tmp_path):
    key = request_key({"m": 1})
    script = KILLED_WRITER.format(src=str(SRC), root=str(tmp_path), key=key)
    writer = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout.readline().strip() == "HALF"
        os.kill(writer.pid, signal.SIGKILL)
    finally:
        writer.wait(timeout=30)
    assert writer.returncode == -signal.SIGKILL
    leftovers = list((tmp_path / key[:2]).glob(".*.tmp"))
    assert len(leftovers) == 1 and leftovers[0].stat().st_size > 0  # it really died mid-write
    cache = ResponseCache(tmp_path)
    assert cache.get(key) is None and cache.quarantined == 0
    cache.put(key, {"m": 1}, {"text": "whole"})
    assert cache.get(key) == {"text": "whole"}


LOOPING_WRITER = textwrap.dedent("""
    import sys
    sys.path.insert(0, {src!r})
    from structbench.llm.cache import ResponseCache, request_key
    cache = ResponseCache({root!r})
    n = 0
    while True:
        cache.put(request_key({{"n": n}}), {{"n": n}}, {{"text": str(n) * 20000}})
        n += 1
        if n == 5:
            print("GO", flush=True)
""")


def test_reader_never_sees_a_torn_entry_after_a_random_kill(tmp_path):
    script = LOOPING_WRITER.format(src=str(SRC), root=str(tmp_path))
    writer = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout.readline().strip() == "GO"
        time.sleep(0.2)
        os.kill(writer.pid, signal.SIGKILL)
    finally:
        writer.wait(timeout=30)
    cache = ResponseCache(tmp_path)
    written = sorted(tmp_path.glob("??/*.json"))
    assert len(written) >= 5
    for path in written:
        entry = json.loads(path.read_text())
        n = entry["material"]["n"]
        assert cache.get(path.stem) == {"text": str(n) * 20000}
    assert cache.quarantined == 0


def test_corrupt_entry_is_quarantined_and_recomputed(tmp_path):
    backend = ScriptedBackend(lambda request: "fresh answer")
    llm = LLM(backend, LLMSpec("transformers", "scripted"), ResponseCache(tmp_path))
    request = ChatRequest.of([{"role": "user", "content": "q"}])
    llm.chat([request])
    (path,) = tmp_path.glob("??/*.json")
    entry = json.loads(path.read_text())
    entry["completion"]["text"] = "tampered"  # valid JSON, wrong checksum
    path.write_text(json.dumps(entry))
    response = llm.chat([request])[0]
    assert response.text == "fresh answer" and not response.cached and backend.calls == 2
    assert llm.cache.quarantined == 1 and len(list((tmp_path / "quarantine").iterdir())) == 1
    path.write_bytes(path.read_bytes()[:40])  # truncated: not JSON
    assert ResponseCache(tmp_path).get(path.stem) is None
    assert len(list((tmp_path / "quarantine").iterdir())) == 2


def test_failed_completions_are_not_cached(tmp_path):
    from structbench.llm import Completion

    backend = ScriptedBackend(lambda request: "")
    backend.generate = lambda requests, caps: [Completion("", error="prompt too long") for _ in requests]
    llm = LLM(backend, LLMSpec("transformers", "scripted"), ResponseCache(tmp_path))
    response = llm.chat([ChatRequest.of([{"role": "user", "content": "q"}])])[0]
    assert not response.ok and response.error == "prompt too long"
    assert list(tmp_path.glob("??/*.json")) == []
