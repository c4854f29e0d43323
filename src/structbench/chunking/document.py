"""Prepared documents for the chunkers of :mod:`structbench.chunking`: paragraphs, non-empty sections and
token starts per document, tokenized in batches that overlap chunking, with lazy per-paragraph
sentence and pre-token lookups.
"""

from __future__ import annotations

import bisect
import logging
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from structbench.logs import Progress
from structbench.sentences import paragraph_boundaries, sentence_starts_near
from structbench.tokens import TokenCounter, TokenSpans

LOG = logging.getLogger(__name__)

_TOKENIZE_BATCH_DOCS = 32  # documents tokenized per call: bounds memory, lets tokenizing overlap chunking
_TOKENIZE_PIECE_CHARS = 1 << 16  # a longer paragraph is tokenized in pieces of about this many characters


# --------------------------------------------------------------------------------------------------
# Prepared documents


@dataclass
class _Section:
    section_id: int
    path: tuple[str, ...]
    top_id: int
    para_start: int
    para_end: int


@dataclass
class _Doc:
    doc_id: str
    text: str
    para_starts: list[int]
    para_ends: list[int]
    sections: list[_Section]  # non-empty sections, reading order
    tokens: TokenSpans | None = None
    counter: TokenCounter | None = None
    # Per-paragraph lookups made while the document is chunked (released with ``tokens``).
    _sentences: dict[int, tuple[list[int], list[int]]] = field(default_factory=dict, repr=False)
    _pretokens: dict[int, np.ndarray] = field(default_factory=dict, repr=False)
    _paragraph_texts: dict[int, str] = field(default_factory=dict, repr=False)

    def __post_init__(self):
        self._section_starts = [self.para_starts[s.para_start] for s in self.sections]

    @property
    def n_chars(self) -> int:
        return len(self.text)

    def para_char_start(self, para: int) -> int:
        """Char offset of paragraph ``para``; one past the last paragraph is the document end."""
        return self.para_starts[para] if para < len(self.para_starts) else len(self.text)

    def section_starts(self) -> list[int]:
        return self._section_starts

    def paragraph_of(self, char: int) -> int:
        """Index of the paragraph holding ``char`` (the one before it when ``char`` lies between two)."""
        return max(bisect.bisect_right(self.para_starts, char) - 1, 0)

    def cut_kind(self, char: int, weakest: str) -> str:
        """The strongest boundary at ``char``: end, section, paragraph, else ``weakest``."""
        if char >= len(self.text):
            return "end"
        if _contains(self._section_starts, char):
            return "section"
        if _contains(self.para_starts, char):
            return "paragraph"
        return weakest

    def sentence_bounds(self, para: int) -> tuple[list[int], list[int]]:
        """Sentence starts of paragraph ``para`` (its own start first): chars and token indices."""
        found = self._sentences.get(para)
        if found is None:
            chars = paragraph_boundaries(self.text, self.para_starts[para], self.para_ends[para])
            found = (chars, [self.tokens.index(c) for c in chars])
            self._sentences[para] = found
        return found

    def sentence_bounds_near(self, para: int, lo_char: int, hi_char: int) -> tuple[list[int], list[int]]:
        """:meth:`sentence_bounds` of paragraph ``para`` restricted to a stretch that covers ``[lo_char, hi_char]``.

        Exactly the paragraph's sentence starts (its own start among them) that lie in some ``[a, b]``
        with ``a <= lo_char`` a sentence start or the paragraph start and ``b >= hi_char`` a sentence
        start or the paragraph end, so the starts nearest any point of ``[lo_char, hi_char]`` on
        either side are among them. Only that stretch is segmented
        (:func:`structbench.sentences.sentence_starts_near`). A tokenizer that is not word-level gets
        the whole paragraph, since two sentence starts could then share a token index.
        """
        if para in self._sentences or not self.counter.additive:
            return self.sentence_bounds(para)
        start = self.para_starts[para]
        text = self._paragraph_text(para)
        a, _, starts = sentence_starts_near(text, max(lo_char - start, 0), min(max(hi_char - start, 0), len(text)))
        chars = ([start] if a == 0 else []) + [start + b for b in starts]
        return chars, [self.tokens.index(c) for c in chars]

    def _paragraph_text(self, para: int) -> str:
        """Paragraph ``para``'s text, one string object per paragraph: the sentence cache is keyed by the text,
        and a string hashes once, so a paragraph asked about once per cut is not copied and hashed per cut
        (which made chunking a long paragraph quadratic)."""
        text = self._paragraph_texts.get(para)
        if text is None:
            text = self._paragraph_texts[para] = self.text[self.para_starts[para] : self.para_ends[para]]
        return text

    def pretoken_starts(self, lo: int, hi: int) -> np.ndarray:
        """Indices of the tokens in ``[lo, hi)`` that begin a pre-token (no word piece continues there)."""
        out = []
        para = self.paragraph_of(self.tokens.starts[lo]) if lo < len(self.tokens) else len(self.para_starts)
        while lo < hi and para < len(self.para_starts):
            first = self.tokens.index(self.para_starts[para])
            last = self.tokens.index(self.para_ends[para])
            if last > lo:
                flags = self._pretoken_flags(para, last - first)
                a, b = max(lo, first), min(hi, last)
                out.append(np.flatnonzero(flags[a - first : b - first]) + a)
            para += 1
            if last >= hi:
                break
        return np.concatenate(out) if out else np.zeros(0, dtype=np.int64)

    def _pretoken_flags(self, para: int, n_tokens: int) -> np.ndarray:
        """Per token of paragraph ``para``: does it begin a pre-token? Tokenized again, only when needed."""
        flags = self._pretokens.get(para)
        if flags is None:
            encoding = self.counter.tokenizer.encode(
                self.text[self.para_starts[para] : self.para_ends[para]], add_special_tokens=False
            )
            # A token without a word (an added token) is a pre-token of its own.
            words = np.array([-1 - t if w is None else w for t, w in enumerate(encoding.word_ids)], dtype=np.int64)
            if len(words) != n_tokens:  # the paragraph was tokenized differently: allow every token start
                flags = np.ones(n_tokens, dtype=bool)
            else:
                flags = np.ones(len(words), dtype=bool)
                flags[1:] = words[1:] != words[:-1]
            self._pretokens[para] = flags
        return flags

    def release(self) -> None:
        """Drop the token offsets and per-paragraph lookups once the document is chunked."""
        self.tokens = None
        self._sentences.clear()
        self._pretokens.clear()
        self._paragraph_texts.clear()


def _contains(ordered: Sequence[int], value: int) -> bool:
    index = bisect.bisect_left(ordered, value)
    return index < len(ordered) and ordered[index] == value


@dataclass
class _Piece:
    start: int
    end: int
    tokens: int
    section_id: int
    path: tuple[str, ...]
    top_id: int
    cut: str  # how the piece's end was cut, one of CUT_KINDS


def _columns_by_doc(frame: pl.DataFrame, order: list[str], columns: list[str]) -> dict[str, dict[str, list]]:
    """Group a table's columns by ``doc_id`` as plain Python lists (one pass, no per-row polars)."""
    frame = frame.sort(["doc_id", *order])
    doc_ids = frame["doc_id"].to_list()
    data = {column: frame[column].to_list() for column in columns}
    groups: dict[str, dict[str, list]] = {}
    start = 0
    for index in range(1, len(doc_ids) + 1):
        if index == len(doc_ids) or doc_ids[index] != doc_ids[start]:
            groups[doc_ids[start]] = {column: values[start:index] for column, values in data.items()}
            start = index
    return groups


def _prepare(documents: pl.DataFrame, paragraphs: pl.DataFrame, sections: pl.DataFrame) -> list[_Doc]:
    paras = _columns_by_doc(paragraphs, ["para_idx"], ["start", "end"])
    secs = _columns_by_doc(sections, ["section_id"], ["section_id", "path", "top_section_id", "para_start", "para_end"])
    docs = []
    ordered = documents.select("doc_id", "text").sort("doc_id")
    for doc_id, text in zip(ordered["doc_id"].to_list(), ordered["text"].to_list()):
        text = text or ""
        para = paras.get(doc_id, {"start": [], "end": []})
        if text and not para["start"]:
            raise ValueError(f"document {doc_id!r} has text but no paragraphs")
        if para["start"] and para["start"][0] != 0:
            raise ValueError(f"document {doc_id!r}: first paragraph starts at {para['start'][0]}, not 0")
        sec = secs.get(doc_id)
        section_list = []
        if sec is None and para["start"]:
            raise ValueError(f"document {doc_id!r} has paragraphs but no sections")
        if sec is not None:
            for sid, path, top, ps, pe in zip(
                sec["section_id"], sec["path"], sec["top_section_id"], sec["para_start"], sec["para_end"]
            ):
                if pe > ps:
                    section_list.append(_Section(int(sid), tuple(path), int(top), int(ps), int(pe)))
            covered = [(s.para_start, s.para_end) for s in section_list]
            expected = 0
            for ps, pe in covered:
                if ps != expected:
                    raise ValueError(f"document {doc_id!r}: sections do not tile paragraphs at paragraph {expected}")
                expected = pe
            if expected != len(para["start"]):
                raise ValueError(f"document {doc_id!r}: sections cover {expected} of {len(para['start'])} paragraphs")
        docs.append(_Doc(doc_id, text, list(para["start"]), list(para["end"]), section_list))
    return docs


def _doc_spans(batch: list[_Doc], tokenizer: TokenCounter) -> list[TokenSpans]:
    """Token starts of each document, from its paragraphs tokenized as one parallel batch.

    Paragraphs are separated by whitespace, so (for a word-level tokenizer) the document's tokens are
    its paragraphs' tokens; many short texts also spread better over the tokenizer's threads than a
    few long ones. For the same reason a long paragraph is tokenized in pieces cut at spaces
    (:func:`tokenization_pieces`).
    """
    pieces_by_doc = [
        [
            piece
            for start, end in zip(doc.para_starts, doc.para_ends)
            for piece in tokenization_pieces(doc.text, start, end, tokenizer.additive)
        ]
        for doc in batch
    ]
    texts = [doc.text[start:end] for doc, pieces in zip(batch, pieces_by_doc) for start, end in pieces]
    shifts = [start for pieces in pieces_by_doc for start, _ in pieces]
    per_piece = iter(tokenizer.starts_batch(texts, shifts))
    out = []
    for pieces in pieces_by_doc:
        starts: list[int] = []
        for _ in pieces:
            starts.extend(next(per_piece))
        out.append(TokenSpans(starts))
    return out


def tokenization_pieces(
    text: str, start: int, end: int, word_level: bool, piece_chars: int = _TOKENIZE_PIECE_CHARS
) -> list[tuple[int, int]]:
    """``text[start:end]`` as consecutive ``(start, end)`` pieces to tokenize separately, with the same tokens.

    A word-level tokenizer (:attr:`TokenCounter.additive`) never joins characters across a space, so
    cutting right after one changes no token; each piece is then at most about ``piece_chars`` long
    (longer only where no space falls within it). Why: one very long text costs the Hugging Face
    tokenizer more than its length, many pieces cost their total length and spread over its threads
    (measured: docs/benchmarks.md, "Chunking a long paragraph is linear"). Other tokenizers (whose tokens
    mark a leading space) get the text whole.
    """
    if not word_level or end - start <= piece_chars:
        return [(start, end)]
    pieces = []
    while end - start > piece_chars:
        cut = text.rfind(" ", start + 1, start + piece_chars) + 1  # just after a space, or 0: none in reach
        if cut == 0:
            cut = text.find(" ", start + piece_chars, end) + 1
            if cut == 0:
                break
        pieces.append((start, cut))
        start = cut
    if start < end:
        pieces.append((start, end))
    return pieces


def _tokenized(docs: list[_Doc], tokenizer: TokenCounter) -> Iterator[_Doc]:
    """Yield documents with their token spans, tokenizing the next batch while this one is chunked.

    The tokenizer runs in Rust without the GIL, so a worker thread tokenizing batch ``i + 1``
    overlaps the Python work (sentence segmentation above all) on batch ``i``.
    """
    batches = [docs[i : i + _TOKENIZE_BATCH_DOCS] for i in range(0, len(docs), _TOKENIZE_BATCH_DOCS)]
    if not batches:
        return
    progress = Progress(LOG, "chunked", total=len(docs), unit="documents")
    with ThreadPoolExecutor(max_workers=1) as pool:
        pending = pool.submit(_doc_spans, batches[0], tokenizer)
        for index, batch in enumerate(batches):
            spans = pending.result()
            if index + 1 < len(batches):
                pending = pool.submit(_doc_spans, batches[index + 1], tokenizer)
            for doc, doc_spans in zip(batch, spans):
                doc.tokens, doc.counter = doc_spans, tokenizer
                yield doc
                doc.release()
                progress.update()
    progress.finish()
