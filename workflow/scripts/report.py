"""Write the report folder (Markdown, HTML, tables as Parquet + CSV, figures, manifest, summary line)."""

from structbench.logs import step_log
from structbench.report.bundle import ReportPaths, load_inputs, write_report_bundle

with step_log(snakemake.log[0], "report") as log:
    inputs = load_inputs(
        score_paths=list(snakemake.input.scores),
        contrast_paths=list(snakemake.input.contrasts),
        conditions=dict(snakemake.params.conditions),
        primary_metric=snakemake.params.primary_metric,
        contrast_specs=[dict(entry) for entry in snakemake.params.contrasts],
        bootstrap_iters=snakemake.params.bootstrap_iters,
        seed=snakemake.params.seed,
        corpus_stats_paths=dict(zip(snakemake.params.corpora, snakemake.input.corpus_stats)),
        size_match_paths=list(snakemake.input.size_matches),
        text_report_paths=list(snakemake.input.text_reports),
        bm25_score_paths=list(snakemake.input.bm25_scores),
        chunk_paths=dict(zip(map(tuple, snakemake.params.chunk_sets), snakemake.input.chunk_sets)),
        embed_report_paths=dict(zip(map(tuple, snakemake.params.embed_reports), snakemake.input.embed_reports)),
        induction_stats_paths=list(snakemake.input.induction_stats),
        context_stats_paths=list(snakemake.input.context_stats),
        retrieval_layer_paths=list(snakemake.input.retrieval_layer),
        t_max=snakemake.params.t_max,
        t_min=snakemake.params.t_min,
        querygen_stats_paths=list(snakemake.input.querygen_stats),
    )
    paths = ReportPaths(
        markdown=snakemake.output.report,
        html=snakemake.output.html,
        tables=snakemake.output.tables,
        figures=snakemake.output.figures,
        manifest=snakemake.output.manifest,
        summary=snakemake.output.summary,
    )
    log.info("%s", write_report_bundle(inputs, paths))
