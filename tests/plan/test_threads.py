"""An embedding job's thread request sized to its texts (structbench.plan.threads)."""

from __future__ import annotations

import polars as pl
import pytest

from structbench.plan.threads import TEXTS_PER_THREAD, table_rows, threads_for_texts


@pytest.mark.parametrize(
    ("n_texts", "most", "expected"),
    [
        (0, 8, 1),  # an empty job still runs on one core
        (1, 8, 1),
        (TEXTS_PER_THREAD, 8, 1),
        (TEXTS_PER_THREAD + 1, 8, 2),
        (3 * TEXTS_PER_THREAD, 8, 3),
        (100_000, 8, 8),  # never above the rule's own count
        (100_000, 4, 4),
        (None, 8, 8),  # not known yet (a dry run): the rule's count
    ],
)
def test_threads_for_texts(n_texts, most, expected):
    assert threads_for_texts(n_texts, most) == expected


@pytest.mark.parametrize(("n_texts", "most"), [(-1, 8), (10, 0)])
def test_threads_for_texts_rejects_nonsense(n_texts, most):
    with pytest.raises(ValueError, match="threads_for_texts"):
        threads_for_texts(n_texts, most)


def test_table_rows_reads_the_footer_and_none_before_the_table_exists(tmp_path):
    table = tmp_path / "texts.parquet"
    assert table_rows(table) is None
    pl.DataFrame({"chunk_id": [0, 1, 2], "text_for_embedding": ["a", "b", "c"]}).write_parquet(table)
    assert table_rows(table) == 3
    pl.DataFrame({"chunk_id": []}, schema={"chunk_id": pl.Int64}).write_parquet(table)
    assert table_rows(table) == 0
