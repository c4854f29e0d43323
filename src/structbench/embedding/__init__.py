"""Embedding (docs/method.md §8), in layers that import downwards only:

- ``kinds``: what an ``embedders``/``rerankers`` entry is (local model or endpoint) and its GPU count;
- ``report``: what every encoder shares (the report's keys, the truncation count, ``.npy`` bytes);
- ``local``: the sentence-transformers encoder (:class:`~structbench.embedding.local.EmbedderSpec`,
  :func:`~structbench.embedding.local.encode`, the model fingerprints);
- ``endpoint``: the OpenAI-compatible endpoint encoder (HTTP through ``structbench.http``);
- ``encoders``: :func:`~structbench.embedding.encoders.make_encoder`, ``embed_texts`` and
  ``embed_with_cache`` over both.

Nothing is re-exported here, so importing one layer never loads another (torch stays out of CPU steps).
"""
