"""The retrieval axis (docs/method.md §8): how chunks are searched, one module per arm of the study.

- :mod:`~structbench.retrieval.search`: flat corpus-wide FAISS search, the ranking rules every kind
  shares, and :func:`~structbench.retrieval.search.retrieve`, which dispatches a condition's retrieval kind.
- :mod:`~structbench.retrieval.routing`: routed retrieval's routers — two-stage section centroids
  (A4, G4) and the pure parts of TOC routing.
- :mod:`~structbench.retrieval.toc`: TOC routing's LLM step (Li (The Chunk Was Never in the Document)).
- :mod:`~structbench.retrieval.fusion`: reciprocal rank fusion (``rrf:<sources>``, the title-chain study).
- :mod:`~structbench.retrieval.rescoring`: query-side title injection and per-candidate prefix choice.
- :mod:`~structbench.retrieval.rerank`: the cross-encoder reranker axis.
- :mod:`~structbench.retrieval.bm25`: BM25 over the same chunks (the non-lexicality probe, hybrid search).

Importing this package imports none of them: each job pays only for the arm it runs.
"""
