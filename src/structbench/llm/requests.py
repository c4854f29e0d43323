"""What goes into the LLM layer and what comes out of it.

A :class:`ChatRequest` is one conversation (a list of ``{"role", "content"}`` messages) plus, when the
answer must be JSON, the JSON schema it must satisfy, and the version of the prompt file it was rendered
from. A backend turns requests into :class:`Completion` s (raw text); the client
(:class:`structbench.llm.client.LLM`) caches completions and turns them into :class:`ChatResponse` s,
validating JSON against the schema. An invalid answer is a response with ``ok=False`` and an
``error`` saying why, never an exception: a batch of a thousand documents survives one bad answer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ChatRequest:
    """One conversation to complete.

    ``messages`` is a tuple of ``(role, content)`` pairs (roles: system, user, assistant);
    ``schema`` the JSON schema of the answer (None: free text); ``prompt_version`` the
    ``name@version`` of the prompt file it came from; ``max_new_tokens`` overrides the spec's cap."""

    messages: tuple[tuple[str, str], ...]
    schema: dict | None = field(default=None, hash=False)  # dicts do not hash; equality still compares it
    prompt_version: str = ""
    max_new_tokens: int | None = None

    @classmethod
    def of(
        cls,
        messages: list[dict],
        schema: dict | None = None,
        prompt_version: str = "",
        max_new_tokens: int | None = None,
    ) -> ChatRequest:
        pairs = []
        for index, message in enumerate(messages):
            role, content = message.get("role"), message.get("content")
            if role not in ("system", "user", "assistant") or not isinstance(content, str):
                raise ValueError(
                    f"message {index} needs role system|user|assistant and string content, got {message!r}"
                )
            pairs.append((role, content))
        return cls(tuple(pairs), schema, prompt_version, max_new_tokens)

    def as_dicts(self) -> list[dict]:
        return [{"role": role, "content": content} for role, content in self.messages]


@dataclass(frozen=True)
class Completion:
    """A backend's raw answer: the generated text, token counts and why generation stopped
    (``stop``: end of turn, ``length``: hit ``max_new_tokens``). ``error`` is non-empty when the
    backend could not answer this request (e.g. the prompt exceeds the context); such a completion
    is never cached. ``reused_prompt_tokens``: prompt tokens this generation took from a prefix cache
    (the transformers backend's prefix reuse, a server's reported ``cached_tokens``); not stored in the
    response cache (an answer served from it reuses nothing)."""

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    finish_reason: str = "stop"
    error: str = ""
    reused_prompt_tokens: int = 0

    def as_dict(self) -> dict:
        return {
            "text": self.text,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "finish_reason": self.finish_reason,
        }


@dataclass(frozen=True)
class ChatResponse:
    """The validated answer to one request.

    ``value`` is the parsed JSON (requests with a schema) or the stripped text (free-text requests);
    ``ok`` is False when the backend failed or the JSON is missing or breaks the schema, with
    ``error`` saying which. ``cached`` tells whether the completion came from the response cache."""

    text: str
    value: Any
    ok: bool
    error: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    finish_reason: str = "stop"
    cached: bool = False
