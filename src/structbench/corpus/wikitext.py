"""WikiText-2 raw as the offline stand-in for Wikipedia-FA (docs/method.md §4).

Format: one paragraph per line (CRLF or LF; blank lines, present in some releases, are ignored);
``= Title =`` starts an article, ``= = Section = =`` is a top-level section (level 1),
``= = = Sub = = =`` level 2 and so on (the ``=`` count on both sides must agree).

- **False titles.** Two equation lines inside "Constant k filter" (``= 1 rad / s and a nominal
  impedance k =``) look like titles: the WikiText extraction split a sentence at its ``=`` signs.
  A ``= X =`` line is such a fragment, not an article, when the body line before it does not end a
  sentence (``. ! ? : ; " ' ) ]`` and their typographic forms) AND the body line after it does not
  mention the title (no shared word of three or more letters, stopwords aside; a real article's
  lead names its subject). A fragment is glued back: previous line, fragment, next line become
  one paragraph. ``articles.tsv`` next to the file lists 62 rows because it counts the two
  fragments as articles; the tests check the loader's 60 against it. Chroma's ``wikitexts.md`` (the
  start of WikiText-2's train split) has seven: the player-statistics legend of "2011 – 12 Columbus
  Blue Jackets season" (``Note : Pos`` / ``= Position ; GP =`` / ``Games played in ; G`` ...), glued
  back into one paragraph, so its 17 ``= X =`` lines are 10 articles.
- **Detokenizing** (``detokenize``) runs per paragraph and per heading before the flat text is
  built, so every offset refers to the detokenized text: `` @-@ ``, `` @,@ ``, `` @.@ `` join
  (``-``, ``,``, ``.``), spaces before ``, . ; : ! ? %`` and closing brackets and after opening
  brackets go, ``'s``-style clitics reattach, straight double quotes pair up per paragraph
  (opening quote loses the space after it, closing the space before it), ``$ 5`` becomes ``$5``.
- **Verbatim** (``read_wikitext_verbatim``): no detokenizing, each paragraph its line stripped, for a
  corpus whose evidence is given as offsets into the tokenized file (Chroma's ``wikitexts``,
  :mod:`structbench.corpus.chroma`); every flat character is a file character, mapped back by a
  :class:`~structbench.corpus.sourcemap.SourceMap`.
- **doc_id** is the detokenized title (unique in the file; a repeat would get `` (2)``).
- **Topic bucket**: WikiText carries no categories, so the keyword table of ``selection`` is
  applied to the title; most biographies land in ``other``. Disclosed, not fixed.
- The quality filters, the seeded walk and the per-bucket cap are those of the Wikipedia builder
  (``selection.Filters``, defaults = Kuehlkamp et al., table 6). No queries (the Wikipedia arm generates them).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from structbench.corpus.build import (
    CorpusTables,
    sections_from_headings,
)
from structbench.corpus.markdown import read_utf8
from structbench.corpus.sourcemap import SourceMap, line_starts, source_lines
from structbench.corpus.wiki_selection import Filters, select_documents, selection_tables
from structbench.datamodel import PARAGRAPH_SEPARATOR, ParsedDocument

_HEADING = re.compile(r" *(=(?: =)*) (.+?) (=(?: =)*) *")
_SENTENCE_END = tuple(".!?:;\"')]”’»")
_STOPWORDS = frozenset(
    [
        "the",
        "and",
        "for",
        "from",
        "with",
        "into",
        "over",
        "under",
        "of",
        "at",
        "in",
        "on",
        "by",
        "to",
        "an",
        "a",
        "as",
        "its",
        "his",
        "her",
        "their",
    ]
)
_WORD = re.compile(r"[^\W\d_]{3,}")


def detokenize(text: str) -> str:
    """WikiText tokenization undone for one paragraph or heading (see the module docstring)."""
    text = " ".join(text.split())
    text = text.replace(" @-@ ", "-").replace(" @,@ ", ",").replace(" @.@ ", ".")
    text = text.replace("@-@", "-").replace("@,@", ",").replace("@.@", ".")
    if '"' in text:
        parts = text.split('"')
        out = parts[0]
        for index, segment in enumerate(parts[1:], start=1):
            if index % 2:  # opening quote
                out += '"'
                segment = segment[1:] if segment.startswith(" ") else segment
            else:
                out = (out[:-1] if out.endswith(" ") else out) + '"'
            out += segment
        text = out
    text = re.sub(r" ([,.;:!?%])", r"\1", text)
    text = re.sub(r"([(\[{]) ", r"\1", text)
    text = re.sub(r" ([)\]}])", r"\1", text)
    text = re.sub(r"(\w) ['’](s|t|re|ve|ll|d|m)\b", r"\1'\2", text)
    text = re.sub(r"([$£€]) (?=\d)", r"\1", text)
    return text.strip()


def _heading(line: str) -> tuple[int, str] | None:
    match = _HEADING.fullmatch(line)
    if match is None or match.group(1).count("=") != match.group(3).count("="):
        return None
    return match.group(1).count("="), match.group(2)


def _title_words(text: str) -> set[str]:
    return {word for word in _WORD.findall(text.casefold()) if word not in _STOPWORDS}


def _is_fragment(previous: str | None, title: str, following: str | None) -> bool:
    """True when a ``= X =`` line is a sentence split at its ``=`` signs (see the module docstring)."""
    if previous is None or _heading(previous) is not None:
        return False
    if previous.rstrip().endswith(_SENTENCE_END):
        return False
    lead = following or ""
    return not (_title_words(title) & _title_words(" ".join(lead.split()[:40])))


@dataclass
class WikitextArticle:
    """One article of a WikiText file as its source lines, before any text is built: what both readings share
    (:func:`parse_wikitext`, detokenized; :func:`read_wikitext_verbatim`, as written)."""

    title: str  # the title line's text as written (tokenized)
    row: int  # source line (0-based) of the title line
    paragraphs: list[list[int]] = field(default_factory=list)  # source lines of each paragraph (a glued
    # false title spans several: the line before it, the fragment and the line after it)
    headings: list[tuple[int, str, int]] = field(default_factory=list)  # (= count, title, first paragraph)
    glued: int = 0  # false titles glued back into their sentence


def wikitext_outline(lines: Sequence[str]) -> tuple[list[WikitextArticle], int]:
    """The articles of a WikiText file's ``lines`` (module docstring: titles, headings, false titles), and
    how many non-blank lines come before the first title (they belong to no article)."""
    kept = [row for row, line in enumerate(lines) if line.strip()]
    articles: list[WikitextArticle] = []
    current: WikitextArticle | None = None
    glue_next = False
    before_first_title = 0
    for position, row in enumerate(kept):
        line = lines[row]
        heading = _heading(line)
        if heading is not None and heading[0] == 1:
            previous = lines[kept[position - 1]] if position else None
            following = lines[kept[position + 1]] if position + 1 < len(kept) else None
            if current is not None and current.paragraphs and _is_fragment(previous, heading[1], following):
                current.paragraphs[-1].append(row)
                current.glued += 1
                glue_next = True
                continue
            current = WikitextArticle(title=heading[1], row=row)
            articles.append(current)
            glue_next = False
            continue
        if current is None:
            before_first_title += 1
        elif heading is not None:
            current.headings.append((heading[0], heading[1], len(current.paragraphs)))
            glue_next = False
        elif glue_next and current.paragraphs:
            current.paragraphs[-1].append(row)
            glue_next = False
        else:
            current.paragraphs.append([row])
    return articles, before_first_title


def _unique_id(title: str, taken: set[str]) -> str:
    """``title``, or ``title (2)``, ``(3)``... when an earlier article took it; added to ``taken``."""
    doc_id, suffix = title, 2
    while doc_id in taken:
        doc_id = f"{title} ({suffix})"
        suffix += 1
    taken.add(doc_id)
    return doc_id


def parse_wikitext(text: str, source: str = "wikitext") -> list[ParsedDocument]:
    """Split a WikiText file into articles with their section trees (paragraphs detokenized)."""
    lines = source_lines(text)
    articles, _ = wikitext_outline(lines)
    docs: list[ParsedDocument] = []
    taken: set[str] = set()
    for article in articles:
        paragraphs = [detokenize(" ".join(lines[row] for row in rows)) for rows in article.paragraphs]
        keep = [index for index, paragraph in enumerate(paragraphs) if paragraph]
        headings = [(level, detokenize(title), _next_kept(first, keep)) for level, title, first in article.headings]
        paragraphs = [paragraphs[index] for index in keep]
        title = detokenize(article.title)
        docs.append(
            ParsedDocument(
                doc_id=_unique_id(title, taken),
                title=title,
                paragraphs=paragraphs,
                sections=sections_from_headings(len(paragraphs), headings),
                meta={"source": source, "line": article.row + 1, "glued_fragments": article.glued},
            )
        )
    return docs


@dataclass
class VerbatimArticle:
    """An article read as written (:func:`read_wikitext_verbatim`): the document, the map from its file's
    character offsets onto its flat text, and the file characters it owns (its title line up to the next one's)."""

    document: ParsedDocument
    source_map: SourceMap
    span: tuple[int, int]


def read_wikitext_verbatim(text: str, source: str = "wikitext") -> tuple[list[VerbatimArticle], int]:
    """The articles of a WikiText file with their text as written, and the non-blank lines before the first title.

    No detokenizing, so every flat character is a character of the file (`` @-@ `` and the spaced punctuation
    stay), and offsets into the file map onto the flat text (:class:`~structbench.corpus.sourcemap.SourceMap`).
    A paragraph is one line, stripped of its surrounding spaces (WikiText writes `` text . `` per line); a false
    title is glued to the lines around it with one space, which stands for the line break before it. Titles and
    headings are as written (``= = Off @-@ season = =`` is the section ``Off @-@ season``); ``doc_id`` is the title
    (`` (2)`` on a repeat). ``meta`` holds the file, the title's line (1-based) and the false titles glued.
    """
    lines = source_lines(text)
    starts = line_starts(text)
    outline, before_first_title = wikitext_outline(lines)
    taken: set[str] = set()
    articles: list[VerbatimArticle] = []
    for number, article in enumerate(outline):
        paragraphs, flat_at, source_at = _verbatim_paragraphs(article.paragraphs, lines, starts)
        end = starts[outline[number + 1].row] if number + 1 < len(outline) else len(text)
        document = ParsedDocument(
            doc_id=_unique_id(article.title, taken),
            title=article.title,
            paragraphs=paragraphs,
            sections=sections_from_headings(len(paragraphs), article.headings),
            meta={"source": source, "line": article.row + 1, "glued_fragments": article.glued},
        )
        source_map = SourceMap.from_positions(text, flat_at, source_at)
        articles.append(VerbatimArticle(document, source_map, (starts[article.row], end)))
    return articles, before_first_title


def _verbatim_paragraphs(
    paragraph_rows: Sequence[Sequence[int]], lines: Sequence[str], starts: Sequence[int]
) -> tuple[list[str], list[int], list[int]]:
    """``(paragraphs, flat offsets, their source offsets)`` of an article's paragraphs read as written."""
    paragraphs: list[str] = []
    flat_at: list[int] = []
    source_at: list[int] = []
    cursor = 0
    for rows in paragraph_rows:
        if paragraphs:
            cursor += len(PARAGRAPH_SEPARATOR)  # no source character
        pieces: list[str] = []
        for number, row in enumerate(rows):
            line = lines[row]
            body = line.strip()
            if number:  # the glue: the line break that ends the line before
                flat_at.append(cursor)
                source_at.append(starts[rows[number - 1]] + len(lines[rows[number - 1]]))
                cursor += 1
            begin = starts[row] + len(line) - len(line.lstrip())
            flat_at.extend(range(cursor, cursor + len(body)))
            source_at.extend(range(begin, begin + len(body)))
            cursor += len(body)
            pieces.append(body)
        paragraphs.append(" ".join(pieces))
    return paragraphs, flat_at, source_at


def _next_kept(first: int, keep: list[int]) -> int:
    """Index (among kept paragraphs) of the first kept paragraph at or after ``first``."""
    return sum(1 for index in keep if index < first)


def load_wikitext(path: str | Path, corpus: str = "wikitext", filters: Filters | None = None) -> CorpusTables:
    """Articles of a WikiText raw file that pass ``filters`` (seeded walk, per-bucket cap)."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"wikitext file {path} does not exist")
    filters = filters or Filters()
    articles = parse_wikitext(read_utf8(path), source=path.name)
    if not articles:
        raise ValueError(f"{path}: no '= Title =' article lines found")
    by_id = {doc.doc_id: doc for doc in articles}
    skipped: list[tuple[str, str, str]] = []

    def get_document(doc_id: str):
        doc = by_id[doc_id]
        if not doc.paragraphs:
            return None, [], "no_paragraphs"
        return doc, [doc.title], None

    selection = select_documents([doc.doc_id for doc in articles], get_document, filters)
    skipped += [(str(path), title, reason) for title, reason in selection.rejected]
    return selection_tables(corpus, selection, skipped)
