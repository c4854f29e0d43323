"""Seed 004's retrieval-layer comparison of the run pairs config names (report.compare_runs)."""
from structbench.logs import step_log
from structbench.metrics import run_comparison_table
from structbench.tables import read_table, write_table

with step_log(snakemake.log[0], "compare_runs") as log:
    paths = list(snakemake.input)
    comparisons = [(dict(labels), read_table(paths[2 * i], "runs"), read_table(paths[2 * i + 1], "runs"))
                   for i, labels in enumerate(snakemake.params.labels)]
    table = run_comparison_table(comparisons)
    log.info("%d run pairs compared", table.height)
    write_table(table, snakemake.output[0])
