"""Write the Markdown report from every cell's scores and contrasts."""
from structbench.logs import step_log
from structbench.report import write_report

with step_log(snakemake.log[0], "report") as log:
    write_report(
        score_paths=list(snakemake.input.scores),
        contrast_paths=list(snakemake.input.contrasts),
        corpus_stats_paths=dict(zip(snakemake.params.corpora, snakemake.input.corpus_stats)),
        size_match_paths=list(snakemake.input.size_matches),
        text_report_paths=list(snakemake.input.text_reports),
        bm25_score_paths=list(snakemake.input.bm25_scores),
        chunk_paths=dict(zip(map(tuple, snakemake.params.chunk_sets), snakemake.input.chunk_sets)),
        embed_reports=dict(zip(map(tuple, snakemake.params.embed_reports), snakemake.input.embed_reports)),
        t_max=snakemake.params.t_max,
        t_min=snakemake.params.t_min,
        conditions=dict(snakemake.params.conditions),
        primary_metric=snakemake.params.primary_metric,
        bootstrap_iters=snakemake.params.bootstrap_iters,
        contrast_specs=[dict(entry) for entry in snakemake.params.contrasts],
        induction_stats_paths=list(snakemake.input.induction_stats),
        context_stats_paths=list(snakemake.input.context_stats),
        querygen_stats_paths=list(snakemake.input.querygen_stats),
        report_path=snakemake.output.report,
        means_path=snakemake.output.means,
    )
    log.info("report written to %s", snakemake.output.report)
