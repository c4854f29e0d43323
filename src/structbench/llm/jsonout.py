"""Lenient JSON extraction and schema validation of model output (docs/method.md §14).

Backends without constrained decoding (transformers with ``constrained: false``, an OpenAI-compatible
server asked without ``response_format`` or ignoring it) are prompted for JSON and may wrap it in prose
or a Markdown fence, so the answer is the first JSON value (object or array) that parses anywhere in
the text. A constrained backend returns bare JSON, which the same rule reads unchanged. Validation
uses ``jsonschema`` (Draft 2020-12).
"""

from __future__ import annotations

import json
from typing import Any

import jsonschema

_DECODER = json.JSONDecoder()
QUOTED_CHARS = 40  # of a value a schema violation quotes


class JSONOutputError(ValueError):
    """The text holds no JSON value, or the value breaks the schema; the message says which."""


def extract_json(text: str) -> Any:
    """The first JSON object or array in ``text`` that decodes completely from its opening bracket.

    Scans each ``{`` / ``[`` in order and returns the first one that ``json.JSONDecoder.raw_decode``
    accepts, so a prose preamble, a Markdown code fence, or trailing chatter are ignored; a bracket
    inside prose that does not start valid JSON is skipped. Raises :class:`JSONOutputError` when no
    opening bracket starts a valid value."""
    position = 0
    while True:
        starts = [index for index in (text.find("{", position), text.find("[", position)) if index >= 0]
        if not starts:
            raise JSONOutputError(f"no JSON object or array in the output ({_excerpt(text)})")
        start = min(starts)
        try:
            value, _ = _DECODER.raw_decode(text, start)
            return value
        except json.JSONDecodeError:
            position = start + 1


def schema_violations(value: Any, schema: dict) -> list[str]:
    """Every way ``value`` breaks ``schema``, as ``"<JSON path>: <message>"`` in document order (``[]``:
    valid). What the caller quotes back to a model in a correction round, whatever the server returned:
    a server that ignores ``response_format`` is held to the schema all the same."""
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(value), key=lambda error: list(error.absolute_path))
    return [f"{'/'.join(str(part) for part in error.absolute_path) or '(root)'}: {_message(error)}" for error in errors]


def _message(error: jsonschema.ValidationError) -> str:
    """jsonschema's message, with a long offending value quoted by its opening only (a 1,000-character
    title quoted whole would crowd a correction prompt): ``'The weir…' (1084 characters) is too long``."""
    quoted = repr(error.instance)
    if len(quoted) <= QUOTED_CHARS or quoted not in error.message:
        return error.message
    size = f" ({len(error.instance)} characters)" if isinstance(error.instance, str) else ""
    return error.message.replace(quoted, quoted[:QUOTED_CHARS] + "…" + size)


def validate(value: Any, schema: dict) -> None:
    """Raise :class:`JSONOutputError` naming the first schema violation (its JSON path and message)."""
    violations = schema_violations(value, schema)
    if violations:
        more = f" (and {len(violations) - 1} more)" if len(violations) > 1 else ""
        raise JSONOutputError(f"schema violation at {violations[0]}{more}")


def parse_json_output(text: str, schema: dict | None) -> Any:
    """Extract the JSON value of ``text`` and validate it against ``schema`` (when given)."""
    value = extract_json(text)
    if schema is not None:
        validate(value, schema)
    return value


def _excerpt(text: str, limit: int = 80) -> str:
    flat = " ".join(text.split())
    if not flat:
        return "empty output"
    return repr(flat[:limit] + ("..." if len(flat) > limit else ""))
