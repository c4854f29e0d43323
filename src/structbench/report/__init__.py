"""The report (docs/method.md §15): compute, then present.

- :mod:`~structbench.report.tables`: the paper's tables, each a registered pure function of the run's
  outputs (:data:`~structbench.report.tables.TABLES`).
- :mod:`~structbench.report.figures`: the figures, each a registered view of one table's data.
- :mod:`~structbench.report.html`: the standalone one-page HTML report.
- :mod:`~structbench.report.bundle`: reads a run's files and writes the report folder.
"""
