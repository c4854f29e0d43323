"""Score one cell: every configured metric for every query of one (corpus, condition, embedder, reranker)."""

import polars as pl

from structbench.datamodel import read_table, write_table
from structbench.logs import step_log
from structbench.metrics import chroma_extents, score_run
from structbench.metrics.units import score_units

with step_log(snakemake.log[0], "score") as log:
    # a routed condition is also scored on its routing table, the sections its router kept (section_recall)
    routed = "routing" in snakemake.input.keys()  # noqa: SIM118 (a Namedlist: `in` reads values)
    if "units" in snakemake.input.keys():  # noqa: SIM118 (a read-time run ranks spans, docs/method.md §18)
        scores = score_units(
            read_table(snakemake.input.runs, "runs"),
            read_table(snakemake.input.units),
            read_table(snakemake.input.queries, "queries"),
            read_table(snakemake.input.chunks, "chunks"),
            metrics=list(snakemake.params.metrics),
        )
    else:
        chunks = read_table(snakemake.input.chunks, "chunks")
        inputs = {"kept_sections": read_table(snakemake.input.routing, "routing")} if routed else {}
        if "documents" in snakemake.input.keys():  # noqa: SIM118 (Chroma's chunk extents: span_precision_omega_chroma)
            inputs["chroma_chunks"] = chroma_extents(chunks, read_table(snakemake.input.documents, "documents"))
        scores = score_run(
            read_table(snakemake.input.runs, "runs"),
            read_table(snakemake.input.queries, "queries"),
            chunks,
            read_table(snakemake.input.texts, "texts"),
            metrics=list(snakemake.params.metrics),
            inputs=inputs,
        )
    cell = dict(snakemake.params.cell)
    scores = scores.with_columns([pl.lit(value).alias(key) for key, value in cell.items()])
    log.info("%s: %d queries scored", cell, scores.height)
    write_table(scores, snakemake.output[0])
