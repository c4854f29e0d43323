"""Versioned prompt files (``prompts/*.txt``), rendered into chat messages.

A prompt file starts with a header of ``key: value`` lines, at least ``prompt`` (its name, equal to the
file stem) and ``version``; then one block per message, each opened by a line ``---- <role>``
(system, user or assistant). Message bodies are ``string.Template`` s: ``$name`` or ``${name}`` is
filled at render time and ``$$`` is a literal dollar, so JSON examples with braces need no escaping.
Bump ``version`` whenever the wording changes: ``Prompt.version_id`` (``name@version``) goes into every
request, and with it into the response cache key (the rendered text does too, so even an unbumped edit
cannot be served a stale answer).
"""

from __future__ import annotations

import functools
import importlib.resources
import string
from dataclasses import dataclass

ROLES = ("system", "user", "assistant")


@dataclass(frozen=True)
class Prompt:
    """A parsed prompt file: its name, version and ``(role, template)`` messages."""

    name: str
    version: str
    messages: tuple[tuple[str, str], ...]

    @property
    def version_id(self) -> str:
        return f"{self.name}@{self.version}"

    def render(self, **values) -> list[dict]:
        """The messages with every ``$placeholder`` filled; a missing value is a ``KeyError`` naming it."""
        rendered = []
        for role, template in self.messages:
            try:
                content = string.Template(template).substitute(values)
            except KeyError as error:
                raise KeyError(f"prompt {self.version_id} needs a value for ${error.args[0]}") from None
            rendered.append({"role": role, "content": content})
        return rendered


def parse_prompt(text: str, source: str = "prompt") -> Prompt:
    """Parse prompt-file ``text`` (see the module docstring); errors name ``source``."""
    header, messages, role, body = {}, [], None, []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.startswith("---- "):
            if role is not None:
                messages.append((role, "\n".join(body).strip("\n")))
            role, body = line[5:].strip(), []
            if role not in ROLES:
                raise ValueError(f"{source}:{number}: unknown role {role!r} (expected one of {ROLES})")
        elif role is None:
            if line.strip():
                key, colon, value = line.partition(":")
                if not colon:
                    raise ValueError(f"{source}:{number}: header line is not 'key: value': {line!r}")
                header[key.strip()] = value.strip()
        else:
            body.append(line)
    if role is not None:
        messages.append((role, "\n".join(body).strip("\n")))
    missing = [key for key in ("prompt", "version") if not header.get(key)]
    if missing:
        raise ValueError(f"{source}: header lacks {missing}")
    if not messages:
        raise ValueError(f"{source}: no '---- <role>' message blocks")
    return Prompt(header["prompt"], header["version"], tuple(messages))


@functools.cache
def load_prompt(name: str) -> Prompt:
    """The packaged prompt ``prompts/<name>.txt``."""
    resource = importlib.resources.files("structbench.llm") / "prompts" / f"{name}.txt"
    if not resource.is_file():
        raise FileNotFoundError(f"no packaged prompt {name!r} ({resource})")
    prompt = parse_prompt(resource.read_text(encoding="utf-8"), f"prompts/{name}.txt")
    if prompt.name != name:
        raise ValueError(f"prompts/{name}.txt declares prompt name {prompt.name!r}")
    return prompt
