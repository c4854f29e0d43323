"""A document's Markdown for Markdown-aware peer chunkers, the map back to flat text, and the per-document
lookups the adapters' output is located with (rules in :mod:`structbench.chunking.external`).
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

from structbench.chunking.external.chunker_spec import ExternalChunkerError
from structbench.tokens import TokenCounter, TokenSpans

# --------------------------------------------------------------------------------------------------
# Markdown rendering and the map back to flat text


@dataclass(frozen=True)
class MarkdownDocument:
    """A document's Markdown and where its copied flat text lies in it.

    ``copied[i] = (markdown_start, flat_start, length)``: ``text[markdown_start:][:length]`` is
    ``flat[flat_start:][:length]``; everything else in ``text`` is heading lines and the blank lines
    around them.
    """

    text: str
    copied: tuple[tuple[int, int, int], ...]

    @functools.cached_property
    def _starts(self) -> list[int]:
        return [m for m, _, _ in self.copied]

    @functools.cached_property
    def _ends(self) -> list[int]:
        return [m + n for m, _, n in self.copied]

    def flat_span(self, start: int, end: int) -> tuple[int, int] | None:
        """The flat-text span from the first to the last copied character in ``text[start:end]``, or
        None when it holds none (only headings and blank lines)."""
        first = bisect.bisect_right(self._ends, start)
        if first == len(self.copied) or self.copied[first][0] >= end:
            return None
        last = bisect.bisect_left(self._starts, end) - 1
        m0, f0, _ = self.copied[first]
        m1, f1, n1 = self.copied[last]
        return f0 + max(start - m0, 0), f1 + min(end - m1, n1)


_SPACES = re.compile(r"\s+")


def render_markdown(title: str, text: str, sections: Sequence[tuple[str, int, int, int]]) -> MarkdownDocument:
    """A document as Markdown: ``# title``, then per section its heading and its own flat text.

    ``sections`` are ``(title, depth, flat_start, flat_end)`` in reading order, ``depth`` the length of
    the section's path (2 for a top-level section) and ``flat_start == flat_end`` for a heading without
    text of its own; the stretches must follow each other in the flat text. A heading is ``depth``
    hashes (at most six) and the title on one line; an empty title gets no heading.
    """
    parts: list[str] = []
    copied: list[tuple[int, int, int]] = []
    cursor = 0

    def add(block: str, flat_start: int | None = None) -> None:
        nonlocal cursor
        if parts:
            parts.append("\n\n")
            cursor += 2
        if flat_start is not None:
            copied.append((cursor, flat_start, len(block)))
        parts.append(block)
        cursor += len(block)

    heading = _SPACES.sub(" ", title or "").strip()
    if heading:
        add(f"# {heading}")
    for section_title, depth, start, end in sections:
        heading = _SPACES.sub(" ", section_title or "").strip()
        if heading:
            add("#" * min(max(depth, 1), 6) + " " + heading)
        if end > start:
            add(text[start:end], start)
    return MarkdownDocument("".join(parts), tuple(copied))


# --------------------------------------------------------------------------------------------------
# Documents


@dataclass
class _Document:
    doc_id: str
    title: str
    text: str
    para_starts: list[int]
    para_ends: list[int]
    section_starts: list[int]  # flat start of each non-empty section, ascending
    section_ids: list[int]
    section_paths: list[list[str]]
    outline: list[tuple[str, int, int, int]]  # every section: (title, depth, flat start, flat end)
    _markdown: MarkdownDocument | None = None
    _tokens: TokenSpans | None = None

    def tokens(self, counter: TokenCounter) -> TokenSpans:
        """The document's token starts (tokenized once)."""
        if self._tokens is None:
            self._tokens = counter.spans_batch([self.text])[0]
        return self._tokens

    @property
    def markdown(self) -> MarkdownDocument:
        if self._markdown is None:
            self._markdown = render_markdown(self.title, self.text, self.outline)
        return self._markdown


def _grouped(frame: pl.DataFrame, order: str, columns: list[str]) -> dict[str, dict[str, list]]:
    groups: dict[str, dict[str, list]] = {}
    for (doc_id,), group in frame.sort(["doc_id", order]).group_by("doc_id", maintain_order=True):
        groups[doc_id] = {column: group[column].to_list() for column in columns}
    return groups


def _documents(documents: pl.DataFrame, paragraphs: pl.DataFrame, sections: pl.DataFrame) -> list[_Document]:
    paras = _grouped(paragraphs, "para_idx", ["start", "end"])
    secs = _grouped(sections, "section_id", ["section_id", "title", "path", "para_start", "para_end"])
    out = []
    ordered = documents.select("doc_id", "title", "text").sort("doc_id")
    for doc_id, title, text in ordered.iter_rows():
        text = text or ""
        para = paras.get(doc_id, {"start": [], "end": []})
        sec = secs.get(doc_id, {column: [] for column in ("section_id", "title", "path", "para_start", "para_end")})
        if text and not para["start"]:
            raise ExternalChunkerError(f"document {doc_id!r} has text but no paragraphs")
        if text and not sec["section_id"]:
            raise ExternalChunkerError(f"document {doc_id!r} has paragraphs but no sections")
        doc = _Document(doc_id, title or "", text, para["start"], para["end"], [], [], [], [])
        for sid, s_title, path, ps, pe in zip(*sec.values()):
            start = para["start"][ps] if ps < len(para["start"]) else len(text)
            end = para["end"][pe - 1] if pe > ps else start
            doc.outline.append((s_title, len(path), start, end))
            if pe > ps:
                doc.section_starts.append(start)
                doc.section_ids.append(int(sid))
                doc.section_paths.append(list(path))
        out.append(doc)
    return out
