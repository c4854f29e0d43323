"""The OpenAI-compatible backend against a real server (``transformers serve`` on 127.0.0.1, serving a
tiny random-weight model built in the test), plus retries, timeouts and the down-server error."""

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from llm_testing import CountingBackend, build_tiny_model

from structbench.llm import ChatRequest, LLMSpec, load_llm
from structbench.llm.openai_backend import OpenAIBackend, ServerUnavailable

TRANSFORMERS_CLI = Path(sys.executable).with_name("transformers")
pytestmark = pytest.mark.skipif(
    not TRANSFORMERS_CLI.exists() and not shutil.which("transformers"), reason="the transformers CLI is not installed"
)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """``transformers serve`` in its own process session; stopped (that session only) at the end."""
    pytest.importorskip("fastapi")
    pytest.importorskip("uvicorn")
    root = tmp_path_factory.mktemp("served")
    model = build_tiny_model(root / "model")
    port = free_port()
    log_path = root / "server.log"
    with open(log_path, "wb") as log_file:
        process = subprocess.Popen(
            [str(TRANSFORMERS_CLI), "serve", str(model), "--host", "127.0.0.1", "--port", str(port), "--device", "cpu"],
            stdout=log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"},
        )
    try:
        deadline = time.monotonic() + 300
        while True:
            if process.poll() is not None:
                pytest.fail(f"transformers serve exited with {process.returncode}:\n{log_path.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"transformers serve not healthy after 300 s:\n{log_path.read_text()[-3000:]}")
            time.sleep(0.5)
        yield {"model": str(model), "base_url": f"http://127.0.0.1:{port}/v1"}
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)


def entry(server, **extra):
    return {
        "backend": "openai",
        "model": server["model"],
        "base_url": server["base_url"],
        "context_tokens": 512,
        "response_format": "none",
        "max_new_tokens": 8,
        "batch_size": 2,
        **extra,
    }


def prompts(n):
    return [ChatRequest.of([{"role": "user", "content": "the hive " * k}]) for k in range(1, n + 1)]


def test_real_server_answers_like_the_in_process_model_and_is_cached(server, tmp_path):
    remote = load_llm(entry(server), tmp_path / "llm")
    remote.backend = counting = CountingBackend(remote.backend)
    answers = remote.chat(prompts(3))
    assert all(a.ok for a in answers) and counting.calls == 1
    assert all(0 < a.completion_tokens <= 8 and a.prompt_tokens > 0 for a in answers)
    # greedy decoding of the same weights and chat template: the server and transformers agree
    local = load_llm({"backend": "transformers", "model": server["model"], "max_new_tokens": 8})
    assert [a.text for a in answers] == [a.text for a in local.chat(prompts(3))]
    again = remote.chat(prompts(3))
    assert counting.calls == 1 and all(a.cached for a in again)


def test_http_errors_become_failure_records(server):
    """A request the server refuses (a model it does not serve) fails as a record naming the URL;
    no exception, so a batch survives its bad requests."""
    wrong = load_llm({**entry(server), "model": "not-served", "max_retries": 0})
    results = wrong.chat(prompts(2))
    assert [r.ok for r in results] == [False, False]
    assert all("HTTP 4" in r.error and server["base_url"] + "/chat/completions" in r.error for r in results)
    no_json = load_llm(entry(server)).chat(
        [ChatRequest.of([{"role": "user", "content": "j"}], schema={"type": "object"})]
    )[0]
    assert not no_json.ok and "no JSON" in no_json.error


def test_down_server_error_names_the_url_after_exponential_backoff():
    url = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    delays = []
    backend = OpenAIBackend(
        LLMSpec("openai", "m", base_url=url, max_retries=2, backoff_s=0.01, timeout_s=2), sleep=delays.append
    )
    with pytest.raises(ServerUnavailable, match=f"server at {url}/chat/completions is unreachable after 3 attempts"):
        backend.generate(prompts(1), [8])
    assert delays == [0.01, 0.02]


def test_a_server_that_never_answers_times_out():
    with socket.socket() as listener:  # accepts connections into the backlog, never replies
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
        backend = OpenAIBackend(
            LLMSpec("openai", "m", base_url=url, max_retries=1, backoff_s=0.01, timeout_s=0.3), sleep=lambda s: None
        )
        with pytest.raises(ServerUnavailable, match=f"{url}/chat/completions.*timed out"):
            backend.generate(prompts(1), [8])


def test_request_body_and_token_estimate():
    schema = {"type": "object"}
    request = ChatRequest.of([{"role": "user", "content": "x" * 30}], schema=schema)
    constrained = OpenAIBackend(LLMSpec("openai", "m", seed=7))
    body = constrained.request_body(request, 12)
    assert body["response_format"] == {"type": "json_schema", "json_schema": {"name": "answer", "schema": schema}}
    assert (body["model"], body["max_tokens"], body["temperature"], body["seed"]) == ("m", 12, 0.0, 7)
    assert "response_format" not in OpenAIBackend(LLMSpec("openai", "m", response_format="none")).request_body(
        request, 1
    )
    assert constrained.count_tokens(request.as_dicts()) == 10 + 4
    assert constrained.identity() == {"model": "m", "weights": "served@unversioned"}


def test_requests_go_in_prefix_order_and_cached_tokens_are_recorded():
    """A document's requests are sent together (sorted by messages) for a server's prefix cache; answers
    come back in request order, with usage.prompt_tokens_details.cached_tokens as reused prompt tokens."""
    sent = []

    def call(method, path, body):
        text = body["messages"][-1]["content"]
        sent.append(text)
        usage = {"prompt_tokens": 100, "completion_tokens": 2, "prompt_tokens_details": {"cached_tokens": 64}}
        return {"choices": [{"message": {"content": f"re {text}"}, "finish_reason": "stop"}], "usage": usage}

    texts = ["doc B chunk 1", "doc A chunk 1", "doc B chunk 2", "doc A chunk 2"]
    requests = [ChatRequest.of([{"role": "user", "content": text}]) for text in texts]
    for reuse, order in ((True, sorted(texts)), (False, texts)):
        backend = OpenAIBackend(LLMSpec("openai", "m", batch_size=1, prefix_reuse=reuse))
        backend._call = call
        sent.clear()
        completions = backend.generate(requests, [8] * 4)
        assert sent == order
        assert [c.text for c in completions] == [f"re {text}" for text in texts]
        assert [c.reused_prompt_tokens for c in completions] == [64] * 4
