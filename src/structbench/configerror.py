"""The error of a config that cannot run, raised by every start-up check.

A base module, so the checks kept beside each subsystem (:mod:`structbench.llm.checks`,
:mod:`structbench.retrieval.checks`, ...) raise it without importing the config layer above them;
:mod:`structbench.config` hands it out too.
"""

from __future__ import annotations


class ConfigError(ValueError):
    """A config that cannot run; the message names the key. ``problems`` lists ``(key path, problem)`` where
    the check knows each key path (the schema's violations); else it is empty and the message names the key."""

    def __init__(self, message: str, problems: list[tuple[tuple, str]] | None = None):
        super().__init__(message)
        self.problems = problems or []
