"""Per-condition statistics of one cell: each condition's mean with its bootstrap CI, the dose-response
slopes (structbench.stats.means) and the decision, the conditions ranked against the leader
(structbench.stats.decision), the tables the report formats."""

import polars as pl

from structbench.datamodel import read_table, write_table
from structbench.logs import step_log
from structbench.stats.decision import decision_table
from structbench.stats.means import DoseSeries, condition_mean_cis, dose_response_slopes

with step_log(snakemake.log[0], "condition_stats") as log:
    scores = pl.concat([read_table(path) for path in snakemake.input], how="diagonal_relaxed")
    metric, B, seed = snakemake.params.primary_metric, snakemake.params.bootstrap_iters, snakemake.params.seed
    cluster = snakemake.params.cluster
    means = condition_mean_cis(scores, metric, n_boot=B, seed=seed, cluster=cluster)
    series = [DoseSeries.from_params(entry) for entry in snakemake.params.series]
    slopes = dose_response_slopes(scores, series, metric, n_boot=B, seed=seed, cluster=cluster)
    conditions = {name: dict(axes) for name, axes in snakemake.params.conditions.items()}
    decision = decision_table(scores, conditions, metric, n_boot=B, seed=seed, cluster=cluster)
    log.info("\n%s\n%s\n%s", means, slopes, decision)
    write_table(means, snakemake.output.means)
    write_table(slopes, snakemake.output.dose_response)
    write_table(decision, snakemake.output.decision)
