"""Mechanical verification of structure tables (docs/method.md §3; Kuehlkamp et al., appendix E.2).

``verify_sections`` returns a list of violations, each naming the document (and section) and the
problem; an empty list means verified. It checks, per document:

- the sections are numbered ``0..n-1`` and tile the paragraph table: the first starts at paragraph
  0, each starts where the previous ended, the last ends at the last paragraph, none is reversed
  or out of bounds (a section with no paragraphs of its own, ``para_start == para_end``, is legal);
- ``start``/``end`` agree with the paragraph table ("char offsets disagree with paragraph table");
- levels are legal: ``1 <= level <= MAX_LEVEL``, the first section has level 1, and a level rises
  by at most one between consecutive sections;
- ``top_section_id`` names the nearest level-1 section at or before the section;
- every document of the paragraph table has sections and every sectioned document has paragraphs.

``verify_paragraphs`` checks the paragraph table against the flat texts (offsets contiguous with
the separator between them, covering the whole text); ``verify_queries`` checks query spans (in
bounds, non-empty, sorted and disjoint, on a known document); ``verify_corpus`` runs all three on a
``CorpusTables``. The checks are polars expressions, so a
corpus of thousands of documents verifies in well under a second.
"""

from __future__ import annotations

import polars as pl

from structbench.datamodel import MAX_LEVEL, PARAGRAPH_SEPARATOR, is_one_field


def failed_checks(frame: pl.DataFrame, checks: list[tuple[pl.Expr, str]]):
    """Yield ``(row, problem)`` for every row of ``frame`` and every check whose condition holds there;
    all conditions are evaluated in one vectorized pass (a null condition counts as passing)."""
    flagged = frame.with_columns(
        [condition.fill_null(False).alias(f"check_{index}") for index, (condition, _) in enumerate(checks)]
    )
    any_flag = pl.any_horizontal([pl.col(f"check_{index}") for index in range(len(checks))])
    for row in flagged.filter(any_flag).iter_rows(named=True):
        for index, (_, problem) in enumerate(checks):
            if row[f"check_{index}"]:
                yield row, problem


def verify_sections(paragraphs: pl.DataFrame, sections: pl.DataFrame) -> list[str]:
    """Violations of the section contract; ``[]`` when ``sections`` tile ``paragraphs`` legally."""
    violations: list[str] = []
    para_docs = paragraphs.group_by("doc_id").agg(
        pl.len().alias("n_paragraphs"),
        pl.col("end").max().alias("doc_end"),
        (pl.col("para_idx").sort() != pl.int_range(pl.len())).any().alias("bad_numbering"),
    )
    for row in para_docs.filter(pl.col("bad_numbering")).iter_rows(named=True):
        violations.append(f"{row['doc_id']}: paragraph indices are not 0..{row['n_paragraphs'] - 1}")
    section_docs = set(sections["doc_id"].unique().to_list())
    paragraph_docs = set(para_docs["doc_id"].to_list())
    for doc_id in sorted(paragraph_docs - section_docs):
        violations.append(f"{doc_id}: has paragraphs but no sections")
    for doc_id in sorted(section_docs - paragraph_docs):
        violations.append(f"{doc_id}: has sections but no paragraphs")

    frame = (
        sections.sort("doc_id", "section_id")
        .join(para_docs.select("doc_id", "n_paragraphs", "doc_end"), on="doc_id", how="left")
        .with_columns(
            pl.int_range(pl.len()).over("doc_id").alias("ordinal"),
            pl.col("para_end").shift(1).over("doc_id").alias("previous_para_end"),
            pl.col("level").cast(pl.Int32).shift(1).over("doc_id").alias("previous_level"),
            (pl.int_range(pl.len()) == pl.len() - 1).over("doc_id").alias("is_last"),
            pl.when(pl.col("level") == 1)
            .then(pl.col("section_id"))
            .otherwise(None)
            .forward_fill()
            .over("doc_id")
            .alias("expected_top"),
        )
    )
    starts = paragraphs.select(
        "doc_id", pl.col("para_idx").cast(pl.Int32).alias("para_start"), pl.col("start").alias("para_start_offset")
    )
    ends = paragraphs.select(
        "doc_id", (pl.col("para_idx").cast(pl.Int32) + 1).alias("para_end"), pl.col("end").alias("para_end_offset")
    )
    frame = frame.join(starts, on=["doc_id", "para_start"], how="left").join(
        ends, on=["doc_id", "para_end"], how="left"
    )
    is_empty = pl.col("para_start") == pl.col("para_end")
    expected_start = (
        pl.when(is_empty & (pl.col("para_start") == pl.col("n_paragraphs")))
        .then(pl.col("doc_end"))
        .otherwise(pl.col("para_start_offset"))
    )
    expected_end = pl.when(is_empty).then(expected_start).otherwise(pl.col("para_end_offset"))
    in_bounds = (
        (pl.col("para_start") >= 0)
        & (pl.col("para_start") <= pl.col("para_end"))
        & (pl.col("para_end") <= pl.col("n_paragraphs"))
    )
    checks = [
        (pl.col("section_id") != pl.col("ordinal"), "section ids are not 0..n-1 in order"),
        (pl.col("n_paragraphs").is_not_null() & ~in_bounds, "paragraph range out of bounds or reversed"),
        ((pl.col("ordinal") == 0) & (pl.col("para_start") != 0), "first section does not start at paragraph 0"),
        (
            (pl.col("ordinal") > 0) & (pl.col("para_start") < pl.col("previous_para_end")),
            "overlaps the previous section",
        ),
        (
            (pl.col("ordinal") > 0) & (pl.col("para_start") > pl.col("previous_para_end")),
            "gap after the previous section",
        ),
        (
            pl.col("is_last") & (pl.col("para_end") != pl.col("n_paragraphs")),
            "last section does not end at the last paragraph",
        ),
        (
            pl.col("n_paragraphs").is_not_null()
            & in_bounds
            & ((pl.col("start") != expected_start) | (pl.col("end") != expected_end)).fill_null(True),
            "char offsets disagree with paragraph table",
        ),
        ((pl.col("level") < 1) | (pl.col("level") > MAX_LEVEL), f"level outside 1..{MAX_LEVEL}"),
        ((pl.col("ordinal") == 0) & (pl.col("level") != 1), "first section is not level 1"),
        (
            (pl.col("ordinal") > 0) & (pl.col("level").cast(pl.Int32) - pl.col("previous_level") > 1),
            "level rises by more than one",
        ),
        (
            (pl.col("top_section_id") != pl.col("expected_top")).fill_null(True),
            "top_section_id is not its level-1 ancestor",
        ),
    ]
    for row, problem in failed_checks(frame, checks):
        detail = (
            f" (start {row['start']}, end {row['end']}; paragraphs {row['para_start']}..{row['para_end']})"
            if "offsets" in problem or "bounds" in problem
            else f" (level {row['level']} after {row['previous_level']})"
            if "level" in problem and "rises" in problem
            else ""
        )
        violations.append(f"{row['doc_id']}: section {row['section_id']}: {problem}{detail}")
    return violations


def verify_paragraphs(documents: pl.DataFrame, paragraphs: pl.DataFrame) -> list[str]:
    """Violations of the paragraph contract: offsets laid end to end with the separator, covering the text."""
    violations: list[str] = []
    separator = PARAGRAPH_SEPARATOR
    docs = documents.select("doc_id", "text", "n_chars", pl.col("text").str.len_chars().alias("text_length"))
    for row in docs.filter(pl.col("n_chars") != pl.col("text_length")).iter_rows(named=True):
        violations.append(f"{row['doc_id']}: n_chars {row['n_chars']} != text length {row['text_length']}")
    frame = (
        paragraphs.sort("doc_id", "para_idx")
        .join(docs, on="doc_id", how="left")
        .with_columns(
            pl.col("end").shift(1).over("doc_id").alias("previous_end"),
            pl.int_range(pl.len()).over("doc_id").alias("ordinal"),
            (pl.int_range(pl.len()) == pl.len() - 1).over("doc_id").alias("is_last"),
        )
        .with_columns(
            pl.col("text")
            .str.slice(pl.col("previous_end").fill_null(0), (pl.col("start") - pl.col("previous_end")).fill_null(0))
            .alias("between")
        )
    )
    checks = [
        (pl.col("text").is_null(), "paragraphs of an unknown document"),
        (pl.col("para_idx") != pl.col("ordinal"), "paragraph indices are not 0..n-1"),
        ((pl.col("ordinal") == 0) & (pl.col("start") != 0), "first paragraph does not start at 0"),
        (pl.col("end") <= pl.col("start"), "empty or reversed paragraph"),
        (
            (pl.col("ordinal") > 0) & (pl.col("start") - pl.col("previous_end") != len(separator)),
            "paragraphs are not separated by exactly the separator",
        ),
        ((pl.col("ordinal") > 0) & (pl.col("between") != separator), "text between paragraphs is not the separator"),
        (pl.col("is_last") & (pl.col("end") != pl.col("n_chars")), "last paragraph does not end the text"),
    ]
    for row, problem in failed_checks(frame, checks):
        violations.append(f"{row['doc_id']}: paragraph {row['para_idx']}: {problem} ({row['start']}, {row['end']})")
    with_paragraphs = set(paragraphs["doc_id"].unique().to_list())
    for doc_id in documents.filter(~pl.col("doc_id").is_in(list(with_paragraphs)))["doc_id"].to_list():
        violations.append(f"{doc_id}: document has no paragraphs")
    return violations


def verify_queries(documents: pl.DataFrame, queries: pl.DataFrame) -> list[str]:
    """Violations of the query contract: unique qids, each one field of a TREC line (non-empty, no whitespace),
    known documents, spans non-empty, in bounds, sorted, disjoint."""
    violations: list[str] = []
    for qid in queries.filter(pl.col("qid").is_duplicated())["qid"].unique().sort().to_list():
        violations.append(f"query {qid}: duplicate qid")
    for qid in queries["qid"].to_list():
        if not is_one_field(qid):
            violations.append(f"query {qid!r}: qid is empty or holds whitespace (not one field of a TREC line)")
    lengths = dict(zip(documents["doc_id"].to_list(), documents["n_chars"].to_list()))
    for qid, doc_id, spans in queries.select("qid", "doc_id", "spans").iter_rows():
        if doc_id not in lengths:
            violations.append(f"query {qid}: unknown doc_id {doc_id!r}")
            continue
        if not spans:
            violations.append(f"{doc_id}: query {qid}: no spans")
        previous_end = -1
        for span in spans or []:
            if len(span) != 2 or not 0 <= span[0] < span[1] <= lengths[doc_id]:
                violations.append(
                    f"{doc_id}: query {qid}: span {span} empty or out of bounds (n_chars {lengths[doc_id]})"
                )
            elif span[0] < previous_end:
                violations.append(f"{doc_id}: query {qid}: span {span} overlaps or precedes the previous span")
            else:
                previous_end = span[1]
    return violations


def verify_corpus(tables) -> list[str]:
    """Every check on a ``CorpusTables``: paragraphs, gold sections and query spans."""
    return (
        verify_paragraphs(tables.documents, tables.paragraphs)
        + verify_sections(tables.paragraphs, tables.sections)
        + verify_queries(tables.documents, tables.queries)
    )


def assert_verified(paragraphs: pl.DataFrame, sections: pl.DataFrame, documents: pl.DataFrame | None = None) -> None:
    """Raise ``ValueError`` listing every violation (of the paragraphs too when ``documents`` is given)."""
    violations = verify_sections(paragraphs, sections)
    if documents is not None:
        violations = verify_paragraphs(documents, paragraphs) + violations
    if violations:
        shown = violations[:50]
        more = f"\n... and {len(violations) - len(shown)} more" if len(violations) > len(shown) else ""
        raise ValueError(f"{len(violations)} structure violation(s):\n" + "\n".join(shown) + more)
