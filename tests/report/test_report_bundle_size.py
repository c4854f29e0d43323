"""The report of a full-size run stays quick to open: the tables with a row per chunk or per query are files under
tables/, never embedded in the ``snakemake --report`` page, which bundles every file its pattern matches."""

from snakemake.io import glob_wildcards

from structbench.report.catalog import CORPUS_SIZED_TABLES, TABLES, bundled_table_pattern


def test_the_bundle_pattern_takes_every_table_csv_but_the_corpus_sized_ones(tmp_path):
    for name in [*TABLES, "per_query_scores_by_type", "chunk_sizes_v2"]:
        (tmp_path / f"{name}.csv").write_text("a\n1\n")
        (tmp_path / f"{name}.parquet").write_bytes(b"PAR1")
    bundled = set(glob_wildcards(str(tmp_path / bundled_table_pattern())).name)
    assert bundled == set(TABLES) - set(CORPUS_SIZED_TABLES) | {"per_query_scores_by_type", "chunk_sizes_v2"}
    assert set(CORPUS_SIZED_TABLES) == {"chunk_sizes", "per_query_scores", "decisive_questions"} <= set(TABLES)
