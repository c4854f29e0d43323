"""Every shape an endpoint reply can take is checked and named: the parsing functions fed each
malformed reply directly, plus one malformed reply through a real HTTP server on 127.0.0.1. No Infinity."""

from __future__ import annotations

from http.server import BaseHTTPRequestHandler

import numpy as np
import pytest
from endpoint_testing import endpoint_entry, local_server, read_json, rerank_entry, send_json

from structbench.embedding.encoders import make_encoder
from structbench.embedding.endpoint import EndpointEncoder
from structbench.endpoints.embeddings import parse_embeddings
from structbench.endpoints.endpoint_spec import EndpointEmbedderSpec, EndpointRerankerSpec
from structbench.endpoints.rerank import parse_rerank
from structbench.http import (
    EndpointDimensionError,
    EndpointReplyError,
    EndpointVectorError,
    batches,
    bounded_map,
    check_indices,
    describe_inputs,
)

URL = "http://x/v1/embeddings"
WHAT = "model 'm', " + describe_inputs(3, range(96, 100))  # what EndpointEncoder passes: model and batch


def reply_of(vectors, indices=None) -> dict:
    indices = list(range(len(vectors))) if indices is None else indices
    return {"data": [{"index": i, "embedding": v} for i, v in zip(indices, vectors)]}


GOOD = [[1.0, 0.0], [0.0, 2.0], [3.0, 4.0], [1, 1]]


def test_a_good_reply_comes_back_in_index_order_normalized():
    reply = reply_of(GOOD[::-1], [3, 2, 1, 0]) | {"usage": {"prompt_tokens": 9, "total_tokens": 9}}
    rows, billed = parse_embeddings(reply, 4, URL, WHAT)
    expected = np.array([[1, 0], [0, 1], [0.6, 0.8], [2**-0.5, 2**-0.5]], dtype=np.float32)
    np.testing.assert_allclose(rows, expected, atol=1e-7)
    assert rows.dtype == np.float32 and billed == 9
    assert parse_embeddings(reply_of(GOOD), 4, URL, WHAT)[1] is None  # no usage: nothing billed


MALFORMED = [
    # (reply, error class, what the message says)
    ([{"embedding": [1.0]}], EndpointReplyError, "reply is list [{'embedding': [1.0]}], not an object"),
    ({"object": "list"}, EndpointReplyError, "reply has no 'data' (keys ['object'])"),
    ({"data": {"0": [1.0]}}, EndpointReplyError, "'data' is dict {'0': [1.0]}, not a list"),
    ({"data": None}, EndpointReplyError, "'data' is null, not a list"),
    ({"data": [{"index": 0, "embedding": [1.0]}, "x", {}, {}]}, EndpointReplyError, "data item 1 is str 'x'"),
    ({"data": [{"index": i} for i in range(4)]}, EndpointReplyError, "data item 0 has no 'embedding' (keys ['index'])"),
    ({"data": [{"embedding": v} for v in GOOD]}, EndpointReplyError, "data item 0 has no 'index' (keys ['embedding'])"),
    (reply_of(GOOD[:3]), EndpointReplyError, "3 vectors for 4 inputs"),
    (reply_of(GOOD + [[1.0, 1.0]]), EndpointReplyError, "5 vectors for 4 inputs"),
    (reply_of(GOOD, [0, 1, 1, 3]), EndpointReplyError, "index 1 appears more than once"),
    (reply_of(GOOD, [0, 1, 2, 4]), EndpointReplyError, "index 4 is out of range for 4 inputs"),
    (reply_of(GOOD, [0, 1, -1, 3]), EndpointReplyError, "index -1 is out of range for 4 inputs"),
    (reply_of(GOOD, [0, 1, "2", 3]), EndpointReplyError, "item 2 has index str '2', not an integer"),
    (reply_of(GOOD, [0, 1, None, 3]), EndpointReplyError, "item 2 has index null, not an integer"),
    (reply_of(GOOD, [0, True, 2, 3]), EndpointReplyError, "item 1 has index bool True, not an integer"),
    (reply_of([[1.0], [[1.0, 2.0]], [1.0], [1.0]]), EndpointVectorError, "input 1's embedding holds list [1.0, 2.0]"),
    (
        reply_of([[1.0], "AAAA", [1.0], [1.0]]),
        EndpointVectorError,
        "input 1's embedding is str 'AAAA', not a flat list",
    ),
    (reply_of([[1.0], [1.0], None, [1.0]]), EndpointVectorError, "input 2's embedding is null, not a flat list"),
    (reply_of([[1.0], [1.0], [1.0, "2"], [1.0]]), EndpointVectorError, "input 2's embedding holds str '2'"),
    (reply_of([[1.0], [1.0], [1.0, None], [1.0]]), EndpointVectorError, "input 2's embedding holds null"),
    (reply_of([[1.0], [1.0], [1.0, False], [1.0]]), EndpointVectorError, "input 2's embedding holds bool False"),
    (reply_of([[1.0], [], [1.0], [1.0]]), EndpointVectorError, "a vector is missing or empty"),
    (reply_of([[1.0], [0.0], [1.0], [1.0]]), EndpointVectorError, "input 1 came back non-finite or zero"),
    (reply_of([[1.0, 0.0], [1.0], [1.0, 0.0], [1.0, 0.0]]), EndpointDimensionError, "different widths [1, 2]"),
    (reply_of(GOOD) | {"usage": [9]}, EndpointReplyError, "'usage' is list [9], not an object"),
    (reply_of(GOOD) | {"usage": {"total_tokens": "9"}}, EndpointReplyError, "usage tokens are str '9', not a number"),
]


@pytest.mark.parametrize(("reply", "error", "says"), MALFORMED, ids=[m[2][:40] for m in MALFORMED])
def test_each_malformed_embedding_reply_is_a_named_error_naming_endpoint_and_batch(reply, error, says):
    with pytest.raises(error) as raised:
        parse_embeddings(reply, 4, URL, WHAT)
    message = str(raised.value)
    assert message.startswith(f"endpoint {URL}, model 'm', batch 3, inputs 96..99: "), message
    assert says in message, message


def test_index_checks_name_the_first_problem_of_each_kind():
    assert check_indices([2, 0, 1], 3, "u", "w") == [2, 0, 1]
    with pytest.raises(EndpointReplyError, match="2 duplicated indices in 4 items for 4 inputs"):
        check_indices([0, 0, 1, 1], 4, "u", "w")
    with pytest.raises(EndpointReplyError, match="2 items for 3 inputs; no item for index 1 "):
        check_indices([0, 2], 3, "u", "w")


def rerank_spec(api: str) -> EndpointRerankerSpec:
    return EndpointRerankerSpec.from_config(rerank_entry("http://r", api=api, timeout_s=1.0))


def results(scores, indices=None, field="relevance_score") -> list:
    indices = list(range(len(scores))) if indices is None else indices
    return [{"index": i, field: s} for i, s in zip(indices, scores)]


RERANK_WHAT = "model 'rr', query 'q', documents 4..6 of its 7 in this call"
RERANK_MALFORMED = [
    ("cohere", results([0.1, 0.2, 0.3]), EndpointReplyError, "reply is list"),
    ("cohere", {"data": []}, EndpointReplyError, "reply has no 'results' (keys ['data'])"),
    ("cohere", {"results": {"0": 0.1}}, EndpointReplyError, "'results' is dict"),
    ("tei", {"results": []}, EndpointReplyError, "reply is dict {'results': []}, not a list"),
    ("cohere", {"results": [1, 2, 3]}, EndpointReplyError, "result 0 is int 1, not an object"),
    ("cohere", {"results": results([0.1, 0.2, 0.3], field="score")}, EndpointReplyError, "has no 'relevance_score'"),
    ("tei", results([0.1, 0.2, 0.3]), EndpointReplyError, "result 0 has no 'score'"),
    ("cohere", {"results": [{"relevance_score": 0.1}] * 3}, EndpointReplyError, "result 0 has no 'index'"),
    ("cohere", {"results": results([0.1, 0.2])}, EndpointReplyError, "2 scores for 3 documents"),
    ("cohere", {"results": results([0.1, 0.2, 0.3], [0, 2, 2])}, EndpointReplyError, "index 2 appears more than once"),
    ("cohere", {"results": results([0.1, 0.2, 0.3], [0, 1, 3])}, EndpointReplyError, "index 3 is out of range"),
    ("cohere", {"results": results([0.1, 0.2, 0.3], [0, 1.0, 2])}, EndpointReplyError, "index float 1.0"),
    ("cohere", {"results": results([0.1, "0.2", 0.3])}, EndpointVectorError, "document 1's relevance_score is str"),
    ("cohere", {"results": results([0.1, None, 0.3])}, EndpointVectorError, "document 1's relevance_score is null"),
    ("cohere", {"results": results([0.1, [0.2], 0.3])}, EndpointVectorError, "document 1's relevance_score is list"),
    ("tei", results([0.1, float("nan"), 0.3], field="score"), EndpointVectorError, "document 1's score is float nan"),
]


@pytest.mark.parametrize(("api", "reply", "error", "says"), RERANK_MALFORMED, ids=[m[3][:40] for m in RERANK_MALFORMED])
def test_each_malformed_rerank_reply_is_a_named_error_naming_endpoint_and_documents(api, reply, error, says):
    with pytest.raises(error) as raised:
        parse_rerank(reply, 3, rerank_spec(api), RERANK_WHAT)
    message = str(raised.value)
    assert message.startswith(f"endpoint http://r/rerank, {RERANK_WHAT}: "), message
    assert says in message, message


def test_a_good_rerank_reply_comes_back_in_index_order():
    scores = parse_rerank({"results": results([0.5, 0.25, 1], [2, 0, 1])}, 3, rerank_spec("cohere"), RERANK_WHAT)
    np.testing.assert_array_equal(scores, np.array([0.25, 1.0, 0.5], np.float32))


def test_batches_and_bounded_map():
    assert batches(5, 2) == [range(0, 2), range(2, 4), range(4, 5)] and batches(0, 3) == []
    assert bounded_map(lambda x: x * x, range(7), 3) == [0, 1, 4, 9, 16, 25, 36]
    assert describe_inputs(1, range(0, 1)) == "batch 1, input 0"
    assert describe_inputs(3, range(96, 128)) == "batch 3, inputs 96..127"


class _NestedSecondBatch(BaseHTTPRequestHandler):
    """Good vectors for the first request; from the second on, each embedding nested one list deeper."""

    requests = 0

    def do_POST(self):  # noqa: N802 (the http.server API)
        body = read_json(self)
        type(self).requests += 1
        vector = [1.0, 2.0, 2.0] if type(self).requests == 1 else [[1.0, 2.0, 2.0]]
        send_json(self, {"data": [{"index": i, "embedding": vector} for i in range(len(body["input"]))]})

    def log_message(self, *args):
        pass


def test_a_nested_embedding_from_a_real_server_names_endpoint_model_and_batch(tmp_path):
    """Before: numpy's bare ``ValueError: setting an array element with a sequence``."""
    _NestedSecondBatch.requests = 0
    with local_server(_NestedSecondBatch) as url:
        spec = EndpointEmbedderSpec.from_config(endpoint_entry(url, model="served-m", batch_size=2, concurrency=1))
        encoder = EndpointEncoder(spec, tmp_path)
        with pytest.raises(EndpointVectorError) as raised:
            encoder(["a", "b", "c", "d", "e"])
    message = str(raised.value)
    assert message.startswith(f"endpoint {url}/embeddings, model 'served-m', batch 2, inputs 2..3 "), message
    assert "(the first 'c')" in message and "input 0's embedding holds list [1.0, 2.0, 2.0]" in message
    assert len(encoder.cache.shards()) == 1  # the first round's vectors were kept


class _Width383(BaseHTTPRequestHandler):
    """383-wide vectors whatever ``dimensions`` the request asks for (a server that ignores it, or serves
    another model than the entry says); records each request's ``dimensions``."""

    asked: list = []

    def do_POST(self):  # noqa: N802 (the http.server API)
        body = read_json(self)
        type(self).asked.append(body.get("dimensions"))
        send_json(self, {"data": [{"index": i, "embedding": [1.0] * 383} for i in range(len(body["input"]))]})

    def log_message(self, *args):
        pass


def test_a_width_other_than_the_declared_dimensions_is_named_and_nothing_is_cached(tmp_path):
    """``dimensions: 384`` without the start-up probe (``probe_endpoints: false``): the job itself checks
    every reply's width. Before: rc 0, 383-wide vectors cached under a namespace that says 384."""
    _Width383.asked = []
    with local_server(_Width383) as url:
        entry = endpoint_entry(url, model="served-m", dimensions=384, batch_size=2, concurrency=2)
        encoder = make_encoder(entry, tmp_path)
        with pytest.raises(EndpointDimensionError) as raised:
            encoder(["a", "b", "c"])
        message = str(raised.value)
        assert message.startswith(f"endpoint {url}/embeddings, model 'served-m', batch "), message
        assert "inputs 0..1" in message or "input 2" in message, message
        assert "vectors of width 383, but the entry asks for dimensions = 384" in message, message
        assert not list(tmp_path.rglob("shard-*")) and encoder.dimension is None  # nothing kept
        assert _Width383.asked == [384, 384]
        # The width served, declared: the same replies are taken and cached.
        exact = make_encoder(endpoint_entry(url, model="served-m", dimensions=383), tmp_path)
        assert exact(["a", "b", "c"]).shape == (3, 383) and len(exact.cache.shards()) == 1
