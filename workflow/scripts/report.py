"""Write the report folder (Markdown, HTML, tables as Parquet + CSV, the decision and Tables 1-2 as LaTeX,
figures, manifest, summary line)."""

from structbench.logs import step_log
from structbench.report.bundle import ReportPaths, load_inputs, rule_input_paths, write_report_bundle

with step_log(snakemake.log[0], "report") as log:
    # one named input per structbench.report.table_registry.report_inputs() entry (rules/report.smk)
    inputs = load_inputs(
        rule_input_paths(snakemake.input, snakemake.params.input_keys),
        conditions=dict(snakemake.params.conditions),
        primary_metric=snakemake.params.primary_metric,
        contrast_specs=list(snakemake.params.contrasts),
        dropped_contrasts=list(snakemake.params.dropped_contrasts),
        bootstrap_iters=snakemake.params.bootstrap_iters,
    )
    paths = ReportPaths(
        markdown=snakemake.output.report,
        html=snakemake.output.html,
        tables=snakemake.output.tables,
        figures=snakemake.output.figures,
        manifest=snakemake.output.manifest,
        summary=snakemake.output.summary,
        latex=snakemake.output.latex,
    )
    log.info("%s", write_report_bundle(inputs, paths))
