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
   linear pass (projections, MLP, LM head) has at least ``ROW_FLOOR`` (16) rows, and any rows may share a
   pass: the next token of every decoding request, whole prefill chunks of the prompts admitted after
   them (up to ``PASS_ROWS``), filler rows making up a short pass.
2. **Attention per request.** Attention runs for each request over its own keys and values (never a
   padded batch), in shapes fixed by the request: a prompt's queries attend in blocks of ``PREFILL_CHUNK``
   tokens aligned at position 0 (a prompt split across passes is split at block bounds), and each
   generated token is one query over the request's keys up to itself.
3. **One intra-op thread.** Every pass runs on one torch thread; more threads run streams of requests
   side by side (``threads``), so a thread count changes which passes run at once, never their bits.

Two things follow that make it fast without changing a bit. **Continuous batching**: a request is admitted
as soon as one finishes (at most ``batch_size`` live), and its prompt prefills in the passes that decode
the others. **Draft tokens in the filler rows**: a pass of few decoding requests would be mostly filler
(a 16-row pass costs three one-row ones on this CPU), so each request's row is followed by guesses of its
next tokens (:meth:`ExactDecoder.draft_tokens`: what followed the latest earlier occurrence of its last
tokens, in its prompt or answer: JSON keys, copied titles), each attending as a generated token would
(rule 2); the model's pick after the request's token is compared with the first guess, and while they
agree the next guess's row gives the next pick, so one pass can yield several tokens. The picks are the
tokens one-at-a-time decoding would pick (the same rows, rule 1); a wrong guess only costs its row.

Prefix reuse follows too: a request copies the keys and values of the whole blocks its prompt shares with
the request before it (in this call, or the last call's last requests: an induction's correction
round repeats its first round's prompt); a block's arithmetic is the same in every prompt that holds it,
so the copy is exactly what the request would have computed. transformers' prompt lookup is not used:
verifying its candidates would compute some generated tokens in attention blocks of another width than the
others (the draft tokens above attend one by one instead).

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
PASS_ROWS = 256  # rows a pass fills: the decoding requests' next tokens, then whole prefill chunks of the next prompts
DRAFT_NGRAM = 3  # the longest tail n-gram a draft is looked up by
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
        self._masks: dict = {}  # the causal masks of prefill chunks, by width
        self._kept: list[_Request] = []  # the last call's last batches: their prompts' prefill can be copied

    # ---- passes ------------------------------------------------------------------------------------------

    def _pass(self, segments: Sequence[tuple[_Request, list[int], bool]], rows: int) -> list:
        """One forward pass of exactly ``rows`` rows: each segment ``(request, tokens, decoding)`` continues its
        request at ``request.length``, filler rows make up the rest. A prefill segment's tokens attend in
        chunks aligned at position 0 (rule 2) and give the logits of its last token when it ends the prompt;
        a decoding segment's tokens (the last generated token, then draft tokens) attend one by one, each
        as one query over the keys up to itself, exactly as when decoded one per pass, and give the logits of
        every token. Returns per segment a float32 tensor of those logits rows, or None; the LM head runs
        on ``ROW_FLOOR`` rows or more."""
        torch = self.torch
        from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

        tokens, positions, spans, wanted = [], [], [], []
        for request, new, decoding in segments:
            spans.append((len(tokens), len(tokens) + len(new)))
            tokens += new
            positions += range(request.length, request.length + len(new))
            ends_prompt = request.length + len(new) == len(request.prompt)
            wanted.append(len(new) if decoding else int(ends_prompt))
        filler = rows - len(tokens)
        if filler < 0:
            raise ValueError(f"a pass of {rows} rows cannot hold {len(tokens)} tokens")
        ids = torch.tensor([tokens + [self.pad_id] * filler], device=self.device)
        position_ids = torch.tensor([positions + [0] * filler], device=self.device)
        hidden = self.model.model.embed_tokens(ids)
        cos, sin = self.model.model.rotary_emb(hidden, position_ids=position_ids)
        blocks = [
            [(p, p + 1) for p in range(request.length, request.length + len(new))]
            if decoding
            else prefill_chunks(request.length, request.length + len(new))
            for request, new, decoding in segments
        ]
        for index, layer in enumerate(self.layers):
            attention = layer.self_attn
            normed = layer.input_layernorm(hidden)
            query = attention.q_proj(normed).view(1, rows, self.heads, self.head_dim).transpose(1, 2)
            key = attention.k_proj(normed).view(1, rows, self.kv_heads, self.head_dim).transpose(1, 2)
            value = attention.v_proj(normed).view(1, rows, self.kv_heads, self.head_dim).transpose(1, 2)
            query, key = apply_rotary_pos_emb(query, key, cos, sin)
            mixed = torch.zeros((1, self.heads, rows, self.head_dim), dtype=query.dtype, device=self.device)
            for (request, new, _), (a, b), chunks in zip(segments, spans, blocks):
                start, end = request.length, request.length + len(new)
                keys, values = request.keys[index], request.values[index]
                keys[:, :, start:end] = key[:, :, a:b]
                values[:, :, start:end] = value[:, :, a:b]
                for first, last in chunks:
                    block = slice(a + first - start, a + last - start)
                    mixed[:, :, block] = self._attend(query[0, :, block], keys[0, :, :last], values[0, :, :last], first)
            hidden = hidden + attention.o_proj(mixed.transpose(1, 2).reshape(1, rows, -1))
            hidden = hidden + layer.mlp(layer.post_attention_layernorm(hidden))
        for request, new, _ in segments:
            request.length += len(new)
        picked_rows = [row for (a, b), count in zip(spans, wanted) for row in range(b - count, b)]
        if not picked_rows:
            return [None] * len(segments)
        picked = self.model.model.norm(hidden[0, picked_rows])
        picked = torch.cat([picked, picked[-1:].expand(max(0, ROW_FLOOR - len(picked_rows)), -1)])
        logits = self.model.lm_head(picked)[: len(picked_rows)].to(torch.float32)
        out, offset = [], 0
        for count in wanted:
            out.append(logits[offset : offset + count] if count else None)
            offset += count
        return out

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
            scores.view(self.kv_heads, groups, n, start + n)[..., start:].masked_fill_(self._later(n), float("-inf"))
        weights = torch.softmax(scores, dim=-1, dtype=torch.float32).to(values.dtype)
        return torch.matmul(weights, values).reshape(self.heads, n, dim)

    def _later(self, n: int):
        """``(n, n)``: True where a token of a prefill chunk would see a later token of the chunk."""
        if n not in self._masks:
            self._masks[n] = self.torch.ones((n, n), dtype=self.torch.bool, device=self.device).triu(1)
        return self._masks[n]

    # ---- requests ----------------------------------------------------------------------------------------

    def _state(self, prompt: list[int], cap: int, processor) -> _Request:
        torch = self.torch
        request = _Request(list(prompt), cap, processor)
        shape = (1, self.kv_heads, len(prompt) + cap, self.head_dim)
        for _ in self.layers:
            request.keys.append(torch.zeros(shape, dtype=self.dtype, device=self.device))
            request.values.append(torch.zeros(shape, dtype=self.dtype, device=self.device))
        return request

    @staticmethod
    def draft_tokens(sequence: Sequence[int], count: int, ngram: int = DRAFT_NGRAM) -> list[int]:
        """Up to ``count`` tokens guessed to follow ``sequence``: those that followed the latest earlier
        occurrence of its last ``ngram`` tokens (fewer when none occurs). A guess only saves passes: each
        is checked against the token the model picks there, and the answer never depends on it."""
        length = len(sequence)
        for size in range(min(ngram, length - 1), 0, -1):
            tail = list(sequence[length - size :])
            for start in range(length - size - 1, -1, -1):
                if sequence[start + size - 1] == tail[-1] and list(sequence[start : start + size]) == tail:
                    return list(sequence[start + size : start + size + count])
        return []

    def _drafts(self, request: _Request, count: int) -> list[int]:
        """Draft tokens for ``request``'s next pass: at most ``count``, none past its token cap."""
        count = min(count, request.cap - len(request.generated))
        return self.draft_tokens(request.prompt + request.generated, count) if count > 0 else []

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

        Requests go in prompt order (those sharing a prefix together), in groups of ``batch_size`` dealt to
        ``threads`` workers that run side by side; each worker streams its requests (:meth:`_stream`). With
        ``reuse_min_tokens`` (None: no reuse) a request copies the whole prefill chunks it shares with the
        request before it in its worker's order, or with one kept from the last call (an induction's
        correction round repeats its first round's prompt), when they are at least that many tokens."""
        torch = self.torch
        order = prefix_reuse.prefix_order([tuple(prompt) for prompt in prompts])
        batches = [order[offset : offset + batch_size] for offset in range(0, len(order), batch_size)]
        shares = [[index for batch in batches[worker::threads] for index in batch] for worker in range(threads)]
        answers: list[tuple[list[int], int] | None] = [None] * len(prompts)
        kept = list(self._kept)
        done: list[list[_Request]] = [[] for _ in shares]

        def work(worker: int) -> None:
            torch.set_num_threads(1)
            with torch.inference_mode():
                states = self._stream(shares[worker], prompts, caps, processors, kept, reuse_min_tokens, batch_size)
            for index, state in zip(shares[worker], states):
                answers[index] = (state.generated, state.reused)
            done[worker] = states[-batch_size:]

        torch.set_num_threads(1)
        if threads == 1:
            work(0)
        else:
            with ThreadPoolExecutor(threads) as pool:
                list(pool.map(work, range(threads)))
        self._kept = [state for states in done for state in states]
        return answers

    @staticmethod
    def _donors(prompts: Sequence[list[int]], kept: Sequence[_Request], min_tokens: int | None) -> list[tuple]:
        """Per request of a stream, ``(donor, tokens)``: whose prefill it copies (a kept request, or the stream
        position of the request before it: in prompt order the earlier prompt sharing the longest prefix
        is the one just before) and how many tokens, whole prefill chunks; ``(None, 0)`` for none."""
        plan = []
        for position, prompt in enumerate(prompts):
            candidates = [(state, state.prompt) for state in kept]
            if position:
                candidates.append((position - 1, prompts[position - 1]))
            best, donor = 0, None
            for candidate, other in candidates:
                shared = prefix_reuse.common_prefix_length(prompt, other)
                shared = reusable_length(min(shared, len(prompt) - 1))
                if shared > best:
                    best, donor = shared, candidate
            reuses = min_tokens is not None and donor is not None and best >= min_tokens
            plan.append((donor, best) if reuses else (None, 0))
        return plan

    def _stream(self, indices, prompts, caps, processors, kept, reuse_min_tokens, batch_size) -> list[_Request]:
        """Answer the requests ``indices`` (into ``prompts``, in this order) by continuous batching; their states.

        Each pass carries the next token of every decoding request, then whole prefill chunks of the
        requests admitted after them, up to ``PASS_ROWS`` rows: the rows a pass of few decoding requests
        would fill with padding prefill the next prompts instead (rule 1 makes the mix exact). A request is
        admitted, in order, while fewer than ``batch_size`` are live and once the request it copies from has
        prefilled what it copies; a finished request's keys and values are freed unless a request still to
        come copies them or it is among the last ``batch_size`` (kept for the next call)."""
        own = [list(prompts[index]) for index in indices]
        plan = self._donors(own, kept, reuse_min_tokens)
        states: list[_Request | None] = [None] * len(indices)
        position_of: dict[int, int] = {}
        keep_from = len(indices) - batch_size
        waiting, filling, active = 0, [], []

        def release(position: int) -> None:
            state, copier = states[position], position + 1
            copied_later = copier < len(indices) and plan[copier][0] == position and states[copier] is None
            if state is not None and state.done and position < keep_from and not copied_later:
                state.keys, state.values = [], []

        while waiting < len(indices) or filling or active:
            while waiting < len(indices) and len(filling) + len(active) < batch_size:
                donor, tokens = plan[waiting]
                source = states[donor] if isinstance(donor, int) else donor
                if isinstance(donor, int) and (source is None or source.length < tokens):
                    break  # the request it copies from has not prefilled that far yet
                index = indices[waiting]
                state = self._state(prompts[index], caps[index], processors[index])
                if source is not None:
                    self._copy(state, source, tokens)
                states[waiting], position_of[id(state)] = state, waiting
                filling.append(state)
                if isinstance(donor, int):
                    release(donor)
                waiting += 1
            pieces, room = [], PASS_ROWS - len(active)
            for state in filling:
                if room <= 0:
                    break
                stop = state.length // PREFILL_CHUNK * PREFILL_CHUNK + max(1, room // PREFILL_CHUNK) * PREFILL_CHUNK
                pieces.append((state, state.prompt[state.length : min(len(state.prompt), stop)], False))
                room -= len(pieces[-1][1])
            spare = ROW_FLOOR - len(active) - sum(len(new) for _, new, _ in pieces)  # filler rows otherwise
            each = spare // len(active) if active and spare > 0 else 0
            segments = [(state, state.generated[-1:] + self._drafts(state, each), True) for state in active]
            segments += pieces
            logits = self._pass(segments, max(ROW_FLOOR, sum(len(new) for _, new, _ in segments)))
            for (state, new, decoding), rows in zip(segments, logits):
                if rows is None:
                    continue
                if not decoding:
                    self._choose(state, rows[-1])
                    continue
                drafts, accepted = new[1:], 0
                for row in rows:
                    self._choose(state, row)
                    if state.done or accepted == len(drafts) or state.generated[-1] != drafts[accepted]:
                        break
                    accepted += 1
                state.length -= len(drafts) - accepted  # a rejected draft's keys are overwritten later
            prefilled = [state for state in filling if state.length == len(state.prompt)]
            filling = [state for state in filling if state.length < len(state.prompt)]
            for state in active + prefilled:
                if state.done:
                    release(position_of[id(state)])
            active = [state for state in active + prefilled if not state.done]
        return states

    def _copy(self, state: _Request, donor: _Request, tokens: int) -> None:
        """Copy into ``state`` the keys and values of ``donor``'s first ``tokens`` positions (whole prefill
        chunks of a prompt prefix both share: the same arithmetic in either prompt, rule 2)."""
        for layer in range(len(self.layers)):
            state.keys[layer][:, :, :tokens] = donor.keys[layer][:, :, :tokens]
            state.values[layer][:, :, :tokens] = donor.values[layer][:, :, :tokens]
        state.length = state.reused = tokens
