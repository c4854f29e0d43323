"""The questions file of a Markdown corpus and its evidence locator: each question's evidence as spans of
its document's flat text.

Questions file (``questions_path`` of :func:`structbench.corpus.markdown.load_markdown_folder`): JSONL, one
object per line (blank lines allowed)::

    {"qid": "kb-001", "doc_id": "<file stem>", "question": "...", "qtype": "factoid",
     "evidence": ["verbatim quote", ...]}

An evidence item is a verbatim quote or a character range of the document's source file,
``{"start": 120, "end": 180}`` or ``{"start": 120, "end": 180, "quote": "..."}`` (Python string offsets
into the file as written, as Chroma's ``start_index``/``end_index``; ``quote``, when given, must equal
the file's text there). A range places its evidence exactly, where a quote that occurs twice is placed
at its first occurrence; it maps to the flat text through :mod:`structbench.corpus.sourcemap` (span
step ``offsets``). A range outside the file, one that does not match its quote, one holding heading,
front-matter or thematic-break characters (not flat text) or only whitespace is a
``SourceRangeError`` (a ``ValueError``) naming the file, line and question.

``qtype`` is optional (default ``"factoid"``) and one of ``QUERY_TYPES`` (``factoid``, ``underspecified``,
``multihop``, ``structural``: the kinds query generation samples, so the report's per-type tables line up);
any other value is a ``ValueError`` naming the question and listing them. A quote is verbatim *source*
text: the Markdown as written (inline markup, link syntax and escapes included), not the rendered page;
a heading line is not body text and is never found. Each quote maps to content offsets by exact
substring search in the document's flat text (first occurrence; the count is kept in ``meta``), then by
whitespace-normalized search mapped back to original offsets: every run of whitespace (spaces, tabs,
line breaks, the blank line between two paragraphs) in the quote and the text reads as one space.
A quote found neither way, an unknown ``doc_id``, a duplicate ``qid``, a missing key, a question whose
text is null, not a string or holds no character the tokenizer reads (:func:`structbench.corpus.build.
has_visible_text`: empty, whitespace, control, format, combining or private-use characters only), a line
that is not JSON (or nests deeper than Python's JSON reader goes), or a string holding half a UTF-16 pair
(a lone ``\\ud800`` escape, which UTF-8 cannot hold) is a :class:`QuestionsError` (a
``ValueError``) naming the file, the line and the question. A ``qid`` is a string (or an integer) that is one
field of a TREC line (:func:`structbench.datamodel.is_one_field`: non-empty, no whitespace), refused here,
before any job, rather than by ``structbench export`` at the end. Lines end at ``\\n`` (``\\r\\n`` too) and
nowhere else: U+2028 and the other characters ``str.splitlines`` breaks at may stand raw inside a JSON string
(``json.dumps(..., ensure_ascii=False)`` writes them so). ``spans`` is the union of the quotes' spans;
``meta`` holds ``span_steps`` (``exact`` or ``normalized`` per span) and the quotes.
"""

from __future__ import annotations

import json
import re
import reprlib
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

from structbench.corpus.build import has_visible_text, union_spans
from structbench.corpus.sourcemap import SourceMap, SourceRangeError
from structbench.datamodel import QUERY_TYPES, is_one_field


class QuestionsError(ValueError):
    """A questions file that cannot be read as questions; the message names the file, the line and the question."""


_SHOWN = reprlib.Repr()
_SHOWN.maxstring = _SHOWN.maxother = _SHOWN.maxlong = 80


def shown(value) -> str:
    """``value`` as an error message names it: its repr, strings cut to about 80 characters and containers to a
    few items and levels (:mod:`reprlib`), so the message for a megabyte-long question or a deeply nested qid is
    one line."""
    return _SHOWN.repr(value)


def question_funnel(
    query_rows: list[dict], skipped: Mapping[str, int] | None = None
) -> list[tuple[str, str, str, int]]:
    """Funnel rows of loaded questions: counts in, skipped (``skipped``: questions per reason, where a loader
    skips some) and out, and how each span was matched."""
    steps = [step for row in query_rows for step in row["meta"]["span_steps"]]
    skipped = dict(skipped or {})
    rows = [
        ("questions", "in", "", len(query_rows) + sum(skipped.values())),
        *(("questions", "skipped", reason, count) for reason, count in skipped.items()),
        ("questions", "out", "", len(query_rows)),
        ("spans", "out", "", len(steps)),
        ("spans", "matched", "exact", steps.count("exact")),
        ("spans", "matched", "normalized", steps.count("normalized")),
    ]
    # only where ranges were given: a quotes-only corpus keeps the funnel it always had
    return rows + ([("spans", "matched", "offsets", steps.count("offsets"))] if "offsets" in steps else [])


class _NormalizedText:
    """A text with whitespace runs collapsed to one space, and the map back to original offsets."""

    def __init__(self, text: str):
        pieces: list[str] = []
        positions: list[int] = []
        for match in re.finditer(r"\s+|\S+", text):
            if match.group().isspace():
                pieces.append(" ")
                positions.append(match.start())
            else:
                pieces.append(match.group())
                positions.extend(range(match.start(), match.end()))
        self.text = "".join(pieces)
        self.positions = positions

    def find(self, quote: str) -> tuple[int, int] | None:
        needle = " ".join(quote.split())
        at = self.text.find(needle)
        if at < 0:
            return None
        return self.positions[at], self.positions[at + len(needle) - 1] + 1


def locate_quote(text: str, quote: str, normalized: _NormalizedText | None = None) -> tuple[int, int, str, int] | None:
    """``(start, end, step, occurrences)`` of ``quote`` in ``text`` (step ``exact`` or ``normalized``)."""
    at = text.find(quote)
    if at >= 0:
        return at, at + len(quote), "exact", text.count(quote)
    normalized = normalized or _NormalizedText(text)
    found = normalized.find(quote)
    if found is None:
        return None
    return found[0], found[1], "normalized", normalized.text.count(" ".join(quote.split()))


def jsonl_lines(text: str) -> Iterator[str]:
    """The lines of JSONL ``text``: split at ``\\n`` only (a ``\\r`` before it is JSON whitespace), never at the
    other line breaks ``str.splitlines`` knows (U+2028, U+0085, ``\\x1c``...), which a JSON string may hold raw.
    One line at a time, so a large file is not held twice."""
    start = 0
    while start < len(text):
        end = text.find("\n", start)
        end = len(text) if end < 0 else end
        yield text[start:end]
        start = end + 1


def json_object(line: str, where: str) -> dict:
    """The JSON object on one line at ``where``; a :class:`QuestionsError` naming it for anything else: not
    JSON, JSON that is not an object, or nesting deeper than Python's JSON reader goes (its ``RecursionError``)."""
    try:
        record = json.loads(line)
    except json.JSONDecodeError as error:
        raise QuestionsError(f"{where}: not a JSON object ({error.msg})") from None
    except RecursionError:
        raise QuestionsError(f"{where}: not a JSON object (nested deeper than Python's JSON reader goes)") from None
    if not isinstance(record, dict):
        raise QuestionsError(f"{where}: not a JSON object")
    surrogate = lone_surrogate(record)
    if surrogate is not None:
        raise QuestionsError(
            f"{where}: a JSON string holds \\u{ord(surrogate):04x}, half of a UTF-16 pair without its other half, "
            "which no UTF-8 text can hold (write the character itself, or both halves of its pair)"
        )
    return record


_SURROGATE = re.compile("[\ud800-\udfff]")


def lone_surrogate(record: dict) -> str | None:
    """The first lone surrogate (U+D800..U+DFFF) in any string of ``record``, keys included, else None. JSON's
    ``\\ud800`` escape decodes to one, which the tables' UTF-8 cannot hold: unchecked, it fails when the
    corpus is written, naming no line. Iterative, as a record may nest as deep as the JSON reader goes."""
    stack: list = [record]
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            found = _SURROGATE.search(value)
            if found:
                return found.group()
        elif isinstance(value, dict):
            stack.extend(value.items())
        elif isinstance(value, (list, tuple)):
            stack.extend(value)
    return None


def jsonl_records(text: str, path: str | Path) -> Iterator[tuple[str, dict]]:
    """``(where, record)`` for every non-blank line of the JSONL questions file ``path`` whose text is ``text``."""
    for line_number, line in enumerate(jsonl_lines(text), start=1):
        if line.strip():
            where = f"{path}, line {line_number}"
            yield where, json_object(line, where)


def question_id(value, place: str) -> str:
    """A record's ``qid`` as a string: a string or an integer that is one field of a TREC line (non-empty, no
    whitespace), else a :class:`QuestionsError` naming ``place`` and the value. Checked at the corpus step so a
    qid ``structbench export`` would refuse at the end never runs a job."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise QuestionsError(f"{place}: qid {shown(value)} is not a string")
    qid = str(value)
    if not is_one_field(qid):
        raise QuestionsError(
            f"{place}: qid {shown(qid)} is empty or holds whitespace; a qid is one field of a TREC run line "
            "(letters, digits and punctuation such as kb-001)"
        )
    return qid


def _locate_range(item: dict, source_map: SourceMap, text: str, where: str) -> tuple[int, int, str, int]:
    """``(start, end, "offsets", 1)`` of a ``{start, end[, quote]}`` evidence item (source offsets)."""
    unknown = sorted(set(item) - {"start", "end", "quote"})
    if unknown:
        raise QuestionsError(
            f"{where}: evidence range {shown(item)} has unknown key(s) {shown(unknown)} (start, end, quote)"
        )
    start, end = item.get("start"), item.get("end")
    if not all(isinstance(value, int) and not isinstance(value, bool) for value in (start, end)):
        raise QuestionsError(f"{where}: evidence range {shown(item)} needs integer 'start' and 'end' (source offsets)")
    quote = item.get("quote")
    if quote is not None:
        if not isinstance(quote, str):
            raise QuestionsError(f"{where}: evidence range {shown(item)}: 'quote' is not a string")
        found = source_map.source[start:end] if 0 <= start <= end else ""
        if found != quote:
            raise SourceRangeError(
                f"{where}: evidence range [{start}, {end}) does not match its quote: the source has "
                f"{found[:120]!r}, the quote is {quote[:120]!r}"
            )
    try:
        flat_start, flat_end = source_map.to_flat(start, end)
    except SourceRangeError as error:
        raise SourceRangeError(f"{where}: evidence {error}") from None
    if not text[flat_start:flat_end].strip():
        raise SourceRangeError(f"{where}: evidence range [{start}, {end}) holds only whitespace")
    return flat_start, flat_end, "offsets", 1


def _locate_evidence(
    evidence: list,
    doc_id: str,
    where: str,
    texts: dict[str, str],
    normalized_cache: dict[str, _NormalizedText],
    sources: Mapping[str, SourceMap | tuple[str, list[str], list[list[int]]]],
    maps: dict[str, SourceMap],
    files: dict[str, Path],
) -> tuple[list[tuple[int, int, str]], list[int]]:
    """Flat ``(start, end, step)`` and occurrence count of every evidence item (quote or source range)."""
    text = texts[doc_id]
    located: list[tuple[int, int, str]] = []
    occurrences: list[int] = []
    for item in evidence:
        if isinstance(item, dict):
            if doc_id not in maps:  # built only for documents with ranges: a map holds ints per character
                given = sources[doc_id]  # a map (a reader that builds its own) or the arguments of one
                maps[doc_id] = given if isinstance(given, SourceMap) else SourceMap(*given)
            found = _locate_range(item, maps[doc_id], text, where)
        else:
            if not isinstance(item, str) or not item.strip():
                raise QuestionsError(f"{where}: evidence quote {shown(item)} is empty or not a string")
            if doc_id not in normalized_cache and item not in text:
                normalized_cache[doc_id] = _NormalizedText(text)
            found = locate_quote(text, item, normalized_cache.get(doc_id))
            if found is None:
                raise QuestionsError(f"{where}: evidence quote not found in {files[doc_id]}: {item[:200]!r}")
        located.append(found[:3])
        occurrences.append(found[3])
    return located, occurrences


def question_type(value, where: str) -> str:
    """A question's ``qtype``: ``"factoid"`` when absent or null, else one of ``QUERY_TYPES`` (a named error)."""
    if value is None:
        return "factoid"
    if value not in QUERY_TYPES:
        raise QuestionsError(f"{where}: qtype {shown(value)} is not one of {list(QUERY_TYPES)}")
    return value


def question_rows(
    records: Iterable[tuple[str, dict]],
    corpus: str,
    texts: dict[str, str],
    skipped_ids: set[str],
    files: dict[str, Path],
    sources: Mapping[str, SourceMap | tuple[str, list[str], list[list[int]]]],
) -> list[dict]:
    """Query rows of ``(where, record)`` question records (the JSONL layout of the module docstring)."""
    rows: list[dict] = []
    seen: set[str] = set()
    normalized_cache: dict[str, _NormalizedText] = {}
    maps: dict[str, SourceMap] = {}
    for place, record in records:
        missing = [key for key in ("qid", "doc_id", "question", "evidence") if key not in record]
        if missing:
            raise QuestionsError(f"{place}: question is missing {missing}")
        qid, doc_id = question_id(record["qid"], place), str(record["doc_id"])
        where = f"{place}, question {shown(qid)}"
        if qid in seen:
            raise QuestionsError(f"{where}: duplicate qid")
        seen.add(qid)
        question = record["question"]
        if question is not None and not isinstance(question, str):
            raise QuestionsError(f"{where}: question text is not a string ({shown(question)})")
        if question is None or not has_visible_text(question):
            raise QuestionsError(
                f"{where}: question has no text ({shown(question)}: whitespace, control, format, combining or "
                "private-use characters only, which the tokenizer reads as no tokens); it cannot be embedded"
            )
        if doc_id not in texts:
            why = "was skipped (no paragraphs)" if doc_id in skipped_ids else "is not a file stem in the folder"
            raise QuestionsError(f"{where}: doc_id {shown(doc_id)} {why}")
        evidence = record["evidence"]
        if isinstance(evidence, str) or not isinstance(evidence, list) or not evidence:
            raise QuestionsError(
                f"{where}: evidence must be a non-empty list of verbatim quotes or {{start, end}} ranges"
            )
        located, occurrences = _locate_evidence(evidence, doc_id, where, texts, normalized_cache, sources, maps, files)
        spans = union_spans(located)
        rows.append(
            {
                "qid": qid,
                "corpus": corpus,
                "doc_id": doc_id,
                "text": question,
                "qtype": question_type(record.get("qtype"), where),
                "spans": [(start, end) for start, end, _ in spans],
                "meta": {
                    "span_steps": [step for _, _, step in spans],
                    "evidence": evidence,
                    "evidence_occurrences": occurrences,
                },
            }
        )
    return rows
