"""Per-corpus statistics for the report."""
import json

from structbench.corpus import CorpusTables
from structbench.corpus.stats import corpus_statistics
from structbench.logs import step_log
from structbench.tables import read_table

with step_log(snakemake.log[0], "corpus_stats"):
    tables = CorpusTables(**{name: read_table(path) for name, path in snakemake.input.items()})
    with open(snakemake.output[0], "w") as out:
        json.dump(corpus_statistics(tables), out, indent=1, sort_keys=True)
