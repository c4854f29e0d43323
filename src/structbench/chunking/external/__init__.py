"""Peer chunkers as chunking conditions: adapters that run LangChain, chonkie, semchunk and
semantic-text-splitter under the study's controls, so a contrast against structural chunks isolates where
a chunker cuts (docs/method.md §6, "Peer chunkers", and "How the peer-chunker adapters run").

A chunker is declared in config as ``chunkers.<name>: {library, kind, size_match, options}``
(:class:`ChunkerSpec`); :func:`external_chunks` runs it over a corpus and returns a CHUNKS table that
every prefix and retrieval kind consumes unchanged, plus a JSON report. Each library counts with the study
tokenizer and runs at ``t_max`` or at the size that matches each document's structural chunks
(``size_match``); its chunks are located exactly in the flat text (never fuzzily: a chunk not found, or text
a library dropped, is an :class:`ExternalChunkerError`), tile the document unless an overlap is declared,
and carry the path of the section holding their first character.
"""
