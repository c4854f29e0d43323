"""Exact greedy decoding on a CPU: a request's answer is a function of the request alone.

transformers' ``generate`` gives an answer whose last bits depend on how it was computed: in a left-padded
batch or alone, with prompt lookup or without, its prompt prefilled whole or after a reused prefix, at one
torch thread or four. A greedy answer flips where two tokens' logits are that close. This engine computes
every token of every request the same way whatever else runs, by three rules (the embedding half's
``structbench.embedding.passes`` in spirit):

1. **Rows.** A matrix product's row is a function of that row alone only within one kernel family. On the
   CPU measured (MKL, AVX-512, one thread) a linear layer has three: one row (a matrix-vector kernel),
   2 to 15 rows, and 16 rows or more; within a family a row's bits depend neither on the other rows nor on
   its place among them (``tests/llm/test_exact_decoding.py`` checks it on SmolLM2's shapes). So every
   linear pass (projections, MLP, LM head) has at least ``ROW_FLOOR`` (16) rows, filler rows making up a
   short one: a prompt's prefill is one pass, and a decoding pass carries the next token of up to 16
   requests. Batching is then exact, and it is what makes decoding fast: a one-row pass reads every
   weight for one token.
2. **Attention per request.** Attention runs for each request over its own keys and values (never a
   padded batch), in shapes fixed by the request: a prompt's queries attend in blocks of ``PREFILL_CHUNK``
   tokens aligned at position 0, and each generated token is one query over the request's keys.
3. **One intra-op thread.** Every pass runs on one torch thread; more threads run batches of requests
   side by side (``threads``), so a thread count changes which passes run at once, never their bits.

Prefix reuse follows: a request copies the keys and values of the whole blocks its prompt shares with a
request prefilled before it (in this call, or the last call's last batches: an induction's correction
round repeats its first round's prompt); a block's arithmetic is the same in every prompt that holds it,
so the copy is exactly what the request would have computed. Prompt lookup is not used: verifying its
candidates would compute some generated tokens in attention blocks of another width than the others.

A JSON request decodes under its schema with the same logits processor as ``generate`` (one row of
:class:`structbench.llm.grammar.SchemaLogitsProcessor`); the next token is the argmax of the float32 scores.

Supported: decoder models of the Llama layout (``model_type`` llama: SmolLM2 and the random test model);
others take ``generate`` (:func:`supports`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from structbench.llm import prefix_reuse

ROW_FLOOR = 16  # the fewest rows of any linear pass: the kernel family of 16 rows or more (rule 1)
DECODE_ROWS = ROW_FLOOR  # rows of every decoding pass (one token of up to 16 requests) and LM-head pass
PREFILL_CHUNK = 64  # prompt tokens per attention block, aligned at position 0 (rule 2)
SCHEME = "exact-rows-v1"  # names the arithmetic above in every response-cache key it answers
SUPPORTED_TYPES = ("llama",)


def supports(model) -> bool:
    """Whether ``model`` has the Llama layout this engine computes by hand."""
    return getattr(model.config, "model_type", None) in SUPPORTED_TYPES


def prefill_chunks(start: int, end: int, chunk: int = PREFILL_CHUNK) -> list[tuple[int, int]]:
    """The prefill passes ``[a, b)`` of prompt positions ``start..end``, cut at multiples of ``chunk``
    counted from position 0, so a prompt's chunks are the same whether its prefix was reused or not."""
    bounds = [start] + list(range((start // chunk + 1) * chunk, end, chunk)) + [end]
    return [(a, b) for a, b in zip(bounds, bounds[1:]) if a < b]


def reusable_length(shared: int, chunk: int = PREFILL_CHUNK) -> int:
    """The part of a shared prefix a group prefills once: its whole chunks (rule 2)."""
    return shared // chunk * chunk


@dataclass
class _Request:
    """One request's decoding state: its keys and values per layer (``capacity`` positions each)."""

    prompt: list[int]
    cap: int
    processor: Callable | None  # the grammar's logits processor for this one row, or None
    keys: list = field(default_factory=list)
    values: list = field(default_factory=list)
    length: int = 0  # positions in keys/values
    generated: list[int] = field(default_factory=list)
    reused: int = 0
    done: bool = False


class ExactDecoder:
    """Greedy decoding of a Llama-layout model by the rules of the module docstring."""

    def __init__(self, model, eos_ids: set[int], pad_id: int = 0):
        import torch

        self.torch = torch
        self.model = model
        self.eos_ids = set(eos_ids)
        self.pad_id = pad_id
        config = model.config
        self.layers = model.model.layers[: config.num_hidden_layers]
        self.kv_heads = config.num_key_value_heads
        self.heads = config.num_attention_heads
        self.head_dim = getattr(config, "head_dim", None) or config.hidden_size // self.heads
        self.device = model.device
        self.dtype = next(model.parameters()).dtype
        self.scaling = self.head_dim**-0.5
        self._kept: list[_Request] = []  # the last call's last batches: their prompts' prefill can be copied

    # ---- passes ------------------------------------------------------------------------------------------

    def _pass(self, segments: Sequence[tuple[_Request, list[int]]], want: Sequence[bool], rows: int):
        """One forward pass of exactly ``rows`` rows: each segment's tokens continue its request at
        ``request.length``, filler rows make up the rest; returns the float32 logits of the last token of
        every segment whose ``want`` is set (None for the others), from an LM-head pass of ``DECODE_ROWS``."""
        torch = self.torch
        from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

        tokens, positions, spans = [], [], []
        for request, new in segments:
            spans.append((len(tokens), len(tokens) + len(new)))
            tokens += new
            positions += range(request.length, request.length + len(new))
        filler = rows - len(tokens)
        if filler < 0:
            raise ValueError(f"a pass of {rows} rows cannot hold {len(tokens)} tokens")
        ids = torch.tensor([tokens + [self.pad_id] * filler], device=self.device)
        position_ids = torch.tensor([positions + [0] * filler], device=self.device)
        hidden = self.model.model.embed_tokens(ids)
        cos, sin = self.model.model.rotary_emb(hidden, position_ids=position_ids)
        for index, layer in enumerate(self.layers):
            attention = layer.self_attn
            normed = layer.input_layernorm(hidden)
            query = attention.q_proj(normed).view(1, rows, self.heads, self.head_dim).transpose(1, 2)
            key = attention.k_proj(normed).view(1, rows, self.kv_heads, self.head_dim).transpose(1, 2)
            value = attention.v_proj(normed).view(1, rows, self.kv_heads, self.head_dim).transpose(1, 2)
            query, key = apply_rotary_pos_emb(query, key, cos, sin)
            mixed = torch.zeros((1, self.heads, rows, self.head_dim), dtype=query.dtype, device=self.device)
            for (request, new), (a, b) in zip(segments, spans):
                start, end = request.length, request.length + len(new)
                request.keys[index][:, :, start:end] = key[:, :, a:b]
                request.values[index][:, :, start:end] = value[:, :, a:b]
                for first, last in prefill_chunks(start, end):
                    block = slice(a + first - start, a + last - start)
                    mixed[:, :, block] = self._attend(
                        query[0, :, block], request.keys[index][0, :, :last], request.values[index][0, :, :last], first
                    )
            hidden = hidden + attention.o_proj(mixed.transpose(1, 2).reshape(1, rows, -1))
            hidden = hidden + layer.mlp(layer.post_attention_layernorm(hidden))
        for request, new in segments:
            request.length += len(new)
        last = [b - 1 for (a, b), wanted in zip(spans, want) if wanted]
        if not last:
            return [None] * len(segments)
        picked = self.model.model.norm(hidden[0, last])
        picked = torch.cat([picked, picked[-1:].expand(DECODE_ROWS - len(last), -1)])
        logits = self.model.lm_head(picked)[: len(last)].to(torch.float32)
        found = iter(logits)
        return [next(found) if wanted else None for wanted in want]

    def _attend(self, query, keys, values, start: int):
        """Causal attention of ``query`` (heads, n, d), the tokens at positions ``start..start+n``, over
        ``keys``/``values`` (kv heads, start+n, d), written out as matrix products: the shapes are the
        request's own, and ``scaled_dot_product_attention``'s CPU kernel is slow for one query row."""
        torch = self.torch
        groups = self.heads // self.kv_heads
        n, dim = query.shape[1], query.shape[2]
        grouped = query.reshape(self.kv_heads, groups * n, dim)  # a kv head's query heads, one after another
        scores = torch.matmul(grouped, keys.transpose(1, 2)) * self.scaling
        if n > 1:  # a prefill chunk: each token sees the cache and the chunk up to itself
            allowed = torch.ones((n, start + n), dtype=torch.bool, device=self.device).tril(start)
            scores = scores.masked_fill(~allowed.repeat(groups, 1), float("-inf"))
        weights = torch.softmax(scores, dim=-1, dtype=torch.float32).to(values.dtype)
        return torch.matmul(weights, values).reshape(self.heads, n, dim)

    # ---- requests ----------------------------------------------------------------------------------------

    def _state(self, prompt: list[int], cap: int, processor) -> _Request:
        torch = self.torch
        request = _Request(list(prompt), cap, processor)
        shape = (1, self.kv_heads, len(prompt) + cap, self.head_dim)
        for _ in self.layers:
            request.keys.append(torch.zeros(shape, dtype=self.dtype, device=self.device))
            request.values.append(torch.zeros(shape, dtype=self.dtype, device=self.device))
        return request

    def _prefill(self, request: _Request) -> object:
        """Prefill the rest of ``request``'s prompt in one pass; the logits after its last token."""
        rest = request.prompt[request.length :]
        return self._pass([(request, rest)], [True], max(len(rest), ROW_FLOOR))[0]

    def _choose(self, request: _Request, logits) -> None:
        """Append the greedy token (under the request's grammar) and mark the request done at EOS or cap."""
        torch = self.torch
        if request.processor is not None:
            shown = torch.tensor([request.prompt + request.generated], device=self.device)
            logits = request.processor(shown, logits.unsqueeze(0).clone())[0]
        token = int(logits.argmax())
        request.generated.append(token)
        request.done = token in self.eos_ids or len(request.generated) >= request.cap

    def decode(
        self,
        prompts: Sequence[Sequence[int]],
        caps: Sequence[int],
        processors: Sequence[Callable | None],
        batch_size: int,
        threads: int = 1,
        reuse_min_tokens: int | None = None,
    ) -> list[tuple[list[int], int]]:
        """``(generated token ids, prompt tokens copied from another request's prefill)`` per prompt, in order.

        Requests go in prompt order (those sharing a prefix together), up to ``batch_size`` per batch, and
        decode together, one pass per token. With ``reuse_min_tokens`` (None: no reuse) a request copies the
        whole prefill chunks it shares with a request already prefilled in this call or kept from the last
        call (an induction's correction round repeats its first round's prompt), when they are at least
        that many tokens. ``threads`` workers each take a share of the batches, side by side."""
        torch = self.torch
        order = prefix_reuse.prefix_order([tuple(prompt) for prompt in prompts])
        batches = [order[offset : offset + batch_size] for offset in range(0, len(order), batch_size)]
        shares = [batches[worker::threads] for worker in range(threads)]
        answers: list[tuple[list[int], int] | None] = [None] * len(prompts)
        kept = list(self._kept)
        done: list[list[_Request]] = [[] for _ in shares]

        def work(worker: int) -> None:
            torch.set_num_threads(1)
            with torch.inference_mode():
                for batch in shares[worker]:
                    states = self._run(batch, prompts, caps, processors, kept, reuse_min_tokens)
                    for index, state in zip(batch, states):
                        answers[index] = (state.generated, state.reused)
                    done[worker] = states

        torch.set_num_threads(1)
        if threads == 1:
            work(0)
        else:
            with ThreadPoolExecutor(threads) as pool:
                list(pool.map(work, range(threads)))
        self._kept = [state for states in done for state in states]
        return answers

    def _run(self, batch, prompts, caps, processors, kept, reuse_min_tokens) -> list[_Request]:
        """Prefill then decode the requests ``batch`` together (indices into ``prompts``)."""
        states = []
        for index in batch:
            state = self._state(prompts[index], caps[index], processors[index])
            if reuse_min_tokens is not None:
                self._reuse(state, kept + states, reuse_min_tokens)
            self._choose(state, self._prefill(state))
            states.append(state)
        active = [state for state in states if not state.done]
        while active:
            for offset in range(0, len(active), DECODE_ROWS):
                group = active[offset : offset + DECODE_ROWS]
                logits = self._pass(
                    [(state, state.generated[-1:]) for state in group], [True] * len(group), DECODE_ROWS
                )
                for state, row in zip(group, logits):
                    self._choose(state, row)
            active = [state for state in active if not state.done]
        return states

    def _reuse(self, state: _Request, donors: Sequence[_Request], min_tokens: int) -> None:
        """Copy into ``state`` the longest run of whole prefill chunks a donor's prompt shares with it."""
        best, donor = 0, None
        for candidate in donors:
            shared = prefix_reuse.common_prefix_length(state.prompt, candidate.prompt)
            shared = reusable_length(min(shared, len(state.prompt) - 1))
            if shared > best:
                best, donor = shared, candidate
        if donor is None or best < min_tokens:
            return
        for layer in range(len(self.layers)):
            state.keys[layer][:, :, :best] = donor.keys[layer][:, :, :best]
            state.values[layer][:, :, :best] = donor.values[layer][:, :, :best]
        state.length = state.reused = best
