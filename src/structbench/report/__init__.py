"""The report (docs/method.md §15): compute, then present.

- :mod:`~structbench.report.table_registry`: what a table reads
  (:class:`~structbench.report.table_registry.ReportInputs`), returns and how it is declared.
- :mod:`~structbench.report.results` and the diagnostics (:mod:`~structbench.report.chunk_set_tables`,
  :mod:`~structbench.report.llm_step_tables`, :mod:`~structbench.report.corpus_tables`): the table builders, each a
  pure function of the run's outputs; :mod:`~structbench.report.catalog` lists them in report order
  (:data:`~structbench.report.catalog.TABLE_ORDER`).
- :mod:`~structbench.report.formatting`: how numbers and p-values are written, for every renderer.
- :mod:`~structbench.report.markdown`, :mod:`~structbench.report.html`, :mod:`~structbench.report.latex`:
  the renderers.
- :mod:`~structbench.report.figures`: the figures, each a registered view of one table's data.
- :mod:`~structbench.report.bundle`: reads a run's files and writes the report folder.
"""
