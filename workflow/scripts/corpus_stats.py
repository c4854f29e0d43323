"""Per-corpus statistics for the report."""

from structbench.atomic import write_json
from structbench.corpus import CorpusTables
from structbench.corpus.corpus_stats import corpus_statistics
from structbench.datamodel import read_table
from structbench.logs import step_log

with step_log(snakemake.log[0], "corpus_stats"):
    tables = CorpusTables(**{name: read_table(path) for name, path in snakemake.input.items()})
    write_json(snakemake.output[0], corpus_statistics(tables))
