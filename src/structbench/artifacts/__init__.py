"""What a run makes and where it lives (docs/architecture.md, "Artifacts"): the vocabulary every layer reads,
at the bottom of the import graph.

- :mod:`.selection`: the names a config's ``select`` keeps (corpora, embedders, rerankers, conditions) and the
  contrasts that survive a condition selection.
- :mod:`.keys`: the artifacts a run needs, as keys (chunk sets, size-matched sets, text sets, inducers).
- :mod:`.layout`: where each artifact lives under ``results/``, each path spelled once.
- :mod:`.cells`: the identity columns of a scored cell, including the BM25 probe's encoding.

Pure and light: the config check, the subsystems' start-up checks, the statistics step and the report import
them, and they import only the top-level primitives (:mod:`structbench.conditions`). The study that decides
what a config runs, and imports every subsystem to do so, is :mod:`structbench.plan`, at the top."""
