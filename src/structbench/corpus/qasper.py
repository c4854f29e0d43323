"""QASPER (Dasigi et al., 2021): NLP papers, their section trees and reader questions (docs/method.md §4).

Inputs (``paths``; splits are merged, the study is not supervised learning):

- the official dict JSON ``{paper_id: {title, abstract, full_text: [{section_name, paragraphs}],
  qas: [{question, question_id, answers: [{answer: {unanswerable, evidence, ...}}]}]}}``;
- the official release tarballs (``qasper-train-dev-v0.3.tgz``, ``qasper-test-and-evaluator-v0.3.tgz``):
  every ``.json`` member whose name names a split (``train``/``dev``/``test``), restricted to
  ``splits`` when given;
- the Hugging Face layout: one or more JSON objects (concatenated, or a JSON array) with ``id`` and
  columnar ``full_text: {section_name: [...], paragraphs: [[...]]}`` and ``qas: {question: [...],
  question_id: [...], answers: [{answer: [...], ...}]}``.

Document decisions:

- Paragraphs are stripped; empty ones are skipped. The abstract is one paragraph forming its own
  level-1 section titled ``"Abstract"`` (QASPER keeps the abstract apart from ``full_text``; the lead
  section therefore exists only in the odd case below).
- Section names nest with ``:::``. A name is split on ``:::`` and each part stripped; empty parts
  are dropped (``"Model details :::  ::: Hyperparameters."`` is ``[Model details, Hyperparameters.]``).
  A null or empty name (no part left) is text whose heading the extraction lost: its paragraphs
  continue the preceding section (a lead section when there is none). A name whose parent is not
  the open section (``Results`` then ``Results ::: A ::: B``) gets the missing ancestors as empty
  sections, so paths keep the names and levels rise one at a time.
- A paper with no paragraphs, a record that is not a paper (missing ``title``/``full_text``, wrong
  types) and a paper id seen earlier (in another file) are skipped and counted with their questions
  uncounted. A file that is not JSON is a ``ValueError`` naming the file, record, line and column.

Question decisions (docs/method.md §17):

- Evidence is the union over annotators who did not mark the question unanswerable (duplicates
  removed). Questions are dropped, in this order, as ``unanswerable`` (every annotator said so),
  ``no_evidence`` (answered without evidence), ``float_only`` (only ``FLOAT SELECTED`` figure/table
  evidence, Kuehlkamp et al.'s "numeric-only") or ``unmappable`` (nothing maps); ``FLOAT SELECTED`` strings
  are dropped from the others. A question without ``question_id``/``question``/``answers`` is
  dropped as ``malformed_question``, and so is one whose ``question_id`` repeats an earlier one or is
  empty or holds whitespace (it could not be one field of a TREC line; listed in ``skipped`` as
  ``duplicate_question_id`` or ``question_id_not_one_field``); one whose text has no readable
  character (empty, whitespace, null, control or format characters only) as ``empty_question``
  (before the others; listed in ``skipped`` by question id): it would be embedded as nothing and scored.
- Each evidence string maps to a span by the first step that succeeds: ``exact`` (equal to a
  paragraph after stripping), ``fuzzy`` (``rapidfuzz.fuzz.ratio`` against each paragraph at least
  ``fuzzy_threshold``; best wins), ``section`` (the string names a section: its full ``:::`` name
  or its own title, case- and whitespace-insensitively, else its own title by the same fuzzy
  ratio; the span covers the section and its subsections; a section with no text maps nothing).
  ``spans`` is the union of the mapped spans; ``meta.span_steps`` gives the step of each span (for
  merged spans, that of the longest part).
- ``qtype`` is the answer type most annotators gave (``extractive``, ``abstractive``, ``yes_no``;
  ties in that order): QASPER's questions are untyped reader questions and this is the one
  typing the data carries.

The funnel reports documents, questions (in, dropped per reason, out), evidence strings (in,
``FLOAT SELECTED`` dropped, matched per step, unmapped) and output spans per step.
"""

from __future__ import annotations

import json
import re
import tarfile
import unicodedata
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path

from rapidfuzz import fuzz, process

from structbench.corpus.build import (
    CorpusTables,
    build_tables,
    flat_text,
    funnel_frame,
    has_visible_text,
    queries_frame,
    skipped_frame,
    union_spans,
)
from structbench.corpus.verify import assert_verified
from structbench.datamodel import ParsedDocument, SectionSpec, is_one_field

FLOAT_PREFIX = "FLOAT SELECTED"
DROP_REASONS = ("malformed_question", "empty_question", "unanswerable", "no_evidence", "float_only", "unmappable")
_SPLIT = re.compile(r"(?:^|[^a-z])(train|dev|test)(?:[^a-z]|$)")


# ---------------------------------------------------------------------------------------------- reading


def _decode(data: bytes, source: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(f"{source}: not valid UTF-8 (byte {error.start})") from None


def _parse_json_stream(text: str, source: str) -> list:
    """All JSON values in ``text`` (one value, or concatenated values as in the HF sample)."""
    decoder = json.JSONDecoder()
    values = []
    position = 0
    length = len(text)
    while True:
        while position < length and text[position].isspace():
            position += 1
        if position >= length:
            break
        try:
            value, position = decoder.raw_decode(text, position)
        except json.JSONDecodeError as error:
            raise ValueError(
                f"{source}: malformed JSON in record {len(values)} at line {error.lineno}, "
                f"column {error.colno}: {error.msg}"
            ) from None
        values.append(value)
    if not values:
        raise ValueError(f"{source}: no JSON records")
    return values


def _hf_to_official(record: dict) -> tuple[str, dict]:
    """One HF columnar record as ``(paper_id, official record)``."""
    full_text = record["full_text"]
    qas = record.get("qas") or {"question": [], "question_id": [], "answers": []}
    sections = [
        {"section_name": name, "paragraphs": paragraphs}
        for name, paragraphs in zip(full_text["section_name"], full_text["paragraphs"], strict=True)
    ]
    questions = []
    for index, question in enumerate(qas["question"]):
        answers = qas["answers"][index]
        questions.append(
            {
                "question": question,
                "question_id": qas["question_id"][index],
                "answers": [{"answer": answer} for answer in answers["answer"]],
            }
        )
    return str(record["id"]), {
        "title": record.get("title"),
        "abstract": record.get("abstract"),
        "full_text": sections,
        "qas": questions,
    }


def _records_from_values(values: list, source: str) -> Iterator[tuple[str, object]]:
    """``(paper_id, record)`` from parsed JSON values in either layout; malformed HF records yield ``(id, None)``."""
    flattened = []
    for value in values:
        flattened.extend(value if isinstance(value, list) else [value])
    for index, value in enumerate(flattened):
        if isinstance(value, dict) and "full_text" in value and "id" in value:
            try:
                yield _hf_to_official(value)
            except (KeyError, TypeError, ValueError, IndexError):
                yield str(value.get("id", f"record {index}")), None
        elif isinstance(value, dict):
            yield from ((str(paper_id), record) for paper_id, record in value.items())
        else:
            yield f"record {index}", None


def read_qasper_records(
    paths: Sequence[str | Path], splits: Sequence[str] | None = None
) -> Iterator[tuple[str, str, object]]:
    """``(source, paper_id, record)`` for every paper in ``paths`` (records unvalidated)."""
    for path in paths:
        path = Path(path)
        if not path.exists():
            raise ValueError(f"QASPER file {path} does not exist")
        if path.name.endswith((".tgz", ".tar.gz", ".tar")):
            with tarfile.open(path) as archive:
                for member in sorted(archive.getmembers(), key=lambda m: m.name):
                    name = Path(member.name).name
                    split = _SPLIT.search(name.lower())
                    if not member.isfile() or not name.endswith(".json") or split is None:
                        continue
                    if splits is not None and split.group(1) not in splits:
                        continue
                    source = f"{path}:{member.name}"
                    handle = archive.extractfile(member)
                    data = handle.read() if handle is not None else b""
                    values = _parse_json_stream(_decode(data, source), source)
                    for paper_id, record in _records_from_values(values, source):
                        yield source, paper_id, record
        else:
            source = str(path)
            values = _parse_json_stream(_decode(path.read_bytes(), source), source)
            for paper_id, record in _records_from_values(values, source):
                yield source, paper_id, record


# ---------------------------------------------------------------------------------------------- documents


def _name_parts(name) -> list[str]:
    if not isinstance(name, str):
        return []
    return [part.strip() for part in name.split(":::") if part.strip()]


def _clean_paragraphs(paragraphs) -> list[str]:
    if not isinstance(paragraphs, list) or not all(isinstance(p, str) for p in paragraphs):
        raise TypeError("paragraphs must be a list of strings")
    return [p.strip() for p in paragraphs if p.strip()]


def parse_paper(paper_id: str, record: dict) -> ParsedDocument:
    """The paper's flat paragraphs and gold section tree. ``TypeError``/``KeyError`` on a malformed record."""
    if not isinstance(record, dict):
        raise TypeError("record is not an object")
    title = record["title"]
    if not isinstance(title, str):
        raise TypeError("title is not a string")
    abstract = record.get("abstract") or ""
    if not isinstance(abstract, str):
        raise TypeError("abstract is not a string")
    full_text = record["full_text"]
    if not isinstance(full_text, list):
        raise TypeError("full_text is not a list")
    paragraphs: list[str] = []
    opened: list[list] = []  # [title, level, para_start]
    open_path: list[str] = []
    if abstract.strip():
        opened.append(["Abstract", 1, 0])
        paragraphs.append(abstract.strip())
    for section in full_text:
        if not isinstance(section, dict):
            raise TypeError("a full_text entry is not an object")
        texts = _clean_paragraphs(section.get("paragraphs") or [])
        parts = _name_parts(section.get("section_name"))
        if not parts:
            if not opened:
                opened.append(["", 1, len(paragraphs)])
        elif parts != open_path:
            common = 0
            while common < min(len(open_path), len(parts) - 1) and open_path[common] == parts[common]:
                common += 1
            for depth in range(common, len(parts)):
                opened.append([parts[depth], depth + 1, len(paragraphs)])
            open_path = parts
        paragraphs.extend(texts)
    specs = [
        SectionSpec(title, level, start, opened[index + 1][2] if index + 1 < len(opened) else len(paragraphs))
        for index, (title, level, start) in enumerate(opened)
    ]
    return ParsedDocument(doc_id=paper_id, title=title.strip() or paper_id, paragraphs=paragraphs, sections=specs)


# ---------------------------------------------------------------------------------------------- evidence


def _normal_title(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split()).rstrip(" .:")


class EvidenceMapper:
    """Maps evidence strings of one paper to content spans: exact, then fuzzy, then section fallback."""

    def __init__(self, doc: ParsedDocument, fuzzy_threshold: float):
        self.threshold = fuzzy_threshold
        self.paragraphs = doc.paragraphs
        _, self.starts, self.ends = flat_text(doc.paragraphs)
        self.exact: dict[str, int] = {}
        for index, paragraph in enumerate(doc.paragraphs):
            self.exact.setdefault(paragraph, index)
        self.section_spans: list[tuple[str, int, int]] = []
        self.section_names: dict[str, tuple[int, int]] = {}
        sections = doc.sections
        ancestors: list[str] = []
        for index, section in enumerate(sections):
            ancestors = ancestors[: section.level - 1] + [section.title]
            end_para = section.para_end
            for later in sections[index + 1 :]:
                if later.level <= section.level:
                    break
                end_para = later.para_end
            if section.title and end_para > section.para_start:
                span = (self.starts[section.para_start], self.ends[end_para - 1])
                self.section_spans.append((_normal_title(section.title), *span))
                self.section_names.setdefault(_normal_title(" ::: ".join(ancestors)), span)

    def map(self, evidence: str) -> tuple[int, int, str] | None:
        text = evidence.strip()
        if text in self.exact:
            index = self.exact[text]
            return self.starts[index], self.ends[index], "exact"
        best = process.extractOne(text, self.paragraphs, scorer=fuzz.ratio, score_cutoff=self.threshold)
        if best is not None:
            index = best[2]
            return self.starts[index], self.ends[index], "fuzzy"
        wanted = _normal_title(" ::: ".join(_name_parts(text)))
        if wanted in self.section_names:
            start, end = self.section_names[wanted]
            return start, end, "section"
        for title, start, end in self.section_spans:
            if title == wanted:
                return start, end, "section"
        if self.section_spans:
            best = process.extractOne(
                wanted, [title for title, _, _ in self.section_spans], scorer=fuzz.ratio, score_cutoff=self.threshold
            )
            if best is not None:
                _, start, end = self.section_spans[best[2]]
                return start, end, "section"
        return None


def _answer_type(answer: dict) -> str | None:
    if answer.get("extractive_spans"):
        return "extractive"
    if (answer.get("free_form_answer") or "").strip():
        return "abstractive"
    if answer.get("yes_no") is not None:
        return "yes_no"
    return None


_QTYPE_ORDER = ("extractive", "abstractive", "yes_no")


def map_question(question: dict, mapper: EvidenceMapper) -> tuple[str, dict | None, Counter]:
    """``(outcome, query fields, evidence counts)``; outcome is ``"out"`` or a drop reason."""
    counts: Counter = Counter()
    if not isinstance(question, dict) or not all(key in question for key in ("question", "question_id", "answers")):
        return "malformed_question", None, counts
    if not isinstance(question["question"], str) or not has_visible_text(question["question"]):
        return "empty_question", None, counts
    answers = [entry.get("answer") if isinstance(entry, dict) else None for entry in question["answers"] or []]
    answers = [answer for answer in answers if isinstance(answer, dict)]
    answering = [answer for answer in answers if not answer.get("unanswerable")]
    if not answering:
        return "unanswerable", None, counts
    evidence: list[str] = []
    for answer in answering:
        for item in answer.get("evidence") or []:
            if isinstance(item, str) and item.strip() and item.strip() not in evidence:
                evidence.append(item.strip())
    if not evidence:
        return "no_evidence", None, counts
    counts["in"] = len(evidence)
    textual = [item for item in evidence if not item.startswith(FLOAT_PREFIX)]
    counts["float_selected"] = len(evidence) - len(textual)
    if not textual:
        return "float_only", None, counts
    located = []
    for item in textual:
        found = mapper.map(item)
        if found is None:
            counts["unmapped"] += 1
        else:
            counts[found[2]] += 1
            located.append(found)
    if not located:
        return "unmappable", None, counts
    spans = union_spans(located)
    types = Counter(t for t in (_answer_type(answer) for answer in answering) if t)
    qtype = max(_QTYPE_ORDER, key=lambda t: (types[t], -_QTYPE_ORDER.index(t))) if types else "none"
    fields = {
        "qid": str(question["question_id"]),
        "text": str(question["question"]).strip(),
        "qtype": qtype,
        "spans": [(start, end) for start, end, _ in spans],
        "meta": {
            "span_steps": [step for _, _, step in spans],
            "evidence_steps": {step: counts[step] for step in ("exact", "fuzzy", "section") if counts[step]},
            "n_evidence": len(evidence),
            "float_selected_dropped": counts["float_selected"],
            "unmapped_evidence": counts["unmapped"],
            "n_annotators": len(answers),
            "answer_types": dict(sorted(types.items())),
        },
    }
    return "out", fields, counts


# ---------------------------------------------------------------------------------------------- loader


def load_qasper(
    paths: Sequence[str | Path],
    corpus: str = "qasper",
    splits: Sequence[str] | None = None,
    fuzzy_threshold: float = 90.0,
    max_docs: int | None = None,
) -> CorpusTables:
    """Load QASPER papers and questions from ``paths`` (see the module docstring for decisions).

    ``max_docs`` stops after that many usable papers (input order), for tiny test runs.
    """
    if isinstance(paths, (str, Path)):
        paths = [paths]
    if not paths:
        raise ValueError("qasper: `paths` is empty")
    docs: list[ParsedDocument] = []
    query_rows: list[dict] = []
    skipped: list[tuple[str, str, str]] = []
    seen_papers: set[str] = set()
    seen_questions: set[str] = set()
    question_outcomes: Counter = Counter()
    evidence_counts: Counter = Counter()
    papers_in = 0
    for source, paper_id, record in read_qasper_records(paths, splits):
        if max_docs is not None and len(docs) >= max_docs:
            break
        papers_in += 1
        if paper_id in seen_papers:
            skipped.append((source, paper_id, "duplicate_paper"))
            continue
        try:
            doc = parse_paper(paper_id, record)
            questions = record.get("qas") or []
            if not isinstance(questions, list):
                raise TypeError("qas is not a list")
        except (KeyError, TypeError, AttributeError) as error:
            skipped.append((source, paper_id, f"malformed_record: {error}"))
            continue
        if not doc.paragraphs:
            skipped.append((source, paper_id, "no_paragraphs"))
            continue
        seen_papers.add(paper_id)
        split = _SPLIT.search(Path(source.split(":")[-1]).name.lower())
        doc.meta = {"source": Path(source).name, "split": split.group(1) if split else None}
        docs.append(doc)
        mapper = EvidenceMapper(doc, fuzzy_threshold)
        for question in questions:
            outcome, fields, counts = map_question(question, mapper)
            if outcome == "out" and not is_one_field(fields["qid"]):
                outcome = "malformed_question"
                skipped.append((source, fields["qid"], "question_id_not_one_field"))
            elif outcome == "out" and fields["qid"] in seen_questions:
                outcome = "malformed_question"
                skipped.append((source, fields["qid"], "duplicate_question_id"))
            if outcome == "empty_question":
                qid = question.get("question_id")
                skipped.append((source, str(qid) if qid is not None else paper_id, "empty_question"))
            question_outcomes[outcome] += 1
            evidence_counts.update(counts)
            if outcome == "out":
                seen_questions.add(fields["qid"])
                query_rows.append({**fields, "corpus": corpus, "doc_id": paper_id})
    if not docs:
        raise ValueError(f"qasper: no usable papers in {list(map(str, paths))}")
    documents, paragraphs, sections = build_tables(corpus, docs)
    assert_verified(paragraphs, sections, documents)
    span_steps = Counter(step for row in query_rows for step in row["meta"]["span_steps"])
    question_skips = ("duplicate_question_id", "question_id_not_one_field", "empty_question")
    skip_reasons = Counter(reason.split(":")[0] for _, _, reason in skipped if reason not in question_skips)
    funnel = [("documents", "in", "", papers_in)]
    funnel += [("documents", "skipped", reason, count) for reason, count in sorted(skip_reasons.items())]
    funnel += [("documents", "out", "", len(docs))]
    funnel += [("questions", "in", "", sum(question_outcomes.values()))]
    funnel += [("questions", "dropped", reason, question_outcomes[reason]) for reason in DROP_REASONS]
    funnel += [("questions", "out", "", question_outcomes["out"])]
    funnel += [
        ("evidence", "in", "", evidence_counts["in"]),
        ("evidence", "dropped", "float_selected", evidence_counts["float_selected"]),
        ("evidence", "matched", "exact", evidence_counts["exact"]),
        ("evidence", "matched", "fuzzy", evidence_counts["fuzzy"]),
        ("evidence", "matched", "section", evidence_counts["section"]),
        ("evidence", "dropped", "unmapped", evidence_counts["unmapped"]),
        ("spans", "out", "", sum(span_steps.values())),
    ]
    funnel += [("spans", "matched", step, span_steps[step]) for step in ("exact", "fuzzy", "section")]
    return CorpusTables(
        documents=documents,
        paragraphs=paragraphs,
        sections=sections,
        queries=queries_frame(query_rows),
        funnel=funnel_frame(funnel),
        skipped=skipped_frame(skipped),
    )
