"""Measurements live in docs/benchmarks.md, not in the code: no line of src/ or config/ holds a dated or timed
measurement, and every pointer the code leaves (``measured: docs/benchmarks.md, "<section>"``) names a section
that exists."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BENCHMARKS = REPO / "docs" / "benchmarks.md"
SCANNED = ("src", "config")
SUFFIXES = {".py", ".yaml", ".yml", ".md", ".txt", ".json", ".toml"}

DATE = re.compile(r"\b20\d\d-[01]\d-[0-3]\d\b")
# A number with a unit of time or memory (``432 s``, ``~6 s``, ``2.3-3.8 s``, ``512 MiB``) or a ratio (``2.2x``,
# ``3-5x``); neither alone is a measurement (``timeout_s 300``, ``a 500 MB model``), next to one of these words is.
QUANTITY = re.compile(r"(?<![\w.])~?\d+(?:[.,]\d+)*(?:-\d+(?:\.\d+)?)? ?(?:s|ms|min|MiB|GiB|KiB|MB|GB|KB)\b")
RATIO = re.compile(r"(?<![\w.])~?\d+(?:\.\d+)?(?:-\d+(?:\.\d+)?)?x\b")
MEASURED = re.compile(
    r"\b(?:measured|took|ran|timed|costs?|gave|faster|slower|speed-?up|on this machine|about|wall)\b|~\d", re.IGNORECASE
)
POINTER = re.compile(r'measured: docs/benchmarks\.md, "([^"]+)"')


def measurement(line: str) -> str | None:
    """What makes ``line`` a measurement (a date, or a quantity next to a word of measuring), or None."""
    if found := DATE.search(line):
        return f"date {found.group()}"
    quantity = QUANTITY.search(line) or RATIO.search(line)
    if quantity and MEASURED.search(line):
        return f"{quantity.group().strip()} next to {MEASURED.search(line).group()!r}"
    return None


def scanned_files() -> list[Path]:
    return sorted(
        path for top in SCANNED for path in (REPO / top).rglob("*") if path.is_file() and path.suffix in SUFFIXES
    )


def test_no_line_of_the_code_or_the_configs_holds_a_measurement():
    found = []
    for path in scanned_files():
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if reason := measurement(line):
                found.append(f"{path.relative_to(REPO)}:{number}: {reason}: {line.strip()}")
    assert not found, "measurements belong in docs/benchmarks.md (leave a pointer):\n" + "\n".join(found)


def test_the_check_finds_the_logs_it_was_written_for_and_passes_code():
    logs = [
        "**What it gives** (measured 2026-12-01: SmolLM2-135M-Instruct Q4_1, ``llms.smollm2`` of",
        "``llguidance.torch``: the same functions, but importing the torch module costs ~6 s on this machine",
        "come straight from it with no re-searching; on QASPER prose it ran 2.2x faster than pysbd's",
        "tokenizer more than its length (a 6.8 MB paragraph took 4.1-4.5x the time of a 1.7 MB one), many",
        "# 3 documents at per_document 2 (24 questions, 32 distinct requests with the paraphrases) took 432 s, about",
        "    threads: 1  # one torch thread per job: oversubscribed threads ran SmolLM2 3-5x slower (spec.py)",
        "keeps them single-threaded: on the two or four shared cores of a CPU job, threaded BLAS measured 20x",
        "transformers reads a GGUF file by converting its tokenizer and de-quantizing every tensor, about 30 s for",
        "min_section_paragraphs=3``, 0.828) cost ~3.6x the encoder inputs (9,480 sentences for 2,742 paragraphs)",
    ]
    assert [line for line in logs if measurement(line) is None] == []
    code = [
        'logger.info("done in %.1f s, cpu %.1f s, peak RSS %d MiB", wall, cpu, peak_rss_mib())',
        "file is memoized in ``<root>/file-hashes.json`` by (path, size, mtime, ctime), so a 500 MB model is read once",
        "timeout_s              300             openai: seconds to wait for one response.",
        "class Validator:  # A Draft 2020-12 validator that also writes each ``default`` into the instance",
        "counting once. The products run on row slices small enough (about 1e6 multiply-adds) that OpenBLAS",
        "(a 3 MB abi3 wheel without dependencies)",
        'vocabulary-sized masked_fill here (measured: docs/benchmarks.md, "Constrained decoding on SmolLM2").',
        "    runtime=120,",
        "T_MAX = 350  # content tokens above which a structural unit is split",
    ]
    assert [line for line in code if measurement(line) is not None] == []


def flattened(text: str) -> str:
    """``text`` as one line: line breaks, indentation and comment marks joined into single spaces, so a pointer
    wrapped over lines of a docstring, a table or a YAML comment reads whole."""
    return re.sub(r"\s*\n\s*(?:#\s*)?", " ", text)


def test_every_pointer_into_the_benchmarks_names_one_of_its_sections():
    headings = [line.removeprefix("## ") for line in BENCHMARKS.read_text().splitlines() if line.startswith("## ")]
    pointers, dangling = 0, []
    for path in scanned_files():
        for section in POINTER.findall(flattened(path.read_text())):
            pointers += 1
            if not any(heading.startswith(section) for heading in headings):
                dangling.append(f"{path.relative_to(REPO)}: {section!r}")
    assert pointers >= 10  # the scan reads the pointers the code holds
    assert not dangling, "pointers to no section of docs/benchmarks.md:\n" + "\n".join(dangling)
