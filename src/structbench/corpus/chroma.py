"""Chroma's general chunking evaluation as a corpus (``kind: chroma``; docs/method.md §3, "Evidence by offsets").

Smith & Troynikov, "Evaluating Chunking Strategies for Retrieval" (Chroma technical report, 2024), ship
their benchmark as a folder (``chunking_evaluation/evaluation_framework/general_evaluation_data/``):
``corpora/<corpus_id>.md``, one document each, and ``questions_df.csv`` with columns ``question``,
``references`` (a JSON list of ``{content, start_index, end_index}`` excerpts, offsets into the
corpus file's text) and ``corpus_id``. The documents are read as the Markdown corpus reads its files
(:func:`structbench.corpus.markdown.parse_markdown`: ``doc_id`` = file stem, so ``corpus_id``); every
excerpt is placed by its offsets, checked against its ``content``
(:mod:`structbench.corpus.sourcemap`), never searched for: 97 of the 790 excerpts also occur
elsewhere in their document, where a quote would land on the first occurrence. ``qid`` is
``chroma-<row>`` (the CSV row, from 0), ``qtype`` ``factoid``.

Bad input is a ``ValueError`` naming the file (and row): a missing ``corpora/`` folder or CSV, a missing
column, ``references`` that are not a JSON list of excerpts, an unknown ``corpus_id``, an excerpt
whose offsets do not hold its content or cannot be mapped (a heading line in it).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from pathlib import Path

from structbench.corpus.build import CorpusTables, build_tables, funnel_frame, queries_frame, skipped_frame
from structbench.corpus.markdown import parse_folder, read_utf8
from structbench.corpus.questions import question_funnel, question_rows
from structbench.corpus.verify import assert_verified
from structbench.datamodel import document_texts

QUESTIONS_FILE = "questions_df.csv"
CORPORA_DIR = "corpora"
_COLUMNS = ("question", "references", "corpus_id")


def chroma_files(folder: str | Path) -> tuple[Path, Path]:
    """``(corpora folder, questions CSV)`` of a Chroma benchmark folder; ``ValueError`` naming what is missing."""
    folder = Path(folder)
    corpora, questions = folder / CORPORA_DIR, folder / QUESTIONS_FILE
    for path in (corpora, questions):
        if not path.exists():
            raise ValueError(
                f"chroma corpus {folder}: {path} does not exist (a folder with corpora/*.md and {QUESTIONS_FILE})"
            )
    return corpora, questions


def chroma_records(path: Path) -> Iterator[tuple[str, dict]]:
    """``(where, question record)`` per CSV row, evidence as ``{start, end, quote}`` source ranges."""
    # rows end at \n, \r\n or \r only (the csv module's newline=""), never at a U+2028 inside a question
    reader = csv.DictReader(io.StringIO(read_utf8(path), newline=""))
    missing = [column for column in _COLUMNS if column not in (reader.fieldnames or [])]
    if missing:
        raise ValueError(f"{path}: missing column(s) {missing}; Chroma's questions file has {list(_COLUMNS)}")
    for row_number, row in enumerate(reader):
        where = f"{path}, row {row_number}"
        try:
            references = json.loads(row["references"])
        except json.JSONDecodeError as error:
            raise ValueError(f"{where}: references are not JSON ({error.msg})") from None
        if not isinstance(references, list) or not all(
            isinstance(ref, dict) and {"content", "start_index", "end_index"} <= set(ref) for ref in references
        ):
            raise ValueError(f"{where}: references must be a JSON list of {{content, start_index, end_index}}")
        evidence = [
            {"start": ref["start_index"], "end": ref["end_index"], "quote": ref["content"]} for ref in references
        ]
        record = {"qid": f"chroma-{row_number:04d}", "doc_id": row["corpus_id"], "question": row["question"]}
        yield where, {**record, "evidence": evidence}


def load_chroma(folder: str | Path, corpus: str = "chroma") -> CorpusTables:
    """The Chroma benchmark folder as corpus tables (module docstring), verified."""
    corpora, questions = chroma_files(folder)
    files, docs, skipped, stems, sources = parse_folder(corpora)
    documents, paragraphs, sections = build_tables(corpus, docs)
    assert_verified(paragraphs, sections, documents)
    texts = document_texts(documents)
    skipped_ids = {record for _, record, _ in skipped}
    query_rows = question_rows(chroma_records(questions), corpus, texts, skipped_ids, stems, sources)
    funnel = [
        ("documents", "in", "", len(files)),
        ("documents", "skipped", "no_paragraphs", len(skipped)),
        ("documents", "out", "", len(docs)),
        ("headings", "demoted", "too_long", sum(doc.meta.get("demoted_headings", 0) for doc in docs)),
        *question_funnel(query_rows),
    ]
    return CorpusTables(
        documents=documents,
        paragraphs=paragraphs,
        sections=sections,
        queries=queries_frame(query_rows),
        funnel=funnel_frame(funnel),
        skipped=skipped_frame(skipped),
    )
