"""Character ranges of a Markdown source file mapped onto its document's flat text (docs/method.md §3,
"Evidence by offsets").

A question may give its evidence as ``{"start", "end"}`` offsets into the file's text (Python string
indices of the UTF-8 file as written: a BOM and ``\\r\\n`` count, as in Chroma's ``start_index``), not
only as a verbatim quote. The flat text is not the file: headings, front matter, thematic breaks,
blank lines and trailing whitespace are not in it, and paragraphs are joined by ``"\\n\\n"``. The parser
(:func:`structbench.corpus.markdown.parse_markdown_lines`) records the source line of every paragraph
line, so each flat character has exactly one source character (its line's column; the line break
inside a paragraph maps to the source line's end). A source range maps to the flat characters whose
source characters lie in it. A range that holds a non-blank character the flat text does not have (a
heading, front matter, a thematic break) cannot be mapped exactly: a :class:`SourceRangeError` says so.

A reader whose paragraphs are not whole source lines gives the positions itself
(:meth:`SourceMap.from_positions`): a WikiText article read verbatim (:mod:`structbench.corpus.wikitext`) strips
each line and glues a false title's lines with a space, and shares its source file with the other articles, whose
characters are then, like headings, characters outside its flat text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from structbench.datamodel import PARAGRAPH_SEPARATOR

_LINE_BREAK = re.compile(r"\r\n|\r|\n")


class SourceRangeError(ValueError):
    """A source character range that is not a range of the document, or cannot be mapped to its flat text."""


def line_starts(source: str) -> list[int]:
    """Offset in ``source`` of every line, as the parsers split it (after a BOM; any line ending)."""
    first = 1 if source.startswith("\ufeff") else 0
    return [first] + [match.end() for match in _LINE_BREAK.finditer(source, first)]


def source_lines(source: str) -> list[str]:
    """The lines of ``source`` (after a BOM; any line ending), line ``i`` starting at ``line_starts(source)[i]``."""
    return _LINE_BREAK.split(source[1:] if source.startswith("\ufeff") else source)


class SourceMap:
    """Flat-text positions of one document's source characters (module docstring)."""

    def __init__(self, source: str, paragraphs: Sequence[str], paragraph_rows: Sequence[Sequence[int]]):
        starts = line_starts(source)
        flat_at: list[int] = []  # flat offset of every mapped flat character, increasing
        source_at: list[int] = []  # its source offset, increasing
        cursor = 0
        for index, (paragraph, rows) in enumerate(zip(paragraphs, paragraph_rows, strict=True)):
            if index:
                cursor += len(PARAGRAPH_SEPARATOR)  # separators have no source character
            lines = paragraph.split("\n")
            if len(lines) != len(rows):
                raise AssertionError(f"paragraph {index}: {len(lines)} lines but {len(rows)} source rows")
            for number, (line, row) in enumerate(zip(lines, rows, strict=True)):
                begin = starts[row]
                if source[begin : begin + len(line)] != line:
                    raise AssertionError(f"paragraph {index}, line {number} is not source line {row}")
                flat_at.extend(range(cursor, cursor + len(line) + (number < len(lines) - 1)))
                source_at.extend(range(begin, begin + len(line)))
                cursor += len(line)
                if number < len(lines) - 1:
                    source_at.append(begin + len(line))  # the inner line break: the source line's end
                    cursor += 1
        self._index(source, flat_at, source_at)

    @classmethod
    def from_positions(cls, source: str, flat_at: Sequence[int], source_at: Sequence[int]) -> SourceMap:
        """The map of a document whose flat characters are not whole source lines (a WikiText paragraph is its
        line stripped, lines glued by a space): ``flat_at[i]`` is the flat offset of the i-th mapped character,
        ``source_at[i]`` its source offset, both increasing. Flat characters with no source (the paragraph
        separators) are simply absent."""
        flat_at, source_at = np.asarray(flat_at, dtype=np.int64), np.asarray(source_at, dtype=np.int64)
        if len(flat_at) != len(source_at) or np.any(np.diff(flat_at) <= 0) or np.any(np.diff(source_at) <= 0):
            raise AssertionError("flat and source positions must be equally long and increasing")
        if len(source_at) and not 0 <= source_at[0] <= source_at[-1] < len(source):
            raise AssertionError("a source position lies outside the source text")
        source_map = cls.__new__(cls)
        source_map._index(source, flat_at, source_at)
        return source_map

    def _index(self, source: str, flat_at: Sequence[int], source_at: Sequence[int]) -> None:
        """Keep the positions and count the visible source characters that the flat text holds."""
        self.source = source
        self.flat_at = np.asarray(flat_at, dtype=np.int64)
        self.source_at = np.asarray(source_at, dtype=np.int64)
        visible = np.fromiter((not ch.isspace() for ch in source), dtype=bool, count=len(source))
        self._visible_before = np.concatenate(([0], np.cumsum(visible)))
        self._mapped_visible_before = np.concatenate(([0], np.cumsum(visible[self.source_at])))

    def to_flat(self, start: int, end: int) -> tuple[int, int]:
        """The flat ``[start, end)`` of the source range ``[start, end)``.

        Raises :class:`SourceRangeError` for a range that is not ``0 <= start < end <= len(source)``, one
        that holds no flat character, or one holding a non-blank source character outside the flat text.
        """
        if not 0 <= start < end <= len(self.source):
            raise SourceRangeError(f"range [{start}, {end}) is not inside the source text (0..{len(self.source)})")
        lo = int(np.searchsorted(self.source_at, start, side="left"))
        hi = int(np.searchsorted(self.source_at, end, side="left"))
        if lo == hi:
            raise SourceRangeError(
                f"range [{start}, {end}) holds no document text (only headings, front matter or blank lines): "
                f"{self.source[start:end][:120]!r}"
            )
        dropped = int(self._visible_before[end] - self._visible_before[start]) - int(
            self._mapped_visible_before[hi] - self._mapped_visible_before[lo]
        )
        if dropped:
            raise SourceRangeError(
                f"range [{start}, {end}) holds {dropped} character(s) that are not document text (a heading "
                "line, front matter or a thematic break), so it has no exact flat range; cut the range at them: "
                f"{self.source[start:end][:120]!r}"
            )
        return int(self.flat_at[lo]), int(self.flat_at[hi - 1]) + 1
