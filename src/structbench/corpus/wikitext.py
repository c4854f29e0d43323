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
  fragments as articles; the tests check the loader's 60 against it.
- **Detokenizing** (``detokenize``) runs per paragraph and per heading before the flat text is
  built, so every offset refers to the detokenized text: `` @-@ ``, `` @,@ ``, `` @.@ `` join
  (``-``, ``,``, ``.``), spaces before ``, . ; : ! ? %`` and closing brackets and after opening
  brackets go, ``'s``-style clitics reattach, straight double quotes pair up per paragraph
  (opening quote loses the space after it, closing the space before it), ``$ 5`` becomes ``$5``.
- **doc_id** is the detokenized title (unique in the file; a repeat would get `` (2)``).
- **Topic bucket**: WikiText carries no categories, so the keyword table of ``selection`` is
  applied to the title; most biographies land in ``other``. Disclosed, not fixed.
- The quality filters, the seeded walk and the per-bucket cap are those of the Wikipedia builder
  (``selection.Filters``, defaults = Kuehlkamp et al., table 6). No queries (the Wikipedia arm generates them).
"""

from __future__ import annotations

import re
from pathlib import Path

from structbench.corpus.build import (
    CorpusTables,
    sections_from_headings,
)
from structbench.corpus.markdown import read_utf8
from structbench.corpus.wiki_selection import Filters, select_documents, selection_tables
from structbench.datamodel import ParsedDocument

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


def parse_wikitext(text: str, source: str = "wikitext") -> list[ParsedDocument]:
    """Split a WikiText file into articles with their section trees (paragraphs detokenized)."""
    lines = [line for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n") if line.strip()]
    docs: list[ParsedDocument] = []
    current: dict | None = None
    glue_next = False

    def finish() -> None:
        if current is None:
            return
        paragraphs = [detokenize(raw) for raw in current["raw"]]
        keep = [index for index, paragraph in enumerate(paragraphs) if paragraph]
        headings = [(level, detokenize(title), _next_kept(first, keep)) for level, title, first in current["headings"]]
        paragraphs = [paragraphs[index] for index in keep]
        doc_id = current["title"]
        taken = {doc.doc_id for doc in docs}
        suffix = 2
        while doc_id in taken:
            doc_id = f"{current['title']} ({suffix})"
            suffix += 1
        docs.append(
            ParsedDocument(
                doc_id=doc_id,
                title=current["title"],
                paragraphs=paragraphs,
                sections=sections_from_headings(len(paragraphs), headings),
                meta={"source": source, "line": current["line"], "glued_fragments": current["glued"]},
            )
        )

    for index, line in enumerate(lines):
        heading = _heading(line)
        if heading is not None and heading[0] == 1:
            previous = lines[index - 1] if index else None
            following = lines[index + 1] if index + 1 < len(lines) else None
            if current is not None and current["raw"] and _is_fragment(previous, heading[1], following):
                current["raw"][-1] += " " + line.strip()
                current["glued"] += 1
                glue_next = True
                continue
            finish()
            current = {"title": detokenize(heading[1]), "raw": [], "headings": [], "line": index + 1, "glued": 0}
            glue_next = False
            continue
        if current is None:
            continue  # text before the first title belongs to no article
        if heading is not None:
            current["headings"].append((heading[0], heading[1], len(current["raw"])))
            glue_next = False
        elif glue_next and current["raw"]:
            current["raw"][-1] += " " + line.strip()
            glue_next = False
        else:
            current["raw"].append(line)
    finish()
    return docs


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
