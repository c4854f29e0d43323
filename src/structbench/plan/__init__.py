"""The study a config describes (docs/architecture.md, "Plan"), at the top of the import graph: it asks every
subsystem's checks and settings what runs.

- :mod:`.study`: the :class:`~structbench.plan.study.Study` a config describes, decided once, and the start-up
  checks (:func:`~structbench.plan.study.start_up`).
- :mod:`.report_files`: the files the report reads (:class:`~structbench.plan.report_files.ReportFiles`, which
  ``Study`` inherits).

The keys, paths, cell columns and selection it reads are :mod:`structbench.artifacts`, at the bottom; the report's
file lists sit below the config check and the study above it (tests/test_import_graph.py layers them apart), so
this package root imports none of its modules."""
