"""Synthetic queries with leakage control (docs/method.md §9; Kuehlkamp et al., appendix F).

A corpus without questions of its own (WikiText, Wikipedia-FA, a Markdown folder) is scored on queries
an LLM writes about gold spans that the pipeline, not the LLM, chooses. The protocol, one module a step:

1. :mod:`~structbench.querygen.targets` samples the gold targets per document with a seed:
   ``factoid`` and ``underspecified`` (one paragraph each), ``multihop`` (two paragraphs in different
   top-level sections), ``structural`` (a whole top-level section). Spans are content offsets into the
   flat text, so the queries table they end up in is scored like any other.
2. :mod:`~structbench.querygen.generate` asks the LLM for one question per target (a prompt per type,
   ``llm/prompts/querygen_*.txt``), screens it (:mod:`~structbench.querygen.leakage`: ROUGE-L F1 against
   the gold span at most ``rouge_max``, no shared normalized ``ngram_block``-gram, plus sanity checks),
   asks for a paraphrase of each question that passed, and screens the paraphrase the same way. The
   paraphrase is the query that ships.
3. :mod:`~structbench.querygen.funnel` merges the document shards, balances the survivors to
   ``per_type`` per type with a seed, and counts the funnel (generated → survivors → balanced finals,
   with every rejection reason) and the ROUGE-L distribution of the shipped queries.

:class:`~structbench.querygen.settings.QuerygenSettings` holds every threshold (config ``querygen``).
This package's ``__init__`` imports nothing: the CPU job that merges and balances
(:mod:`~structbench.querygen.funnel`) must not reach the LLM layer or ``rouge-score``.
"""
