"""The structure-source axis (SPEC section 5): where a document's section tree comes from.

- Gold structure is the document's own heading tree, built by the corpus loaders (:mod:`structbench.corpus`).
- :mod:`structbench.structure.induction`: an LLM reads the heading-stripped, numbered paragraphs and
  states the sections; its answer is checked, corrected once, repaired.
- :mod:`structbench.structure.stats`: each inducer's statuses and sections against gold, for the report.

Every inducer returns the same sections table as gold (:data:`structbench.datamodel.SECTIONS`), verified
by the same check, so every downstream step reads induced and gold structure alike.
"""
