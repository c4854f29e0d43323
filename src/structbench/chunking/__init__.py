"""The boundaries axis (docs/method.md §6): where chunks are cut — structural, fixed size-matched, semantic.

Every chunker returns a CHUNKS table whose chunks tile each document's flat text exactly (a set that declares
an overlap, docs/method.md §6 "Overlap", covers it in order instead: :func:`.tiling.assert_covering`): a chunk runs
from its first character to the first character of the next chunk, so the whitespace that separates
paragraphs (and sentences, lines, words) belongs to the chunk before it. Every cut falls on a token
start, so ``n_tokens`` (content tokens) of a chunk is the number of the document's tokens that start in
it, and the counts of the chunks of a document add up to the document's count.

Every chunker (:func:`structural_chunks`, :func:`semantic_chunks`, :func:`fixed_chunks`,
:func:`.external.locate.external_chunks`) has one signature: the leading positional arguments
``(documents, paragraphs, sections, tokenizer)`` (the corpus tables and the tokenizer or its name), and
everything else keyword-only.

Each paragraph is tokenized once; span token counts come from the token start offsets. With a
word-level pre-tokenizer (the study's BERT WordPiece) a cut between two pre-tokens (whitespace,
punctuation, CJK characters) splits nothing, so that count is exactly the token count of the chunk's
own text. The one exception is a cut inside a single pre-token, made only when one pre-token alone
has more than ``t_max`` word pieces (never for BERT WordPiece at ``t_max >= 100``: it reads a word of
over 100 characters as one ``[UNK]``); the chunk after such a cut is counted with the pieces the
whole word had. For a tokenizer that is not word-level, span counts are estimates: size decisions
use them, then every chunk is counted again on its own text and one over ``t_max`` by that count is
cut again (:func:`.cuts._own_counts`), so the bound holds for the counts reported.

The rules, in the words of docs/method.md §§6 and 17 where they are precise and ours where they are not:

* A **unit** is a section's own paragraphs (structural) or a run of adjacent paragraphs of one section
  whose neighbour cosine similarity reaches the threshold (semantic). Sections without paragraphs
  give no unit.
* **Split**: a unit over ``t_max`` tokens is cut at sentence boundaries (paragraph starts included)
  into the fewest parts that fit ``t_max``, as equal as possible: each cut is the sentence boundary
  nearest its equal-split position ``i * T / k``; where that does not fit (lumpy or over-long
  sentences), the cuts minimizing the sum of squared part sizes (:func:`split_cuts`).
* **Fallback**: a part still over ``t_max`` is a single sentence, and no sentence boundary serves. It
  is cut at line starts (the first non-space character after a line break); a part still over is a
  single line, cut at word starts (a non-space character after whitespace); a part still over is a
  single whitespace-delimited word, cut at token starts — first those that begin a pre-token, then,
  inside one over-long pre-token, any token start. Each level uses :func:`snapped_cuts`: the fewest
  parts, each cut the feasible candidate nearest its equal-split position. The last level can
  always fit, so **no chunk is ever over** ``t_max``.
* **Merge**: then, within each top-level section and left to right, a chunk under ``t_min`` is merged
  with the following chunk, else with the preceding one. A merge never crosses a top-level section
  and never makes a chunk larger than ``t_max`` (the hard bound: an embedder silently truncates past
  its window); a small chunk that fits with neither neighbour stays small, as does a top-level
  section that is one small chunk. A merged chunk keeps the first part's ``section_id`` and the
  deepest path all its parts share.

Bounds that therefore hold for structural and semantic chunks: ``n_tokens <= t_max`` always;
``n_tokens >= t_min`` unless the chunk is the only one of its top-level section or adding either
neighbour in its top-level section would pass ``t_max``. Fixed windows (:func:`fixed_chunks`) hold
``n_tokens <= t_max`` too.

**How each chunk's end was cut** is the CHUNKS column ``cut``, one of :data:`CUT_KINDS`, named after
the strongest boundary at the chunk's end: ``"end"`` (the document's end), ``"section"`` (a section
starts there), ``"paragraph"`` (a paragraph starts there: a split inside a unit, a semantic unit
boundary, a fixed window snapped to a paragraph start), ``"sentence"``, and the fallbacks
:data:`FALLBACK_CUTS` — ``"line"``, ``"word"``, ``"token"``. :func:`cut_counts` counts them for the
corpus report. Chunking time is linear in the text: every step looks up boundaries by bisection and
segments each paragraph once per chunker (``benchmarks/bench_chunk_scaling.py`` measures it;
``benchmarks/bench_chunk_linear.py``, one heading-less paragraph through :func:`structbench.chunk_markdown`).

Modules: :mod:`.document` (the prepared document, tokenization), :mod:`.cuts` (split, fallback and merge
rules, the CHUNKS output), :mod:`.structural` (structural and semantic chunks), :mod:`.fixed` (fixed
windows), :mod:`.tiling` (cut kinds, the tiling check, the size-match and bounds reports; light: the
chunk rules write its bounds report next to every chunk set, and the report reads that), and
:mod:`.external` (peer chunkers; its :mod:`.external.chunker_spec` is what the config check imports). This
package imports its entry points on first use, so importing one light module pulls in no other.
"""

from __future__ import annotations

import importlib

# Public entry points, imported on first use so that ``structbench.chunking.tiling`` and
# ``structbench.chunking.external.chunker_spec`` stay light (no tokenizer, sentence segmenter or peer library).
_EXPORTS = {
    "structural_chunks": "structural",
    "semantic_chunks": "structural",
    "fixed_chunks": "fixed",
    "partition_sizes": "cuts",
    "split_cuts": "cuts",
    "snapped_cuts": "cuts",
    "CUT_KINDS": "tiling",
    "FALLBACK_CUTS": "tiling",
    "assert_tiling": "tiling",
    "size_match_report": "tiling",
    "cut_counts": "tiling",
    "bounds_report": "tiling",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
