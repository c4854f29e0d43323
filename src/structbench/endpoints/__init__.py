"""Models served over HTTP: the layer below embedding and retrieval that speaks to endpoints.

- ``kinds``: what an ``embedders``/``rerankers`` entry is (a local model or an endpoint) and its GPU count;
- ``endpoint_spec``: the endpoint entries as values (:class:`~structbench.endpoints.endpoint_spec.EndpointSpec`,
  what every endpoint shares, and the embedder's and the reranker's own keys);
- ``embeddings``: the embeddings client (OpenAI-compatible ``POST /embeddings``) and its reply checks;
- ``rerank``: the rerank client (``POST /rerank``, cohere or tei shape) and its reply checks;
- ``probe``: one request to every endpoint a run uses, before any job.

Standard library HTTP only (``structbench.http``): nothing here imports torch, and nothing here imports
embedding or retrieval, which build their encoders and scorers (the cache, the reports) on these clients.
Nothing is re-exported here, so importing one module never loads another.
"""
