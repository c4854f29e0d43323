"""Structure induction by an LLM (docs/method.md §5; Kuehlkamp et al., appendix H).

The model sees a document's paragraphs with every heading stripped, each prefixed by its 1-based
number in square brackets, and answers ``{"sections": [{"title", "level", "first", "last"}, ...]}``
where ``first``/``last`` are paragraph numbers (both included) and ``level`` is the true depth below the
document title (1 = top level). The protocol, per document:

1. **Check** (:func:`check_sections`): the sections must tile the paragraphs exactly (the first starts at
   the first paragraph, each next one right after the previous one ends, the last ends at the last
   paragraph; none reversed or out of range), the first has level 1, and a level rises by at most one
   between consecutive sections. A missing or non-JSON answer is a violation too, and so is every
   breach of the window's bounded schema (:func:`induction_schema`: a title over ``TITLE_CHARS``
   characters, a level over ``MAX_LEVEL``, a number outside the window, ...), whatever the server
   returned: a server that ignores ``response_format`` is held to the schema all the same. Requests
   carry that schema plus ``max_sections`` (a bound that lets a constrained answer close its JSON
   within the token cap; an answer that closed it is not held to it), which constrained backends
   decode under; answers are still read with the lenient :data:`SCHEMA`, so an unconstrained answer
   out of range reaches the check and the repair rather than failing outright.
2. **One self-correction round** for an answer that fails: the conversation goes back to the model with
   its answer and the list of its specific violations (``prompts/induce_correction.txt``).
3. **Deterministic repair** (:func:`repair_sections`) of an answer still failing: each section runs from
   its own first paragraph to the paragraph before the next section's first, so gaps join the
   preceding section and overlaps are cut at the later start; out-of-range numbers are clipped, reversed
   or fully out-of-range sections dropped; a section sharing its start with a deeper one becomes its
   empty parent heading; a level rising by more than one is lowered to one more than the previous
   level; a title over ``TITLE_CHARS`` characters is cut to the bound (:func:`bound_titles`: whole
   grapheme clusters, back to a word boundary, ending in "…"; counted in ``shortened_titles``). An
   answer with no usable section at all becomes a single untitled section over the whole document (the
   lead-section convention: its path is the document title alone). No title leaves this module longer
   than ``TITLE_CHARS``; a level over ``MAX_LEVEL`` is clamped in storage (below).
4. **Status** per document: ``usable`` (an answer passed the check, in round 1 or after correction),
   ``repaired`` (the repair changed the answer), ``failed`` (no usable section: the single-section
   fallback), with the reason.

**Long documents** are never truncated silently. When the numbered paragraphs do not fit the model's
context (less room for the answer and for a correction round), the document is induced in windows of
consecutive paragraphs that overlap by ``overlap_paragraphs``; each window is checked, corrected and
repaired against its own paragraph range; consecutive windows are stitched at a section start that the
later window places inside the overlap (the one nearest the overlap's middle); when it places none, the
section crossing the seam continues (the earlier window's last section absorbs the later window's first).
The stitched whole is then checked and repaired as one document. A single paragraph longer than a whole
window is shown clipped (counted in ``clipped_paragraphs``); ``paragraph_chars`` clips every paragraph's
display on purpose (also counted), which shortens prompts for small models.

Levels deeper than ``MAX_LEVEL`` are stored clamped; paths keep the true depth (``corpus.build``).
Sections and paths are built by the same function as gold sections (``corpus.build.build_tables``) and
verified with ``corpus.verify.verify_sections``.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace

import polars as pl

from structbench.corpus.verify import verify_sections
from structbench.datamodel import MAX_LEVEL, SectionSpec
from structbench.defaults import CLIP_MARK
from structbench.graphemes import bounded_title
from structbench.llm import (
    LLM,
    ChatRequest,
    ChatResponse,
    JSONOutputError,
    load_prompt,
    parse_json_output,
    schema_violations,
)
from structbench.structure.sections import (  # noqa: F401  (re-exported: the protocol's vocabulary)
    STATUS,
    TITLE_CHARS,
    InducedSection,
    check_sections,
    paragraph_texts,
    sections_table,
)

log = logging.getLogger(__name__)

SCHEMA = {
    "type": "object",
    "properties": {
        "sections": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "title": {"type": "string"},
                    "level": {"type": "integer"},
                    "first": {"type": "integer"},
                    "last": {"type": "integer"},
                },
                "required": ["title", "level", "first", "last"],
            },
        },
    },
    "required": ["sections"],
}
# Answer tokens one section object takes at most, about: {"title": "<up to TITLE_CHARS characters>", "level": 1,
# "first": 12, "last": 14}, is ~33 tokens with a 36-character title for SmolLM2's tokenizer; the
# "sections" wrapper takes ~8. They bound the sections an answer can hold within its token cap.
SECTION_TOKENS = 40
WRAPPER_TOKENS = 8


def sections_that_fit(answer_tokens: int) -> int:
    """The most sections a constrained answer can close within ``answer_tokens`` (at least 1)."""
    return max(1, (answer_tokens - WRAPPER_TOKENS) // SECTION_TOKENS)


def induction_schema(first: int, last: int, max_sections: int | None = None) -> dict:
    """The answer schema of a window of paragraphs ``first..last``: :data:`SCHEMA` with the bounds the
    protocol knows (paragraph numbers in the window, levels 1..MAX_LEVEL, a title of 1..TITLE_CHARS
    characters, 1..(paragraphs in the window) sections, at most ``max_sections`` of them, no other keys).
    A backend that decodes under it cannot answer out of range; an answer that breaks only these bounds
    (a server ignoring the schema) is still read with the lenient :data:`SCHEMA` and goes through the
    check and the repair.

    ``max_sections`` (:func:`sections_that_fit` of the answer's token cap, in :func:`induce_structure`)
    keeps a constrained answer short enough to close its JSON: SmolLM2 under the grammar otherwise lists
    near-identical sections until ``max_new_tokens`` cuts the answer, which is then no JSON at all."""
    items = last - first + 1 if max_sections is None else max(1, min(last - first + 1, max_sections))
    number = {"type": "integer", "minimum": first, "maximum": last}
    section = {
        "type": "object",
        "properties": {
            "title": {"type": "string", "minLength": 1, "maxLength": TITLE_CHARS},
            "level": {"type": "integer", "minimum": 1, "maximum": MAX_LEVEL},
            "first": number,
            "last": number,
        },
        "required": ["title", "level", "first", "last"],
        "additionalProperties": False,
    }
    return {
        "type": "object",
        "properties": {"sections": {"type": "array", "items": section, "minItems": 1, "maxItems": items}},
        "required": ["sections"],
        "additionalProperties": False,
    }


UNTITLED = "Untitled section"
CORRECTION_RESERVE = 256  # prompt tokens kept free for the correction message and its violation list


@dataclass(frozen=True)
class Window:
    """Paragraphs ``first..last`` (1-based, included) of one document, rendered for the prompt."""

    doc_id: str
    first: int
    last: int
    lines: tuple[str, ...]
    clipped: int


# ---------------------------------------------------------------------------------------------- check


def sections_from_answer(value) -> list[InducedSection]:
    """The sections of a schema-valid answer (``{"sections": [...]}``), titles stripped."""
    return [
        InducedSection(str(item["title"]).strip(), int(item["level"]), int(item["first"]), int(item["last"]))
        for item in value["sections"]
    ]


# --------------------------------------------------------------------------------------------- repair


def repair_sections(sections: Sequence[InducedSection], first: int, last: int) -> list[InducedSection]:
    """The deterministic repair of the module docstring: a legal tiling of ``first..last`` (empty parent
    headings allowed), or ``[]`` when no section is usable. A legal answer comes back unchanged."""
    kept = []
    for index, section in enumerate(sections):
        start, end = max(section.first, first), min(section.last, last)
        if start <= min(end + 1, last):  # an empty section (end == start - 1) may be a parent heading
            level = max(1, section.level)
            kept.append((start, level, index, replace(section, level=level)))
    if not kept:
        return []
    kept.sort(key=lambda item: item[:3])
    starts: list[tuple[int, InducedSection]] = []
    for start, _, _, section in kept:
        # Same start as the previous one: keep it only as a deeper child of an (empty) parent heading.
        if starts and starts[-1][0] == start and starts[-1][1].level >= section.level:
            continue
        starts.append((start, section))
    starts[0] = (first, starts[0][1])
    repaired: list[InducedSection] = []
    for position, (start, section) in enumerate(starts):
        end = starts[position + 1][0] - 1 if position + 1 < len(starts) else last
        ceiling = repaired[-1].level + 1 if repaired else 1
        level = max(1, min(section.level, ceiling))
        title = section.title or (UNTITLED if position else "")
        repaired.append(InducedSection(title, level, start, end))
    return repaired


def single_section(first: int, last: int, title: str = "") -> list[InducedSection]:
    """The fallback for an unusable answer: one section over ``first..last``."""
    return [InducedSection(title, 1, first, last)]


def bound_titles(sections: Sequence[InducedSection]) -> tuple[list[InducedSection], int]:
    """``sections`` with every title within ``TITLE_CHARS`` characters (:func:`structbench.graphemes.bounded_title`:
    whole grapheme clusters, a word boundary where one is near, "…"), and how many titles were cut. The
    repair of a title the schema's ``maxLength`` forbids: what a constrained backend could not have written
    never reaches sections, TOC prompts or query titles."""
    bounded = [replace(s, title=bounded_title(s.title, TITLE_CHARS)) for s in sections]
    return bounded, sum(new.title != old.title for new, old in zip(bounded, sections))


# -------------------------------------------------------------------------------------------- windows


def plan_windows(
    doc_id: str, texts: Sequence[str], line_tokens, budget: int, overlap: int, paragraph_chars: int | None = None
) -> list[Window]:
    """Consecutive windows of numbered paragraph lines whose tokens fit ``budget``, overlapping by
    ``overlap`` paragraphs. ``line_tokens(lines) -> counts``; a line alone over budget is clipped."""
    lines, clipped = [], []
    for number, text in enumerate(texts, start=1):
        shown = text if paragraph_chars is None or len(text) <= paragraph_chars else text[:paragraph_chars] + CLIP_MARK
        lines.append(f"[{number}] {shown}")
        clipped.append(shown is not text)
    counts = list(line_tokens(lines))
    for index, count in enumerate(counts):
        if count > budget:  # clip to fit: shrink by the measured ratio until it does
            line = lines[index]
            while count > budget and len(line) > 20:
                line = line[: max(20, int(len(line) * budget / count * 0.95))]
                count = line_tokens([line + CLIP_MARK])[0]
            lines[index], counts[index], clipped[index] = line + CLIP_MARK, count, True
    windows, start, n = [], 0, len(lines)
    while True:
        end, used = start, 0
        while end < n and (end == start or used + counts[end] <= budget):
            used += counts[end]
            end += 1
        windows.append(Window(doc_id, start + 1, end, tuple(lines[start:end]), sum(clipped[start:end])))
        if end >= n:
            return windows
        start = max(start + 1, end - overlap)


def stitch(
    left: list[InducedSection], right: list[InducedSection], right_first: int, left_last: int
) -> list[InducedSection]:
    """Join two window tilings whose ranges overlap on ``right_first..left_last`` (module docstring)."""
    middle = (right_first + left_last) / 2
    inside = [s.first for s in right if right_first < s.first <= left_last]
    if inside:
        cut = min(inside, key=lambda start: (abs(start - middle), start))
        kept = [replace(s, last=min(s.last, cut - 1)) for s in left if s.first < cut]
        return kept + [s for s in right if s.first >= cut]
    seam = left_last + 1  # no boundary inside the overlap: the section crossing the seam continues
    crossing = next(s for s in right if s.first <= seam <= s.last) if right[-1].last >= seam else None
    if crossing is None:
        return left
    joined = left[:-1] + [replace(left[-1], last=crossing.last)]
    return joined + [s for s in right if s.first > crossing.last]


# ------------------------------------------------------------------------------------------ induction


@dataclass
class _WindowResult:
    window: Window
    sections: list[InducedSection]
    rounds: int
    violations: list[list[str]]  # per round
    repaired: bool
    failed: bool
    shortened_titles: int = 0  # titles the repair cut to TITLE_CHARS


def induce_structure(
    documents: pl.DataFrame,
    paragraphs: pl.DataFrame,
    llm: LLM,
    *,
    window_tokens: int | None = None,
    overlap_paragraphs: int = 2,
    paragraph_chars: int | None = None,
    max_new_tokens: int | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Induce a section tree for every document: ``(sections, status)``.

    ``sections`` has exactly the gold schema (``datamodel.SECTIONS``) and passes ``verify_sections``;
    ``status`` has the columns of ``STATUS``. ``window_tokens`` caps the numbered paragraph lines per
    prompt (default: the model's context less the prompt template, twice ``max_new_tokens`` (the answer,
    then the same answer quoted back in the correction round) and ``CORRECTION_RESERVE``);
    ``max_new_tokens`` defaults to the LLM spec's. All windows of all documents go to the LLM as one
    batch, then all correction requests as a second.
    """
    prompt, correction = load_prompt("induce_structure"), load_prompt("induce_correction")
    answer_tokens = max_new_tokens or llm.spec.max_new_tokens
    max_sections = sections_that_fit(answer_tokens)
    texts_by_doc = paragraph_texts(documents, paragraphs)
    n_by_doc = {doc_id: len(texts) for doc_id, texts in texts_by_doc.items()}
    titles = dict(zip(documents["doc_id"].to_list(), documents["title"].to_list()))
    empty_prompt = prompt.render(first=1, last=1, title="", n_paragraphs=1, paragraphs="")
    budget = window_tokens or (
        llm.context_tokens - llm.count_tokens(empty_prompt) - 2 * answer_tokens - CORRECTION_RESERVE
    )
    if budget < 16:
        raise ValueError(
            f"no room for paragraphs in the LLM context ({llm.context_tokens} tokens, "
            f"{answer_tokens} reserved for the answer); lower max_new_tokens"
        )
    base = llm.count_tokens([{"role": "user", "content": ""}])

    def line_tokens(lines):
        return [llm.count_tokens([{"role": "user", "content": line}]) - base for line in lines]

    windows = [
        window
        for doc_id, texts in texts_by_doc.items()
        for window in plan_windows(doc_id, texts, line_tokens, budget, overlap_paragraphs, paragraph_chars)
    ]

    def request(window: Window) -> ChatRequest:
        messages = prompt.render(
            first=window.first,
            last=window.last,
            title=titles[window.doc_id],
            n_paragraphs=n_by_doc[window.doc_id],
            paragraphs="\n\n".join(window.lines),
        )
        return ChatRequest.of(
            messages,
            schema=induction_schema(window.first, window.last, max_sections),
            prompt_version=prompt.version_id,
            max_new_tokens=answer_tokens,
        )

    first_requests = [request(window) for window in windows]
    first_answers = llm.chat(first_requests)
    judged = [_judge(answer, window) for answer, window in zip(first_answers, windows)]
    retry = [index for index, (sections, problems) in enumerate(judged) if problems]
    second: dict[int, tuple[list[InducedSection] | None, list[str]]] = {}
    if retry:
        follow_ups = []
        for index in retry:
            window = windows[index]
            quoted = "\n".join(f"- {problem}" for problem in judged[index][1])
            messages = (
                first_requests[index].as_dicts()
                + [{"role": "assistant", "content": first_answers[index].text}]
                + correction.render(violations=quoted, first=window.first, last=window.last)
            )
            follow_ups.append(
                ChatRequest.of(
                    messages,
                    schema=induction_schema(window.first, window.last, max_sections),
                    prompt_version=f"{prompt.version_id}+{correction.version_id}",
                    max_new_tokens=answer_tokens,
                )
            )
        for index, answer in zip(retry, llm.chat(follow_ups)):
            second[index] = _judge(answer, windows[index])

    results = [_settle(window, judged[index], second.get(index)) for index, window in enumerate(windows)]
    by_doc: dict[str, list[_WindowResult]] = {}
    for result in results:
        by_doc.setdefault(result.window.doc_id, []).append(result)
    specs, status_rows = {}, []
    for doc_id in texts_by_doc:
        tiling, row = _assemble(doc_id, by_doc[doc_id], n_by_doc[doc_id])
        specs[doc_id] = [SectionSpec(s.title, s.level, s.first - 1, s.last) for s in tiling]
        status_rows.append(row)
    sections = sections_table(documents, texts_by_doc, specs)
    violations = verify_sections(paragraphs.filter(pl.col("doc_id").is_in(list(texts_by_doc))), sections)
    if violations:  # the repair guarantees legality; reaching this is a bug, never a data problem
        raise AssertionError("induced sections fail verification:\n" + "\n".join(violations[:20]))
    status = pl.DataFrame(status_rows, schema=STATUS, orient="row")
    counts = status["status"].value_counts().sort("status").iter_rows()
    log.info("induced structure for %d documents: %s", status.height, ", ".join(f"{s} {n}" for s, n in counts))
    return sections, status


def _judge(answer: ChatResponse, window: Window) -> tuple[list[InducedSection] | None, list[str]]:
    """The answer's sections (None when there is no JSON valid under the lenient :data:`SCHEMA`) and
    its violations: every breach of the window's answer schema (:func:`induction_schema` without the
    decoding aid ``max_sections``: an answer that closed its JSON has met what that bound is for), then
    the check's. An answer that breaks only the window's bounds is read leniently, so the repair can
    still use it."""
    value = answer.value
    if not answer.ok:
        try:
            value = parse_json_output(answer.text, SCHEMA) if answer.text else None
        except JSONOutputError:
            value = None
        if value is None:
            return None, [f"the answer is not the requested JSON object: {answer.error}"]
    sections = sections_from_answer(value)
    schema = induction_schema(window.first, window.last)
    breaches = [] if answer.ok else [f"schema: {breach}" for breach in schema_violations(value, schema)]
    return sections, breaches + check_sections(sections, window.first, window.last)


def _settle(window: Window, first, second) -> _WindowResult:
    """The window's final tiling: a passing answer, else the repaired latest usable answer."""
    violations = [first[1]] + ([second[1]] if second else [])
    rounds = 2 if second else 1
    for sections, problems in (first, second) if second else (first,):
        if sections is not None and not problems:
            return _WindowResult(window, sections, rounds, violations, repaired=False, failed=False)
    candidates = [answer[0] for answer in ((second, first) if second else (first,)) if answer[0]]
    for sections in candidates:
        repaired, shortened = bound_titles(repair_sections(sections, window.first, window.last))
        if repaired:
            return _WindowResult(window, repaired, rounds, violations, True, False, shortened)
    fallback = single_section(window.first, window.last, "" if window.first == 1 else UNTITLED)
    return _WindowResult(window, fallback, rounds, violations, repaired=True, failed=True)


def _assemble(doc_id: str, results: list[_WindowResult], n_paragraphs: int) -> tuple[list[InducedSection], tuple]:
    """Stitch a document's windows, check and repair the whole, and build its status row."""
    tiling = results[0].sections
    for previous, result in zip(results, results[1:]):
        tiling = stitch(tiling, result.sections, result.window.first, previous.window.last)
    whole_problems = check_sections(tiling, 1, n_paragraphs, allow_empty=True)
    if whole_problems:
        tiling = repair_sections(tiling, 1, n_paragraphs)
    failed = all(result.failed for result in results)
    if failed:
        tiling = single_section(1, n_paragraphs)
    # An untitled section is the lead only in first place; elsewhere it needs a title for its path.
    tiling = [replace(s, title=UNTITLED) if position and not s.title else s for position, s in enumerate(tiling)]
    repaired = any(result.repaired for result in results) or bool(whole_problems)
    last_problems = [p for result in results for p in result.violations[-1]]
    first_problems = [p for result in results for p in result.violations[0]]
    if failed:
        status, reason = "failed", "no usable section: " + _summary(last_problems)
    elif repaired:
        status, reason = "repaired", "repaired: " + _summary(last_problems + whole_problems)
    else:
        status = "usable"
        reason = "" if not first_problems else "passed after correction: " + _summary(first_problems)
    row = (
        doc_id,
        status,
        reason,
        max(result.rounds for result in results),
        len(results),
        len(tiling),
        len(first_problems),
        sum(len(result.violations[1]) for result in results if result.rounds == 2),
        sum(section.level > MAX_LEVEL for section in tiling),
        sum(result.window.clipped for result in results),
        sum(result.shortened_titles for result in results),
    )
    return tiling, row


def _summary(problems: list[str], shown: int = 3) -> str:
    more = f" (+{len(problems) - shown} more)" if len(problems) > shown else ""
    return "; ".join(problems[:shown]) + more
