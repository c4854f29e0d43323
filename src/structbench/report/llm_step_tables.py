"""The report's diagnostic tables on the LLM steps (docs/method.md §15): structure induction (statuses and
agreement with gold), situating contexts, and the calls and tokens each LLM step spent. Each builder is a pure
function of :class:`~structbench.report.table_registry.ReportInputs`."""

from __future__ import annotations

import polars as pl

from structbench.report.table_registry import Omit, ReportInputs, TableContent, report_table
from structbench.structure.sections import TITLE_CHARS

# The induction table's agreement columns: summary key -> column.
INDUCTION_AGREEMENT = {
    "pk": "Pk",
    "windowdiff": "WindowDiff",
    "boundary_precision": "boundary P",
    "boundary_recall": "boundary R",
    "boundary_f1": "boundary F1",
    "pk_top": "top Pk",
    "windowdiff_top": "top WindowDiff",
    "boundary_f1_top": "top F1",
}


@report_table(
    "induction",
    "Structure induction",
    "Per document: usable = an answer passed the tiling check (first round or after the one correction "
    "round), repaired = the deterministic repair changed the answer, failed = no usable section "
    "(single-section fallback); corrected counts the documents whose first answer failed the check "
    "and went to the correction round, whatever the outcome (a segmentation inducer has no rounds: "
    f"usable = more than one section); an answer breaking its JSON schema (a title over {TITLE_CHARS} characters, "
    "whatever the server returned) fails the check too, and shortened titles counts the titles the repair "
    "cut to that bound. identical spans is the share of the induced structural chunks "
    "whose span is byte-identical to a gold structural chunk (Kuehlkamp et al., table 9). Agreement with the gold "
    "section starts, over paragraph boundaries of every level: Pk (Beeferman et al. 1999) and WindowDiff "
    "(Pevzner and Hearst 2002), lower is better, probe width half the mean gold section length; boundary "
    "precision, recall and F1 with a tolerance of one paragraph (micro-averaged: matches and counts pooled "
    "over documents, each gold and induced boundary matched at most once); top Pk, WindowDiff and F1 count "
    "top-level sections only (probe width from top-level gold). Baseline rows score, under the same "
    "conventions, a single section per document and an even split of the paragraphs into gold's number of "
    "segments (all levels; top level): what an inducer must beat. Gold sections per document count empty "
    "parent headings (a heading whose text is all in its subsections); non-empty leaves them out.",
)
def induction_table(inputs: ReportInputs) -> TableContent:
    if not inputs.induction_stats:
        raise Omit("no induced structure in this config")
    rows, seen_baselines = [], set()
    for stats in sorted(inputs.induction_stats, key=lambda s: (s["corpus"], s["inducer"])):
        gold = {
            "sections/doc gold": stats["mean_sections_gold"],
            "gold, non-empty": stats.get("mean_sections_gold_nonempty"),
        }
        rows.append(
            {
                "corpus": stats["corpus"],
                "inducer": stats["inducer"],
                "kind": stats["kind"],
                **{key: stats[key] for key in ("documents", "usable", "repaired", "failed", "corrected")},
                "shortened titles": stats.get("shortened_titles", 0),
                "sections/doc induced": stats["mean_sections_induced"],
                **gold,
                "identical spans": stats["identical_span_share"],
                **{column: stats[key] for key, column in INDUCTION_AGREEMENT.items()},
            }
        )
        # The baselines under the same conventions, once per corpus and document set.
        for name, baseline in (stats.get("baselines") or {}).items():
            if (stats["corpus"], name, stats["documents"]) in seen_baselines:
                continue
            seen_baselines.add((stats["corpus"], name, stats["documents"]))
            rows.append(
                {
                    "corpus": stats["corpus"],
                    "inducer": f"baseline: {name}",
                    "kind": "baseline",
                    "documents": stats["documents"],
                    "sections/doc induced": baseline["sections_per_doc"],
                    **gold,
                    **{column: baseline[key] for key, column in INDUCTION_AGREEMENT.items()},
                }
            )
    rows.sort(key=lambda row: (row["corpus"], row["kind"] == "baseline"))  # stable: each corpus's baselines last
    return TableContent(pl.DataFrame(rows, infer_schema_length=None), float_digits=2)


@report_table(
    "situating_contexts",
    "Situating contexts",
    "Context length in study tokens (the tokenizer of every other count), after the cap "
    "contexts.max_tokens; truncated were cut at the cap, empty had no usable answer.",
)
def contexts_table(inputs: ReportInputs) -> TableContent:
    if not inputs.context_stats:
        raise Omit("no situating-context prefix in this config")
    data = (
        pl.DataFrame(inputs.context_stats, infer_schema_length=None)
        .select(
            "corpus",
            "chunk set",
            "chunks",
            "mean_context_tokens",
            "max_context_tokens",
            "truncated",
            "empty",
        )
        .sort("corpus", "chunk set")
    )
    return TableContent(data, float_digits=1)


@report_table(
    "llm_calls",
    "LLM calls",
    "Distinct requests per step, generated by the model or served from the shared response cache "
    "(<cache>/llm): a rerun with the same cache generates nothing. failed requests (the backend "
    "returned an error, e.g. a prompt over the model's context) are not cached and are asked again. "
    "Tokens count the generated requests only: prompt tokens, of them reused from a prefix cache "
    "(prefix reuse on the transformers backend, or the server's reported cached tokens), generated "
    "tokens; seconds is the time inside the backend summed over the step's jobs, tokens/s the "
    "generated tokens per second of it; from cache is the share of distinct requests served from "
    "the response cache.",
)
def llm_calls_table(inputs: ReportInputs) -> TableContent:
    rows = [
        {"step": "induction", "corpus": s["corpus"], "of": s["inducer"], **s["llm"]}
        for s in inputs.induction_stats
        if "llm" in s
    ]
    rows += [
        {"step": "contexts", "corpus": s["corpus"], "of": s["chunk set"], **s["llm"]} for s in inputs.context_stats
    ]
    if not rows:
        raise Omit("no LLM step in this config")
    tokens = ("prompt_tokens", "reused_prompt_tokens", "generated_tokens")
    rows = [dict.fromkeys(tokens, 0) | {"seconds": 0.0} | row for row in rows]  # usage files before tokens
    distinct = pl.col("generated") + pl.col("served_from_cache") + pl.col("failed")
    data = pl.DataFrame(rows, infer_schema_length=None).select(
        "step",
        "corpus",
        "of",
        "requests",
        "generated",
        "served_from_cache",
        "failed",
        "backend_calls",
        *tokens,
        pl.col("seconds").cast(pl.Float64),
        pl.when(pl.col("seconds") > 0)
        .then(pl.col("generated_tokens") / pl.col("seconds"))
        .otherwise(None)
        .alias("tokens/s"),
        pl.when(distinct > 0).then(pl.col("served_from_cache") / distinct).otherwise(None).alias("from cache"),
    )
    return TableContent(data, float_digits=2)
