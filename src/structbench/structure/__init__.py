"""The structure-source axis (docs/method.md §5): where a document's section tree comes from.

- Gold structure is the document's own heading tree, built by the corpus loaders (:mod:`structbench.corpus`).
- :mod:`structbench.structure.induction`: an LLM reads the heading-stripped, numbered paragraphs and
  states the sections; its answer is checked, corrected once, repaired.
- :mod:`structbench.structure.segmentation`: the model-free inducer — TextTiling over embeddings,
  hierarchical, with keyphrase titles — for where no capable LLM runs.
- :mod:`structbench.structure.agreement`: Pk, WindowDiff and boundary F1 of an induced tree against gold.
- :mod:`structbench.structure.induction_stats`: each inducer's statuses and sections against gold, for the report.

Every inducer returns the same sections table as gold (:data:`structbench.datamodel.SECTIONS`), verified
by the same check, so every downstream step reads induced and gold structure alike.
"""
