# structbench: does document structure help dense retrieval?
# The plan: corpus (-> generated queries) -> structure -> chunks -> texts (prefixes) -> vectors -> runs -> scores
# -> contrasts -> report.
import os

from snakemake.utils import min_version

min_version("9.0")


# The embedded default; --configfile FILE layers a user's config over it.
configfile: os.path.join(workflow.basedir, "config", "config.yaml")


include: "rules/common.smk"
include: "rules/corpus.smk"
include: "rules/structure.smk"
include: "rules/queries.smk"
include: "rules/chunks.smk"
include: "rules/embed.smk"
include: "rules/retrieve.smk"
include: "rules/score.smk"
include: "rules/stats.smk"
include: "rules/report.smk"


rule all:
    input:
        REPORT,
