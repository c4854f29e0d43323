"""Test-sized models and scripted backends for the LLM tests (imported by the tests in tests/llm/ and friends).

``build_tiny_model`` writes a real Hugging Face model directory: a byte-level BPE tokenizer trained here
with the ``tokenizers`` library (vocabulary ~300, ChatML chat template) and a 2-layer random-weight
Llama. It loads and generates in well under a second, exercising the same code paths as a real model.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from structbench.llm import ChatRequest, Completion

CHATML = (
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + "
    "'<|im_end|>' + '\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
TRAINING_TEXT = [
    "The weir holds back the river and the turbine turns when the gate opens.",
    "Sections tile the paragraphs; levels rise by at most one between sections.",
    '{"sections": [{"title": "Intro", "level": 1, "first": 1, "last": 3}]}',
    "Bees forage on the roof in summer and the keeper checks the hive each week.",
] * 20


def build_tiny_model(directory: Path, context: int = 512) -> Path:
    """A random-weight 2-layer Llama plus a trained tokenizer, saved in the standard layout."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    trainer = trainers.BpeTrainer(
        vocab_size=300, special_tokens=specials, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    tokenizer.train_from_iterator(TRAINING_TEXT, trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, eos_token="<|im_end|>", pad_token="<|endoftext|>", bos_token="<|im_start|>"
    )
    fast.chat_template = CHATML
    return save_random_llama(directory, fast, context, hidden=64, heads=4, kv_heads=4)


def save_random_llama(
    directory: Path, tokenizer, context: int, hidden: int, heads: int, kv_heads: int, scale: float = 1.0, seed: int = 0
) -> Path:
    """A 2-layer random-weight Llama over ``tokenizer`` (weights times ``scale``), saved with it in ``directory``."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    directory.mkdir(parents=True, exist_ok=True)
    tokenizer.save_pretrained(directory)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden,
        intermediate_size=2 * hidden,
        num_hidden_layers=2,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        max_position_embeddings=context,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id,
        architectures=["LlamaForCausalLM"],
    )
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.mul_(scale)
    model.save_pretrained(directory)
    return directory


class ScriptedBackend:
    """A backend whose answers come from ``answer(request) -> text``; counts generate() calls and requests.

    For tests of the layers above the backends (cache, induction, contexts): the answer is chosen by
    the test, so a test can script a wrong-then-right conversation."""

    kind = "scripted"

    def __init__(self, answer: Callable[[ChatRequest], str], context_tokens: int = 100_000, model: str = "scripted"):
        self.answer = answer
        self.context_tokens = context_tokens
        self.model = model
        self.calls = 0
        self.requests: list[ChatRequest] = []

    def identity(self) -> dict:
        return {"model": self.model, "weights": "none"}

    def count_tokens(self, messages: list[dict]) -> int:
        return sum(len(message["content"].split()) for message in messages)  # words: a stand-in tokenizer

    def generate(self, requests: Sequence[ChatRequest], max_new_tokens: Sequence[int]) -> list[Completion]:
        self.calls += 1
        self.requests.extend(requests)
        return [Completion(self.answer(request), 1, 1) for request in requests]


class CountingBackend:
    """Wraps a real backend and counts generate() calls and the requests they carried."""

    def __init__(self, inner):
        self.inner = inner
        self.kind = inner.kind
        self.context_tokens = inner.context_tokens
        self.calls = 0
        self.requests = 0

    def identity(self) -> dict:
        return self.inner.identity()

    def count_tokens(self, messages):
        return self.inner.count_tokens(messages)

    def generate(self, requests, max_new_tokens):
        self.calls += 1
        self.requests += len(requests)
        return self.inner.generate(requests, max_new_tokens)
