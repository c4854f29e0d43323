"""Peer chunkers as chunking conditions (docs/method.md §6, "Peer chunkers"): adapters that run LangChain,
chonkie, semchunk and semantic-text-splitter under the study's controls.

A chunker is declared in config as ``chunkers.<name>: {library, kind, size_match, options}``
(:class:`ChunkerSpec`); :func:`external_chunks` runs it over a corpus and returns a CHUNKS table that
every prefix and retrieval kind consumes unchanged, plus a JSON report.

**Input.** Each library gets, per document, either the flat text (kinds that split plain text) or its
Markdown (Markdown-aware kinds): the document title as ``#``, every titled section of ``sections`` as
a heading of ``len(path)`` hashes (capped at six; ``path[0]`` is the title, so a top-level section is
``##``), each followed by the section's own flat text copied verbatim (:func:`render_markdown`).
Heading lines are not flat text; the lead section (title ``""``) and untitled sections get no heading.

**Size and length function.** The study tokenizer (:func:`structbench.tokens.load_tokenizer`) counts
for the library: chonkie gets its ``tokenizers.Tokenizer`` (chonkie counts without special tokens),
semantic-text-splitter the tokenizer's JSON, LangChain and semchunk :meth:`TokenCounter.count` as
their length function (semchunk also gets the vocabulary's longest token, as it derives for a Hugging
Face tokenizer). The size is ``t_max`` unless size-matched (below). ``chunk_overlap``/``overlap`` declares an
overlap (see Overlap); options structbench sets itself (the size, the length function) are rejected,
naming the config key that governs them.

**Per library.** LangChain ``recursive`` is ``RecursiveCharacterTextSplitter`` with its default
separators; ``markdown`` is ``ExperimentalMarkdownSyntaxTextSplitter`` (splits at heading, fence and rule
lines, keeping the input's whitespace) with headings kept in the text, then the recursive splitter per
section. The classic ``MarkdownHeaderTextSplitter`` strips every line and re-joins them with ``"  \n"``,
so its chunks are not text of the input and cannot be located; headings are kept because with
``strip_headers`` a paragraph line starting ``"# "`` (a hashtag, in QASPER 1907.03187) is dropped as a
heading. chonkie is ``RecursiveChunker`` with its default levels minus the last, token-decoding one
(:func:`.adapters._chonkie_rules` says why), ``recursive_markdown`` with heading delimiters as a first level
(written here: chonkie's recipes download at run time). semchunk is ``chunkerify``; semantic-text-splitter
``TextSplitter`` or ``MarkdownSplitter``.

**Offsets, verified.** Chunks become content offsets into the flat text: where a library reports
offsets (semchunk ``offsets=True``, semantic-text-splitter ``chunk_indices``, chonkie
``start_index``/``end_index``) they are used and the chunk's text is compared with the input at those
offsets; LangChain reports none, so each chunk is searched for exactly, forward from the end of the
previous one. A chunk whose text is not found exactly is an :class:`ExternalChunkerError` naming the
chunker, the document and the chunk's first characters; nothing is ever matched fuzzily. A Markdown
chunk maps back to the flat characters it holds (heading lines map to nothing); a chunk that holds
only headings and whitespace maps to nothing and is dropped and counted (``heading_only_dropped``).

**Tiling.** Chunks tile the flat text, as every structbench chunker's do (``chunking.tiling.assert_tiling``,
the evidence alignment, the identical-span share and the report assume it): each chunk's content span
is its verified text with surrounding whitespace removed, and a chunk runs from its content start to
the next chunk's content start (the first from 0, the last to the document's end), so the whitespace
between two chunks belongs to the one before, as in :mod:`structbench.chunking`. Anything but
whitespace between two content spans means the library dropped text (LangChain's Markdown splitter
drops an unclosed code fence, for one): an error naming the document and the text.

**Overlap** (docs/method.md §6, "Overlap"). ``options.chunk_overlap`` or ``options.overlap`` (tokens, or a
share of the size below 1; :mod:`structbench.overlap`) becomes :attr:`ChunkerSpec.overlap` and reaches the
library as its own parameter, in tokens at the size it runs: LangChain's ``chunk_overlap``, semchunk's
call ``overlap``, semantic-text-splitter's ``overlap`` (chonkie's ``RecursiveChunker`` has none: refused).
The chunks then cover the text instead of tiling it: each is its content span, in the library's order,
``(start, end)`` increasing; whitespace between the text covered so far and the next chunk joins the
chunk that reached furthest, the first starts at 0 and the furthest ends at the document's end
(:func:`.locate._chunk_extents`); dropped text is an error as above. LangChain's chunks are then placed
where they overlap the chunk before (:func:`.adapters._searched`). A size at or below a token overlap is a library
failure at that size (skipped in size matching).

**Columns.** ``n_tokens`` is the study tokenizer's count of the chunk's own text (no special tokens; read
from the document's token starts where that is the same number, see :func:`.locate._chunk_document`); a
chunk over ``t_max`` is kept as the library made it and counted (``over_t_max``), never cut again.
``section_id`` and ``path`` are those of the section holding the chunk's first character (the last
non-empty section starting at or before it), so path prefixes and two-stage routing work unchanged.
``cut`` is the strongest boundary at the chunk's end, one of :data:`structbench.chunking.tiling.CUT_KINDS`:
``end``, ``section``, ``paragraph``, ``sentence`` (a sentence start by :mod:`structbench.sentences`),
``line`` (whitespace with a line break precedes it), ``word`` (whitespace precedes it), else ``token``;
a chunk of an overlapping set that ends where whitespace follows is read at the end of that whitespace, as
a tiling chunk holding it would end.

**Size matching** (``size_match: true``): per document, the library size ``s`` in ``1..t_max`` whose
realized mean ``n_tokens`` is closest to that document's mean in ``reference`` (its structural
chunks), the fixed windows' target. Realized means grow with ``s`` (not strictly), so ``s`` is found by
bisection for the smallest size whose mean reaches the target (``t_max`` if none does), and the
closest of every size tried wins (ties to the larger size): at most ``1 + ceil(log2(t_max))`` library
runs per document, deterministic because the libraries are.
"""
