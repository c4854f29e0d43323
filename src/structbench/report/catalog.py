"""The report's tables in report order (docs/method.md §15): one tuple, :data:`TABLE_ORDER`.

The builders declare themselves (:func:`~structbench.report.table_registry.report_table`) in :mod:`.decision_table`,
:mod:`.results`, the diagnostics (:mod:`.chunk_set_tables`, :mod:`.llm_step_tables`, :mod:`.corpus_tables`),
:mod:`.index_cost`, :mod:`.span_rules`, :mod:`.size_curve`, :mod:`.decisive_table` and :mod:`.subgroup_tables`;
where each appears is written here once, so moving a table is an edit of this tuple, never of import order. A
declared table missing from the tuple, or a name in it that nothing declares, is an error at import.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from structbench.report import (  # noqa: F401  (importing them declares their tables)
    chunk_set_tables,
    corpus_tables,
    decision_table,
    decisive_table,
    index_cost,
    llm_step_tables,
    results,
    size_curve,
    span_rules,
    subgroup_tables,
)
from structbench.report.table_registry import DECLARED, Omitted, ReportInputs, Table, TableSpec, build_specs

TABLE_ORDER = (
    "decision",
    "conditions",
    "table1_contrasts",
    "table2_condition_means",
    "condition_means_ci",
    "subgroups",
    "metric_ladder",
    "span_rules",
    "dose_response",
    "size_curve",
    "section_recall",
    "retrieval_layer",
    "decisive_questions",
    "bm25_nonlexicality",
    "chunk_size_matching",
    "chunk_sizes",
    "chunk_bounds",
    "prefixes",
    "embedder_input",
    "index_cost",
    "induction",
    "situating_contexts",
    "llm_calls",
    "corpus_overview",
    "corpus_distributions",
    "corpus_funnel",
    "query_funnel",
    "query_generation",
    "per_query_scores",
)


def ordered_tables(declared: Mapping[str, TableSpec], order: Sequence[str]) -> dict[str, TableSpec]:
    """``declared`` in ``order``; every declared table is listed once and every listed one declared."""
    if len(set(order)) != len(order):
        raise ValueError(f"the table order lists a table twice: {sorted(n for n in order if order.count(n) > 1)}")
    unlisted, undeclared = sorted(set(declared) - set(order)), sorted(set(order) - set(declared))
    if unlisted or undeclared:
        raise ValueError(
            f"the table order and the declared tables differ: unlisted {unlisted}, undeclared {undeclared}"
        )
    return {name: declared[name] for name in order}


TABLES: dict[str, TableSpec] = ordered_tables(DECLARED, TABLE_ORDER)

# The tables with a row per chunk or per query: their files grow with the corpus (the decisive questions' with the
# contrasts and cells: a row per shown chunk, its excerpts repeated), and ``snakemake --report`` embeds every file it
# bundles in its one HTML page, which a full-size run would make slow to open (docs/benchmarks.md). They stay files
# under tables/, which index.html links and report.md names.
CORPUS_SIZED_TABLES = ("chunk_sizes", "per_query_scores", "decisive_questions")


def bundled_table_pattern() -> str:
    """The ``snakemake --report`` file pattern of the report's tables folder: every ``<name>.csv`` but the
    :data:`CORPUS_SIZED_TABLES` (a wildcard constraint whose lookahead refuses their file names)."""
    left_out = "|".join(re.escape(name) for name in CORPUS_SIZED_TABLES)
    return f"{{name,(?!(?:{left_out})\\.csv$)[^/]+}}.csv"


def build_tables(inputs: ReportInputs, specs: Sequence[TableSpec] | None = None) -> list[Table | Omitted]:
    """Every table (or ``specs``), built or omitted with its reason, in report order."""
    return build_specs(inputs, list(TABLES.values()) if specs is None else specs)
