"""Induce every document's section tree with a learned inducer: a trained model, or cross-fitted on the
corpus's own headings (train.corpus: self)."""

from structbench.atomic import write_json
from structbench.datamodel import read_table, write_table
from structbench.embedding.encoders import make_encoder
from structbench.logs import step_log
from structbench.structure.crossfit import cross_fitted_induction
from structbench.structure.learned import induce_learned
from structbench.structure.learned_model import load_learned_inducer

with step_log(snakemake.log[0], "learned_structure") as log:
    encoder = make_encoder(dict(snakemake.params.embedder), snakemake.params.cache, snakemake.threads)
    documents = read_table(snakemake.input.documents, "documents")
    paragraphs = read_table(snakemake.input.paragraphs, "paragraphs")
    options = dict(snakemake.params.options)
    model_file = dict(snakemake.input.items()).get("model")  # a trained or declared model, else cross-fit
    if model_file is not None:
        model = load_learned_inducer(model_file)
        sections, status = induce_learned(documents, paragraphs, encoder, model, **options)
        models = [{"fingerprint": model.fingerprint, "training": model.training}]
    else:
        sections, status, models = cross_fitted_induction(
            documents,
            paragraphs,
            read_table(snakemake.input.gold_sections, "sections"),
            encoder,
            dict(snakemake.params.train),
            options,
            f"inducers.{snakemake.wildcards.inducer} on corpus {snakemake.wildcards.corpus!r}",
        )
    usage = {"embedder": snakemake.params.embedder_name, **encoder.report(), "models": models}
    log.info("%d documents, %d sections; %d model(s); embedding %s", status.height, sections.height, len(models), usage)
    write_table(sections, snakemake.output.sections)
    write_table(status, snakemake.output.status)
    write_json(snakemake.output.usage, usage)
