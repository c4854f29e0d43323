"""The LLM layer's pure parts: config entries, prompt files, lenient JSON extraction and validation,
and the client's handling of failures (never an exception for a bad answer)."""

import pytest
from llm_testing import ScriptedBackend

from structbench.llm import (
    LLM,
    ChatRequest,
    JSONOutputError,
    LLMSpec,
    extract_json,
    load_prompt,
    parse_json_output,
)
from structbench.llm.prompts import parse_prompt

SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


@pytest.mark.parametrize(
    "text, value",
    [
        ('{"n": 1}', {"n": 1}),
        ('Sure! Here it is:\n```json\n{"n": 2}\n```\nHope that helps.', {"n": 2}),
        ('[1, 2] and then {"n": 3}', [1, 2]),  # the first value wins, whatever its kind
        ('the range [a, b] is {"n": 4}', {"n": 4}),  # a bracket that starts no JSON is skipped
        ('{"n": {"m": [1, {"k": "}"}]}}', {"n": {"m": [1, {"k": "}"}]}}),  # braces inside strings
    ],
)
def test_extract_json_finds_the_first_complete_value(text, value):
    assert extract_json(text) == value


@pytest.mark.parametrize("text", ["", "no json here", '{"n": 1', "{'n': 1}"])
def test_extract_json_rejects_text_without_json(text):
    with pytest.raises(JSONOutputError, match="no JSON"):
        extract_json(text)


def test_schema_violation_names_the_path():
    with pytest.raises(JSONOutputError, match=r"at n: 'x' is not of type 'integer'"):
        parse_json_output('{"n": "x"}', SCHEMA)
    assert parse_json_output('ok {"n": 5}', SCHEMA) == {"n": 5}


def test_spec_rejects_unknown_and_foreign_keys():
    assert LLMSpec.from_config({"backend": "transformers", "model": "m"}).temperature == 0.0
    with pytest.raises(ValueError, match=r"llms.x.backend must be one of"):
        LLMSpec.from_config({"backend": "llamacpp", "model": "m"}, "x")
    with pytest.raises(ValueError, match=r"\['base_url'\] are not valid for backend 'transformers'"):
        LLMSpec.from_config({"backend": "transformers", "model": "m", "base_url": "http://x"})
    with pytest.raises(ValueError, match=r"llms.llm.model is required"):
        LLMSpec.from_config({"backend": "openai"})
    with pytest.raises(ValueError, match="response_format"):
        LLMSpec.from_config({"backend": "openai", "model": "m", "response_format": "json"})


def test_prompt_files_are_versioned_and_render():
    prompt = load_prompt("situate_chunk")
    assert prompt.version_id == "situate_chunk@1"
    messages = prompt.render(document="DOC $ {x}", chunk="CH")
    assert [m["role"] for m in messages] == ["user"]
    assert "<document>\nDOC $ {x}\n</document>" in messages[0]["content"]  # values are not re-expanded
    with pytest.raises(KeyError, match=r"situate_chunk@1 needs a value for \$chunk"):
        prompt.render(document="d")
    for name in ("induce_structure", "induce_correction"):
        assert load_prompt(name).version


def test_prompt_parser_errors_name_the_source():
    with pytest.raises(ValueError, match=r"p.txt: header lacks \['version'\]"):
        parse_prompt("prompt: p\n---- user\nhi", "p.txt")
    with pytest.raises(ValueError, match=r"p.txt:3: unknown role 'robot'"):
        parse_prompt("prompt: p\nversion: 1\n---- robot\nhi", "p.txt")
    parsed = parse_prompt("prompt: p\nversion: 2\n---- system\nS\n---- user\nline 1\n\nline 2\n", "p.txt")
    assert parsed.messages == (("system", "S"), ("user", "line 1\n\nline 2"))


def test_invalid_answers_become_failure_records_not_exceptions():
    answers = {"a": '{"n": 1}', "b": "I cannot do that", "c": '{"n": "one"}'}
    backend = ScriptedBackend(lambda request: answers[request.messages[0][1]])
    llm = LLM(backend, LLMSpec("transformers", "scripted"))
    responses = llm.chat([ChatRequest.of([{"role": "user", "content": k}], schema=SCHEMA) for k in "abc"])
    assert [r.ok for r in responses] == [True, False, False]
    assert responses[0].value == {"n": 1}
    assert "no JSON" in responses[1].error and "not of type 'integer'" in responses[2].error
    text = llm.chat([ChatRequest.of([{"role": "user", "content": "b"}])])[0]
    assert text.ok and text.value == "I cannot do that"


def test_identical_requests_in_one_call_are_generated_once():
    backend = ScriptedBackend(lambda request: request.messages[0][1].upper())
    llm = LLM(backend, LLMSpec("transformers", "scripted"))
    requests = [ChatRequest.of([{"role": "user", "content": c}]) for c in "xyx"]
    assert [r.value for r in llm.chat(requests)] == ["X", "Y", "X"]
    assert [r.messages[0][1] for r in backend.requests] == ["x", "y"]


def test_request_messages_are_checked():
    with pytest.raises(ValueError, match="message 1 needs role"):
        ChatRequest.of([{"role": "user", "content": "a"}, {"role": "bot", "content": "b"}])


def test_schema_violations_lists_every_breach_and_quotes_long_values_by_their_opening():
    from structbench.llm import schema_violations

    schema = {"type": "object", "properties": {"title": {"type": "string", "maxLength": 5}, "n": {"maximum": 2}}}
    breaches = schema_violations({"title": "x" * 500, "n": 3}, schema)
    assert breaches == ["n: 3 is greater than the maximum of 2", f"title: '{'x' * 39}… (500 characters) is too long"]
    assert schema_violations({"title": "ok", "n": 1}, schema) == []
