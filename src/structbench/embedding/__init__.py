"""Embedding (docs/method.md §8), in layers that import downwards only:

- ``report``: what every encoder shares (the report's keys, the truncation count, ``.npy`` bytes);
- ``local``: the sentence-transformers encoder (:class:`~structbench.embedding.local.EmbedderSpec`,
  :func:`~structbench.embedding.local.encode`, the model fingerprints);
- ``endpoint``: the endpoint encoder, the embeddings client of :mod:`structbench.endpoints.embeddings`
  behind the vector cache;
- ``encoders``: :func:`~structbench.embedding.encoders.make_encoder`, ``embed_texts`` and
  ``embed_with_cache`` over both.

What a model entry is (local or endpoint) is decided below, in :mod:`structbench.endpoints.kinds`.
Nothing is re-exported here, so importing one layer never loads another (torch stays out of CPU steps).
"""
