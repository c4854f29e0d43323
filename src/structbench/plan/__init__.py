"""The plan of a run: what a config runs and where each artifact lives (docs/architecture.md, "Plan").

- :mod:`.selection`: the names a config's ``select`` keeps (corpora, embedders, rerankers, conditions) and the
  contrasts that survive a condition selection.
- :mod:`.keys`: the artifacts a run needs, as keys (chunk sets, size-matched sets, text sets, inducers).
- :mod:`.layout`: where each artifact lives under ``results/``, each path spelled once.
- :mod:`.cells`: the identity columns of a scored cell, including the BM25 probe's encoding.
- :mod:`.study`: the :class:`~structbench.plan.study.Study` a config describes, decided once, and the start-up
  checks (:func:`~structbench.plan.study.start_up`); :mod:`.report_files`: the files the report reads.

The first four are pure and light (the config check, the statistics step and the report import them); the study
and its report file lists sit above the config check (tests/test_import_graph.py layers them apart), so this
package root imports none of its modules."""
