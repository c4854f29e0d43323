"""Chroma's general chunking evaluation as a corpus (``kind: chroma``; docs/method.md §3, "Evidence by offsets").

Smith & Troynikov, "Evaluating Chunking Strategies for Retrieval" (Chroma technical report, 2024), ship
their benchmark as a folder (``chunking_evaluation/evaluation_framework/general_evaluation_data/``):
``corpora/<corpus_id>.md``, one document each, and ``questions_df.csv`` with columns ``question``,
``references`` (a JSON list of ``{content, start_index, end_index}`` excerpts, offsets into the
corpus file's text) and ``corpus_id``. Every excerpt is placed by its offsets, checked against its
``content`` (:mod:`structbench.corpus.sourcemap`), never searched for: 97 of the 790 excerpts also occur
elsewhere in their document, where a quote would land on the first occurrence. ``qid`` is
``chroma-<row>`` (the CSV row, from 0, whichever files are read), ``qtype`` ``factoid``.

Two readings of the files (``markup``):

- ``markdown`` (the default): each file is one document read as the Markdown corpus reads its files
  (:func:`structbench.corpus.markdown.parse_markdown`: ``doc_id`` = file stem, so ``corpus_id``). A file
  without Markdown headings is one document with no sections (all five of Chroma's are).
- ``wikitext``: each file is WikiText, as ``wikitexts.md`` is (Wikipedia Good/Featured articles as WikiText-2
  writes them: one paragraph or heading per line, no blank line): read as articles at its level-1
  ``= Title =`` lines, sections at ``= = Section = =`` lines, false titles glued back
  (:func:`structbench.corpus.wikitext.read_wikitext_verbatim`, text kept as written, since the excerpts are
  verbatim substrings of the tokenized file). ``doc_id`` is the article's title. A question belongs to the
  article holding its excerpts, found by their offsets; a question none can be given to is skipped and
  counted, never dropped unseen: excerpts in two articles (``across_articles``), before the first title
  (``before_first_title``), or holding heading text, which is not document text (``on_heading``). The funnel
  counts questions in, skipped per reason and out, and every excerpt: matched, unmapped per reason, or dropped
  with its question; the skipped table names each skipped question.

``corpus_ids`` (default: every file) reads only the named files; the other files' questions are counted as
not selected. Bad input is a ``ValueError`` naming the file (and row): a missing ``corpora/`` folder or CSV, a
``corpus_ids`` entry with no file, a missing column, ``references`` that are not a JSON list of excerpts with
integer offsets, an unknown ``corpus_id``, an excerpt whose offsets do not hold its content or (Markdown) cannot
be mapped (a heading line in it), a file read as WikiText that has no ``= Title =`` line.
"""

from __future__ import annotations

import bisect
import csv
import io
import json
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path

from structbench.corpus.build import CorpusTables, build_tables, funnel_frame, queries_frame, skipped_frame
from structbench.corpus.markdown import markdown_files, parse_folder, read_utf8
from structbench.corpus.questions import question_funnel, question_rows
from structbench.corpus.sourcemap import SourceRangeError
from structbench.corpus.verify import assert_verified
from structbench.corpus.wikitext import VerbatimArticle, read_wikitext_verbatim
from structbench.datamodel import ParsedDocument, document_texts

QUESTIONS_FILE = "questions_df.csv"
CORPORA_DIR = "corpora"
MARKUPS = ("markdown", "wikitext")
# why a question of a WikiText file is given to no article (module docstring), in the funnel's order
UNPLACED = ("before_first_title", "across_articles", "on_heading")
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


def corpus_files(corpora: Path, corpus_ids: Sequence[str] | None = None) -> list[Path]:
    """The corpus files read: every ``*.md`` of ``corpora``, or those whose stem ``corpus_ids`` names (a
    ``ValueError`` naming an id with no file, and the ids there are)."""
    files = markdown_files(corpora)
    if corpus_ids is None:
        return files
    stems = {path.stem for path in files}
    missing = [corpus_id for corpus_id in corpus_ids if corpus_id not in stems]
    if missing:
        raise ValueError(
            f"chroma corpus {corpora}: corpus_ids {missing} have no file {CORPORA_DIR}/<id>.md "
            f"(the files there: {sorted(stems)})"
        )
    return [path for path in files if path.stem in set(corpus_ids)]


def check_options(corpus_ids, markup) -> None:
    """``corpus_ids`` (null, or a non-empty list of distinct non-empty strings) and ``markup`` (one of
    ``MARKUPS``), else a ``ValueError`` naming the key and the value."""
    if markup not in MARKUPS:
        raise ValueError(f"corpus spec (chroma) key 'markup' must be one of {list(MARKUPS)}, got {markup!r}")
    if corpus_ids is None:
        return
    if (
        isinstance(corpus_ids, str)
        or not isinstance(corpus_ids, list)
        or not corpus_ids
        or not all(isinstance(corpus_id, str) and corpus_id for corpus_id in corpus_ids)
        or len(set(corpus_ids)) != len(corpus_ids)
    ):
        raise ValueError(
            "corpus spec (chroma) key 'corpus_ids' must be a list of distinct file stems of corpora/*.md "
            f"(e.g. [wikitexts]), got {corpus_ids!r}"
        )


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


def load_chroma(
    folder: str | Path, corpus: str = "chroma", corpus_ids: Sequence[str] | None = None, markup: str = "markdown"
) -> CorpusTables:
    """The Chroma benchmark folder as corpus tables (module docstring), verified."""
    check_options(corpus_ids, markup)
    corpora, questions = chroma_files(folder)
    every_id = {path.stem for path in markdown_files(corpora)}
    files = corpus_files(corpora, corpus_ids)
    selected = {path.stem for path in files}
    records, not_selected = [], 0
    for where, record in chroma_records(questions):
        if record["doc_id"] in every_id and record["doc_id"] not in selected:
            not_selected += 1  # another file's question; an id with no file at all stays, to be named below
        else:
            records.append((where, record))
    read = _read_wikitext if markup == "wikitext" else _read_markdown
    selection = [] if corpus_ids is None else [("questions", "not_selected", "other_corpus_id", not_selected)]
    return read(corpora, files, records, corpus, selection)


def _read_markdown(corpora: Path, files: list[Path], records: list, corpus: str, selection: list) -> CorpusTables:
    """Each file one Markdown document (``doc_id`` = its stem), its questions placed by their offsets."""
    files, docs, skipped, stems, sources = parse_folder(corpora, files)
    documents, paragraphs, sections = build_tables(corpus, docs)
    assert_verified(paragraphs, sections, documents)
    texts = document_texts(documents)
    skipped_ids = {record for _, record, _ in skipped}
    query_rows = question_rows(records, corpus, texts, skipped_ids, stems, sources)
    funnel = [
        ("documents", "in", "", len(files)),
        ("documents", "skipped", "no_paragraphs", len(skipped)),
        ("documents", "out", "", len(docs)),
        ("headings", "demoted", "too_long", sum(doc.meta.get("demoted_headings", 0) for doc in docs)),
        *selection,
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


def _read_wikitext(corpora: Path, files: list[Path], records: list, corpus: str, selection: list) -> CorpusTables:
    """Each file WikiText: its articles the documents, each question given to the article of its excerpts."""
    docs: list[ParsedDocument] = []
    skipped: list[tuple[str, str, str]] = []
    by_file: dict[str, list[VerbatimArticle]] = {}
    doc_files: dict[str, Path] = {}
    articles_in = glued = before_first_title = 0
    for path in files:
        articles, before = read_wikitext_verbatim(read_utf8(path), source=path.relative_to(corpora).as_posix())
        if not articles:
            raise ValueError(
                f"{path}: no ' = Title = ' line, so no WikiText article (markup: wikitext reads every selected "
                "file as WikiText; corpus_ids selects the files that are)"
            )
        by_file[path.stem] = articles
        articles_in += len(articles)
        before_first_title += before
        for article in articles:
            document = article.document
            glued += document.meta["glued_fragments"]
            if not document.paragraphs:
                skipped.append((str(path), document.doc_id, "no_paragraphs"))
                continue
            if document.doc_id in doc_files:
                raise ValueError(f"{path}: article {document.doc_id!r} is also one of {doc_files[document.doc_id]}")
            docs.append(document)
            doc_files[document.doc_id] = path
    documents, paragraphs, sections = build_tables(corpus, docs)
    assert_verified(paragraphs, sections, documents)
    texts = document_texts(documents)
    skipped_ids = {record for _, record, _ in skipped}
    placed, question_reasons, excerpt_outcomes = [], Counter(dict.fromkeys(UNPLACED, 0)), Counter()
    for where, record in records:
        articles = by_file.get(record["doc_id"])
        if articles is None:  # an id with no file: question_rows names it
            placed.append((where, record))
            continue
        home, reasons = place_in_article(record["evidence"], articles)
        if home is None:
            reason = next(reason for reason in reasons if reason)
            question_reasons[reason] += 1
            skipped.append((where, record["qid"], reason))
            excerpt_outcomes.update(f"unmapped:{r}" if r else "dropped:question_skipped" for r in reasons)
            continue
        excerpt_outcomes["matched"] += len(record["evidence"])
        placed.append((where, {**record, "doc_id": home.document.doc_id}))
    sources = {article.document.doc_id: article.source_map for articles in by_file.values() for article in articles}
    query_rows = question_rows(placed, corpus, texts, skipped_ids, doc_files, sources)
    funnel = [
        ("documents", "in", "", articles_in),
        ("documents", "skipped", "no_paragraphs", sum(1 for row in skipped if row[2] == "no_paragraphs")),
        ("documents", "out", "", len(docs)),
        ("headings", "glued", "false_title", glued),
        ("paragraphs", "dropped", "before_first_title", before_first_title),
        *selection,
        *question_funnel(query_rows, question_reasons),
        ("evidence", "in", "", sum(excerpt_outcomes.values())),
        ("evidence", "matched", "offsets", excerpt_outcomes["matched"]),
        *(("evidence", "unmapped", reason, excerpt_outcomes[f"unmapped:{reason}"]) for reason in UNPLACED),
        ("evidence", "dropped", "question_skipped", excerpt_outcomes["dropped:question_skipped"]),
    ]
    return CorpusTables(
        documents=documents,
        paragraphs=paragraphs,
        sections=sections,
        queries=queries_frame(query_rows),
        funnel=funnel_frame(funnel),
        skipped=skipped_frame(skipped),
    )


def place_in_article(
    evidence: list[dict], articles: Sequence[VerbatimArticle]
) -> tuple[VerbatimArticle | None, list[str]]:
    """The article that holds every excerpt of a question, or ``None`` and why each excerpt cannot be placed.

    An excerpt lies in the article whose file characters (its title line up to the next title line) hold its
    first and last visible characters. The question has an article when every excerpt lies in the same one
    and maps onto its flat text; the reasons (one per excerpt: ``""`` for one that would map, else one of
    ``UNPLACED``) say otherwise. An excerpt that is not a range of the file at all (offsets that are not
    integers, outside the file, or not holding its content) places the question in the first article, where
    :func:`~structbench.corpus.questions.question_rows` names it as the Markdown reading does.
    """
    source = articles[0].source_map.source
    bounds = [article.span[0] for article in articles]
    located: list[tuple[int | None, str]] = []  # (article index, "") or (None, reason)
    for item in evidence:
        start, end, quote = item["start"], item["end"], item["quote"]
        ranged = all(isinstance(value, int) and not isinstance(value, bool) for value in (start, end))
        if not ranged or not 0 <= start < end <= len(source) or source[start:end] != quote or not quote.strip():
            return articles[0], []
        first = start + len(quote) - len(quote.lstrip())
        last = end - (len(quote) - len(quote.rstrip())) - 1
        at_first, at_last = bisect.bisect_right(bounds, first) - 1, bisect.bisect_right(bounds, last) - 1
        if at_last < 0:
            located.append((None, "before_first_title"))
        elif at_first != at_last:
            located.append((None, "across_articles"))
        else:
            located.append((at_first, ""))
    homes = {home for home, _ in located if home is not None}
    if not located:  # no excerpt: question_rows names it
        return articles[0], []
    reasons: list[str] = []
    for item, (home, reason) in zip(evidence, located, strict=True):
        if reason or len(homes) > 1:
            reasons.append(reason or "across_articles")
            continue
        try:
            articles[home].source_map.to_flat(item["start"], item["end"])
            reasons.append("")
        except SourceRangeError:
            reasons.append("on_heading")
    if any(reasons):
        return None, reasons
    return articles[homes.pop()], reasons
