"""Document shards of the LLM steps, their merge, the LLM usage counts and the LLM steps' statistics."""

import math

import polars as pl
import pytest
from llm_testing import ScriptedBackend

from structbench.datamodel import SCHEMAS
from structbench.llm import LLM, ChatRequest, LLMSpec, ResponseCache
from structbench.prefixes.context_stats import context_summary
from structbench.report.catalog import TABLES, build_tables
from structbench.report.table_registry import Omitted, ReportInputs
from structbench.shards import merge_rows, merge_sections, merge_usage, shard_doc_ids
from structbench.structure.induction_stats import induction_summary


@pytest.mark.parametrize("n_docs, n_shards", [(8, 1), (8, 3), (3, 2), (2, 5)])
def test_shards_partition_the_documents_round_robin(n_docs, n_shards):
    doc_ids = [f"d{i}" for i in reversed(range(n_docs))]  # unsorted input
    shards = [shard_doc_ids(doc_ids, shard, n_shards) for shard in range(n_shards)]
    assert sorted(d for shard in shards for d in shard) == sorted(doc_ids)
    assert max(map(len, shards)) - min(map(len, shards)) <= 1
    assert shards[0][0] == "d0" and (n_shards == 1 or n_docs < 2 or shards[1][0] == "d1")


def test_a_shard_outside_the_count_is_refused():
    with pytest.raises(ValueError, match="shard 2 of 2"):
        shard_doc_ids(["a"], 2, 2)


def paragraphs(doc_lengths):
    rows = [(doc, i, i * 10, i * 10 + 9) for doc, n in doc_lengths.items() for i in range(n)]
    return pl.DataFrame(rows, schema=["doc_id", "para_idx", "start", "end"], orient="row")


def sections(doc_id, spans):
    """Top-level sections over paragraph ranges [first, last) of one document (10 chars per paragraph)."""
    rows = [
        {
            "doc_id": doc_id,
            "section_id": i,
            "title": f"S{i}",
            "level": 1,
            "path": ["T", f"S{i}"],
            "depth": 2,
            "para_start": first,
            "para_end": last,
            "start": first * 10,
            "end": last * 10 - 1,
            "top_section_id": i,
        }
        for i, (first, last) in enumerate(spans)
    ]
    return pl.DataFrame(rows, schema=SCHEMAS["sections"])


def test_merged_sections_must_cover_every_document_once():
    paras = paragraphs({"a": 3, "b": 2})
    shard_a, shard_b = sections("a", [(0, 1), (1, 3)]), sections("b", [(0, 2)])
    merged = merge_sections(paras, [shard_b, shard_a])
    assert merged.select("doc_id", "section_id").rows() == [("a", 0), ("a", 1), ("b", 0)]
    with pytest.raises(ValueError, match="b: has paragraphs but no sections"):
        merge_sections(paras, [shard_a])
    with pytest.raises(ValueError, match=r"more than one shard: \['a'\]"):
        merge_sections(paras, [shard_a, shard_b, shard_a])


def test_merge_rows_names_missing_and_repeated_keys():
    left = pl.DataFrame({"chunk_id": [2, 0], "context": ["c", "a"]})
    right = pl.DataFrame({"chunk_id": [1], "context": ["b"]})
    assert merge_rows([left, right], [0, 1, 2], "chunk_id", "contexts")["context"].to_list() == ["a", "b", "c"]
    with pytest.raises(ValueError, match=r"missing \[1\], repeated \[2\]"):
        merge_rows([left, left.filter(pl.col("chunk_id") == 2)], [0, 1, 2], "chunk_id", "contexts")


def test_usage_counts_generated_cached_and_failed_requests(tmp_path):
    """Generated answers are cached; a second LLM on the same cache generates nothing; an error is
    counted as failed and is not cached, so it is asked again."""

    def answer(request):
        return "" if "bad" in request.messages[0][1] else "fine"

    def run():
        backend = ScriptedBackend(answer)
        backend.generate_original = backend.generate

        def generate(requests, caps):  # the backend refuses "bad" prompts, as one over the context
            completions = backend.generate_original(requests, caps)
            return [
                c if "bad" not in r.messages[0][1] else type(c)("", 1, 0, "error", error="too long")
                for r, c in zip(requests, completions)
            ]

        backend.generate = generate
        llm = LLM(backend, LLMSpec("transformers", "scripted"), ResponseCache(tmp_path / "llm"))
        requests = [ChatRequest.of([{"role": "user", "content": text}]) for text in ("x", "y", "x", "bad")]
        llm.chat(requests)
        return llm.usage()

    counts = ("requests", "served_from_cache", "generated", "failed", "backend_calls")
    first, second = run(), run()
    assert {k: first[k] for k in counts} == {
        "requests": 4,
        "served_from_cache": 0,
        "generated": 2,
        "failed": 1,
        "backend_calls": 1,
    }
    assert (first["prompt_tokens"], first["reused_prompt_tokens"], first["generated_tokens"]) == (2, 0, 2)
    assert {k: second[k] for k in counts} == {
        "requests": 4,
        "served_from_cache": 2,
        "generated": 0,
        "failed": 1,
        "backend_calls": 1,
    }
    assert (second["prompt_tokens"], second["generated_tokens"]) == (0, 0)  # the failed request is asked again
    total = merge_usage(
        [run(), {"requests": 1, "served_from_cache": 1, "generated": 0, "failed": 0, "backend_calls": 0}]
    )
    assert {k: total[k] for k in ("requests", "served_from_cache", "generated", "failed")} == {
        "requests": 5,
        "served_from_cache": 3,
        "generated": 0,
        "failed": 1,
    }
    assert len(total["shards"]) == 2


def test_induction_summary_by_hand():
    status = pl.DataFrame({"doc_id": ["a", "b"], "status": ["usable", "failed"], "rounds": [2, 1], "windows": [1, 3]})
    induced = pl.concat([sections("a", [(0, 1), (1, 3)]), sections("b", [(0, 2)])])
    gold = pl.concat([sections("a", [(0, 3)]), sections("b", [(0, 1), (1, 2)]), sections("z", [(0, 1)])])
    chunks = pl.DataFrame({"doc_id": ["a", "a", "b"], "start": [0, 10, 0], "end": [9, 29, 19]})
    gold_chunks = pl.DataFrame({"doc_id": ["a", "b", "b"], "start": [0, 0, 10], "end": [9, 9, 19]})
    summary = induction_summary(status, induced, gold, chunks, gold_chunks)
    assert summary == {
        "documents": 2,
        "usable": 1,
        "repaired": 0,
        "failed": 1,
        "corrected": 1,
        "shortened_titles": 0,
        "windows": 4,
        "mean_sections_induced": 1.5,
        "mean_sections_gold": 1.5,
        "identical_span_share": pytest.approx(1 / 3),
        # Agreement, by hand. a (3 paragraphs): gold has no boundary, induced one at paragraph 1; k =
        # min(max(2, round(3 / 1 / 2)), 2) = 2, one probe (paragraphs 0 and 2) that disagrees. b (2
        # paragraphs): gold has a boundary at 1, induced none; k = min(2, 1) = 1, one probe, disagreeing.
        # So Pk = WindowDiff = 1 on both; no induced boundary matches a gold one (P = R = F1 = 0).
        "pk": 1.0,
        "windowdiff": 1.0,
        "boundary_precision": 0.0,
        "boundary_recall": 0.0,
        "boundary_f1": 0.0,
        "pk_top": 1.0,
        "windowdiff_top": 1.0,
        "boundary_precision_top": 0.0,
        "boundary_recall_top": 0.0,
        "boundary_f1_top": 0.0,
        "top_sections_per_doc": 1.5,
        "gold_top_sections_per_doc": 1.5,
        "mean_sections_gold_nonempty": 1.5,
        # Baselines, by hand. Single section: a agrees with gold (no boundary; Pk 0), b misses gold's
        # boundary (Pk 1): means 0.5, no boundary matched. An even split into gold's segment count (1 for a,
        # 2 for b, all top-level) is gold itself here: Pk 0, F1 1.
        "baselines": {
            "single section": dict(
                zip(AGREEMENT_VALUES, (0.5, 0.5, 0.0, 0.0, 0.0, 0.5, 0.5, 0.0, 0.0, 0.0, 1.0, 1.0, 1.5))
            ),
            **{
                name: dict(zip(AGREEMENT_VALUES, (0.0, 0.0, 1.0, 1.0, 1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.5, 1.5, 1.5)))
                for name in ("even split, gold count", "even split, gold top-level count")
            },
        },
    }


AGREEMENT_VALUES = (
    "pk", "windowdiff", "boundary_precision", "boundary_recall", "boundary_f1",
    "pk_top", "windowdiff_top", "boundary_precision_top", "boundary_recall_top", "boundary_f1_top",
    "sections_per_doc", "top_sections_per_doc", "gold_top_sections_per_doc",
)  # fmt: skip


def test_context_summary_and_report_sections_only_when_used():
    contexts = pl.DataFrame(
        {
            "chunk_id": [0, 1, 2],
            "context": ["a b", "", "c"],
            "context_tokens": [2, 0, 80],
            "truncated": [False, False, True],
        }
    )
    summary = context_summary(contexts)
    assert summary == {
        "chunks": 3,
        "mean_context_tokens": pytest.approx(82 / 3),
        "max_context_tokens": 80,
        "truncated": 1,
        "empty": 1,
    }
    assert math.isnan(context_summary(contexts.head(0))["mean_context_tokens"])
    usage = {"requests": 3, "served_from_cache": 1, "generated": 2, "failed": 0, "backend_calls": 1}
    llm_tables = [TABLES[name] for name in ("induction", "situating_contexts", "llm_calls")]

    def built(context_stats):
        inputs = ReportInputs(pl.DataFrame(), pl.DataFrame(), {}, "cov_nDCG@10", context_stats=context_stats)
        return {table.spec.name: table for table in build_tables(inputs, llm_tables)}

    plain = built([])
    assert all(isinstance(table, Omitted) for table in plain.values())
    used = built([summary | {"corpus": "kb", "chunk set": "fixed/gold", "llm": usage}])
    assert isinstance(used["induction"], Omitted) and not isinstance(used["situating_contexts"], Omitted)
    # A usage file from before token accounting: the token columns read 0, tokens/s is unknown.
    assert used["llm_calls"].content.data.row(0) == (
        "contexts",
        "kb",
        "fixed/gold",
        3,
        2,
        1,
        0,
        1,
        0,
        0,
        0,
        0.0,
        None,
        pytest.approx(1 / 3),
    )
    tokens = {"prompt_tokens": 3000, "reused_prompt_tokens": 2000, "generated_tokens": 200, "seconds": 50.0}
    cached = {"requests": 3, "served_from_cache": 3, "generated": 0, "failed": 0, "backend_calls": 0}
    cached |= {"prompt_tokens": 0, "reused_prompt_tokens": 0, "generated_tokens": 0, "seconds": 0.0}
    rows = built(
        [
            summary | {"corpus": "kb", "chunk set": "fixed/gold", "llm": usage | tokens},
            summary | {"corpus": "kb2", "chunk set": "fixed/gold", "llm": cached},
        ]
    )["llm_calls"].content.data
    assert rows.columns[-6:] == [
        "prompt_tokens",
        "reused_prompt_tokens",
        "generated_tokens",
        "seconds",
        "tokens/s",
        "from cache",
    ]
    assert rows.row(0)[-6:] == (3000, 2000, 200, 50.0, 4.0, pytest.approx(1 / 3))
    assert rows.row(1)[-6:] == (0, 0, 0, 0.0, None, 1.0)  # a rerun from the response cache
