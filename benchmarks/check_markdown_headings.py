"""Does the Markdown reader find the headings a CommonMark renderer makes? (real files and the spec's examples)

    .venv/bin/python benchmarks/check_markdown_headings.py [FILE ...]

Per group of files (default: the repo's docs/*.md and README.md, data/kb/docs/*.md, and Chroma's corpora in
../shared/data/chroma/corpora), and for the CommonMark spec examples of tests/fixtures/corpus: the top-level
headings ``(level, text)`` of :func:`structbench.corpus.markdown.markdown_blocks` on the body after front
matter, against markdown-it-py in commonmark mode with its inline rules on (setext lines joined by spaces).
Prints the files that agree, the oracle's heading count, and the files that differ with their first
difference. A heading over ``MAX_HEADING_CHARS`` agrees here but is body text in the corpus: counted apart.
"""

from __future__ import annotations

import argparse
import glob
import json
from pathlib import Path

from markdown_it import MarkdownIt

from structbench.corpus.markdown import MAX_HEADING_CHARS, front_matter, markdown_blocks

REPO = Path(__file__).resolve().parents[1]
SPEC_EXAMPLES = REPO / "tests/fixtures/corpus/commonmark_block_examples.json"
ORACLE = MarkdownIt("commonmark")


def oracle_headings(body: str) -> list[tuple[int, str]]:
    tokens = ORACLE.parse(body)
    heads = [(token, tokens[i + 1].content) for i, token in enumerate(tokens) if token.type == "heading_open"]
    return [
        (int(token.tag[1]), " ".join(line.strip() for line in text.split("\n")))
        for token, text in heads
        if not token.level
    ]


def compare(name: str, text: str, files: bool) -> tuple[list, list, int]:
    """``(reader's headings, oracle's headings, headings the corpus demotes)`` of one Markdown text (a file's:
    after its front matter, which the spec does not know)."""
    lines = text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n").split("\n")
    first_line = front_matter(lines, name)[1] if files else 0
    found = [(level, heading) for kind, _, _, level, heading in markdown_blocks(lines, first_line) if kind == "heading"]
    return found, oracle_headings("\n".join(lines[first_line:])), sum(len(h) > MAX_HEADING_CHARS for _, h in found)


def report(group: str, texts: dict[str, str], files: bool = True) -> None:
    differ, n_headings, n_demoted = [], 0, 0
    for name, text in texts.items():
        found, expected, demoted = compare(name, text, files)
        n_headings, n_demoted = n_headings + len(expected), n_demoted + demoted
        if found != expected:
            at = next((i for i, (a, b) in enumerate(zip(found, expected)) if a != b), min(len(found), len(expected)))
            differ.append(f"{name}, heading {at}: reader {found[at : at + 1]}, oracle {expected[at : at + 1]}")
    print(
        f"{group}: {len(texts) - len(differ)} of {len(texts)} agree; {n_headings} oracle headings, "
        f"{n_demoted} over {MAX_HEADING_CHARS} characters (body text in the corpus)"
    )
    for line in differ:
        print(f"  differs: {line}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="*", type=Path, help="Markdown files (default: the groups of the docstring)")
    args = parser.parse_args(argv)
    examples = json.loads(SPEC_EXAMPLES.read_text())["examples"]
    report("CommonMark spec examples", {f"example {e['example']}": e["markdown"] for e in examples}, files=False)
    groups = (
        {"files": args.files}
        if args.files
        else {
            "docs/*.md and README.md": sorted(REPO.glob("docs/*.md")) + [REPO / "README.md"],
            "data/kb/docs/*.md": sorted(REPO.glob("data/kb/docs/*.md")),
            "Chroma's corpora": sorted(
                Path(p) for p in glob.glob(str(REPO.parent / "shared/data/chroma/corpora/*.md"))
            ),
        }
    )
    for group, files in groups.items():
        report(group, {str(path): path.read_text(encoding="utf-8") for path in files})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
