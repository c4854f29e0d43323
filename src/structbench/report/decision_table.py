"""The report's first table (docs/method.md §11, "Decision"; §15): which condition to use on this corpus.

Per cell, the statistics step's ranking (:func:`structbench.stats.decision.decision_table`: each condition's
mean on the cell's decision reading with its 95% CI, tied with the leader or not by the Holm-adjusted paired
bootstrap p of ``leader − condition``) with each condition's cost beside it: the index it embeds (tokens and
vectors, from the index-cost table's numbers) and the LLM it calls (requests and tokens, from the LLM steps'
usage). Notes give the leader as one call of the public API where it is one, the power (the minimum detectable
effect) and the ceiling (the leader's queries at the metric's maximum).
"""

from __future__ import annotations

import polars as pl

from structbench.artifacts.cells import CELL
from structbench.conditions import AXES, Condition
from structbench.defaults import ALPHA, T_MAX, T_MIN
from structbench.metrics.registry import metric_label
from structbench.report.formatting import cell_heading, format_p
from structbench.report.index_cost import index_cost_rows
from structbench.report.table_registry import Block, Omit, ReportInputs, TableContent, report_table, require_scores
from structbench.stats.contrasts import MIN_CLUSTERS
from structbench.stats.decision import MDE_MULTIPLIER, METRIC_MAXIMUM, leader_call, needs_workflow
from structbench.stats.readings import budget_of

COST = {
    "corpus": pl.String,
    "embedder": pl.String,
    "condition": pl.String,
    "index_tokens": pl.Int64,
    "vectors": pl.Int64,
    "llm_calls": pl.Int64,
    "llm_tokens": pl.Int64,
    "llm_missing": pl.String,  # what uses an LLM whose usage the run did not record ("" when none)
}


def as_condition(name: str, axes: dict) -> Condition:
    """A condition entry (its axes, and its own size where it has one) as a :class:`Condition`."""
    return Condition(name, **{axis: str(axes[axis]) for axis in AXES}, t_max=axes.get("t_max"), t_min=axes.get("t_min"))


def recipe(inputs: ReportInputs, corpus: str, name: str) -> str:
    """The condition as one call of the public API (:func:`structbench.stats.decision.leader_call`, at the
    ``t_max`` / ``t_min`` its chunk set was held to: its bounds report), else the axes that need the workflow."""
    axes = inputs.conditions.get(name)
    if axes is None:
        return "needs the workflow"
    bounds = inputs.chunk_bounds.get((corpus, as_condition(name, axes).chunkset), {})
    call = leader_call(axes, t_max=bounds.get("t_max", T_MAX), t_min=bounds.get("t_min", T_MIN))
    return call or f"needs the workflow: {needs_workflow(axes)}"


def _llm_usage(stats: dict) -> tuple[int, int]:
    llm = stats.get("llm") or {}
    return int(llm.get("requests", 0)), int(llm.get("prompt_tokens", 0)) + int(llm.get("generated_tokens", 0))


def condition_costs(inputs: ReportInputs, cells: pl.DataFrame) -> pl.DataFrame:
    """Per (corpus, embedder, condition) of ``cells``: the embedded tokens and vectors of the condition's text
    set (:func:`structbench.report.index_cost.index_cost_rows`; null where the run embedded none of its own,
    e.g. a BM25 run) and the LLM requests and tokens (prompt + generated, of the generated requests) of the
    steps that build it: its structure's inducer and its situating contexts. A query-time LLM (``retrieval:
    toc``) records no usage the report reads: ``llm_missing`` names it."""
    index = index_cost_rows(inputs.embed_reports, inputs.text_reports, inputs.chunk_sets, inputs.chunk_bounds)
    by_set = {
        (row["corpus"], row["embedder"], row["text set"]): (row["embedded tokens"], row["chunks"])
        for row in index.iter_rows(named=True)
    }
    induction = {(s["corpus"], s.get("inducer")): s for s in inputs.induction_stats}
    contexts = {(s["corpus"], s.get("chunk set")): s for s in inputs.context_stats}
    rows = []
    for corpus, embedder, name in cells.select("corpus", "embedder", "condition").unique(maintain_order=True).rows():
        axes = inputs.conditions.get(name)
        if axes is None:
            continue
        condition = as_condition(name, axes)
        tokens, vectors = by_set.get((corpus, embedder, condition.textset), (None, None))
        calls, llm_tokens, missing = 0, 0, []
        if condition.kind("structure") == "induced":
            stats = induction.get((corpus, condition.parameter("structure")))
            if stats is None:
                missing.append(f"inducer {condition.parameter('structure')}")
            else:
                calls, llm_tokens = _llm_usage(stats)
        if condition.kind("prefix") == "context":
            stats = contexts.get((corpus, condition.chunkset))
            if stats is None:
                missing.append("situating contexts")
            else:
                used = _llm_usage(stats)
                calls, llm_tokens = calls + used[0], llm_tokens + used[1]
        if condition.kind("retrieval") == "toc":
            missing.append("the TOC router's query-time calls")
        rows.append((corpus, embedder, name, tokens, vectors, calls, llm_tokens, ", ".join(missing)))
    return pl.DataFrame(rows, schema=COST, orient="row")


def _verdict(rank: int, tied: bool | None, p_holm: float | None, fragile: bool | None, B: int | None) -> str:
    if rank == 1:
        return "leader"
    p = format_p(p_holm, B)
    p = p if p.startswith("<") else f"= {p}"
    text = f"tied with the leader (p {p})" if tied else f"below the leader (p {p})"
    return text + (" (fragile)" if fragile else "")


def _ci(low: float | None, high: float | None) -> str:
    return "n/a" if low is None or low != low else f"[{low:.3f}, {high:.3f}]"


@report_table(
    "decision",
    "Decision: which condition on this corpus",
    "Per corpus, embedder and reranker, the conditions ranked by their mean on the reading no length can game: "
    "the smallest token budget's coverage when a read-time condition runs (its units vary in length), else "
    "the primary metric; each with its 95% document-clustered bootstrap CI and its cost: the tokens and "
    "vectors its index embeds, and the LLM requests and tokens that build it. A condition is tied with the "
    f"leader when the Holm-adjusted paired bootstrap p of leader − condition is at least {ALPHA:g} (Holm over "
    "the cell's comparisons with the leader). The power note gives the minimum detectable effect, "
    f"{MDE_MULTIPLIER:.2f} × the bootstrap standard error of the paired difference (80% power, two-sided "
    f"alpha = {ALPHA:g}); the ceiling note the share of the leader's queries at the metric's maximum.",
)
def decision_report(inputs: ReportInputs) -> TableContent:
    require_scores(inputs)
    ranked = inputs.decisions
    if ranked.is_empty():
        raise Omit("the statistics step wrote no decision table")
    costs = condition_costs(inputs, ranked)
    data = ranked.join(costs, on=["corpus", "embedder", "condition"], how="left", maintain_order="left").sort(
        CELL + ["rank"], maintain_order=True
    )
    recipes = [recipe(inputs, corpus, name) for corpus, name in data.select("corpus", "condition").rows()]
    data = data.with_columns(pl.Series("recipe", recipes, dtype=pl.String))
    B = inputs.bootstrap_iters
    blocks, notes = [], []
    for (corpus, embedder, reranker), cell in data.group_by(CELL, maintain_order=True):
        metric = cell["metric"][0]
        shown = cell.select(
            "rank",
            "condition",
            pl.col("mean").alias(metric_label(metric)),
            pl.struct("ci_low", "ci_high")
            .map_elements(lambda r: _ci(r["ci_low"], r["ci_high"]), return_dtype=pl.String)
            .alias("95% CI"),
            pl.struct("rank", "tied", "p_holm", "holm_fragile")
            .map_elements(
                lambda r: _verdict(r["rank"], r["tied"], r["p_holm"], r["holm_fragile"], B), return_dtype=pl.String
            )
            .alias("vs leader"),
            pl.col("index_tokens").alias("index tokens"),
            "vectors",
            pl.col("llm_calls").alias("LLM calls"),
            pl.col("llm_tokens").alias("LLM tokens"),
        )
        heading = f"{cell_heading(corpus, embedder, reranker)} · ranked on {metric_label(metric)}"
        blocks.append(Block(heading, shown))
        notes.extend(cell_notes(cell, heading))
    return TableContent(data, tuple(blocks), tuple(notes))


def _few_clusters(leader: dict) -> str:
    """A warning when the bootstrap resampled fewer than MIN_CLUSTERS units ("" otherwise)."""
    n, unit = leader.get("n_clusters"), leader.get("cluster") or "document"
    if n is None or n >= MIN_CLUSTERS:
        return ""
    return (
        f" Only {n} {unit}s were resampled: below {MIN_CLUSTERS} clusters the clustered bootstrap's CIs are too "
        "narrow and its p too small, so the ties, ranks and MDE here are optimistic."
    )


def cell_notes(cell: pl.DataFrame, heading: str) -> list[str]:
    """The leader as a call, the power note and the ceiling note of one cell (rows in rank order), and where an
    LLM's usage is missing."""
    leader = cell.row(0, named=True)
    tied = cell.filter(pl.col("tied").fill_null(False))["condition"].to_list()
    recipe = leader["recipe"]
    said = f"`{recipe}`" if recipe.startswith("structbench.") else recipe
    ties = f"; tied with it: {', '.join(tied)}" if tied else ""
    notes = [f"{heading}: leader {leader['condition']}: {said}{ties}."]
    budget = budget_of(leader["metric"])
    if budget is not None:
        notes.append(
            f"{heading}: a read-time condition runs, so the ranking reads the smallest token budget: whole units "
            f"only, the walk stopping at the first that does not fit, so a unit longer than {budget} tokens cannot "
            "be read within it; the larger budgets and coverage-nDCG are in Table 1 and the metric ladder."
        )
    compared = cell.filter(pl.col("mde").is_not_null() & pl.col("mde").is_not_nan())
    if compared.height:
        runner = compared.row(0, named=True)  # the closest comparison, the next in rank
        mdes = compared["mde"]
        spread = f" (against the other conditions {mdes.min():.3f} to {mdes.max():.3f})" if mdes.len() > 1 else ""
        notes.append(
            f"{heading}: power: with {leader['n_queries']} queries over {leader['n_docs']} documents, the smallest "
            f"difference from the leader this run detects with 80% power (two-sided α = {ALPHA:g}) is "
            f"{runner['mde']:.3f} for {runner['condition']} (MDE = {MDE_MULTIPLIER:.2f} × SE, SE = "
            f"{runner['se']:.4f} from the bootstrap){spread}." + _few_clusters(leader)
        )
    notes.append(
        f"{heading}: ceiling: {leader['at_ceiling']:.1%} of the leader's queries score the maximum "
        f"({METRIC_MAXIMUM:g}): no condition can show a gain on those."
    )
    missing = cell.filter(pl.col("llm_missing").fill_null("") != "")
    for name, what in missing.select("condition", "llm_missing").rows():
        notes.append(f"{heading}: {name}'s LLM usage is not recorded for {what}; its LLM columns count the rest.")
    return notes
