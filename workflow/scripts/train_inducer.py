"""Train a learned structure inducer on its training corpus's documents with their gold headings."""

from structbench.atomic import write_json
from structbench.datamodel import read_table
from structbench.embedding.encoders import make_encoder
from structbench.logs import step_log
from structbench.structure.crossfit import train_on

with step_log(snakemake.log[0], "train_inducer") as log:
    encoder = make_encoder(dict(snakemake.params.embedder), snakemake.params.cache, snakemake.threads)
    settings = dict(snakemake.params.train)
    model = train_on(
        read_table(snakemake.input.documents, "documents"),
        read_table(snakemake.input.paragraphs, "paragraphs"),
        read_table(snakemake.input.sections, "sections"),
        encoder,
        settings,
        f"inducers.{snakemake.wildcards.inducer} (train.corpus = {settings['corpus']!r})",
    )
    model.save(snakemake.output.model)
    summary = {
        "inducer": snakemake.wildcards.inducer,
        "fingerprint": model.fingerprint,
        "train": settings,
        "training": model.training,
        "embedder": snakemake.params.embedder_name,
        "embedding": encoder.report(),
    }
    log.info("trained %s", summary)
    write_json(snakemake.output.training, summary)
