"""Constrained decoding on the transformers backend: a JSON request decodes under its schema (docs/method.md §14).

The grammar engine is ``llguidance`` (``pip install llguidance==1.9.1``: a 3 MB abi3 wheel without
dependencies; ``xgrammar`` needs ``triton``). :class:`Grammars` is built once per backend: it wraps the
Hugging Face tokenizer (``llguidance.hf.from_tokenizer``) and compiles each distinct schema once
(``LLMatcher.grammar_from_json_schema``). :class:`SchemaLogitsProcessor` is the transformers
``LogitsProcessor`` of one ``generate`` call: one ``LLMatcher`` per batch row (None for a free-text row
of a mixed batch), and at every step, per row, it brings the matcher to the row's generated tokens,
fills the next-token bitmask (``llguidance.numpy.allocate_token_bitmask`` / ``fill_next_token_bitmask``)
and sets every token the grammar forbids to ``-inf``. EOS is allowed exactly when the matcher accepts
(the JSON value is complete and valid), and is the only token allowed once the matcher has stopped.
A row that has emitted EOS is left alone (transformers pads it). The bitmask helpers come from ``llguidance.numpy``, not
``llguidance.torch``: the same functions, but importing the torch module costs seconds in every job (its
``apply_token_bitmask_inplace`` kernel is ``torch.compile`` d, which imports dynamo), against a vocabulary-sized
``masked_fill`` here (measured: docs/benchmarks.md, "Constrained decoding on SmolLM2").

**The processor is a function of the tokens it is shown, not of how often it is called.** It keeps the
tokens each matcher has consumed and, per call, rolls the matcher back to the common prefix with the
row's generated tokens and consumes the rest (``LLMatcher.rollback`` / ``consume_tokens``; tokens the
grammar rejects are never consumed, so a matcher never enters its error state, and such a row is left
unmasked: see below). Plain decoding shows it one more token per call, so this costs one comparison.

**Prompt-lookup decoding stays on under a grammar.** In transformers 5.24 (``generation/utils.py``,
``_assisted_decoding``; ``candidate_generator.py``, ``PromptLookupCandidateGenerator.get_candidates``)
the candidate tokens do *not* bypass the logits processors: the prompt-lookup generator crops each
n-gram candidate at the first token the processors set to ``-inf`` (it calls them on the prompt plus the
candidate so far), and verification applies them at every candidate position
(``logits_processor(candidate_input_ids[:, : cur_len + i], new_logits[:, i, :])``) before the greedy
argmax that accepts or rejects each candidate. Both calls show prefixes out of step with decoding
(longer, then shorter again after a rejection), which the rollback above handles; a prefix holding a
token the grammar rejects can only follow a candidate that the argmax at its own position rejects, so
its scores are never used (left unmasked). Greedy output under a grammar is therefore the same with and
without prompt lookup, token for token (``tests/llm/test_grammar.py`` asserts it).

**Batching stays on too**: each row has its own matcher; left padding gives every row the same prompt
width, so a row's generated tokens are ``input_ids[row, prompt_width:]``.

**Sampling** (temperature > 0): transformers appends custom processors after its own warpers, so the
mask applies after top-k/top-p; should they leave no allowed token in a row, the allowed tokens get
equal scores (never an all ``-inf`` row, which would break the sampler). Greedy decoding, the study's
setting, never reaches that case.

**What it gives**: schema-valid JSON ended by EOS, once the schema bounds the section count by what the token cap
can close (``structure.induction.sections_that_fit``; without that bound SmolLM2 lists sections until the cap cuts
the answer). A grammar fixes the form only: SmolLM2's sections stay degenerate, and every document still needs the
repair (measured: docs/benchmarks.md, "Constrained decoding on SmolLM2").
"""

from __future__ import annotations

import importlib.metadata
import json
import logging
from collections.abc import Sequence

import numpy as np

log = logging.getLogger(__name__)

ENGINE = "llguidance"

# The JSON layout the grammar allows (a schema's "x-guidance" key may override it): no free whitespace,
# which a small model otherwise emits until max_new_tokens, and the separators of the prompts' examples.
JSON_LAYOUT = {"whitespace_flexible": False, "item_separator": ", ", "key_separator": ": "}


class GrammarError(ValueError):
    """A JSON schema the grammar engine cannot compile; the message names the schema and the reason."""


def engine_version() -> str:
    """``llguidance==<version>``, for the response cache key of constrained requests (no import)."""
    try:
        return f"{ENGINE}=={importlib.metadata.version(ENGINE)}"
    except importlib.metadata.PackageNotFoundError:
        raise ModuleNotFoundError(
            "constrained decoding on the transformers backend needs llguidance: `pip install llguidance==1.9.1` "
            "(or set constrained: false in the llms: entry)"
        ) from None


def schema_text(schema: dict) -> str:
    """The compact JSON of a schema: the grammar cache key and what error messages quote. Keys keep
    their order: the grammar writes an object's properties in the order the schema lists them."""
    return json.dumps(schema, separators=(",", ":"))


class Grammars:
    """The llguidance view of one Hugging Face tokenizer, plus each compiled schema (built once per backend).

    ``eos_ids`` are the tokens that end a turn (any of them ends a constrained answer). The model's
    logits may be wider than the tokenizer's vocabulary: the extra columns are always masked."""

    def __init__(self, tokenizer, eos_ids: Sequence[int]):
        import llguidance
        import llguidance.hf

        self._llguidance = llguidance
        self.eos_ids = sorted(eos_ids)
        self.tokenizer = llguidance.hf.from_tokenizer(tokenizer, eos_token=self.eos_ids)
        self._compiled: dict[str, str] = {}

    def matcher(self, schema: dict, where: str = ""):
        """A fresh ``LLMatcher`` for ``schema``; a schema llguidance rejects is a :class:`GrammarError`
        naming it (and ``where``, e.g. the request's prompt version)."""
        text = schema_text(schema)
        grammar = self._compiled.get(text)
        if grammar is None:
            try:
                grammar = self._llguidance.LLMatcher.grammar_from_json_schema(text, defaults=JSON_LAYOUT)
            except ValueError as error:
                raise GrammarError(_message(text, where, str(error))) from None
            problem = self._llguidance.LLMatcher.validate_grammar(grammar, self.tokenizer)
            if problem and not problem.startswith("WARNING"):
                raise GrammarError(_message(text, where, problem))
            self._compiled[text] = grammar
        matcher = self._llguidance.LLMatcher(self.tokenizer, grammar, log_level=0)
        if matcher.is_error():
            raise GrammarError(_message(text, where, matcher.get_error()))
        return matcher

    def processor(self, schemas: Sequence[dict | None], prompt_width: int, where: Sequence[str] = ()):
        """The logits processor of one batch: row i decodes under ``schemas[i]`` (None: unconstrained)."""
        where = list(where) or [""] * len(schemas)
        matchers = [None if schema is None else self.matcher(schema, name) for schema, name in zip(schemas, where)]
        return SchemaLogitsProcessor(matchers, prompt_width, self.eos_ids, self.tokenizer.vocab_size)


def _message(text: str, where: str, reason: str) -> str:
    shown = text if len(text) <= 600 else text[:600] + "..."
    origin = f" of request {where}" if where else ""
    return f"llguidance cannot compile the JSON schema{origin}: {reason.strip()}; schema: {shown}"


class SchemaLogitsProcessor:
    """Masks each row's next-token scores to what its schema's grammar allows (module docstring).

    A ``transformers.LogitsProcessor`` by protocol (``__call__(input_ids, scores) -> scores``); it does
    not subclass it, so this module imports neither torch nor transformers."""

    def __init__(self, matchers: Sequence, prompt_width: int, eos_ids: Sequence[int], token_vocab: int):
        self.matchers = list(matchers)
        self.consumed: list[list[int]] = [[] for _ in self.matchers]
        self.prompt_width = prompt_width
        self.eos_ids = list(eos_ids)
        self._eos = set(self.eos_ids)
        self.token_vocab = token_vocab  # the tokenizer's vocabulary: the bitmask's width in bits
        self.bitmask = None
        self.rollbacks = 0  # calls that showed a row fewer or other tokens than the last (prompt lookup)

    def __call__(self, input_ids, scores):
        import llguidance.numpy
        import torch

        if self.bitmask is None:
            self.bitmask = llguidance.numpy.allocate_token_bitmask(1, self.token_vocab)
        rows = input_ids[:, self.prompt_width :].tolist()
        width = scores.shape[-1]
        for row, (matcher, tokens) in enumerate(zip(self.matchers, rows)):
            if matcher is None:
                continue
            end = next((position for position, token in enumerate(tokens) if token in self._eos), None)
            if end is not None:  # finished: transformers pads this row; its scores are not used
                continue
            if not self._advance(row, tokens):
                continue  # an unverified candidate the grammar rejects: never accepted (module docstring)
            llguidance.numpy.fill_next_token_bitmask(matcher, self.bitmask, 0)
            bits = np.unpackbits(self.bitmask[0].view(np.uint8), bitorder="little").astype(bool)
            allowed = np.zeros(width, dtype=bool)
            shown = min(width, self.token_vocab)
            allowed[:shown] = bits[:shown]
            accepting = matcher.is_accepting()
            for eos in self.eos_ids:
                if eos < width:
                    allowed[eos] = accepting
            mask = torch.from_numpy(allowed).to(scores.device)
            masked = scores[row].masked_fill(~mask, float("-inf"))
            if not torch.isfinite(masked).any():  # a sampler's warpers removed every allowed token
                masked = torch.where(mask, torch.zeros_like(masked), masked)
            scores[row] = masked
        return scores

    def _advance(self, row: int, tokens: list[int]) -> bool:
        """Bring matcher ``row`` to ``tokens`` (rollback to the common prefix, then consume); False when
        some of ``tokens`` break the grammar (the matcher then holds the longest valid prefix)."""
        matcher, done = self.matchers[row], self.consumed[row]
        common, limit = 0, min(len(done), len(tokens))
        while common < limit and done[common] == tokens[common]:
            common += 1
        if common < len(done):
            matcher.rollback(len(done) - common)
            self.rollbacks += 1
            del done[common:]
        rest = tokens[common:]
        if not rest:
            return True
        valid = matcher.validate_tokens(rest)
        if valid:
            if not matcher.consume_tokens(rest[:valid]):
                raise RuntimeError(f"llguidance matcher failed on tokens it validated: {matcher.get_error()}")
            done.extend(rest[:valid])
        return valid == len(rest)
